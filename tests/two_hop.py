"""The two-hop question on a hidden corpus, shared by the sources, MCP and reasoning-server tests.

A scripted reasoner (as a function of the request body, for the loopback OpenAI server,
or of the prompt, for ScriptedLLM) asks for the bridge's designer, then for the
designer's birthplace, then answers. Its reader cites the document each fact comes
from (`[n]`) when the prompt asks for marks, as our profile's reader prompt does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from search_o1 import markers as mk
from search_o1.corpus.passage import Passage
from search_o1.engine import Engine, EngineOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.bm25 import BM25Search
from search_o1.sources import CITE_INSTRUCTION
from search_o1.types import Hit, Prompt

QUESTION = "Where was the designer of the Glimmer Bridge born?"
ANSWER = "Tessaly"
QUERIES = ["Glimmer Bridge designer", "Orla Venn birthplace"]
CORPUS = [
    {
        "id": "b1",
        "title": "Glimmer Bridge",
        "text": "The Glimmer Bridge was designed by Orla Venn. It spans the river Ost.",
    },
    {
        "id": "p1",
        "title": "Orla Venn",
        "text": "Orla Venn is an engineer. Orla Venn was born in Tessaly in 1931.",
    },
    {"id": "x1", "title": "Tessaly", "text": "Tessaly is a river town known for its bridges."},
    {"id": "x2", "title": "Kelp", "text": "Kelp forests grow in cold coastal waters."},
]
GOLD_IDS = ["b1", "p1"]  # the passage of each hop
# One hit per query, holding just the hop's fact: what the reasoning servers' tests search.
HITS = {
    QUERIES[0]: [Hit("b1", "Glimmer Bridge", "The Glimmer Bridge was designed by Orla Venn.")],
    QUERIES[1]: [Hit("p1", "Orla Venn", "Orla Venn was born in Tessaly in 1931.")],
}


def write_corpus(folder: Path) -> Path:
    path = folder / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in CORPUS) + "\n", encoding="utf-8")
    return path


def _reader(prompt: str) -> str:
    docs = prompt.split("**Search results**", 1)[1]
    query = prompt.split("**Current search query**", 1)[1].split("\n")[1].strip()
    wanted = "designed by" if "designer" in query else "born in"
    for n, body in re.findall(
        r"\*\*Document (\d+)\*\*: [^\n]*\n(.+?)(?=\n\n\*\*Document|\Z)", docs, re.S
    ):
        for sentence in re.split(r"(?<=\.)\s+", body):
            if wanted in sentence:
                mark = f" [{n}]" if CITE_INSTRUCTION in prompt else ""
                return f"Reading.\n**Final Information**\n\n{sentence.strip()}{mark}"
    return "Reading.\n**Final Information**\n\nNo helpful information found."


def reply(prompt: str, chain: str) -> str:
    """The model's whole reply to a prompt (`chain`: the assistant text so far)."""
    if "**Current search query**" in prompt:
        return _reader(prompt)
    results = re.findall(
        re.escape(mk.BEGIN_RESULT) + r"\s*(.*?)\s*" + re.escape(mk.END_RESULT), chain, re.S
    )
    if not results:
        return f"First the designer. {mk.BEGIN_QUERY}{QUERIES[0]}{mk.END_QUERY}"
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return f"Now where {name} was born. {mk.BEGIN_QUERY}{name} birthplace{mk.END_QUERY}"
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    return f"So the answer is \\boxed{{{place.group(1) if place else '?'}}}."


def respond_body(body: dict[str, Any]) -> str:
    """For the loopback OpenAI server (a chatml completion, or a chat request)."""
    prompt = body.get("prompt") or body["messages"][-1]["content"]
    chain = prompt.rsplit("<|im_start|>assistant\n", 1)[-1] if "prompt" in body else ""
    if "messages" in body and body["messages"][-1]["role"] == "assistant":
        chain = body["messages"][-1]["content"]
    return reply(prompt, chain)


def respond_prompt(prompt: Prompt) -> str:
    """For ScriptedLLM."""
    text = "".join(m.content for m in prompt.messages)
    return reply(text, prompt.continuation)


def corpus_search() -> BM25Search:
    return BM25Search.build(Passage(r["id"], r["title"], r["text"]) for r in CORPUS)


def two_hop_engine(llm: ScriptedLLM | None = None) -> Engine:
    options = EngineOptions(task="multihop")
    return Engine(llm or ScriptedLLM(respond_prompt), corpus_search(), options=options)
