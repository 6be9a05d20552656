"""`search-o1 eval`: run a benchmark with one method into a run directory (resumable)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from search_o1.cli.options import (
    GroupedCommand,
    option,
    replay_note,
    setting_options,
    settings_from_flags,
)
from search_o1.cli.progress import progress_bar
from search_o1.cli.run_options import RunFlags, run_options
from search_o1.cli.stopping import run_stoppable
from search_o1.config import Settings
from search_o1.engine import get_method, has_tools_mode, method_names
from search_o1.errors import BackendError, ConfigError
from search_o1.eval.datasets import (
    Dataset,
    expected_files,
    load_dataset,
    parse_fields,
)
from search_o1.eval.runner import RunOptions, RunOutcome, check_resume, preflight, run_eval
from search_o1.pipeline import open_pipeline
from search_o1.profiles import resolve
from search_o1.text_safety import terminal_text


def settings_for(dataset: Dataset, settings: Settings, method: str) -> Settings:
    """The dataset's task, and the paper's values for this cell where nobody gave one."""
    return resolve(settings, dataset=dataset.name, task=dataset.task, method=method)


def _known_table() -> str:
    lines = ["\b", "Known datasets (files under --data-dir; the first found wins):"]
    for name, splits in expected_files().items():
        for split, files in splits.items():
            lines.append(f"  {name:<14}{split:<9}{' | '.join(files)}")
    return "\n".join(lines)


@click.command("eval", cls=GroupedCommand, epilog=_known_table())
@option(
    "--dataset",
    required=True,
    group="run",
    help="A known name (gpqa, math500, hotpotqa, ...) or a file.",
)
@option(
    "--method",
    type=click.Choice(method_names()),
    default="search-o1",
    group="run",
    help="search-o1, or one of the paper's baselines.",
)
@option(
    "--split",
    group="run",
    help="gpqa: diamond|main|extended; QA sets: test|paper|native; livecodebench: "
    "test|v1-v4 (the paper's subset: releases v1-v4 dated from 2024-08-01).",
)
@option("--fields", group="run", help="Field mapping for other files: question=q,answer=a,id=qid.")
@option(
    "--backoff",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    group="run",
    help="A direct run of the same dataset: invalid answers take its answer (own column).",
)
@option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    group="output",
    help="Run directory (rerun into it to resume).",
)
@run_options
@setting_options
def command(
    dataset: str,
    method: str,
    split: str | None,
    out: Path,
    fields: str | None,
    backoff: Path | None,
    run: RunFlags,
    config_file: Path | None,
    **flags: Any,
) -> None:
    """Evaluate METHOD on a benchmark; rerun the same command to resume."""
    given = settings_from_flags(config_file, flags)
    # A task or seed from search-o1.toml or SEARCH_O1_* counts for a data file as a flag
    # does (the task's default, "qa", does not: a file of unknown kind must say which).
    data = load_dataset(
        dataset,
        data_dir=run.data_dir,
        split=split,
        task=flags.get("task"),
        file_task=given.task if "task" in given.model_fields_set else None,
        limit=run.limit,
        seed=given.seed or 0,
        fields=parse_fields(fields),
    )
    _warn_skipped(data)
    if not data.items:
        raise ConfigError(_no_rows(data))
    settings = settings_for(data, given, method)
    if settings.api_mode == "tools" and not has_tools_mode(get_method(method)):
        # The engine refuses it too, but only at the first item, after the run folder exists.
        raise ConfigError(f"the {method} method has no tools mode (--api-mode tools)")
    opts = RunOptions(
        method=method,
        out=out,
        concurrency=settings.concurrency,
        schedule=settings.schedule,
        backoff=backoff,
        limits=run.sandbox,
        argv=sys.argv[1:],
        settings=settings,
    )
    check_resume(out, data, opts)  # before any model loads: a refusal costs nothing
    with progress_bar(enabled=run.progress) as opts.on_progress:
        outcome = run_stoppable(_run(settings, data, opts))
    click.echo(terminal_text((out / "summary.md").read_text(encoding="utf-8")))
    click.echo(f"run: {out} (ran {outcome.ran}, resumed {outcome.resumed})")
    replay_note(settings)
    if outcome.failed:
        raise BackendError("eval", _failed_line(outcome))


def _no_rows(data: Dataset) -> str:
    if not data.skipped:  # nothing malformed: the file holds no rows at all
        return f"{data.path}: no rows (it is empty, or only blank lines)"
    first = data.skipped[0]
    why = f"first skipped: line {first.line}: {first.reason}"
    return f"{data.path}: no usable rows; {why} (check --fields/--task)"


def _failed_line(outcome: RunOutcome) -> str:
    causes = "; ".join(f"{n}× {cause}" for cause, n in outcome.failures.most_common(3))
    return f"{outcome.failed} items failed ({causes}); rerun the same command to retry them"


async def _run(settings: Settings, data: Dataset, opts: RunOptions) -> RunOutcome:
    async with open_pipeline(settings, search=get_method(opts.method).needs_search) as engine:
        await preflight(engine, data, opts.method)
        return await run_eval(engine, data, opts)


def _warn_skipped(data: Dataset) -> None:
    if not data.skipped:
        return
    click.echo(f"warning: {len(data.skipped)} malformed rows skipped in {data.path}:", err=True)
    for s in data.skipped[:10]:
        where = f"  line {s.line}{f' (id {s.id})' if s.id else ''}"
        click.echo(terminal_text(f"{where}: {s.reason}"), err=True)  # the row's own text
    if len(data.skipped) > 10:
        click.echo(f"  … and {len(data.skipped) - 10} more (listed in config.json)", err=True)
