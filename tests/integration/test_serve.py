"""`search-o1 serve` over real HTTP on loopback, driven by the official `openai` client.

The engine behind it is the scripted model and in-memory search (answers are known);
one test runs the whole stack against a fake OpenAI-compatible model server instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from tests.serve_support import ANSWER, FACTS, QUERY, QUESTION, respond_text, scripted_engine
from tests.servers.openai_server import openai_server
from tests.waiting import wait_until

from search_o1 import markers as mk
from search_o1._http import ssl_context
from search_o1.config import load_settings
from search_o1.engine import Engine
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.search.retriever import RetrieverSearch
from search_o1.serve.app import ServeHooks, create_app
from search_o1.serve.background import serve_in_thread
from search_o1.serve.runs import Stats

# One client and one TLS context for every request: a fresh httpx client loads the CA
# roots again (about 45 ms), even for plain http://.
http = httpx.Client(verify=ssl_context())
openai_http = openai.DefaultHttpxClient(verify=ssl_context())  # what the SDK clients share


def teardown_module() -> None:
    # Their keep-alive connections, to servers long stopped.
    http.close()
    openai_http.close()


MESSAGES: list[Any] = [{"role": "user", "content": QUESTION}]


def client(url: str, key: str = "unused") -> openai.OpenAI:
    # max_retries=0: a 429 or 5xx must reach the test, not be retried away.
    return openai.OpenAI(
        base_url=url + "/v1",
        api_key=key,
        max_retries=0,
        timeout=20,
        http_client=openai_http,
    )


@pytest.fixture
def served() -> Iterator[tuple[str, Any]]:
    engine, llm = scripted_engine()
    with serve_in_thread(create_app(engine)) as url:
        yield url, llm


def stats_of(app: Any) -> Stats:
    stats: Stats = app.state.serve.limiter.stats
    return stats


# ---------------------------------------------------------------- chat completions


def test_non_streaming_answer_reasoning_usage_and_searches(served: tuple[str, Any]) -> None:
    url, _ = served
    reply = client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
    message = reply.choices[0].message
    assert message.content == ANSWER
    reasoning = (message.model_extra or {})["reasoning_content"]
    assert f"{mk.BEGIN_QUERY}{QUERY}{mk.END_QUERY}" in reasoning
    assert FACTS in reasoning and reasoning.endswith("\\boxed{Lucca}.")
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    ext = (reply.model_extra or {})["search_o1"]
    assert ext["finish_reason"] == "answered"
    [search] = ext["search_events"]
    assert search["query"] == QUERY and search["refined"] == FACTS
    assert search["hits"][0]["url"] == "https://en.wikipedia.org/wiki/Tosca"


def test_streaming_reasoning_then_search_event_then_answer(served: tuple[str, Any]) -> None:
    url, _ = served
    stream = client(url).chat.completions.create(
        model="search-o1",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    order: list[str] = []
    reasoning, content, events, finish, usage = "", "", [], None, None
    for chunk in stream:
        ext = (chunk.model_extra or {}).get("search_o1")
        if ext is not None:
            events.append(ext)
            order.append(ext["type"])
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        piece = (delta.model_extra or {}).get("reasoning_content")
        if piece:
            reasoning += piece
            order.append("reasoning")
        if delta.content:
            content += delta.content
            order.append("content")
        finish = chunk.choices[0].finish_reason or finish
    assert content == ANSWER and finish == "stop"
    searches = [e for e in events if e["type"] == "search"]
    assert len(searches) == 1
    assert searches[0]["query"] == QUERY and searches[0]["refined"] == FACTS
    assert [h["title"] for h in searches[0]["hits"]] == ["Tosca", "Giacomo Puccini"]
    assert order.index("search_started") < order.index("search") < order.index("content")
    assert order[0] == "reasoning" and "reasoning" in order[order.index("search") :]
    assert reasoning.endswith("\\boxed{Lucca}.")
    assert usage is not None and usage.completion_tokens > 0
    assert events[-1]["type"] == "done" and events[-1]["searches"] == 1


def test_models_list_names_the_pipeline(served: tuple[str, Any]) -> None:
    url, _ = served
    assert [m.id for m in client(url).models.list()] == ["search-o1"]


def test_request_sampling_and_budget_reach_the_model(served: tuple[str, Any]) -> None:
    url, llm = served
    client(url).chat.completions.create(
        model="search-o1", messages=MESSAGES, temperature=0.2, top_p=0.5, max_tokens=300
    )
    sampling, max_tokens = llm.calls[0]
    assert (sampling.temperature, sampling.top_p) == (0.2, 0.5)
    assert max_tokens <= 300


def test_a_request_budget_bounds_the_chain_not_reason_in_documents(
    served: tuple[str, Any],
) -> None:
    url, llm = served
    client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
    own = llm.calls[1][1]  # calls: the query, Reason-in-Documents, the answer
    llm.calls.clear()
    client(url).chat.completions.create(model="search-o1", messages=MESSAGES, max_tokens=300)
    assert len(llm.calls) == 3
    assert llm.calls[0][1] <= 300 and llm.calls[2][1] <= 300
    assert llm.calls[1][1] == own > 300


def test_earlier_turns_become_context(served: tuple[str, Any]) -> None:
    url, llm = served
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Tell me about Tosca."},
        {"role": "assistant", "content": "It is an opera."},
        {"role": "user", "content": QUESTION},
    ]
    client(url).chat.completions.create(model="search-o1", messages=messages)
    first = llm.prompts[0].messages[0].content
    assert "Assistant: It is an opera." in first and f"Question: {QUESTION}" in first


# ---------------------------------------------------------------- errors


def test_unknown_model_is_404(served: tuple[str, Any]) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        client(served[0]).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert e.value.code == "model_not_found"


@pytest.mark.parametrize(
    "body",
    [
        {"model": "search-o1", "messages": []},
        {"model": "search-o1", "messages": [{"role": "system", "content": "hi"}]},
        {"model": "search-o1", "messages": MESSAGES, "temperature": "hot"},
        {"model": "search-o1", "messages": MESSAGES, "max_tokens": 0},
        {"model": "search-o1", "messages": MESSAGES, "method": "magic"},
        {"messages": MESSAGES},
    ],
)
def test_bad_requests_are_400_error_objects(served: tuple[str, Any], body: dict[str, Any]) -> None:
    r = http.post(served[0] + "/v1/chat/completions", json=body)
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "invalid_request_error" and r.json()["error"]["message"]


def test_bad_request_through_the_client(served: tuple[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError):
        client(served[0]).chat.completions.create(model="search-o1", messages=[])


def test_invalid_json_and_unknown_route(served: tuple[str, Any]) -> None:
    url = served[0]
    as_json = {"content-type": "application/json"}
    r = http.post(url + "/v1/chat/completions", content=b"{nope", headers=as_json)
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]
    # Any other declared type is refused unread (a page on another site can send those).
    r = http.post(url + "/v1/chat/completions", content=b"{nope", headers={"content-type": "x"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    r = http.get(url + "/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"model": "search-o1", "max_tokens": 1' + b"0" * 5000 + b"}", "not valid JSON"),
        (b'{"model": "search-o1", "messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "deep"),
        (b'{"model": "search-o1", "messages": ' + b"[" * 900 + b"]" * 900 + b"}", ""),
    ],
)
def test_huge_numbers_and_deep_nesting_are_400s(
    served: tuple[str, Any], body: bytes, why: str
) -> None:
    # A 5,000-digit integer passes the JSON grammar but not Python's int conversion; deep
    # nesting overflows the parser (50,000) or the surrogate scrub after it (900).
    for path in ("/v1/chat/completions", "/retrieve"):
        r = http.post(served[0] + path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400, (path, r.text[:300])
        assert why in r.json()["error"]["message"]


def test_model_server_failure_is_502() -> None:
    engine, _ = scripted_engine(fail=True)
    with serve_in_thread(create_app(engine)) as url:
        with pytest.raises(openai.APIStatusError) as e:
            client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
        assert e.value.status_code == 502 and "connection refused" in e.value.message
        # Streaming: headers are long gone, so the failure is an error chunk.
        with pytest.raises(openai.APIError, match="connection refused"):
            for _ in client(url).chat.completions.create(
                model="search-o1", messages=MESSAGES, stream=True
            ):
                pass


def test_bearer_auth_guards_the_api_but_not_health() -> None:
    engine, _ = scripted_engine()
    with serve_in_thread(create_app(engine, api_key="s3cret")) as url:
        with pytest.raises(openai.AuthenticationError):
            client(url, key="wrong").models.list()
        r = http.post(url + "/retrieve", json={"queries": ["x"]})
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        reply = client(url, key="s3cret").chat.completions.create(
            model="search-o1", messages=MESSAGES
        )
        assert reply.choices[0].message.content == ANSWER
        assert http.get(url + "/health").status_code == 200
        assert http.get(url + "/").status_code == 200  # the page loads, then asks for the key


# ---------------------------------------------------------------- /retrieve, /health


def test_retrieve_speaks_the_flashrag_protocol(served: tuple[str, Any]) -> None:
    url = served[0]
    body = {"queries": ["Tosca", "Puccini"], "topk": 1, "return_scores": True}
    result = http.post(url + "/retrieve", json=body).json()["result"]
    assert len(result) == 2 and len(result[0]) == 1
    first = result[0][0]
    assert first["document"]["id"] == "w1"
    assert first["document"]["contents"] == "Tosca\nTosca is an opera by Giacomo Puccini."
    assert isinstance(first["score"], float)
    bare = http.post(url + "/retrieve", json={"queries": ["Tosca"], "topk": 2}).json()
    assert [d["id"] for d in bare["result"][0]] == ["w1", "w2"]
    assert http.post(url + "/retrieve", json={"queries": ["x"], "topk": 0}).status_code == 400


async def test_the_retriever_backend_reads_our_retrieve(served: tuple[str, Any]) -> None:
    backend = RetrieverSearch(endpoint=served[0] + "/retrieve", retries=0)
    try:
        hits = await backend.search("Tosca", k=2)
    finally:
        await backend.aclose()
    assert [(h.id, h.title) for h in hits] == [("w1", "Tosca"), ("w2", "Giacomo Puccini")]
    assert hits[1].text == "Giacomo Puccini was born in Lucca in 1858."


def test_health_reports_model_and_search(served: tuple[str, Any]) -> None:
    r = http.get(served[0] + "/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["model"]["ok"] and body["search"]["backend"] == "memory"


# ---------------------------------------------------------------- disconnects and limits


def test_stream_disconnect_cancels_the_run() -> None:
    engine, llm = scripted_engine(hold_s=30)
    app = create_app(engine)
    with serve_in_thread(app) as url:
        body = {"model": "search-o1", "messages": MESSAGES, "stream": True}
        with http.stream("POST", url + "/v1/chat/completions", json=body) as r:
            first = next(r.iter_lines())
            assert first.startswith("data: ")
            wait_until(lambda: llm.started == 1, "the model call in flight")
        wait_until(lambda: stats_of(app).cancelled == 1, "the run cancelled")
        assert llm.cancelled == 1  # the model request itself was cancelled
        assert stats_of(app).running == 0 and stats_of(app).queued == 0


def test_non_streaming_disconnect_cancels_the_run() -> None:
    engine, llm = scripted_engine(hold_s=30)
    app = create_app(engine)
    with serve_in_thread(app) as url:
        body = {"model": "search-o1", "messages": MESSAGES}
        with pytest.raises(httpx.ReadTimeout):
            http.post(url + "/v1/chat/completions", json=body, timeout=0.5)
        wait_until(lambda: stats_of(app).cancelled == 1, "the run cancelled")
        assert llm.cancelled == 1 and stats_of(app).running == 0


def test_concurrency_limit_answers_429_and_frees_the_slot() -> None:
    engine, llm = scripted_engine(hold_s=30)
    app = create_app(engine, max_concurrency=1, max_queue=1)
    body = {"model": "search-o1", "messages": MESSAGES, "stream": True}
    with serve_in_thread(app) as url:
        with (
            http.stream("POST", url + "/v1/chat/completions", json=body) as running,
            http.stream("POST", url + "/v1/chat/completions", json=body) as queued,
        ):
            assert running.status_code == 200 and queued.status_code == 200
            wait_until(
                lambda: stats_of(app).running == 1 and stats_of(app).queued == 1,
                "one run going and one queued",
            )
            with pytest.raises(openai.RateLimitError) as e:
                client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
            assert e.value.response.headers["retry-after"] == "1"
            assert e.value.body["type"] == "rate_limit_error"  # type: ignore[index]
        wait_until(lambda: stats_of(app).running == 0 and stats_of(app).queued == 0, "no run left")
        assert stats_of(app).cancelled == 2 and stats_of(app).refused == 1
        llm.hold_s = 0  # slots are free again: the next request runs to the end
        reply = client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
        assert reply.choices[0].message.content == ANSWER


# ---------------------------------------------------------------- the whole stack


def test_openai_client_streams_from_serve_backed_by_a_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Done-when: real OpenAILLM -> a model server we wrote; bm25 over a JSONL corpus."""
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(tmp_path / "indexes"))
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"id": "t1", "title": "Tosca", "text": "Tosca is an opera composed by Giacomo Puccini."},
        {"id": "p1", "title": "Giacomo Puccini", "text": "Puccini was born in Lucca in 1858."},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def model(body: dict[str, Any]) -> str:
        prompt = body.get("prompt") or "".join(m["content"] for m in body["messages"])
        return respond_text(prompt, continuation=prompt)

    with openai_server(model) as srv:
        settings = load_settings(
            {"base_url": srv.url, "corpus": str(corpus), "chat_template": "chatml"},
            environ={},
        )
        with serve_in_thread(create_app(settings)) as url:
            health = http.get(url + "/health").json()
            assert health["status"] == "ok" and health["search"]["documents"] == 2
            assert health["model"]["reachable"] == [srv.url]
            chunks = list(
                client(url).chat.completions.create(
                    model="search-o1", messages=MESSAGES, stream=True
                )
            )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    searches = [
        ext
        for c in chunks
        if (ext := (c.model_extra or {}).get("search_o1")) and ext["type"] == "search"
    ]
    assert content == ANSWER
    assert searches[0]["query"] == QUERY and searches[0]["refined"] == FACTS
    assert searches[0]["hits"][0]["title"] == "Tosca"
    assert any(
        "**Current search query**" in (b.get("prompt") or "") for b in srv.completion_requests
    )


