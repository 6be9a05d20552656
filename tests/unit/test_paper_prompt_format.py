"""A template set written in the format of the paper's scripts renders whole prompts byte
for byte as those scripts assemble them: the instruction and the task prompt joined, the
question as the dataset holds it, the reader's inputs with the official previous steps
and `**Web Page i:**` + indented JSON documents, and rag-agent's raw JSON result block.

The wording here is placeholder text of ours; what is checked is the assembly.
"""

from __future__ import annotations

import json
from pathlib import Path

from search_o1 import markers as mk
from search_o1.engine import Engine
from search_o1.engine.options import ChainLimits, EngineOptions, ReaderOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.prompts.templates import load_prompts
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY
QUESTION = "  Which city is the capital of France?  "  # as a dataset may hold it
HIT = Hit(
    "1",
    "Paris – Wikipédia",
    url="http://wiki.test/Paris",
    snippet="Paris is the capital",
    text="Paris is the capital and largest city of France.",
    date="2024-05-01",
)
TEMPLATES = {
    "search_o1.jinja": "INSTRUCTION. Search at most {{ max_searches }} times.\n\n",
    "rag_agent.jinja": "AGENT INSTRUCTION: {{ max_searches }} searches, {{ max_urls }} pages.\n\n",
    "task.qa.jinja": "Answer as \\boxed{YOUR_ANSWER}.\n\nQuestion:\n{{ question }}\n\n",
    "reader.jinja": (
        "**Task Instruction:**\n\nREAD THE PAGES.\n\n**Inputs:**\n"
        "- **Previous Reasoning Steps:**  \n{{ previous_reasoning }}\n\n"
        "- **Current Search Query:**  \n{{ query }}\n\n"
        "- **Searched Web Pages:**  \n{{ documents }}\n\n"
        'Now analyse the pages for "{{ query }}".\n'
    ),
    "documents.jinja": (
        "{% for p in pages %}**Web Page {{ p.id }}:**\n{{ p | json(indent=2) }}\n{% endfor %}"
    ),
    "results.jinja": (
        "\n<|begin_search_result|>\n{{ hits | json(indent=2) }}\n<|end_search_result|>\n"
    ),
}


def _options(tmp_path: Path) -> EngineOptions:
    for name, text in TEMPLATES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return EngineOptions(
        limits=ChainLimits(max_searches=5),
        prompts=load_prompts(tmp_path),
        reader=ReaderOptions(one_line=True, paper=True),
        repeated_query="notice",
    )


def _doc(context: str) -> dict[str, object]:
    """A document as the paper's scripts build it: these keys, in this order."""
    return {
        "id": 1,
        "title": HIT.title,
        "url": HIT.url,
        "site_name": "",
        "date": HIT.date,
        "snippet": HIT.snippet,
        "context": context,
    }


async def test_search_o1_and_reader_prompts_are_the_papers_assembly(tmp_path: Path) -> None:
    first = f"Let me think.\n\nI need the capital.{Q}capital of France{EQ}"
    reader_reply = "Notes.\n**Final Information**\n\nParis is the capital."
    model = ScriptedLLM([first, reader_reply, "So \\boxed{Paris}."])
    search = MemorySearch({"capital of France": [HIT]})
    trace = await Engine(model, search, options=_options(tmp_path)).run(QUESTION, task="qa")
    opening = model.prompts[0].messages[0].content
    # The instruction, then the task prompt with the question untouched (no strip).
    task = f"Answer as \\boxed{{YOUR_ANSWER}}.\n\nQuestion:\n{QUESTION}\n\n"
    assert opening == "INSTRUCTION. Search at most 5 times.\n\n" + task
    reader = model.prompts[1].messages[0].content
    steps = (
        "Step 1: Let me think.\n\n"
        f"Step 2: I need the capital.{Q}capital of France{EQ}"
    )  # the paper's: a blank line pair becomes one line break; then its step rule
    pages = "**Web Page 1:**\n" + json.dumps(_doc(HIT.text), ensure_ascii=False, indent=2)
    assert reader == (
        "**Task Instruction:**\n\nREAD THE PAGES.\n\n**Inputs:**\n"
        f"- **Previous Reasoning Steps:**  \n{steps}\n\n"
        "- **Current Search Query:**  \ncapital of France\n\n"
        f"- **Searched Web Pages:**  \n{pages}\n\n\n"
        'Now analyse the pages for "capital of France".\n'
    )
    # The facts go in as the paper inserts them: one line, tight between the markers.
    assert f"{EQ}\n\n{mk.BEGIN_RESULT}Paris is the capital.{mk.END_RESULT}\n\n" in trace.output


async def test_rag_agent_raw_results_are_the_papers_json_block(tmp_path: Path) -> None:
    model = ScriptedLLM([f"Search.{Q}capital of France{EQ}", "So \\boxed{Paris}."])
    search = MemorySearch({"capital of France": [HIT]})
    engine = Engine(model, search, options=_options(tmp_path))
    trace = await engine.run(QUESTION, task="qa", method="rag-agent")
    opening = model.prompts[0].messages[0].content
    assert opening.startswith("AGENT INSTRUCTION: 5 searches, ")
    assert opening.endswith(f"Question:\n{QUESTION}\n\n")
    block = json.dumps([_doc("")], ensure_ascii=False, indent=2)
    expected = f"\n{mk.BEGIN_RESULT}\n{block}\n{mk.END_RESULT}\n"
    assert trace.searches[0].inserted == expected
    assert model.prompts[1].continuation.endswith(f"{EQ}{expected}")
