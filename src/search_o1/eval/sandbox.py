"""Run untrusted Python (a model's program) on test cases, in a contained subprocess.

The program runs under bubblewrap (see `isolation`): a root file system that is read-only
but for the program's own empty folder and a private /tmp and /dev/shm, no network, its
own user and PID namespaces (so it can neither signal the evaluator nor leave a process
behind), no capabilities and a new session. Where that cannot be made, model code is
refused unless the caller accepts the risk (`Limits.allow_unisolated`); then only the
weaker layers below stand between the program and the user's files.

Layers kept in both cases, against exhausting the machine:
- resource limits: CPU seconds, address space, file size, process count (RLIMIT_NPROC);
- as root, where RLIMIT_NPROC does not apply, a `pids` cgroup caps the process count;
- the whole process group SIGKILLed at the wall-clock timeout;
- sockets refused inside the interpreter (the harness), a check, not a wall.
Without bubblewrap, `unshare` adds a network + PID namespace where it can.
Output goes to files (not pipes) so RLIMIT_FSIZE bounds it and a chatty program cannot
fill our memory; those files lie outside the program's folder, and the one file it shares
with us (a method's result) is read bounded, as text, never through a link or a pipe.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from search_o1.errors import ConfigError
from search_o1.eval import isolation

HARNESS = Path(__file__).with_name("_harness.py")
_CGROUP_ROOTS = ("/sys/fs/cgroup/pids", "/sys/fs/cgroup")  # cgroup v1, then v2


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 6.0
    memory_mb: int = 2048
    max_procs: int = 16
    max_output_mb: int = 16
    # Run model code even where no file-system isolation can be made (the user accepted
    # that the program may read and write their files).
    allow_unisolated: bool = False


DEFAULT_LIMITS = Limits()
UNSAFE_FLAG = "--unsafe-sandbox"
RESULT = "result.json"  # where the harness writes a called method's return value


class IsolationError(ConfigError):
    """Model code would run without isolation that holds, and nobody accepted that."""


def check_isolation(limits: Limits = DEFAULT_LIMITS) -> isolation.Isolation:
    """The isolation programs will get; raises IsolationError where none holds and
    `limits.allow_unisolated` is off (one line: what is missing, the flag to accept it)."""
    found = isolation.find()
    if not found.holds and not limits.allow_unisolated:
        raise IsolationError(
            f"refusing to run model code: {found.missing}; or pass {UNSAFE_FLAG} to run it "
            "with resource limits only (it could then read and change your files)"
        )
    return found


@dataclass(frozen=True)
class TestCase:
    __test__ = False  # not a pytest class, despite the name

    input: str
    output: str
    kind: Literal["stdin", "functional"] = "stdin"


@dataclass(frozen=True)
class TestResult:
    __test__ = False

    status: Literal["passed", "wrong_answer", "timeout", "error"]
    detail: str = ""
    time_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class CodeResult:
    passed: bool
    tests: tuple[TestResult, ...] = field(default_factory=tuple)
    isolation: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "isolation": self.isolation,
            "tests": [
                {"status": t.status, "detail": t.detail, "time_s": t.time_s} for t in self.tests
            ],
        }


@dataclass(frozen=True)
class _Raw:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    time_s: float


@functools.cache
def _unshare_prefix() -> tuple[str, ...]:
    """The `unshare` invocation this machine allows (user+net+pid namespaces), or ()."""
    exe = shutil.which("unshare")
    if exe is None:
        return ()
    for flags in (("-rnpf", "--kill-child"), ("-rn",)):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run([exe, *flags, "true"], capture_output=True, timeout=10)
            if done.returncode == 0:
                return (exe, *flags)
    return ()


def _make_cgroup(max_procs: int) -> Path | None:
    """A fresh pids cgroup capped at `max_procs`, when we may create one (root)."""
    if os.geteuid() != 0:
        return None
    for root in _CGROUP_ROOTS:
        base = Path(root)
        if not (base / "cgroup.procs").exists():
            continue
        path = base / f"search-o1-sandbox-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(max_procs))
            return path
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
    return None


def _remove_cgroup(path: Path | None) -> None:
    if path is None:
        return
    for _ in range(50):  # members take a moment to disappear after SIGKILL
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.02)


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def _preexec(limits: Limits, cgroup: Path | None, nproc: int) -> Callable[[], None]:
    def setup() -> None:
        # Runs in the child between fork and exec: only async-signal-tolerant work here.
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        mem = limits.memory_mb * 1024 * 1024
        cpu = math.ceil(limits.timeout_s) + 1
        out = limits.max_output_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (out, out))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # RLIMIT_NPROC counts all of this user's processes, so allow what exists already.
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return setup


def isolation_summary() -> str:
    """Which layers this machine gives the sandbox, e.g. 'bwrap+rlimits+cgroup', or
    'unisolated:rlimits+netns+pidns' where no bubblewrap could be used."""
    if isolation.find().holds:
        parts = ["bwrap", "rlimits"]
    else:
        prefix = _unshare_prefix()
        parts = ["unisolated:rlimits", "netns" if prefix else "socket-refusal"]
        if "-rnpf" in prefix:
            parts.append("pidns")
    if os.geteuid() == 0 and any(Path(r, "cgroup.procs").exists() for r in _CGROUP_ROOTS):
        parts.append("cgroup")
    return "+".join(parts)


def _env(workdir: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": workdir,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
    }


@dataclass(frozen=True)
class _Folder:
    """Where one run of a program lives: `work` is the program's own folder (all it
    sees of ours); `io` holds its stdin, stdout and stderr files, out of its reach."""

    work: Path
    io: Path

    @classmethod
    def make(cls, root: str) -> _Folder:
        folder = cls(Path(root, "work"), Path(root, "io"))
        folder.work.mkdir()
        folder.io.mkdir()
        return folder

    def put(self, name: str, text: str) -> None:
        (self.work / name).write_text(text, encoding="utf-8")


def _command(args: Sequence[str], folder: _Folder, limits: Limits) -> list[str]:
    """The harness command line, inside bubblewrap where it holds (else refused, or the
    weaker unshare layers when the caller accepted the risk)."""
    found = check_isolation(limits)
    harness = str(HARNESS)  # read now: tests point it at a copy of their own
    if found.bwrap is not None:
        files = sorted(str(f) for f in folder.work.iterdir())
        wrap = isolation.bwrap_args(
            found.bwrap,
            str(folder.work),
            readonly=[harness],
            inputs=[f for f in files if not f.endswith(RESULT)],
            outputs=[f for f in files if f.endswith(RESULT)],
            scratch_mb=limits.max_output_mb,
        )
        return [*wrap, isolation.interpreter(), "-I", harness, *args]
    return [*_unshare_prefix(), sys.executable, "-I", harness, *args]


def _execute(args: Sequence[str], stdin: str, folder: _Folder, limits: Limits) -> _Raw:
    """Run the harness with `args` in `folder.work`; kill everything at the timeout."""
    io = folder.io
    (io / "stdin.txt").write_text(stdin, encoding="utf-8")
    cmd = _command(args, folder, limits)
    cgroup = _make_cgroup(limits.max_procs)
    nproc = _user_process_count() + limits.max_procs
    start = time.monotonic()
    try:
        with (
            open(io / "stdin.txt", "rb") as fin,
            open(io / "stdout.txt", "wb") as fout,
            open(io / "stderr.txt", "wb") as ferr,
        ):
            proc = subprocess.Popen(
                cmd,
                stdin=fin,
                stdout=fout,
                stderr=ferr,
                cwd=folder.work,
                env=_env(str(folder.work)),
                start_new_session=True,  # its own process group, killed as one
                preexec_fn=_preexec(limits, cgroup, nproc),
            )
            timed_out = False
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # also reaps leftovers of a clean exit
            proc.wait()
    finally:
        _remove_cgroup(cgroup)
    elapsed = time.monotonic() - start
    out, err = (read_untrusted(io / name) or "" for name in ("stdout.txt", "stderr.txt"))
    return _Raw(proc.returncode, out, err, timed_out, elapsed)


def read_untrusted(path: Path, limit: int = 1 << 20) -> str | None:
    """At most `limit` bytes of a file a program may have tampered with, as text (bad
    UTF-8 replaced), or None when it is missing, empty, or not a plain file: a link is
    not followed (to a secret file, or /dev/zero) and a pipe is not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(limit)
    return data.decode("utf-8", errors="replace") if data else None


