"""The reader's previous steps and the facts put into the chain, through `search-o1 eval
--method search-o1 --profile paper` as a grader runs it: the installed command against a
real model server on 127.0.0.1 that replays the conformance files.

`paper_steps.jsonl`: each record's chain is cut at its queries; the server writes it turn
by turn, each turn ending with its query, and answers each Reason-in-Documents call so
that the block the engine inserts is the record's own when the paper's script could have
inserted it (`\\n\\n<|begin_search_result|>facts<|end_search_result|>\\n\\n`, the facts
stripped). Then the chain the engine builds is the record's output byte for byte, and the
steps the reader is given at its last query are `official_prev_reasoning`. Blocks of other
shapes (which the script never inserts) get the facts that block holds, and the chain is
checked against the script's assembly of the same turns and replies.

`paper_reader.jsonl`: the reader's reply is each record's `output`; what goes into the
chain is the script's insert around `official_extracted`.

The conformance files live beside the project (`../shared/conformance`); the tests skip
when they are absent.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.eval_support import cli, write_jsonl
from tests.servers.openai_server import openai_server

from search_o1 import markers as mk
from search_o1.reader_history import paper_prev_reasoning

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
Q, EQ, R, ER = mk.BEGIN_QUERY, mk.END_QUERY, mk.BEGIN_RESULT, mk.END_RESULT
ASSISTANT = "<|im_start|>assistant\n"
READER_HEAD = "REASON-IN-DOCUMENTS\nPrevious steps:\n"
READER_QUERY = "\nQuery of this search:\n"
REPEAT = "Searched before."
FINAL = "So the answer is \\boxed{done}."
# Prompt templates: a reader prompt the steps can be cut back out of exactly, notices
# with known words, and an instruction with no example query in it.
TEMPLATES = {
    "reader.jinja": READER_HEAD + "{{ previous_reasoning }}" + READER_QUERY + "{{ query }}\n",
    "notice.repeat.jinja": REPEAT,
    "notice.limit.jinja": "No more searches.",
    "search_o1.jinja": "Search by writing a query between the query markers.\n\n",
    "task.jinja": "{{ question }}",
}
CORPUS = [
    {"id": str(i), "title": f"Page {i}", "contents": text}
    for i, text in enumerate(
        ["the value and the total we compute first", "so it is known: check the sum then"]
    )
]


def _records(name: str) -> list[dict[str, Any]]:
    path = CONFORMANCE / name
    if not path.exists():
        pytest.skip(f"conformance data not found at {path}")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _facts_block(facts: str) -> str:
    """Refined facts as the paper's script inserts them."""
    return f"\n\n{R}{facts}{ER}\n\n"


def _reply(facts: str) -> str:
    """A reader reply the script's parse reads as exactly `facts` (stripped, no
    backticks at its ends): under its Final Information heading when it is one line,
    else under the Modified Reasoning Steps fallback, which keeps line breaks."""
    if "\n" in facts:
        return f"Notes.\n**Modified Reasoning Steps**\n{facts}"
    return f"Notes.\n**Final Information**\n{facts}"


@dataclass
class Replay:
    """One record as a model and a reader would have produced it, and the chain the
    paper's script builds from them."""

    turns: list[str]  # the model's text per call: each ends with its query, the last answers
    replies: list[str]  # the reader's reply to each query that is searched
    prefixes: list[str]  # the script's chain before each turn (what each call continues)
    read_at: list[str]  # the script's chain when each searched query goes to the reader
    exact: bool  # the chain at the last query is the record's output, byte for byte


def _replay(output: str) -> Replay:
    pieces = output.split(EQ)[:-1]  # every piece ends where a query ends
    turns, replies, prefixes, read_at = [], [], [], []
    chain, text, exact, seen = "", pieces[0] + EQ, True, set()
    for i in range(len(pieces)):
        prefixes.append(chain)
        turns.append(text)
        chain += text
        query = mk.last_between(text, Q, EQ) or ""
        assert query and text.count(Q) == 1, "one query per turn, as the records have"
        after = pieces[i + 1] + EQ if i + 1 < len(pieces) else None
        facts = "The last facts."
        if after is not None:  # the record's block after this query, then the next turn
            facts = after.partition(ER)[0].partition(R)[2].strip() if ER in after else "None."
            text = after.partition(ER)[2] if ER in after else after
        if query in seen:  # the script's notice for a repeat, and no reader call
            block, exact = f"\n{R}\n{REPEAT}\n{ER}\n", False
        else:
            seen.add(query)
            read_at.append(chain)
            replies.append(_reply(facts))
            block = _facts_block(facts)
            if after is not None and after.startswith(block):  # the script's own shape
                text = after[len(block) :]
            elif after is not None:
                exact = False
        chain += block
    prefixes.append(chain)
    turns.append(FINAL)
    return Replay(turns, replies, prefixes, read_at, exact and read_at[-1] == output)


