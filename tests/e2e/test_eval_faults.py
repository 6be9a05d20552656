"""`search-o1 eval` against a model server that fails every third request with a 200 that
is not a completion: an HTML page, JSON with no choices, a stream cut off midway.

None of those may become an answer. With no retries the faulted items fail, are not
saved, and the run says to rerun; rerunning the same command until it exits 0 ends with
every item answered correctly and counted once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.e2e.eval_support import cli, write_jsonl
from tests.eval_support import responder
from tests.servers.openai_server import openai_server

CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Kenya": "Nairobi",
    "Peru": "Lima",
    "Norway": "Oslo",
    "Egypt": "Cairo",
    "Chile": "Santiago",
    "Spain": "Madrid",
    "Ghana": "Accra",
}
ROWS = [
    {"id": f"c{i}", "question": f"What is the capital of {country}?", "golden_answers": [city]}
    for i, (country, city) in enumerate(CAPITALS.items())
]
KINDS = ("html200", "empty_choices", "truncate")


def every_third(n: int) -> str | None:
    """Requests 2, 5, 8, ... fail, in turn as an HTML 200, empty choices, a cut stream."""
    return KINDS[(n // 3) % 3] if n % 3 == 2 else None


def test_faulty_200s_fail_items_until_a_rerun_answers_each_once(tmp_path: Path) -> None:
    answers = {r["question"]: f"The capital is \\boxed{{{r['golden_answers'][0]}}}." for r in ROWS}
    data = write_jsonl(tmp_path / "capitals.jsonl", ROWS)
    args = [
        "eval",
        "--dataset",
        str(data),
        "--out",
        "run",
        "--method",
        "direct",
        "--model",
        "fake-model",
        "--chat-template",
        "chatml",
        "--no-progress",
        "--task",
        "qa",
        "--retries",
        "0",
        "--concurrency",
        "1",
    ]
    exits = []
    with openai_server(responder(answers), return_stop=False, fault=every_third) as server:
        for _ in range(6):
            done = cli(*args, "--base-url", server.url, cwd=tmp_path)
            exits.append(done.returncode)
            if done.returncode == 0:
                break
            assert "rerun the same command" in done.stderr, done.stderr
            # The failure line names what went wrong, not just how many items failed.
            assert re.search(r"\d+ items? failed \(\d+× \S.*\)", done.stderr), done.stderr
            assert "Traceback" not in done.stderr
    assert exits[0] == 2 and exits[-1] == 0, exits
    rows = [json.loads(line) for line in (tmp_path / "run/results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in ROWS)  # each once
    predictions = {r["id"]: r["prediction"] for r in rows}
    assert predictions == {r["id"]: r["golden_answers"][0] for r in ROWS}
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    assert metrics["n"] == len(ROWS) and metrics["missing"] == 0
    assert metrics["overall"]["em"] == 1.0