def run_program(code: str, stdin: str = "", *, limits: Limits = DEFAULT_LIMITS) -> _Raw:
    """Run `code` as a script with `stdin`; what it printed, its exit code, whether it timed out."""
    with tempfile.TemporaryDirectory(prefix="search-o1-sandbox-") as root:
        folder = _Folder.make(root)
        folder.put("solution.py", code)
        return _execute(["stdin", "solution.py"], stdin, folder, limits)


def _lines(text: str) -> list[str]:
    lines = [ln.strip() for ln in text.strip().splitlines()]
    return [ln for ln in lines if ln]


def _close(a: str, b: str) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    except ValueError:
        return False


def outputs_match(got: str, expected: str) -> bool:
    """Judge-style comparison: line by line, whitespace-insensitive, floats to 1e-6.

    >>> outputs_match("3 \\n\\n", "3\\n"), outputs_match("0.3333333", "0.33333333")
    (True, True)
    >>> outputs_match("1", "2")
    False
    """
    a, b = _lines(got), _lines(expected)
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for la, lb in zip(a, b, strict=True):
        ta, tb = la.split(), lb.split()
        if len(ta) != len(tb) or not all(
            x == y or _close(x, y) for x, y in zip(ta, tb, strict=True)
        ):
            return False
    return True


