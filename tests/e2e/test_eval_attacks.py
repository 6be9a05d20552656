"""`search-o1 eval` against what goes wrong or is hostile around it: model programs that
try to forge scores, a machine without the sandbox, SIGTERM, a second eval into the same
run, and a disk that fills mid-run. Each ends in one line with nothing lost, and a rerun
completes."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.eval_support import EXE, can_mount_tmpfs, cli, evaluate, serve, write_jsonl
from tests.eval_support import responder
from tests.servers.openai_server import openai_server
from tests.servers.web import Reply, web_server
from tests.waiting import wait_until

from search_o1.eval import isolation

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"


def forger(run: Path) -> str:
    """A program that tries every way of scoring itself and its neighbour 1.0."""
    forged = [json.dumps({"id": i, "metrics": {"pass@1": 1.0, "valid": 1.0}}) for i in "bc"]
    return (
        "import os\n"
        f"with open({str(run / 'results.jsonl')!r}, 'a') as f:\n"
        f"    f.write({forged[0]!r} + '\\n' + {forged[1]!r} + '\\n')\n"
        f"open({str(run / 'metrics.json')!r}, 'w').write('{{}}')\n"
        "print('ok')\n"
    )


def code_rows() -> list[dict[str, Any]]:
    tests = json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}])
    forge_tests = json.dumps([{"input": "", "output": "ok\n", "testtype": "stdin"}])
    return [
        {"id": "a", "Question": "Add them.", "difficulty": "easy", "public_test_cases": tests},
        {"id": "b", "Question": "Add, too.", "difficulty": "easy", "public_test_cases": tests},
        {"id": "c", "Question": "Say ok.", "difficulty": "easy", "public_test_cases": forge_tests},
    ]


@pytest.mark.skipif(not isolation.find().holds, reason=f"{isolation.find().missing}")
def test_model_programs_cannot_forge_scores(tmp_path: Path) -> None:
    data = tmp_path / "lcb.json"
    data.write_text(json.dumps(code_rows()))
    run = tmp_path / "c"
    answers = {
        "Add them.": f"```python\n{ADD}```",
        "Add, too.": f"```python\n{WRONG}```",
        "Say ok.": f"```python\n{forger(run)}```",
    }
    with serve(answers) as srv:
        m, _ = evaluate(srv.url, tmp_path, str(data), "c", "--task", "code", "--concurrency", "1")
    assert m["overall"]["pass@1"] == pytest.approx(1 / 3)
    lines = (run / "results.jsonl").read_text().splitlines()
    records = {r["id"]: r for r in map(json.loads, lines)}
    assert len(lines) == 3 and set(records) == {"a", "b", "c"}
    assert [records[i]["metrics"]["pass@1"] for i in "abc"] == [1.0, 0.0, 0.0]
    assert "FileNotFoundError" in records["c"]["code_result"]["tests"][0]["detail"]
    config = json.loads((run / "config.json").read_text())
    assert config["run"]["sandbox"]["isolation"].startswith("bwrap")


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH holding this interpreter's tools and the basics, but no bwrap or unshare."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git",):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return f"{EXE.parent}{os.pathsep}{bin_dir}"


def test_without_isolation_model_code_is_refused_unless_accepted(tmp_path: Path) -> None:
    data = tmp_path / "lcb.json"
    data.write_text(json.dumps(code_rows()[:1]))
    env = {**os.environ, "PATH": _path_without_bwrap(tmp_path)}
    args = [str(EXE), "eval", "--dataset", str(data), "--task", "code", "--out", "run"]
    args += ["--model", "fake-model", "--chat-template", "chatml", "--method", "direct"]
    with serve({"Add them.": f"```python\n{ADD}```"}) as srv:
        args += ["--base-url", srv.url, "--no-progress"]
        refused = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert refused.returncode == 2
        line = refused.stderr.strip()
        assert len(line.splitlines()) == 1
        assert "bubblewrap" in line and "--unsafe-sandbox" in line
        assert srv.completion_requests == []  # refused before the model was asked
        assert not (tmp_path / "run" / "results.jsonl").exists()
        accepted = subprocess.run(
            [*args, "--unsafe-sandbox"], capture_output=True, text=True, env=env, cwd=tmp_path
        )
    assert accepted.returncode == 0, accepted.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["run"]["sandbox"]["isolation"].startswith("unisolated:")
    assert config["run"]["sandbox"]["allow_unisolated"] is True
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["pass@1"] == 1.0


def qa_rows(n: int, *, pad: int = 0) -> list[dict[str, Any]]:
    filler = " Context:" + " lorem" * pad if pad else ""
    return [
        {
            "id": f"k{i}",
            "question": f"Question number {i} here?{filler}",
            "golden_answers": [f"a{i}"],
        }
        for i in range(n)
    ]


@contextlib.contextmanager
def gated_server(rows: list[dict[str, Any]], *, free: int) -> Iterator[tuple[Any, threading.Event]]:
    """A model server that answers `free` requests, then holds each reply until the
    test opens the gate (so a run is surely still going while the test acts on it)."""
    plain = responder({r["question"]: f"\\boxed{{a{i}}}" for i, r in enumerate(rows)})
    gate = threading.Event()
    answered = itertools.count()

    def gated(body: dict[str, Any]) -> str:
        if next(answered) >= free:
            gate.wait(timeout=60)
        return plain(body)

    with openai_server(gated, return_stop=False) as srv:
        try:
            yield srv, gate
        finally:
            gate.set()


def eval_args(data: Path, url: str, out: str = "run") -> list[str]:
    return [
        *("eval", "--dataset", str(data), "--task", "qa", "--out", out, "--concurrency", "1"),
        *("--base-url", url, "--model", "fake-model", "--chat-template", "chatml"),
        *("--method", "direct", "--no-progress"),
    ]


def wait_for_lines(path: Path, n: int) -> None:
    def enough() -> bool:
        return path.exists() and len(path.read_text().splitlines()) >= n

    wait_until(enough, f"{path} holding {n} lines")


def wait_for_requests(srv: Any, n: int) -> None:
    """Until the server has received `n` completion requests (a held one included)."""
    wait_until(lambda: len(srv.completion_requests) >= n, f"{n} completion requests")


def test_sigterm_stops_like_ctrl_c_and_the_rerun_completes(tmp_path: Path) -> None:
    rows = qa_rows(8)
    data = write_jsonl(tmp_path / "k.jsonl", rows)
    results = tmp_path / "run" / "results.jsonl"
    with gated_server(rows, free=2) as (srv, gate):
        args = eval_args(data, srv.url)
        proc = subprocess.Popen(
            [str(EXE), *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for_lines(results, 2)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 143, stderr
        assert stderr.strip().splitlines()[-1] == "terminated; rerun the same command to resume"
        assert "Traceback" not in stderr
        done = len(results.read_text().splitlines())
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert metrics["n"] == done and metrics["missing"] == 8 - done
        gate.set()
        again = cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"resumed {done}" in again.stdout
    ids = [json.loads(x)["id"] for x in results.read_text().splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in rows)


def test_a_second_eval_into_the_same_run_is_refused(tmp_path: Path) -> None:
    rows = qa_rows(6)
    data = write_jsonl(tmp_path / "k.jsonl", rows)
    results = tmp_path / "run" / "results.jsonl"
    with gated_server(rows, free=1) as (srv, gate):
        args = eval_args(data, srv.url)
        first = subprocess.Popen(
            [str(EXE), *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for_lines(results, 1)
        # The first run's next request is held at the gate; count it in before the second
        # run starts, or it would look like the second run's.
        wait_for_requests(srv, 2)
        asked = len(srv.completion_requests)
        second = cli(*args, cwd=tmp_path)
        assert len(srv.completion_requests) == asked  # the second one asked the model nothing
        gate.set()
        _, err = first.communicate(timeout=120)
    assert second.returncode == 2
    assert second.stderr.strip().splitlines() == [
        f"error: run is being written by another eval (pid {first.pid}); "
        "wait for it to finish, or pass another --out"
    ]
    assert first.returncode == 0, err
    ids = [json.loads(x)["id"] for x in results.read_text().splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # each item exactly once


FULL_DISK_SCRIPT = """
set -u
mount -t tmpfs -o size=48k tmpfs "$DISK"
cd "$WORK"
"$EXE" "$@" > first.out 2> first.err; echo $? > first.rc
cp -r "$DISK/run" "$WORK/after-full"
mount -o remount,size=4m "$DISK"
"$EXE" "$@" > second.out 2> second.err; echo $? > second.rc
cp -r "$DISK/run" "$WORK/after-rerun"
"""


@pytest.mark.skipif(bool(can_mount_tmpfs()), reason=can_mount_tmpfs() or "-")
def test_a_full_disk_mid_run_ends_in_one_line_and_the_rerun_completes(tmp_path: Path) -> None:
    # A real full file system: a 48 KB tmpfs in a private mount namespace holds the run;
    # items of ~5 KB each fill it part-way through. Then it grows and the rerun completes.
    rows = qa_rows(16, pad=800)
    data = write_jsonl(tmp_path / "k.jsonl", rows)
    disk = tmp_path / "disk"
    disk.mkdir()
    with gated_server(rows, free=len(rows) * 2) as (srv, _):
        args = eval_args(data, srv.url, out=str(disk / "run"))
        env = {**os.environ, "DISK": str(disk), "WORK": str(tmp_path), "EXE": str(EXE)}
        subprocess.run(
            ["unshare", "-m", "sh", "-c", FULL_DISK_SCRIPT, "sh", *args],
            env=env,
            check=True,
            timeout=120,
        )
    first_err = (tmp_path / "first.err").read_text().strip()
    assert (tmp_path / "first.rc").read_text().strip() == "2", first_err
    assert len(first_err.splitlines()) == 1 and "Traceback" not in first_err
    assert "the disk is full" in first_err and "rerun the same command to resume" in first_err
    after = tmp_path / "after-full"
    saved = (after / "results.jsonl").read_bytes()
    assert saved.endswith(b"\n") and 0 < len(saved.splitlines()) < len(rows)  # no torn line
    assert not list(after.glob("*.tmp"))
    assert (tmp_path / "second.rc").read_text().strip() == "0", (
        tmp_path / "second.err"
    ).read_text()
    rerun = tmp_path / "after-rerun"
    ids = [json.loads(x)["id"] for x in (rerun / "results.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in rows)
    assert json.loads((rerun / "metrics.json").read_text())["overall"]["em"] == 1.0


def test_no_secret_of_the_command_line_lands_in_the_run(tmp_path: Path) -> None:
    # URLs carry secrets too: user:password@ and ?token= in --base-url and
    # --search-endpoint reached config.json (its argv copy was not scrubbed at all).
    rows = [{"id": "a", "question": "Who designed the Glimmer Bridge?", "golden_answers": ["x"]}]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    found = {"result": [[{"document": {"id": "d1", "contents": '"T"\nText.'}, "score": 1.0}]]}
    with (
        serve({"Glimmer": "\\boxed{x}"}) as srv,
        web_server({"/retrieve": Reply(body=found)}) as retriever,
    ):
        base = srv.url.replace("http://", "http://user:sekret-pass@")
        endpoint = retriever.url("/retrieve?token=sekret-token&k=1")
        endpoint = endpoint.replace("http://", "http://u2:sekret-two@")
        done = cli(
            *("eval", "--dataset", str(data), "--task", "qa", "--out", "run"),
            *("--base-url", base, "--model", "fake-model", "--chat-template", "chatml"),
            *("--method", "search-o1", "--search", "retriever"),
            f"--search-endpoint={endpoint}",
            "--no-progress",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    for path in (tmp_path / "run").iterdir():
        text = path.read_text(errors="replace")
        assert "sekret" not in text, path.name
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (
        f"--search-endpoint={retriever.url('/retrieve')}?token=REDACTED&k=1"
        in (config["run"]["argv"])
    )
    assert config["settings"]["search_endpoint"].endswith("?token=REDACTED&k=1")
