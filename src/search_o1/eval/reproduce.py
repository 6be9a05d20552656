"""The paper's matrix for one table: every (dataset, method) cell as a normal eval run.

Each cell is an ordinary run directory (`OUT/<dataset>.<method>/`, resumable like any
`eval` run), configured by `profiles.resolve` for that cell; `summary.md` in OUT puts
our numbers and the paper's side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search_o1.config import Settings
from search_o1.errors import ConfigError, InputFileError
from search_o1.eval import runfiles
from search_o1.eval.datasets import KNOWN, load_dataset, title_of
from search_o1.eval.paper_tables import METHOD_LABELS, METHODS, TABLES, paper_cell
from search_o1.eval.report import PAPER_COLUMNS
from search_o1.eval.runner import Progress, RunOptions, run_eval
from search_o1.eval.sandbox import Limits
from search_o1.methods import get_method, has_tools_mode
from search_o1.pipeline import open_pipeline
from search_o1.profiles import resolve

__all__ = ["CellResult", "MatrixOptions", "cells", "render_matrix", "run_matrix"]

SUMMARY = "summary.md"


@dataclass
class MatrixOptions:
    """What `reproduce` runs: the table, optionally narrowed, and where."""

    table: str
    out: Path
    data_dir: Path | None = None
    datasets: Sequence[str] | None = None  # None: the table's columns
    methods: Sequence[str] | None = None  # None: the paper's four
    limit: int | None = None  # items per dataset (a slice, for a quick look)
    on_progress: Callable[[Progress], None] | None = None  # each cell reports through it
    sandbox: Limits = field(default_factory=Limits)
    argv: list[str] | None = None


@dataclass
class CellResult:
    dataset: str
    method: str
    metrics: dict[str, Any] | None = None  # None: the cell did not run
    note: str = ""  # why not, or how many items failed
    failed: int = 0


def cells(opts: MatrixOptions) -> list[tuple[str, str]]:
    """The (dataset, method) pairs to run, checked against the table and the methods."""
    if opts.table not in TABLES:
        raise ConfigError(f"unknown table {opts.table!r}; known: {', '.join(TABLES)}")
    datasets = list(opts.datasets or TABLES[opts.table])
    methods = list(opts.methods or METHODS)
    for name in datasets:
        if name not in TABLES[opts.table]:
            known = ", ".join(TABLES[opts.table])
            raise ConfigError(f"{name!r} is not in the {opts.table} table ({known})")
    for method in methods:
        get_method(method)  # raises for an unknown one
    return [(d, m) for d in datasets for m in methods]


async def _run_cell(
    settings: Settings, dataset: str, method: str, opts: MatrixOptions
) -> CellResult:
    if settings.api_mode == "tools" and not has_tools_mode(get_method(method)):
        # Refused by the engine at its first item; the table's other cells still run.
        return CellResult(dataset, method, note="not run: no tools mode (--api-mode tools)")
    try:
        data = load_dataset(dataset, data_dir=opts.data_dir, limit=opts.limit)
    except InputFileError as e:
        return CellResult(dataset, method, note=f"no data: {e}")
    cell = resolve(settings, dataset=data.name, task=data.task, method=method)
    # The paper backs off every retrieval method's invalid answers to the direct run's.
    direct = opts.out / f"{dataset}.direct"
    backoff = direct if method != "direct" and (direct / runfiles.METRICS).exists() else None
    run = RunOptions(
        method=method, out=opts.out / f"{dataset}.{method}", concurrency=cell.concurrency,
        schedule=cell.schedule, limits=opts.sandbox, on_progress=opts.on_progress,
        argv=opts.argv, settings=cell, backoff=backoff,
    )  # fmt: skip
    async with open_pipeline(cell, search=get_method(method).needs_search) as engine:
        outcome = await run_eval(engine, data, run)
    note = f"{outcome.failed} items failed (rerun to retry)" if outcome.failed else ""
    return CellResult(dataset, method, outcome.metrics, note, outcome.failed)


async def run_matrix(settings: Settings, opts: MatrixOptions) -> list[CellResult]:
    """Run (or resume) every cell, one after another, then write OUT/summary.md."""
    opts.out.mkdir(parents=True, exist_ok=True)
    results = [await _run_cell(settings, d, m, opts) for d, m in cells(opts)]
    text = render_matrix(opts.table, results, profile=settings.profile)
    (opts.out / SUMMARY).write_text(text, encoding="utf-8")
    return results


def _ours(metrics: dict[str, Any] | None, table: str, *, backoff: bool = False) -> str:
    if metrics is None or (backoff and not metrics.get("backoff")):
        return "–"
    overall = metrics["backoff"] if backoff else metrics["overall"]
    if table == "qa":
        return f"{100 * overall['em']:.1f}/{100 * overall['f1']:.1f}"
    return f"{100 * overall[metrics['primary']]:.1f}"


def render_matrix(table: str, results: Sequence[CellResult], *, profile: str = "ours") -> str:
    """summary.md: one row of ours and one of the paper's per method, a column per set."""
    datasets = list(dict.fromkeys(r.dataset for r in results))
    methods = list(dict.fromkeys(r.method for r in results))
    by = {(r.dataset, r.method): r for r in results}
    sizes = {d: max((r.metrics or {}).get("n", 0) for r in results if r.dataset == d)
             for d in datasets}  # fmt: skip
    header = ["Method", *(f"{title_of(d)} (n={sizes[d]})" for d in datasets)]
    rows = []
    for m in methods:
        label = METHOD_LABELS.get(m, m)
        rows.append([f"{label} · ours", *(_ours(by[(d, m)].metrics, table) for d in datasets)])
        if any((by[(d, m)].metrics or {}).get("backoff") for d in datasets):
            cells = (_ours(by[(d, m)].metrics, table, backoff=True) for d in datasets)
            rows.append([f"{label} · ours + back-off", *cells])
        rows.append([f"{label} · paper", *(paper_cell(m, d) for d in datasets)])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*_head(table, profile, datasets), *lines, *_notes(results)]) + "\n"


def _head(table: str, profile: str, datasets: Sequence[str]) -> list[str]:
    kinds = dict.fromkeys(KNOWN[d].task for d in datasets if d in KNOWN)
    used = "; ".join(f"{k}: {PAPER_COLUMNS[k]}" for k in kinds)
    what = "EM/F1" if table == "qa" else "pass@1 (%)"
    return [
        f"# Paper {'Table 3 (QA)' if table == 'qa' else 'Table 1 (reasoning)'}: ours and "
        "the paper's, side by side",
        "",
        f"Values: {what}; profile: {profile}; paper: QwQ-32B-Preview, Bing + Jina, "
        "arXiv 2501.05366 v1. Columns the paper's tables use: " + used + ".",
        "",
    ]


def _notes(results: Sequence[CellResult]) -> list[str]:
    notes = [f"- {r.dataset} · {r.method}: {r.note}" for r in results if r.note]
    runs = [
        "", "Each cell is a run directory `<dataset>.<method>/` (metrics.json, summary.md). "
        "\"+ back-off\": invalid answers take the direct run's, as the paper's numbers do.",
    ]  # fmt: skip
    return [*runs, *(["", "Notes:", *notes] if notes else [])]