def _values_match(got: Any, expected: Any) -> bool:
    if isinstance(got, float) or isinstance(expected, float):
        return (
            isinstance(got, int | float)
            and isinstance(expected, int | float)
            and math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-6)
        )
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(map(_values_match, got, expected))
    return bool(got == expected)


def _judge(raw: _Raw, expected: str, result: str | None) -> TestResult:
    if raw.timed_out:
        return TestResult(
            "timeout", f"no result within the time limit ({raw.time_s:.1f}s)", raw.time_s
        )
    if raw.returncode != 0:
        return TestResult("error", raw.stderr[-2000:] or f"exit code {raw.returncode}", raw.time_s)
    if result is None:
        ok = outputs_match(raw.stdout, expected)
    else:
        try:
            ok = _values_match(json.loads(result), json.loads(expected))
        except json.JSONDecodeError:
            ok = result.strip() == expected.strip()
    detail = "" if ok else f"got {(result if result is not None else raw.stdout)[:200]!r}"
    return TestResult("passed" if ok else "wrong_answer", detail, raw.time_s)


def run_test(
    code: str, test: TestCase, *, limits: Limits = DEFAULT_LIMITS, method: str | None = None
) -> TestResult:
    """Run one test case: stdin/stdout, or a `class Solution` method called with JSON args."""
    with tempfile.TemporaryDirectory(prefix="search-o1-sandbox-") as root:
        folder = _Folder.make(root)
        folder.put("solution.py", code)
        if test.kind == "stdin":
            raw = _execute(["stdin", "solution.py"], test.input, folder, limits)
            return _judge(raw, test.output, None)
        folder.put("args.txt", test.input)
        folder.put(RESULT, "")  # made here: the harness writes into this very file
        args = ["functional", "solution.py", "args.txt", RESULT, *([method] if method else [])]
        raw = _execute(args, "", folder, limits)
        result = read_untrusted(folder.work / RESULT)
        if result is None and raw.returncode == 0 and not raw.timed_out:
            return TestResult("error", "the call returned no result", raw.time_s)
        return _judge(raw, test.output, result)


def run_tests(
    code: str,
    tests: Sequence[TestCase],
    *,
    limits: Limits = DEFAULT_LIMITS,
    method: str | None = None,
) -> CodeResult:
    """Run tests in order, stopping at the first failure (pass@1 needs all of them)."""
    results: list[TestResult] = []
    for test in tests:
        result = run_test(code, test, limits=limits, method=method)
        results.append(result)
        if not result.passed:
            break
    passed = bool(tests) and len(results) == len(tests) and all(r.passed for r in results)
    return CodeResult(passed, tuple(results), isolation_summary())
