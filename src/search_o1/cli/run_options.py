"""The options `eval` and `reproduce` share, declared once: which items, where the data
lives, the code sandbox's limits, and the progress display.

A command decorated with `run_options` gets them as one `RunFlags` argument, `run`, so
the two commands cannot drift apart (reproduce once lacked the sandbox's memory limit
and its unsafe switch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from search_o1.cli.options import option
from search_o1.eval.datasets import DATA_DIR_ENV
from search_o1.eval.sandbox import UNSAFE_FLAG, Limits

__all__ = ["RunFlags", "run_options"]


@dataclass(frozen=True)
class RunFlags:
    """The shared options' values: `limit` items per set, the data folder (None: the
    default), the sandbox's limits, and whether progress bars show."""

    limit: int | None
    data_dir: Path | None
    sandbox: Limits
    progress: bool


_OPTIONS = (
    option("--limit", type=int, group="run", help="Only the first N items (of each set)."),
    option(
        "--data-dir",
        type=click.Path(path_type=Path),
        envvar=DATA_DIR_ENV,
        group="run",
        help=f"Where known datasets live (env {DATA_DIR_ENV}).",
        show_default="./data",
    ),
    option(
        "--sandbox-timeout",
        type=float,
        default=6.0,
        group="run",
        help="Seconds per code test of our harness (pass@1_lenient); the paper's judge (pass@1) "
        "gives each test 10.",
    ),
    option(
        "--sandbox-memory-mb", type=int, default=2048, group="run", help="Memory per code test."
    ),
    option(
        UNSAFE_FLAG,
        "unsafe_sandbox",
        is_flag=True,
        group="run",
        help="Run model code even without bubblewrap (it could read and change your files).",
    ),
    option("--progress/--no-progress", default=True, group="output", help="Show progress bars."),
)


def run_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add the shared options to a click command; it receives them as `run: RunFlags`."""

    @functools.wraps(command)
    def with_run(
        *,
        limit: int | None,
        data_dir: Path | None,
        sandbox_timeout: float,
        sandbox_memory_mb: int,
        unsafe_sandbox: bool,
        progress: bool,
        **kwargs: Any,
    ) -> None:
        sandbox = Limits(
            timeout_s=sandbox_timeout, memory_mb=sandbox_memory_mb, allow_unisolated=unsafe_sandbox
        )
        command(run=RunFlags(limit, data_dir, sandbox, progress), **kwargs)

    decorated: Callable[..., None] = with_run
    for decorate in reversed(_OPTIONS):
        decorated = decorate(decorated)
    return decorated