# ---------------------------------------------------------------- view over a real run


async def test_view_reads_a_run_the_eval_harness_wrote(tmp_path: Path) -> None:
    from search_o1.eval.datasets import Dataset
    from search_o1.eval.rows import Item
    from search_o1.eval.runner import RunOptions, run_eval
    from search_o1.serve.view import create_view_app

    engine, _ = scripted_engine()
    items = [Item("q1", QUESTION, ("Lucca",)), Item("q2", "Where was Puccini born?", ("Rome",))]
    dataset = Dataset("fixture", "qa", tmp_path / "fixture.jsonl", items)
    out = tmp_path / "run"
    await run_eval(engine, dataset, RunOptions(method="search-o1", out=out))
    transport = httpx.ASGITransport(app=create_view_app(out))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        run = (await http.get("/api/run")).json()
        assert run["primary"] == dataset.metric and run["name"] == "run"
        rows = {r["id"]: r for r in run["items"]}
        assert rows["q1"]["metrics"][dataset.metric] == 1.0
        assert rows["q2"]["metrics"][dataset.metric] == 0.0
        assert rows["q1"]["finish_reason"] == "answered" and rows["q1"]["n_searches"] == 1
        item = (await http.get(f"/api/run/items/{rows['q1']['index']}")).json()
        step = item["trace"]["steps"][0]
        assert step["search"]["query"] == QUERY and step["search"]["reader"]["refined"] == FACTS
        assert (await http.get("/api/run/items/99")).status_code == 404


