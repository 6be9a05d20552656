"""Ctrl-C as a user presses it: a real `search-o1 eval` process gets SIGINT mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.eval_support import responder
from tests.servers.openai_server import openai_server

EXE = Path(sys.executable).with_name("search-o1")


def _foreground_sigint() -> None:
    # A job a terminal runs in the foreground takes SIGINT; one started in the
    # background (as a test runner may be) inherits it ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_says_so_and_keeps_what_finished(tmp_path: Path) -> None:
    rows = [
        {"id": f"k{i}", "question": f"Question {i} here?", "golden_answers": ["a"]}
        for i in range(20)
    ]
    data = tmp_path / "k.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = responder({r["question"]: "\\boxed{a}" for r in rows})

    def slow(body: dict[str, Any]) -> str:
        time.sleep(0.3)
        return plain(body)

    with openai_server(slow, return_stop=False) as srv:
        args = ["eval", "--dataset", str(data), "--task", "qa", "--out", "run",
                "--concurrency", "1", "--base-url", srv.url, "--model", "fake-model",
                "--chat-template", "chatml", "--method", "direct", "--no-progress"]  # fmt: skip
        env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
        proc = subprocess.Popen(
            [str(EXE), *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, preexec_fn=_foreground_sigint,
        )  # fmt: skip
        results = tmp_path / "run" / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (results.exists() and results.read_text()):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Ctrl-C: stopping" in err
    assert err.strip().splitlines()[-1] == "interrupted; rerun the same command to resume"
    assert "Traceback" not in err and "Aborted" not in err
    saved = results.read_text().splitlines()
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 1 <= metrics["n"] == len(saved) < 20
