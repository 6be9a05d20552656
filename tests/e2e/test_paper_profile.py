"""`--profile paper` against loopback servers: what the requests it sends look like.

A fake OpenAI-compatible model, a Serper-format search server and a page server, all on
127.0.0.1. The checks read the wire: per-call max_tokens per dataset, the RAG-agent
limits on a QA set, and the 8,000-character page cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.eval_support import prompt_text
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.servers.web import Reply, Request, WebServer, web_server

from search_o1 import markers as mk
from search_o1.cli import cli

SENTENCE = "The Harbour Prize for fiction was first awarded to Mara Quill in 1999."
# About 20,000 characters of numbered (so unique) lines; the sentence that matches the
# snippet starts at 12,000.
FILLER = " ".join(f"Gull note {i} circles the grey water." for i in range(700))
PAGE = FILLER[:12_000] + SENTENCE + " " + FILLER[12_000:20_000]
SNIPPET = "Harbour Prize for fiction first awarded to Mara Quill in 1999"


@pytest.fixture
def site() -> Iterator[WebServer]:
    with web_server({}) as srv:

        def search(req: Request) -> Reply:
            hit = {"title": "Harbour Prize", "link": srv.url("/page"), "snippet": SNIPPET}
            return Reply(body={"organic": [hit]})

        srv.routes["/search"] = search
        srv.routes["/page"] = Reply(body=PAGE, content_type="text/plain; charset=utf-8")
        yield srv


def respond(body: dict[str, Any]) -> str:
    """Search-o1: one search, then an answer. RAG-agent: read the page once, then keep
    searching with new queries (so the limits are what stops it)."""
    text = prompt_text(body)
    if "current search query" in text.lower():
        return "Reading.\n**Final Information**\n\nMara Quill won it."
    instruction, _, chain = text.rpartition("Who first won the Harbour Prize?")
    results = chain.count(mk.END_RESULT)
    if mk.BEGIN_URL in instruction:  # the rag-agent instruction
        if results >= 1 and mk.END_FULL_PAGE not in chain:
            # The last URL listed: ours ("URL: ...") or the paper's JSON ("url": "...").
            url = re.findall(r'(?:URL: |"url": ")([^\s"]+)', chain)[-1]
            return f"Let me read it. {mk.BEGIN_URL}{url}{mk.END_URL}"
        return f"More. {mk.BEGIN_QUERY}harbour prize {results}{mk.END_QUERY}"
    if results:
        return "So \\boxed{Mara Quill}"
    return f"Search. {mk.BEGIN_QUERY}harbour prize winner{mk.END_QUERY}"


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with openai_server(respond, return_stop=False) as srv:
        yield srv


def write_data(root: Path) -> Path:
    data = root / "data"
    (data / "QA_Datasets").mkdir(parents=True)
    (data / "AIME").mkdir()
    rows = [{"id": "n1", "Question": "Who first won the Harbour Prize?", "answer": ["Mara Quill"]}]
    (data / "QA_Datasets" / "nq.json").write_text(json.dumps(rows))
    aime = [{"id": "a1", "Question": "What is 12 + 13?", "answer": "25"}]
    (data / "AIME" / "test.json").write_text(json.dumps(aime))
    return data


DIRECT = ("--method", "direct", "--profile", "paper")
SEARCH_O1 = ("--method", "search-o1", "--profile", "paper")


def run(model: FakeOpenAIServer, site: WebServer, tmp: Path, *args: str) -> dict[str, Any]:
    out = tmp / "run"
    argv = [
        *("eval", "--data-dir", str(write_data(tmp)), "--out", str(out), "--no-progress"),
        *("--base-url", model.url, "--chat-template", "chatml", "--search", "serper"),
        *("--search-endpoint", site.url("/search"), "--allow-private-hosts"),
        *("--cache-path", str(tmp / "cache.sqlite"), *args),
    ]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return json.loads((out / "config.json").read_text())


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", "test-key")


def test_per_call_max_tokens_follow_the_dataset(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    config = run(model, site, tmp_path, "--dataset", "aime24", *DIRECT)
    assert [b["max_tokens"] for b in model.completion_requests] == [32768]
    assert config["settings"]["profile"] == "paper"
    model.requests.clear()
    run(model, site, tmp_path / "n", "--dataset", "nq", *SEARCH_O1)
    bodies = model.completion_requests
    assert len(bodies) == 3  # search, Reason-in-Documents, answer
    assert {b["max_tokens"] for b in bodies} == {20480}  # the reader too
    model.requests.clear()
    config = run(model, site, tmp_path / "o", "--dataset", "nq", *DIRECT, "--paper-model", "other")
    # The paper's direct script sends 32,768 whatever the model (its per-model branch is
    # dead code); the model row still sets the repetition penalty.
    assert [b["max_tokens"] for b in model.completion_requests] == [32768]
    assert config["settings"]["repetition_penalty"] == 1.0
    model.requests.clear()
    run(
        model,
        site,
        tmp_path / "r",
        "--dataset",
        "nq",
        "--method",
        "search-o1",
        "--profile",
        "paper",
        "--paper-model",
        "other",
    )
    assert {b["max_tokens"] for b in model.completion_requests} == {8192}


def test_the_window_comes_from_the_first_8000_characters(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    run(model, site, tmp_path / "ours", "--dataset", "nq", "--method", "search-o1")
    reader = [prompt_text(b) for b in model.completion_requests if "**Final" in prompt_text(b)]
    assert SENTENCE in reader[0]  # ours reads the page past 8,000 characters
    model.requests.clear()
    run(model, site, tmp_path / "paper", "--dataset", "nq", *SEARCH_O1)
    reader = [prompt_text(b) for b in model.completion_requests if "**Final" in prompt_text(b)]
    assert SENTENCE not in reader[0] and PAGE[:5000] in reader[0]


def test_rag_agent_limits_and_the_page_cut_on_a_qa_set(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    run(model, site, tmp_path, "--dataset", "nq", "--method", "rag-agent", "--profile", "paper")
    bodies = model.completion_requests
    assert len(bodies) == 10  # turns
    check, *searches = [r.json() for r in site.requests if r.path == "/search"]
    assert check["num"] == 1  # eval asks the search API once before any item runs
    assert len(searches) == 5 and {s["num"] for s in searches} == {5}  # searches, top-k
    last = prompt_text(bodies[-1])
    page = last[last.rindex(mk.BEGIN_FULL_PAGE) : last.rindex(mk.END_FULL_PAGE)]
    assert PAGE[:8000].strip() in page and PAGE[8000:8100] not in page
    assert "at most 5 times" in prompt_text(bodies[0])


def ask(model: FakeOpenAIServer, site: WebServer, tmp: Path, *args: str) -> None:
    question = "Who first won the Harbour Prize?"
    flags = ["--base-url", model.url, "--chat-template", "chatml", "--search", "serper"]
    flags += ["--search-endpoint", site.url("/search"), "--allow-private-hosts"]
    flags += ["--cache-path", str(tmp / "cache.sqlite"), "--json"]
    result = CliRunner().invoke(cli, ["ask", question, *flags, *args])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("method", ["direct", "rag"])
def test_ask_sends_the_baselines_tokens_as_eval_does(
    method: str, model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    paper = ("--profile", "paper", "--paper-model", "other")
    ask(model, site, tmp_path, "--method", method, *paper)
    # The paper's baseline scripts send 32,768 whatever the model, in ask as in eval.
    assert [b["max_tokens"] for b in model.completion_requests] == [32768]
    model.requests.clear()
    ask(model, site, tmp_path, "--method", "search-o1", *paper)
    assert {b["max_tokens"] for b in model.completion_requests} == {8192}
