"""Ctrl-C as a user presses it: a real `search-o1 eval` or `ask` process gets SIGINT (or
SIGTERM) mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.eval_support import EXE, direct_flags, write_jsonl
from tests.eval_support import responder
from tests.servers.openai_server import openai_server
from tests.waiting import wait_until

# What a signal landing inside a task used to leave after the command's last line.
NOISE = ("Traceback", "never retrieved", "Task was destroyed", "Aborted")


def _foreground_sigint() -> None:
    # A job a terminal runs in the foreground takes SIGINT; one started in the
    # background (as a test runner may be) inherits it ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def _eval_mid_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A 20-item eval, four at a time against a slow model, once its first item is saved."""
    rows = [
        {"id": f"k{i}", "question": f"Question {i} here?", "golden_answers": ["a"]}
        for i in range(20)
    ]
    data = write_jsonl(tmp_path / "k.jsonl", rows)
    plain = responder({r["question"]: "\\boxed{a}" for r in rows})

    def slow(body: dict[str, Any]) -> str:
        time.sleep(0.3)
        return plain(body)

    with openai_server(slow, return_stop=False) as srv:
        args = [
            "eval",
            "--dataset",
            str(data),
            "--task",
            "qa",
            "--out",
            "run",
            "--concurrency",
            "1",
            *direct_flags(srv.url),
            "--no-progress",
        ]
        env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
        proc = subprocess.Popen(
            [str(EXE), *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_foreground_sigint,
        )
        results = tmp_path / "run" / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (results.exists() and results.read_text()):
            time.sleep(0.05)
        yield proc, results


def _saved_and_counted(tmp_path: Path, results: Path) -> None:
    saved = results.read_text().splitlines()
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 1 <= metrics["n"] == len(saved) < 20


def test_ctrl_c_exits_130_says_so_and_keeps_what_finished(tmp_path: Path) -> None:
    with _eval_mid_run(tmp_path) as (proc, results):
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Ctrl-C: stopping" in err
    assert err.strip().splitlines()[-1] == "interrupted; rerun the same command to resume"
    assert "Traceback" not in err and "Aborted" not in err
    _saved_and_counted(tmp_path, results)


def _press_until_exit(proc: subprocess.Popen[str], signum: int) -> list[str]:
    """Send `signum` again and again (a key held down) until the process ends; its stderr."""
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read() if proc.stderr else ""))
    reader.start()
    for _ in range(5000):
        if proc.poll() is not None:
            break
        proc.send_signal(signum)
        time.sleep(0.002)
    proc.wait(timeout=60)
    reader.join(timeout=60)
    return err


def test_ctrl_c_pressed_again_and_again_stops_once_with_no_traceback(tmp_path: Path) -> None:
    # Each press after the first used to raise KeyboardInterrupt inside whichever task
    # was running: a traceback, or "Task exception was never retrieved", after the line.
    with _eval_mid_run(tmp_path) as (proc, results):
        err = "".join(_press_until_exit(proc, signal.SIGINT))
    assert proc.returncode == 130, err
    assert err.count("Ctrl-C: stopping") == 1, err
    assert err.strip().splitlines()[-1] == "interrupted; rerun the same command to resume"
    assert not [n for n in NOISE if n in err], err
    _saved_and_counted(tmp_path, results)


@pytest.mark.parametrize(
    ("signum", "name", "line"),
    [(signal.SIGINT, "Ctrl-C", "interrupted"), (signal.SIGTERM, "SIGTERM", "terminated")],
)
def test_ask_stops_on_ctrl_c_and_sigterm_in_one_line(
    tmp_path: Path, signum: signal.Signals, name: str, line: str
) -> None:
    release = threading.Event()

    def held(body: dict[str, Any]) -> str:
        release.wait(timeout=60)  # the model is still thinking when the signal comes
        return "\\boxed{a}"

    with openai_server(held, return_stop=False) as srv:
        args = [
            "ask",
            "What is it?",
            *direct_flags(srv.url),
        ]
        proc = subprocess.Popen(
            [str(EXE), *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_foreground_sigint,
        )
        try:
            wait_until(lambda: srv.completion_requests, "the model being asked")
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=60)
        finally:
            release.set()
    assert proc.returncode == 128 + signum, err
    assert f"{name}: stopping" in err
    assert err.strip().splitlines()[-1] == line
    assert not [n for n in NOISE if n in err], err
