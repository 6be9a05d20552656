"""On a machine without bubblewrap, the tests that run programs through the code sandbox
skip and say why, rather than fail: the suite runs them again here with `bwrap` taken
off PATH (where the sandbox looks for it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Every test that runs a program through the sandbox (the LiveCodeBench judge's too).
SANDBOXED = [
    "tests/unit/test_eval_sandbox.py",
    "tests/unit/test_paper_judge.py",
    "tests/unit/test_eval_datasets.py::test_livecodebench_tests_run_in_the_sandbox",
    "tests/integration/test_sandbox_hostile.py",
    "tests/e2e/test_eval_cli.py::test_code_pass_at_1_through_the_sandbox",
    "tests/e2e/test_eval_attacks.py::test_model_programs_cannot_forge_scores",
]


def _path_without_bwrap(tmp_path: Path) -> str:
    """This interpreter's folder and git, but no bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = shutil.which("git")
    if git:
        (bin_dir / "git").symlink_to(git)
    return os.pathsep.join([str(Path(sys.executable).parent), str(bin_dir)])


def test_sandbox_tests_skip_with_the_reason_where_bubblewrap_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = _path_without_bwrap(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            *SANDBOXED,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " failed" not in summary and " skipped" in summary, summary
    assert "bubblewrap (bwrap) is not installed" in done.stdout
