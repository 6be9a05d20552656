"""A lone surrogate (a JSON escape such as \\ud800, or a byte that is not UTF-8 in an
argument) in a dataset question, a search reply and a model reply: the eval finishes with
every item saved and the replacements counted, `ask` answers, and `serve` answers 200."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
from tests.e2e.eval_support import EXE
from tests.eval_support import responder
from tests.servers.openai_server import openai_server
from tests.servers.web import Reply, web_server

from search_o1.config import load_settings
from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread

BAD = "\ud800"
QUESTION = f"Who wrote the opera Tosca {BAD}?"
SEEN = QUESTION.replace(BAD, "\ufffd")  # what every later step sees
RETRIEVED = {
    "result": [
        [
            {
                "document": {"id": "d1", "contents": f'"Tosca {BAD}"\nAn opera by Puccini \udfff.'},
                "score": 1.0,
            }
        ]
    ]
}


def model_reply() -> Any:
    plain = responder({SEEN: f"It is \\boxed{{Puccini}} {BAD}", "Plain question?": "\\boxed{x}"})

    def respond(body: dict[str, Any]) -> str:
        return str(plain(body)).replace("Let me look it up.", f"Let me look it up {BAD}.")

    return respond


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(cwd / "idx")}
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_eval_saves_every_item_and_counts_the_repairs(tmp_path: Path) -> None:
    rows = [
        {"id": "s1", "question": QUESTION, "golden_answers": ["Puccini"]},
        {"id": "s2", "question": "Plain question?", "golden_answers": ["x"]},
    ]
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))  # \ud800 as an escape
    with (
        openai_server(model_reply(), return_stop=False) as srv,
        web_server({"/retrieve": Reply(body=RETRIEVED)}) as retriever,
    ):
        done = run(
            *("eval", "--dataset", str(data), "--task", "qa", "--out", "run"),
            *("--base-url", srv.url, "--model", "fake-model", "--chat-template", "chatml"),
            *("--method", "search-o1", "--search", "retriever", "--no-progress"),
            *("--search-endpoint", retriever.url("/retrieve")),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    records = {r["id"]: r for r in map(json.loads, lines)}
    assert set(records) == {"s1", "s2"}
    first = records["s1"]
    assert first["question"] == SEEN and first["prediction"] == "Puccini"
    assert first["replaced"]["dataset"] == 1
    assert first["replaced"]["search"] == 2  # one in the title, one in the text
    assert first["replaced"]["model"] == 2  # the search turn and the answer turn
    # The plain question's own text was fine; its search reply and search turn were not.
    assert records["s2"]["replaced"] == {"dataset": 0, "search": 2, "model": 1}
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["em"] == 1.0


def test_ask_answers_a_question_with_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    # A lone surrogate in argv reaches the program as the byte it escapes (0xed 0xa0 0x80).
    with (
        openai_server(model_reply(), return_stop=False) as srv,
        web_server({"/retrieve": Reply(body=RETRIEVED)}) as retriever,
    ):
        env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
        args = [str(EXE), "ask", QUESTION.replace(BAD, "\udcff"), "--json"]
        args += ["--base-url", srv.url, "--model", "fake-model", "--chat-template", "chatml"]
        args += ["--search", "retriever", "--search-endpoint", retriever.url("/retrieve")]
        done = subprocess.run(args, capture_output=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    result = json.loads(done.stdout.decode("utf-8"))
    assert result["answer"] == "Puccini"


def test_serve_answers_a_question_holding_a_surrogate(tmp_path: Path) -> None:
    plain = responder({SEEN: f"It is \\boxed{{Puccini}} {BAD}"}, search=False)
    with (
        openai_server(lambda body: str(plain(body)), return_stop=False) as srv,
        web_server({"/retrieve": Reply(body=RETRIEVED)}) as retriever,
    ):
        values = {
            "base_url": srv.url,
            "model": "fake-model",
            "chat_template": "chatml",
            "search": "retriever",
            "search_endpoint": retriever.url("/retrieve"),
        }
        with serve_in_thread(create_app(load_settings(values, environ={}))) as url:
            raw = '{"model": "search-o1", "messages": [{"role": "user", "content": '
            raw += json.dumps(QUESTION) + "}]}"
            assert "\\ud800" in raw  # sent as the escape, as a client's JSON encoder would
            headers = {"Content-Type": "application/json"}
            reply = httpx.post(url + "/v1/chat/completions", content=raw, headers=headers)
            found = httpx.post(
                url + "/retrieve", content='{"queries": ["Tosca \\ud800"]}', headers=headers
            )
    assert reply.status_code == 200, reply.text
    assert "Puccini" in reply.json()["choices"][0]["message"]["content"]
    assert found.status_code == 200, found.text
    assert "\ufffd" in json.dumps(found.json(), ensure_ascii=False)


def surrogate_corpus(tmp_path: Path) -> Path:
    """A local corpus whose first document holds a lone surrogate in its title and text,
    written as JSON escapes (as a JSON encoder writes them)."""
    rows = [
        {"id": "t1", "title": f"Tosca {BAD}", "text": "Tosca is an opera by Puccini \udfff."},
        {"id": "a1", "title": "Aida", "text": "Aida is an opera by Verdi."},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "\\ud800" in path.read_text()
    return path


def test_index_build_repairs_and_counts_a_corpus_holding_surrogates(tmp_path: Path) -> None:
    corpus = surrogate_corpus(tmp_path)
    built = run("index", "build", str(corpus), "-o", "ix", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert built.stderr.strip().splitlines() == [
        f"note: 2 characters of {corpus} were not valid text (lone surrogates) and became U+FFFD"
    ]
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["replaced"] == 2
    found = run("index", "search", "ix", "Tosca opera", "-k", "1", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert "Tosca \ufffd (t1)" in found.stdout
    # The JSONL file itself, indexed on the fly and cached, reads the same.
    direct = run("index", "search", str(corpus), "Tosca opera", "-k", "1", cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert "Puccini \ufffd." in direct.stdout


def test_ask_and_eval_search_a_corpus_holding_surrogates(tmp_path: Path) -> None:
    corpus = surrogate_corpus(tmp_path)
    question = "Who wrote the opera Tosca?"
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": question, "golden_answers": ["Puccini"]}))
    plain = responder({question: "It is \\boxed{Puccini}"})
    with openai_server(lambda body: str(plain(body)), return_stop=False) as srv:
        model = ("--base-url", srv.url, "--model", "fake-model", "--chat-template", "chatml")
        asked = run("ask", question, "--json", "--corpus", str(corpus), *model, cwd=tmp_path)
        evaluated = run(
            *("eval", "--dataset", str(data), "--task", "qa", "--out", "run"),
            *("--corpus", str(corpus), "--no-progress", *model),
            cwd=tmp_path,
        )
        assert evaluated.returncode == 0, evaluated.stderr
        # A second run reads the cached index, which keeps each passage's count.
        again = run(
            *("eval", "--dataset", str(data), "--task", "qa", "--out", "run2"),
            *("--corpus", str(corpus), "--no-progress", *model),
            cwd=tmp_path,
        )
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert result["answer"] == "Puccini"
    assert "t1" in [h["id"] for h in result["searches"][0]["hits"]]
    for out in ("run", "run2"):
        record = json.loads((tmp_path / out / "results.jsonl").read_text(encoding="utf-8"))
        assert record["prediction"] == "Puccini"
        assert record["replaced"]["search"] == 2  # the Tosca passage's title and text
    assert again.returncode == 0, again.stderr
