"""LiveCodeBench pass@1 as the paper's judge gives it, run in our sandbox.

The paper scores code with LiveCodeBench's runner called without a function name, so
every problem, LeetCode-style ones included, is run as a stdin/stdout program, 10 s per
test, public tests only. That runner does not run the program as written; it:

- unwraps a final `if __name__ == "__main__":` block (through `ast.unparse`);
- puts every line that does not start with `import ` / `from ` into a function
  `code()`, after `stdin = sys.stdin` / `stdout = sys.stdout`, under a header of
  star-imports (string, re, datetime, collections, ..., sys, json, builtins, typing);
- disables `exit`, `quit` and destructive `os`/`shutil`/`subprocess` functions first;
- calls `code()` with `sys.stdin` a fresh StringIO of the input, `open` mocked to read
  it, and `read`/`readline`/`readlines` of the process's own stdin (which the
  module-level `stdin` name holds) answering with it; captures `sys.stdout` meanwhile;
- compares the captured text with the expected output: stripped text, then line lists
  without empty lines, then every line as a float (numpy's allclose tolerances).

So `sys.stdin.buffer`, writing to the module-level `stdout`, `exit()` and a main guard
that is not the last statement all fail, as they do under the paper's judge. We build
that same program text here (our code, the same rules) and run it with the sandbox's
`run_program`, one process per test; the comparison runs here, outside the sandbox.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence

from search_o1.eval.sandbox import (
    CodeResult,
    Limits,
    TestCase,
    TestResult,
    isolation_summary,
    run_program,
)

__all__ = [
    "JUDGE_LIMITS",
    "JUDGE_TIMEOUT_S",
    "judge_output_matches",
    "judge_program",
    "judge_script",
]

JUDGE_TIMEOUT_S = 10.0  # the paper's `timeout=10`, per test
JUDGE_LIMITS = Limits(timeout_s=JUDGE_TIMEOUT_S)
# The modules of the judge's header, in its order (star-imported, then imported).
_MODULES = (
    "string re datetime collections heapq bisect copy math random statistics itertools "
    "functools operator io sys json builtins typing"
)
# What the judge's reliability guard sets to None before the program is loaded.
_DISABLED = {
    "os": "kill system putenv remove removedirs rmdir fchdir setuid fork forkpty killpg "
    "rename renames truncate replace unlink fchmod fchown chmod chown chroot lchflags "
    "lchmod lchown getcwd chdir",
    "shutil": "rmtree move chown",
    "subprocess": "Popen",
    "builtins": "exit quit help",
}

# Runs first in the sandbox: keep the input, then make the process look like the
# judge's worker (stdin is /dev/null; the real stdout is not judged), then the guard.
_SETUP = """\
import io as _judge_io, os as _judge_os, sys as _judge_sys, traceback as _judge_tb
from unittest import mock as _judge_mock
_judge_inputs = _judge_sys.stdin.read()
_judge_sys.stdin = open(_judge_os.devnull)
_judge_fd = _judge_os.dup(1)
_judge_os.dup2(_judge_os.open(_judge_os.devnull, _judge_os.O_WRONLY), 1)
_judge_write = _judge_os.write
_judge_os.environ["OMP_NUM_THREADS"] = "1"
for _judge_module, _judge_names in {disabled!r}.items():
    for _judge_name in _judge_names.split():
        setattr(__import__(_judge_module), _judge_name, None)
for _judge_module in ("ipdb", "joblib", "resource", "psutil"):
    _judge_sys.modules[_judge_module] = None
__name__ = "tmp_sol"
"""
# Runs last: call `code()` the judge's way; the captured text goes to the saved stdout.
_CALL = """
def _judge_call():
    sys, mock, inputs = _judge_sys, _judge_mock, _judge_inputs
    lines = iter(inputs.split("\\n"))
    real_stdin = sys.stdin
    captured = _judge_io.StringIO()
    captured.close = lambda x: 1  # as the judge's capture: close() with no argument fails
    with mock.patch.object(real_stdin, "read", lambda *a: inputs), \\
            mock.patch.object(real_stdin, "readlines", lambda *a: inputs.split("\\n")), \\
            mock.patch.object(real_stdin, "readline", lambda *a: next(lines)), \\
            mock.patch("sys.stdin", _judge_io.StringIO(inputs)), \\
            mock.patch("builtins.open", mock.mock_open(read_data=inputs)):
        real_stdout, sys.stdout = sys.stdout, captured
        try:
            code()
        except SystemExit:
            pass
        except BaseException:
            sys.stdout = real_stdout
            _judge_tb.print_exc()
            return 1
        finally:
            sys.stdout = real_stdout
    _judge_write(_judge_fd, captured.getvalue().encode("utf-8", "replace"))
    return 0


