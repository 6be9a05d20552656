"""`eval` and `reproduce` take one option set for what they share (items, data, the code
sandbox, progress), declared once, and hand it on the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import click.testing

from search_o1.cli.eval import command as eval_command
from search_o1.cli.reproduce import command as reproduce_command
from search_o1.cli.run_options import RunFlags, run_options

SHARED = {"limit", "data_dir", "sandbox_timeout", "sandbox_memory_mb", "unsafe_sandbox"}


def _options(command: click.Command) -> dict[str, dict[str, Any]]:
    return {p.name or "": p.to_info_dict() for p in command.params}


def test_eval_and_reproduce_declare_the_shared_options_alike() -> None:
    ours, theirs = _options(eval_command), _options(reproduce_command)
    for name in [*SHARED, "progress"]:
        assert ours[name] == theirs[name], name


def test_the_shared_options_arrive_as_one_value(tmp_path: Path) -> None:
    seen: list[RunFlags] = []

    @click.command()
    @run_options
    def probe(run: RunFlags) -> None:
        seen.append(run)

    args = ["--limit", "3", "--data-dir", str(tmp_path), "--sandbox-memory-mb", "512"]
    result = click.testing.CliRunner().invoke(probe, [*args, "--unsafe-sandbox"])
    assert result.exit_code == 0, result.output
    (run,) = seen
    assert (run.limit, run.data_dir, run.progress) == (3, tmp_path, True)
    assert (run.sandbox.memory_mb, run.sandbox.timeout_s, run.sandbox.allow_unisolated) == (
        512,
        6.0,
        True,
    )
