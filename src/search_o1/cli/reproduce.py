"""`search-o1 reproduce`: the paper's matrix for one table, ours beside the paper's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from search_o1.cli.options import GroupedCommand, option, setting_options, settings_from_flags
from search_o1.cli.progress import progress_bar
from search_o1.cli.run_options import RunFlags, run_options
from search_o1.cli.stopping import run_stoppable
from search_o1.errors import BackendError
from search_o1.eval.paper_tables import METHODS, TABLES
from search_o1.eval.reproduce import SUMMARY, MatrixOptions, run_matrix
from search_o1.text_safety import terminal_text


def _names(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@click.command("reproduce", cls=GroupedCommand)
@option(
    "--table",
    required=True,
    type=click.Choice(list(TABLES)),
    group="run",
    help="reasoning: Table 1 (GPQA, MATH500, AMC23, AIME24, LiveCodeBench); "
    "qa: Table 3 (NQ, TriviaQA, HotpotQA, 2Wiki, MuSiQue, Bamboogle).",
)
@option("--datasets", group="run", help="Only these of the table's sets (a,b).")
@option("--methods", group="run", help=f"Only these methods (a,b of {', '.join(METHODS)}).")
@option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    group="output",
    help="Folder of the cells' run directories and summary.md (rerun into it to resume).",
)
@run_options
@setting_options
def command(
    table: str,
    datasets: str | None,
    methods: str | None,
    out: Path,
    run: RunFlags,
    config_file: Path | None,
    **flags: Any,
) -> None:
    """Run the paper's datasets x methods for one table; print ours beside the paper's.

    Each cell is a normal eval run directory OUT/<dataset>.<method>; rerunning the same
    command resumes every cell. Add --profile paper for the closest reproduction.
    """
    settings = settings_from_flags(config_file, flags)
    opts = MatrixOptions(
        table=table,
        out=out,
        data_dir=run.data_dir,
        datasets=_names(datasets),
        methods=_names(methods),
        limit=run.limit,
        sandbox=run.sandbox,
        argv=sys.argv[1:],
    )
    with progress_bar(enabled=run.progress) as opts.on_progress:
        results = run_stoppable(run_matrix(settings, opts))
    click.echo(terminal_text((out / SUMMARY).read_text(encoding="utf-8")))
    failed = sum(r.failed for r in results)
    if failed:
        raise BackendError("reproduce", f"{failed} items failed; rerun the same command")