_judge_sys.exit(_judge_call())
"""


def _unwrap_main(program: str) -> str:
    """A final `if __name__ == "__main__":` block replaced by its body, as the judge does."""
    try:
        body = ast.parse(program).body
        last = body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            return ast.unparse(body[:-1]) + "\n" + ast.unparse(last.body)  # type: ignore[arg-type]
    except Exception:  # the judge keeps the program as it is when this fails
        pass
    return program


def _is_import(line: str) -> bool:
    return line.startswith(("from ", "import "))


def _wrapped(program: str) -> str:
    """Top-level imports stay; every other line goes into `def code():` (tab-indented)."""
    out: list[str] = []
    started = False
    for line in program.split("\n"):
        if not started and _is_import(line):
            out.append(line + "\n")
            continue
        if not started:
            out.append("stdin = sys.stdin\nstdout = sys.stdout\ndef code():\n")
            started = True
        out.append("\t" + line + "\n")
    return "".join(out)


def judge_script(program: str) -> str:
    """The whole script the sandbox runs for one test of `program`."""
    modules = _MODULES.split()
    header = "".join(f"from {m} import *\n" for m in modules)
    header += "".join(f"import {m}\n" for m in modules if m not in ("builtins", "typing"))
    header += "sys.setrecursionlimit(6*10**5)\n"
    setup = _SETUP.format(disabled=_DISABLED)
    return setup + header + _wrapped(_unwrap_main(program)) + _CALL


def _digits(text: str) -> bool:
    return text.isdigit()


def _allclose(got: Sequence[float], expected: Sequence[float]) -> bool:
    """numpy.allclose's default rule: |a - b| <= 1e-8 + 1e-5 * |b|, inf equal to itself."""
    for a, b in zip(got, expected, strict=True):
        if math.isinf(a) or math.isinf(b):
            if a != b:
                return False
        elif not abs(a - b) <= 1e-8 + 1e-5 * abs(b):
            return False
    return True


def _as_floats(got: list[str], expected: list[str]) -> bool:
    if all(_digits(a) and _digits(b) for a, b in zip(got, expected, strict=False)):
        return False  # integers were compared as text already
    try:
        a, b = [float(x) for x in got], [float(x) for x in expected]
    except ValueError:
        return False
    return len(a) == len(b) and _allclose(a, b)


def judge_output_matches(printed: str, expected: str) -> bool:
    """The judge's comparison of what a program printed with the expected output.

    >>> judge_output_matches("3\\n", "3"), judge_output_matches(" 1 2 \\n", "1 2")
    (True, True)
    >>> judge_output_matches("0.3333333\\n", "0.33333333"), judge_output_matches("1 2", "2 1")
    (True, False)
    >>> judge_output_matches("0.5 1\\n", "0.5000001 1")
    False
    """
    lines = printed.splitlines()
    want = expected.strip()
    if "\n".join(lines).strip() == want or "\n".join(s.strip() for s in lines).strip() == want:
        return True
    if lines == [expected]:
        return True
    expected_lines = [x.strip() for x in expected.split("\n") if x]
    if lines == expected_lines:
        return True
    kept = [x for x in lines if x]
    return kept == expected_lines or _as_floats(kept, expected_lines)


def _test(script: str, test: TestCase, limits: Limits) -> TestResult:
    raw = run_program(script, test.input, limits=limits)
    if raw.timed_out:
        return TestResult("timeout", f"no result within {limits.timeout_s:.0f}s", raw.time_s)
    if raw.returncode != 0:
        return TestResult("error", raw.stderr[-2000:] or f"exit code {raw.returncode}", raw.time_s)
    if judge_output_matches(raw.stdout, test.output):
        return TestResult("passed", "", raw.time_s)
    return TestResult("wrong_answer", f"got {raw.stdout[:200]!r}", raw.time_s)


def judge_program(
    program: str, tests: Sequence[TestCase], *, limits: Limits = JUDGE_LIMITS
) -> CodeResult:
    """pass@1 of `program` as the paper's judge: every test as stdin, stop at a failure.

    An empty program (no ```python block) fails without running, as it cannot compile
    in the judge either.
    """
    if not program.strip():
        return CodeResult(False, (), isolation_summary())
    script = judge_script(program)
    results: list[TestResult] = []
    for test in tests:
        results.append(_test(script, test, limits))
        if not results[-1].passed:
            break
    passed = len(results) == len(tests) and all(r.passed for r in results)
    return CodeResult(passed, tuple(results), isolation_summary())