def test_a_default_budget_bounds_requests_without_max_tokens_and_each_is_logged() -> None:
    # Serving the embedded model, a request without max_tokens ran for minutes, with
    # nothing printed. The default is stated in /v1/models; the reader keeps its own.
    engine, llm = scripted_engine()
    lines: list[str] = []
    app = create_app(engine, default_max_tokens=200, hooks=ServeHooks(on_request=lines.append))
    with serve_in_thread(app) as url:
        models = http.get(url + "/v1/models").json()
        assert models["data"][0]["search_o1"] == {"default_max_tokens": 200}
        client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
        assert len(llm.calls) == 3  # the query, Reason-in-Documents, the answer
        assert llm.calls[0][1] <= 200 and llm.calls[2][1] <= 200 and llm.calls[1][1] > 200
        llm.calls.clear()
        client(url).chat.completions.create(model="search-o1", messages=MESSAGES, max_tokens=900)
        assert 200 < llm.calls[0][1] <= 900  # the request's own budget wins
    assert lines[0].startswith("GET /v1/models 200 · ")
    chat = lines[1].split(" · ")
    assert chat[:2] == ["POST /v1/chat/completions 200", "searches 1"]
    assert re.fullmatch(r"tokens \d+ generated, \d+ by the reader", chat[2])
    assert chat[3] == "finish answered" and re.fullmatch(r"\d+\.\ds", chat[4])
    assert len(lines) == 3


def test_no_answer_is_said_in_content_not_the_chain_tail() -> None:
    # It used to return the chain's tail ("Question:\nWhat is the capital of France?").
    llm = ScriptedLLM(lambda prompt: "Question:\nWhat is the capital of France?")
    with serve_in_thread(create_app(Engine(llm, MemorySearch({})))) as url:
        reply = client(url).chat.completions.create(model="search-o1", messages=MESSAGES)
    message = reply.choices[0].message
    assert message.content == (
        "No answer: the model gave no final answer. The reasoning is in reasoning_content."
    )
    assert "capital of France" in (message.model_extra or {})["reasoning_content"]