@dataclass
class Script:
    """The loopback model: main calls by record and turn, reader calls by the record
    of the main call before (the run goes one question at a time)."""

    replays: dict[str, Replay]
    opening: str = ASSISTANT  # where the model's text starts in a raw prompt
    last: tuple[str, int] = ("", 0)
    reader_prompts: dict[str, list[str]] = field(default_factory=dict)
    chains_seen: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, body: dict[str, Any]) -> str:
        if "messages" in body:  # chat: the chain is the assistant message continued
            messages = body["messages"]
            last = messages[-1]
            chain = str(last["content"]) if last["role"] == "assistant" else ""
            prompt = "".join(str(m["content"]) for m in messages)
        else:
            prompt = str(body["prompt"])
            _, found, chain = prompt.partition(self.opening)
            assert found and ASSISTANT not in chain, "the chain starts after the template"
        with self.lock:
            if READER_HEAD in prompt:
                key = self.last[0]
                self.reader_prompts.setdefault(key, []).append(prompt)
                return self.replays[key].replies[len(self.reader_prompts[key]) - 1]
            key = next(k for k in self.replays if f"Replay chain {k}." in prompt)
            self.chains_seen.setdefault(key, []).append(chain)
            turn = chain.count(EQ)
            self.last = (key, turn)
            return self.replays[key].turns[turn]


def _steps(reader_prompt: str) -> str:
    return reader_prompt.partition(READER_HEAD)[2].rpartition(READER_QUERY)[0]


def _run(tmp_path: Path, script: Script, template: str = "chatml") -> None:
    rows = [
        {"id": k, "question": f"Replay chain {k}.", "golden_answers": ["done"]}
        for k in script.replays
    ]
    data = write_jsonl(tmp_path / "chains.jsonl", rows)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for name, text in TEMPLATES.items():
        (prompts / name).write_text(text, encoding="utf-8")
    with openai_server(script.respond) as server:
        done = cli(
            "eval",
            *("--dataset", str(data), "--task", "qa", "--out", "run"),
            *("--method", "search-o1", "--profile", "paper", "--prompts", str(prompts)),
            *("--base-url", server.url, "--model", "fake-model"),
            *(["--api-mode", "chat"] if template == "chat" else ["--chat-template", template]),
            *("--search", "bm25", "--corpus", str(corpus), "--no-fetch"),
            *("--max-searches", "10", "--concurrency", "1", "--no-progress"),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr


# QwQ's template opens `<think>` in the prompt: the script's output (what the reader's
# steps are made of) starts after it, with the model's own text. Chat: the chain is the
# assistant message the server continues. Every fifth record for these two.
TEMPLATES_OPENING = [
    ("chatml", ASSISTANT, 1),
    ("qwq", ASSISTANT + "<think>\n", 5),
    ("chat", "", 5),
]


@pytest.mark.parametrize(("template", "opening", "every"), TEMPLATES_OPENING)
def test_reader_gets_the_papers_previous_steps_through_eval(
    tmp_path: Path, template: str, opening: str, every: int
) -> None:
    records = _records("paper_steps.jsonl")[::every]
    replays = {str(i): _replay(r["output"]) for i, r in enumerate(records)}
    script = Script(replays, opening)
    _run(tmp_path, script, template)
    wrong_chain, wrong_steps, not_official = [], [], []
    for i, record in enumerate(records):
        key, replay = str(i), replays[str(i)]
        # Every main call continues the chain the script would have built by then.
        if script.chains_seen.get(key) != replay.prefixes:
            wrong_chain.append(i)
        steps = [_steps(p) for p in script.reader_prompts.get(key, [])]
        if steps != [paper_prev_reasoning(c) for c in replay.read_at]:
            wrong_steps.append(i)
        if replay.exact and steps[-1:] != [record["official_prev_reasoning"]]:
            not_official.append(i)
    assert not wrong_chain, f"{len(wrong_chain)} chains differ from the script's: {wrong_chain}"
    assert not wrong_steps, f"{len(wrong_steps)} records' reader steps differ: {wrong_steps}"
    assert not not_official, f"{len(not_official)} differ from the official: {not_official}"
    # The records whose chain the script itself could have built (every record with one
    # query, and those whose earlier blocks are the script's shape) meet the official.
    exact = sum(r.exact for r in replays.values())
    assert exact >= len(records) // 3, f"only {exact} chains replayed byte for byte"


def test_reader_replies_go_into_the_chain_as_the_paper_inserts_them(tmp_path: Path) -> None:
    records = _records("paper_reader.jsonl")
    turn = f"Look it up.{Q}tower height{EQ}"
    replays = {
        str(i): Replay(
            turns=[turn, FINAL],
            replies=[r["output"]],
            prefixes=["", turn + _facts_block(r["official_extracted"])],
            read_at=[turn],
            exact=True,
        )
        for i, r in enumerate(records)
    }
    script = Script(replays)
    _run(tmp_path, script)
    wrong = [
        (i, script.chains_seen.get(str(i)))
        for i in range(len(records))
        if script.chains_seen.get(str(i)) != replays[str(i)].prefixes
    ]
    assert not wrong, f"{len(wrong)} of {len(records)} inserts differ: {wrong[:2]}"
