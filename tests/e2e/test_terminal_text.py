"""Outside text on the terminal: a model reply, a corpus passage, a search backend's error
and a dataset question holding terminal control sequences (clear the screen, retitle the
window, CSI as one C1 byte) reach the screen as U+FFFD, not as commands; rich's markup
brackets in an error do not crash `ask`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.ask_support import model_flags, run_cli
from tests.e2e.eval_support import cli, evaluate, serve, write_jsonl
from tests.eval_support import responder
from tests.servers.openai_server import openai_server
from tests.servers.web import Reply, web_server

# OSC 0 (window title) ended by ST, ED (clear screen), and CSI as the single C1 code.
HOSTILE = "\x1b]0;owned\x1b\\\x1b[2J\x9b31m"
QUESTION = "Who designed the Glimmer Bridge?"


def assert_inert(out: str) -> None:
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out, out[-500:]


def test_ask_shows_hostile_reply_passages_and_titles_inert(tmp_path: Path) -> None:
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "b1", "title": f"Glimmer{HOSTILE} Bridge", "text": f"Orla Venn{HOSTILE}."},
            {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly."},
        ],
    )
    plain = responder({QUESTION: f"So{HOSTILE} \\boxed{{Orla{HOSTILE} Venn}}"})
    with openai_server(
        lambda body: plain(body).replace("Let me look", f"Let me{HOSTILE} look"),
        return_stop=False,
    ) as srv:
        done = run_cli("ask", QUESTION, *model_flags(srv.url, corpus), tmp_path=tmp_path)
        flags = model_flags(srv.url, corpus)
        asked = run_cli("ask", QUESTION, "--json", *flags, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout + done.stderr)
    shown = "\ufffd]0;owned\ufffd\\\ufffd[2J\ufffd31m"
    assert f"answer: Orla{shown} Venn" in done.stdout
    assert f"Glimmer{shown} Bridge" in done.stdout  # the hit and the source
    assert json.loads(asked.stdout)["answer"] == f"Orla{HOSTILE} Venn"  # data kept as it is
    assert_inert(asked.stdout)  # JSON escapes ESC; C1 and DEL it wrote raw


def test_a_search_error_holding_markup_and_escapes_is_one_inert_line(tmp_path: Path) -> None:
    body = f"bad query [/] {HOSTILE} [/yellow]".encode()
    with (
        serve({QUESTION: "It is \\boxed{Orla Venn}"}) as srv,
        web_server({"/retrieve": Reply(status=400, body=body)}) as retriever,
    ):
        done = run_cli(
            *("ask", QUESTION, *model_flags(srv.url)),
            *("--search", "retriever", "--search-endpoint", retriever.url("/retrieve")),
            tmp_path=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert_inert(done.stdout + done.stderr)
    assert "(failed: retriever: HTTP 400: bad query [/] \ufffd]0;owned" in done.stdout
    assert "answer: Orla Venn" in done.stdout


def test_report_shows_hostile_questions_and_predictions_inert(tmp_path: Path) -> None:
    rows = [{"id": "q1", "question": f"Which{HOSTILE} one?", "golden_answers": ["a"]}]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    for out, answer in (("one", "a"), ("two", f"b{HOSTILE}")):
        with serve({"one?": f"\\boxed{{{answer}}}"}) as srv:
            evaluate(srv.url, tmp_path, str(data), out, "--task", "qa")
    done = cli("report", "one", "two", "--diff", "--all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert "b\ufffd]0;owned" in done.stdout  # the changed prediction is shown, inert
