"""Hostile programs through the real sandbox: each attack fails, and is seen to fail on
this side (the file it aimed at is untouched, the server it dialled heard nothing, the
process it left behind is gone). Right programs still pass under the same sandbox."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from search_o1.eval import isolation
from search_o1.eval.sandbox import Limits, TestCase, run_program, run_test, run_tests

# Generous: programs meant to pass must not miss it on a loaded machine.
LIMITS = Limits(timeout_s=10, memory_mb=512, max_procs=8)

pytestmark = pytest.mark.skipif(
    not isolation.find().holds,
    reason=f"no file-system isolation here: {isolation.find().missing}",
)


def attack(code: str) -> tuple[bool, str]:
    """Run `code` as a stdin program whose test passes only if it prints 'ok'."""
    result = run_test(code, TestCase("", "ok\n"), limits=LIMITS)
    return result.passed, result.detail


def test_reading_files_outside_fails(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the gold answer is 42\n")
    repo_file = Path(__file__).resolve().parents[2] / "pyproject.toml"
    for target in (secret, repo_file, Path("/etc/shadow")):
        code = f"data = open({str(target)!r}).read()\nprint('ok' if data else 'empty')\n"
        passed, detail = attack(code)
        assert not passed, target
        assert "FileNotFoundError" in detail or "PermissionError" in detail


def test_writing_outside_fails_and_the_host_is_untouched(tmp_path: Path) -> None:
    elsewhere = Path(tempfile.mkdtemp(dir="/var/tmp")) if os.path.isdir("/var/tmp") else None
    targets = [tmp_path / "owned.txt", Path.home() / f".search-o1-owned-{uuid.uuid4().hex}"]
    if elsewhere is not None:
        targets.append(elsewhere / "owned.txt")
    try:
        for target in targets:
            code = f"open({str(target)!r}, 'w').write('pwned')\nprint('ok')\n"
            attack(code)  # a private /tmp may accept the write; the host must not see it
            assert not target.exists(), target
        for target in targets[1:]:  # no writable folder outside its own, at all
            passed, _ = attack(f"open({str(target)!r}, 'w').write('pwned')\nprint('ok')\n")
            assert not passed
    finally:
        if elsewhere is not None:
            for leftover in elsewhere.iterdir():
                leftover.unlink()
            elsewhere.rmdir()


def test_run_directory_is_invisible_and_unchanged(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    results = run / "results.jsonl"
    results.write_text('{"id": "c1", "metrics": {"pass@1": 0.0}}\n')
    before = results.read_bytes()
    forged = json.dumps({"id": "c2", "metrics": {"pass@1": 1.0}})
    code = f"with open({str(results)!r}, 'a') as f:\n    f.write({forged!r} + '\\n')\nprint('ok')\n"
    passed, detail = attack(code)
    assert not passed and "FileNotFoundError" in detail
    assert results.read_bytes() == before
    listing = run_program(f"import os\nprint(os.path.exists({str(run)!r}))\n", limits=LIMITS)
    assert listing.stdout.strip() == "False"


def test_dev_shm_is_private() -> None:
    name = f"search-o1-hostile-{uuid.uuid4().hex}"
    code = f"open('/dev/shm/{name}', 'wb').write(b'x' * (1 << 20))\nprint('ok')\n"
    attack(code)
    assert not Path("/dev/shm", name).exists()


HOSTILE_KILL = """
import os, signal
for pid in (os.getppid(), EVALUATOR, 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as e:
        print(type(e).__name__)
print('ok')
"""

EVALUATOR_SCRIPT = """
import os, sys
from search_o1.eval.sandbox import Limits, TestCase, run_test
code = sys.argv[1].replace('EVALUATOR', str(os.getpid()))
result = run_test(code, TestCase('', 'ok'), limits=Limits(timeout_s=10, max_procs=8))
print('evaluator alive', result.status)
"""


def test_killing_the_evaluator_fails() -> None:
    # A separate evaluator process, so a successful attack shows as its death, not ours.
    done = subprocess.run(
        [sys.executable, "-c", EVALUATOR_SCRIPT, HOSTILE_KILL],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "evaluator alive" in done.stdout


def _alive(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(pid)
    return found


def test_setsid_survivor_dies_with_the_program() -> None:
    marker = f"{uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 10_000}"
    code = (
        "import os\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "print('ok')\n"
    )
    result = run_test(code, TestCase("", "ok\n"), limits=LIMITS)
    assert result.passed  # the program itself did nothing wrong; its child must not stay
    deadline = time.monotonic() + 5  # killed processes take a moment to leave /proc
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(marker) == []


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    heard: list[bytes] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    heard.append(conn.recv(100))
                except OSError:
                    heard.append(b"")
                conn.sendall(b"hello\n")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], heard
    stop.set()
    thread.join()
    server.close()


def test_network_through_a_fresh_interpreter_fails(listener: tuple[int, list[bytes]]) -> None:
    port, heard = listener
    dial = (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "s.sendall(b'stolen')\nprint(s.recv(100).decode().strip())\n"
    )
    code = (
        "import subprocess, sys\n"
        f"done = subprocess.run([sys.executable, '-c', {dial!r}], capture_output=True, "
        "text=True)\n"
        "print('ok' if done.stdout.strip() == 'hello' else done.stderr[-300:])\n"
    )
    passed, _ = attack(code)
    assert not passed
    assert heard == []


def test_right_programs_still_pass_and_say_how_they_were_isolated() -> None:
    tests = [TestCase("1 2\n", "3\n"), TestCase("20 22\n", "42\n")]
    result = run_tests("a, b = map(int, input().split())\nprint(a + b)\n", tests, limits=LIMITS)
    assert result.passed and result.isolation.startswith("bwrap")
    scratch = (
        "import os, tempfile\n"
        "open('mine.txt', 'w').write('x')\n"
        "with tempfile.NamedTemporaryFile() as f:\n    f.write(b'y')\n"
        "print(open('mine.txt').read() + 'ok'[1:] if os.path.exists('mine.txt') else '')\n"
    )
    assert run_test(scratch, TestCase("", "xk\n"), limits=LIMITS).passed


SECRET = "sk-search-o1-test-secret-4f1c"


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    secret = tmp_path / "key.txt"
    secret.write_text(f"OPENAI_API_KEY={SECRET}\n")
    return secret


# A method the functional test calls (a program that ends first never gets called).
SOLUTION = "class Solution:\n    def same(self, a):\n        return a\n"
FUNCTIONAL = TestCase("1\n", "1", kind="functional")


def test_links_in_its_folder_do_not_leak_files_into_the_results(secret_file: Path) -> None:
    # The evaluator reads back stdout, stderr and a method's result from files next to the
    # program; swapped for links to a secret, they would carry it into results.jsonl.
    swaps = {
        "stdout.txt": "os._exit(0)",
        "stderr.txt": "os._exit(1)",
        "result.json": "os._exit(0)",
    }
    for name, end in swaps.items():
        code = (
            "import os\n"
            f"for name in ({name!r}, 'stdout.txt', 'stderr.txt', 'result.json'):\n"
            "    try:\n        os.unlink(name)\n    except OSError:\n        pass\n"
            "    try:\n"
            f"        os.symlink({str(secret_file)!r}, name)\n"
            "    except OSError:\n        pass\n"
            f"{end}\n{SOLUTION}"
        )
        for test in (TestCase("", "x\n"), FUNCTIONAL):
            result = run_test(code, test, limits=LIMITS)
            assert not result.passed, name
            assert SECRET not in result.detail, (name, test.kind)


EVALUATE_SCRIPT = """
import sys
from search_o1.eval.sandbox import Limits, TestCase, run_test
kind = sys.argv[2]
test = TestCase('1\\n', '1', kind=kind)
result = run_test(sys.argv[1], test, limits=Limits(timeout_s=5, memory_mb=256, max_procs=8))
print('judged', result.status, len(result.detail))
"""


def evaluate_elsewhere(code: str, kind: str) -> subprocess.CompletedProcess[str]:
    """Judge `code` in a separate evaluator process with 512 MB of memory, so that a hang
    or a runaway read shows as that process failing, not this one."""
    return subprocess.run(
        ["prlimit", f"--as={1 << 30}", sys.executable, "-c", EVALUATE_SCRIPT, code, kind],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "trap",
    [
        "os.unlink('stdout.txt'); os.mkfifo('stdout.txt')",  # a pipe nobody writes to
        "os.unlink('result.json'); os.mkfifo('result.json')",
        "os.unlink('result.json'); os.symlink('/dev/zero', 'result.json')",  # endless
        "open('result.json', 'wb').write(b'\\xff\\xfe not UTF-8')",
    ],
)
def test_pipes_endless_files_and_bad_bytes_in_its_folder_are_judged(trap: str) -> None:
    steps = "".join(f"try:\n    {step}\nexcept OSError:\n    pass\n" for step in trap.split("; "))
    code = f"import os\n{steps}os._exit(0)\n{SOLUTION}"
    for kind in ("stdin", "functional"):
        done = evaluate_elsewhere(code, kind)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.startswith("judged "), done.stdout


def test_scratch_space_is_small_everywhere() -> None:
    # /tmp and /dev/shm are memory that no memory limit counts; its folder is disk.
    limits = Limits(timeout_s=10, memory_mb=256, max_procs=8, max_output_mb=4)
    code = (
        "took = []\n"
        "for where in ('', '/tmp/', '/dev/shm/'):\n"
        "    try:\n"
        "        for i in range(12):\n"
        "            open(f'{where}f{i}', 'wb').write(b'x' * (1 << 20))\n"
        "        took.append(where or 'cwd')\n"
        "    except OSError as e:\n"
        "        assert e.errno == 28, e\n"
        "print(' '.join(took) or 'ok')\n"
    )
    result = run_test(code, TestCase("", "ok\n"), limits=limits)
    assert result.passed, result.detail


def test_the_harness_cannot_be_changed() -> None:
    from search_o1.eval.sandbox import HARNESS

    before = HARNESS.read_bytes()
    code = f"open({str(HARNESS)!r}, 'a').write('\\nprint(1)\\n')\nprint('ok')\n"
    passed, detail = attack(code)
    assert not passed and "Read-only file system" in detail
    assert HARNESS.read_bytes() == before


def test_the_evaluator_environment_does_not_reach_the_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("SEARCH_O1_SERPER_API_KEY", SECRET)
    code = (
        "import os\n"
        "seen = str(dict(os.environ))\n"
        "for p in ('/proc/self/environ', '/proc/1/environ'):\n"
        "    try:\n        seen += open(p).read()\n    except OSError:\n        pass\n"
        f"print('ok' if {SECRET!r} not in seen else 'leaked')\n"
    )
    passed, detail = attack(code)
    assert passed, detail
