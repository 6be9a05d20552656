"""The schedules' ordering through the real `search-o1 eval`, on the fixed-latency server.

    python -m bench.schedule_check      # also run by `make bench`, after the main runs

Runs the same 60 questions with `--schedule rounds` and `--schedule async` as a user would
(the CLI in a child process, the retriever search backend, no cache) and compares wall
times. Writes bench/out/second_server.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import free_ports

OUT = Path(__file__).resolve().parent / "out"
ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = 60


def run_eval(url: str, data: Path, out: Path, schedule: str) -> float:
    cli = Path(sys.executable).with_name("search-o1")
    cmd = [str(cli)] if cli.exists() else [sys.executable, "-m", "search_o1.cli"]
    cmd += ["eval", "--dataset", str(data), "--task", "qa", "--out", str(out)]
    cmd += ["--base-url", url + "/v1", "--model", "fixed", "--chat-template", "chatml"]
    cmd += ["--search", "retriever", "--search-endpoint", url + "/retrieve", "--cache", "off"]
    cmd += ["--concurrency", str(QUESTIONS), "--schedule", schedule, "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=out.parent, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"search-o1 eval failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> dict[str, Any]:
    port = free_ports(1)[0]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.fixed_server", "--port", str(port)], cwd=ROOT
    )
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "questions.jsonl"
            rows = [
                {"question": f"Question {i}: which fact?", "answer": ["x"]}
                for i in range(QUESTIONS)
            ]
            data.write_text("".join(json.dumps(r) + "\n" for r in rows))
            walls = {s: run_eval(url, data, Path(tmp) / s, s) for s in ("rounds", "async")}
    finally:
        server.terminate()
        server.wait(timeout=10)
    result = {
        "server": "bench.fixed_server (fixed latency, no batching, no cache)",
        "driver": "search-o1 eval --schedule rounds|async",
        "questions": QUESTIONS,
        "wall_s": {k: round(v, 2) for k, v in walls.items()},
        "async_faster": walls["async"] < walls["rounds"],
        "speedup": round(walls["rounds"] / walls["async"], 2),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "second_server.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
