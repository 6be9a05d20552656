"""The endpoint pool against real local OpenAI-compatible servers.

Continuations stay on their chain's server and extend its previous prompt byte for byte;
first requests spread by load; a dead server is skipped and its chains move elsewhere.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.servers.openai_server import FakeOpenAIServer, openai_server

from search_o1 import markers as mk
from search_o1._http import RetryPolicy
from search_o1.config import load_settings
from search_o1.engine import Engine
from search_o1.errors import BackendError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.llm.pool import PoolLLM
from search_o1.pipeline import build_llm
from search_o1.scheduler import Job, run_all
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit, Message, Prompt, Sampling, Trace

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY
SAMPLING = Sampling()


def chain_reply(body: dict[str, Any]) -> str:
    """Two searches, then an answer; reader prompts get a Final Information block."""
    prompt = str(body["prompt"])
    if "**Final Information**" in prompt.split("<|im_start|>assistant")[0]:
        return "Reading.\n**Final Information**\n\nA fact."
    question = re.search(r"QUESTION-(\d+)", prompt)
    assert question
    turn = prompt.partition("<|im_start|>assistant\n")[2].count(EQ)  # the instruction has some
    if turn < 2:
        return f"Step {turn} of {question.group(1)}. {Q}fact {turn}{EQ} never seen"
    return f"So \\boxed{{{question.group(1)}}}."


@contextmanager
def servers(n: int, respond: Any = chain_reply) -> Iterator[list[FakeOpenAIServer]]:
    with ExitStack() as stack:
        yield [stack.enter_context(openai_server(respond)) for _ in range(n)]


def settings(urls: list[str]):  # type: ignore[no-untyped-def]
    values = {"base_url": urls, "backend": "openai", "chat_template": "chatml"}
    return load_settings({**values, "force_search": False, "retries": 1}, environ={})


def search() -> MemorySearch:
    return MemorySearch(lambda q: [Hit("h", "Title", f"Text about {q}.")])


async def run_questions(llm: Any, n: int) -> list[Trace]:
    engine = Engine(llm, search())
    traces: list[Trace] = []
    jobs = [Job(str(i), f"QUESTION-{i}: what?", "qa") for i in range(n)]
    await run_all(engine, jobs, concurrency=n, on_result=lambda j, t: traces.append(t))
    return traces


def chain_prompts(srv: FakeOpenAIServer) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for body in srv.completion_requests:
        prompt = str(body["prompt"])
        head = prompt.split("<|im_start|>assistant")[0]
        if "**Final Information**" not in head:
            match = re.search(r"QUESTION-(\d+)", head)
            assert match
            out.setdefault(match.group(1), []).append(prompt)
    return out


async def test_continuations_stay_on_their_server_and_extend_the_prompt_exactly() -> None:
    with servers(3) as srvs:
        llm = build_llm(settings([s.url for s in srvs]))
        assert isinstance(llm, PoolLLM)
        try:
            traces = await run_questions(llm, 9)
        finally:
            await llm.aclose()
        assert sorted(t.answer or "" for t in traces) == sorted(str(i) for i in range(9))
        seen: dict[str, int] = {}
        for index, srv in enumerate(srvs):
            for chain, prompts in chain_prompts(srv).items():
                assert chain not in seen, f"chain {chain} moved between servers"
                seen[chain] = index
                assert len(prompts) == 3
                for before, after in itertools.pairwise(prompts):
                    # The previous prompt, what the server wrote (stop string included),
                    # then the inserted result: byte for byte.
                    written = chain_reply({"prompt": before}).split(EQ)[0] + EQ
                    assert after.startswith(before + written + "\n\n" + mk.BEGIN_RESULT)
        assert len(seen) == 9
        assert len(set(seen.values())) == 3  # nine chains spread over all three servers


async def test_first_requests_go_to_the_least_loaded_server() -> None:
    release = threading.Event()

    def slow(body: dict[str, Any]) -> str:
        release.wait(timeout=10)
        return "done \\boxed{1}"

    with servers(4, slow) as srvs:
        pool = PoolLLM([OpenAILLM(s.url, retries=0, chat_template="chatml") for s in srvs])
        try:
            calls = [
                asyncio.ensure_future(
                    pool.complete(
                        CompletionRequest(
                            Prompt((Message("user", f"question {i}"),)),
                            stop=[EQ],
                            max_tokens=50,
                            sampling=SAMPLING,
                        )
                    )
                )
                for i in range(4)
            ]
            for _ in range(200):  # until all four are in flight
                if sum(e.outstanding for e in pool.endpoints) == 4:
                    break
                await asyncio.sleep(0.01)
            assert [e.outstanding for e in pool.endpoints] == [1, 1, 1, 1]
            release.set()
            await asyncio.gather(*calls)
        finally:
            release.set()
            await pool.aclose()
        assert [len(s.completion_requests) for s in srvs] == [1, 1, 1, 1]


async def test_a_dead_server_is_skipped_and_backed_off() -> None:
    with servers(1) as (live,), openai_server(chain_reply) as dead:
        dead_url = dead.url
        dead.stop()  # a port with nobody listening: connection refused
        pool = PoolLLM(
            [
                OpenAILLM(dead_url, retries=0, chat_template="chatml"),
                OpenAILLM(live.url, retries=0, chat_template="chatml"),
            ],
            retry=RetryPolicy(backoff_s=60),
        )
        try:
            traces = await run_questions(pool, 4)
        finally:
            await pool.aclose()
        assert all(t.answer is not None and t.error is None for t in traces)
        down, up = pool.stats()
        assert down["up"] is False and up["up"] is True
        assert down["sent"] >= 1  # tried, then left alone for the back-off period
        assert len(live.completion_requests) == 4 * 3 + 4 * 2  # chains + reader calls


async def test_every_server_down_is_an_error_at_the_first_question() -> None:
    urls = []
    for _ in range(2):
        with openai_server(chain_reply) as srv:
            urls.append(srv.url)  # stopped on leaving: nobody listens there any more
    pool = PoolLLM([OpenAILLM(url, retries=0, chat_template="chatml") for url in urls])
    try:
        with pytest.raises(BackendError, match="cannot reach"):
            await pool.context_length()
    finally:
        await pool.aclose()


def dead_urls(count: int) -> list[str]:
    """URLs where a server was a moment ago and nobody listens any more."""
    urls = []
    for _ in range(count):
        with openai_server(chain_reply) as srv:
            urls.append(srv.url)  # stopped on leaving
    return urls


def test_eval_with_every_server_down_stops_at_the_preflight_naming_each(
    tmp_path: Path,
) -> None:
    """Several --base-url, none answering: the run stops before its first item, with one
    line that names every server and why; a pool with one live server runs."""
    data = tmp_path / "qa.jsonl"
    rows = [{"id": f"q{i}", "question": f"Question {i}?", "golden_answers": ["x"]} for i in (1, 2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    urls = dead_urls(2)
    args = ["eval", "--dataset", str(data), "--task", "qa", "--method", "direct", "--no-progress"]
    args += ["--model", "fake-model", "--chat-template", "chatml", "--retries", "0"]
    exe = Path(sys.executable).with_name("search-o1")

    def run(*servers: str, out: str) -> subprocess.CompletedProcess[str]:
        flags = [f for url in servers for f in ("--base-url", url)]
        return subprocess.run(
            [str(exe), *args, "--out", str(tmp_path / out), *flags],
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = run(*urls, out="dead")
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "no model server answers" in line]
    assert len(lines) == 1 and all(url in lines[0] for url in urls), done.stderr
    assert not (tmp_path / "dead" / "results.jsonl").exists()  # no item ran
    with openai_server(lambda body: "\\boxed{x}") as live:
        done = run(urls[0], live.url, out="live")
    assert done.returncode == 0, done.stderr
    assert "1 of 2 model servers answer" in done.stderr and urls[0] in done.stderr


async def test_a_chain_moves_when_its_server_goes_down() -> None:
    down: set[int] = set()

    def replica(index: int) -> Any:
        def respond(body: dict[str, Any]) -> str:
            if index in down:  # the handler dies: the client sees the connection drop
                raise ConnectionAbortedError("replica down")
            return chain_reply(body)

        return respond

    with openai_server(replica(0)) as a, openai_server(replica(1)) as b:
        srvs = [a, b]
        pool = PoolLLM([OpenAILLM(s.url, retries=0, chat_template="chatml") for s in srvs])
        prompt = Prompt((Message("user", "QUESTION-7: what?"),))
        try:
            first = await pool.complete(
                CompletionRequest(prompt, stop=[EQ], max_tokens=200, sampling=SAMPLING)
            )
            home = next(i for i, s in enumerate(srvs) if s.completion_requests)
            down.add(home)
            prompt = prompt.extend(first.text + EQ + mk.result_block("A fact."))
            again = await pool.complete(
                CompletionRequest(prompt, stop=[EQ], max_tokens=200, sampling=SAMPLING)
            )
        finally:
            await pool.aclose()
        assert again.text.startswith("Step 1 of 7.")
        assert len(srvs[home].completion_requests) == 2  # the first, and the failed one
        assert len(srvs[1 - home].completion_requests) == 1
        assert pool.stats()[home]["up"] is False
