"""The code sandbox: right answers pass, and hostile programs are contained."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from tests.sandbox_support import needs_isolation

from search_o1.eval import sandbox
from search_o1.eval.sandbox import (
    Limits,
    TestCase,
    isolation_summary,
    outputs_match,
    run_program,
    run_test,
    run_tests,
)

# For programs that end at once: a long limit costs nothing when they do, and a loaded
# machine (a sandbox and an interpreter to start) never makes them miss it.
FAST = Limits(timeout_s=20, memory_mb=512, max_procs=8)
# For programs that never end: the test waits out the whole timeout, so keep it short.
HANG = Limits(timeout_s=0.5, memory_mb=512, max_procs=8)


@needs_isolation
def test_stdin_program_passes_and_fails() -> None:
    code = "n = int(input())\nprint(n * 2)\n"
    assert run_test(code, TestCase("21\n", "42\n"), limits=FAST).passed
    wrong = run_test(code, TestCase("2\n", "5\n"), limits=FAST)
    assert wrong.status == "wrong_answer" and "4" in wrong.detail


@needs_isolation
def test_functional_solution_method_is_called_with_json_args() -> None:
    code = (
        "class Solution:\n"
        "    def helper(self, x):\n        return x\n"
        "    def shortest(self, n: int, queries: List[List[int]]) -> List[int]:\n"
        "        return [n - len(q) for q in queries]\n"
    )
    test = TestCase("5\n[[2, 4], [0, 2, 3]]", "[3, 2]", "functional")
    assert run_test(code, test, limits=FAST).passed
    assert not run_test(code, TestCase("5\n[[1]]", "[3]", "functional"), limits=FAST).passed


@needs_isolation
def test_infinite_loop_is_killed_at_the_timeout() -> None:
    start = time.monotonic()
    result = run_test("while True:\n    pass\n", TestCase("", ""), limits=HANG)
    assert result.status == "timeout"
    assert time.monotonic() - start < HANG.timeout_s + 3


def _children_named(marker: str) -> int:
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                count += marker.encode() in f.read()
        except OSError:
            pass
    return count


def _gone_soon(marker: str, within_s: float = 3.0) -> bool:
    """Killed processes can take a moment to leave /proc; none may outlive that."""
    deadline = time.monotonic() + within_s
    while _children_named(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _children_named(marker) == 0


@needs_isolation
def test_fork_bomb_is_contained_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The harness under a name of this test's own, so sandboxes that other tests run at the
    # same time (in other test workers) are not counted as leftovers.
    harness = tmp_path / "fork_bomb_harness.py"
    shutil.copy(sandbox.HARNESS, harness)
    monkeypatch.setattr(sandbox, "HARNESS", harness)
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    result = run_test(code, TestCase("", ""), limits=HANG)
    assert result.status in ("timeout", "error")
    assert _children_named(str(harness)) == 0 or _gone_soon(str(harness))


@needs_isolation
def test_network_is_refused() -> None:
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('10.255.255.1', 80), timeout=1)\n"
        "    print('connected')\n"
        "except OSError as e:\n"
        "    print('refused', type(e).__name__)\n"
    )
    raw = run_program(code, limits=FAST)
    assert "connected" not in raw.stdout
    assert "refused" in raw.stdout or raw.returncode != 0


@needs_isolation
def test_memory_and_output_limits() -> None:
    hog = run_test("x = bytearray(2 * 1024**3)\nprint('ok')\n", TestCase("", "ok"), limits=FAST)
    assert hog.status == "error" and "MemoryError" in hog.detail
    flood = Limits(timeout_s=3, max_output_mb=1)
    chatty = run_test("while True:\n    print('x' * 1000)\n", TestCase("", ""), limits=flood)
    assert chatty.status in ("error", "timeout")


@needs_isolation
def test_private_working_directory_is_removed() -> None:
    raw = run_program("import os\nprint(os.getcwd())\n", limits=FAST)
    workdir = raw.stdout.strip()
    assert "search-o1-sandbox" in workdir and not os.path.exists(workdir)


@needs_isolation
def test_run_tests_stops_at_first_failure() -> None:
    tests = [TestCase("1\n", "1\n"), TestCase("2\n", "3\n"), TestCase("3\n", "3\n")]
    result = run_tests("print(input())\n", tests, limits=FAST)
    assert not result.passed and len(result.tests) == 2
    assert result.isolation == isolation_summary() and "rlimits" in result.isolation


@pytest.mark.parametrize(
    ("got", "expected", "same"),
    [("1 2\n3\n", "1 2\n3", True), ("1.0000001", "1.0", True), ("yes", "Yes", False)],
)
def test_output_comparison(got: str, expected: str, same: bool) -> None:
    assert outputs_match(got, expected) is same
