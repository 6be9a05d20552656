"""`search-o1 reproduce`: the paper's matrix for one table, ours beside the paper's."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import click

from search_o1.cli.options import GroupedCommand, option, setting_options, settings_from_flags
from search_o1.cli.progress import progress_bar
from search_o1.errors import BackendError
from search_o1.eval.datasets import DATA_DIR_ENV
from search_o1.eval.paper_tables import METHODS, TABLES
from search_o1.eval.reproduce import SUMMARY, MatrixOptions, run_matrix
from search_o1.eval.sandbox import Limits


def _names(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@click.command("reproduce", cls=GroupedCommand)
@option("--table", required=True, type=click.Choice(list(TABLES)), group="run",
        help="reasoning: Table 1 (GPQA, MATH500, AMC23, AIME24, LiveCodeBench); "
        "qa: Table 3 (NQ, TriviaQA, HotpotQA, 2Wiki, MuSiQue, Bamboogle).")  # fmt: skip
@option("--datasets", group="run", help="Only these of the table's sets (a,b).")
@option("--methods", group="run", help=f"Only these methods (a,b of {', '.join(METHODS)}).")
@option("--limit", type=int, group="run", help="Only the first N items of each set.")
@option(
    "--data-dir", type=click.Path(path_type=Path), envvar=DATA_DIR_ENV, group="run",
    help=f"Where the datasets live (env {DATA_DIR_ENV}).", show_default="./data",
)  # fmt: skip
@option("--sandbox-timeout", type=float, default=6.0, group="run", help="Seconds per code test.")
@option(
    "--out", "out", required=True, type=click.Path(path_type=Path), group="output",
    help="Folder of the cells' run directories and summary.md (rerun into it to resume).",
)  # fmt: skip
@option("--progress/--no-progress", default=True, group="output", help="Show progress bars.")
@setting_options
def command(
    table: str,
    datasets: str | None,
    methods: str | None,
    limit: int | None,
    data_dir: Path | None,
    sandbox_timeout: float,
    out: Path,
    progress: bool,
    config_file: Path | None,
    **flags: Any,
) -> None:
    """Run the paper's datasets x methods for one table; print ours beside the paper's.

    Each cell is a normal eval run directory OUT/<dataset>.<method>; rerunning the same
    command resumes every cell. Add --profile paper for the closest reproduction.
    """
    settings = settings_from_flags(config_file, flags)
    opts = MatrixOptions(
        table=table, out=out, data_dir=data_dir, datasets=_names(datasets),
        methods=_names(methods), limit=limit,
        sandbox=Limits(timeout_s=sandbox_timeout), argv=sys.argv[1:],
    )  # fmt: skip
    with progress_bar(enabled=progress) as opts.on_progress:
        results = asyncio.run(run_matrix(settings, opts))
    click.echo((out / SUMMARY).read_text(encoding="utf-8"))
    failed = sum(r.failed for r in results)
    if failed:
        raise BackendError("reproduce", f"{failed} items failed; rerun the same command")
