"""LiveCodeBench as the paper's judge runs it: every problem as a stdin program inside
`def code():`, with the judge's stdin patches, run in our sandbox."""

from __future__ import annotations

import doctest

import pytest
from tests.sandbox_support import needs_isolation

from search_o1.eval import paper_judge
from search_o1.eval.paper_judge import judge_output_matches, judge_program, judge_script
from search_o1.eval.paper_scoring import paper_code
from search_o1.eval.sandbox import TestCase

ADD = [TestCase("1 2\n", "3\n"), TestCase("5 6\n", "11\n")]


def test_doctests() -> None:
    result = doctest.testmod(paper_judge)
    assert result.failed == 0 and result.attempted > 0


@needs_isolation
@pytest.mark.parametrize(
    ("program", "passed"),
    [
        ("a, b = map(int, input().split())\nprint(a + b)", True),
        # A final main guard is unwrapped; one that is not last never runs.
        (
            "def main():\n    print(sum(map(int, input().split())))\n"
            "if __name__ == '__main__':\n    main()",
            True,
        ),
        (
            "def main():\n    print(sum(map(int, input().split())))\n"
            "if __name__ == '__main__':\n    main()\nx = 1",
            False,
        ),
        ("import sys\ninput = sys.stdin.readline\nprint(sum(map(int, input().split())))", True),
        ("import sys\nprint(sum(map(int, sys.stdin.read().split())))", True),
        # The judge's sys.stdin is a StringIO: no .buffer.
        ("import sys\nprint(sum(map(int, sys.stdin.buffer.readline().split())))", False),
        # The module-level `stdout` is the real one, which is not judged.
        ("print(sum(map(int, input().split())), file=stdout)", False),
        ("import sys\nsys.stdout.write(str(sum(map(int, input().split()))))", True),
        # exit is disabled by the judge's guard; sys.exit is caught.
        ("print(sum(map(int, input().split())))\nexit()", False),
        ("import sys\nprint(sum(map(int, input().split())))\nsys.exit(0)", True),
        # A LeetCode-style class prints nothing when run as a script.
        ("class Solution:\n    def add(self, a, b):\n        return a + b", False),
        ("print(", False),
    ],
)
def test_programs_pass_or_fail_as_under_the_paper_judge(program: str, passed: bool) -> None:
    result = judge_program(program, ADD)
    assert result.passed is passed, [t.detail for t in result.tests]


def test_the_program_goes_inside_code_with_imports_kept_on_top() -> None:
    script = judge_script("import sys\nfrom math import gcd\nx = 1\nimport os\nprint(x)")
    assert "import sys\nfrom math import gcd\nstdin = sys.stdin\nstdout = sys.stdout\n" in script
    assert "def code():\n\tx = 1\n\timport os\n\tprint(x)\n" in script


def test_comparison_rules() -> None:
    assert judge_output_matches("3\n\n", "3")
    assert judge_output_matches("1\n\n2\n", "1\n2")  # empty lines dropped
    assert judge_output_matches("1.0000001\n2\n", "1\n2.0")  # floats per line, allclose
    assert not judge_output_matches("1 2.0000001", "1 2")  # a line of two numbers is text
    assert not judge_output_matches("Yes", "yes")


def test_an_empty_program_fails_without_running_and_extraction_takes_the_last_block() -> None:
    assert not judge_program("", ADD).passed
    text = "```python\nprint(1)\n```\nthen\n```PYTHON\nprint(2)\n```\n```\nprint(3)\n```"
    assert paper_code(text) == "print(2)"
