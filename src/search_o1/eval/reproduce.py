"""The paper's matrix for one table: every (dataset, method) cell as a normal eval run.

Each cell is an ordinary run directory (`OUT/<dataset>.<method>/`, resumable like any
`eval` run), configured by `profiles.resolve` for that cell; `summary.md` in OUT puts
our numbers and the paper's side by side.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search_o1.config import Settings
from search_o1.engine import get_method, has_tools_mode
from search_o1.errors import ConfigError, InputFileError
from search_o1.eval import runfiles
from search_o1.eval.datasets import KNOWN, load_dataset, title_of
from search_o1.eval.paper_tables import (
    METHOD_LABELS,
    METHODS,
    PAPER_SIZES,
    PAPER_SPLITS,
    SPLITS,
    TABLES,
    paper_cell,
)
from search_o1.eval.report import PAPER_COLUMNS
from search_o1.eval.runner import Progress, RunOptions, preflight, run_eval
from search_o1.eval.sandbox import Limits
from search_o1.llm.embedded import MODEL_ALIAS as EMBEDDED_MODEL
from search_o1.pipeline import open_pipeline
from search_o1.profiles import resolve

__all__ = [
    "CellResult",
    "MatrixOptions",
    "cells",
    "failure_note",
    "model_label",
    "render_matrix",
    "run_matrix",
]

SUMMARY = "summary.md"
# Our rows' method names: the paper's labels carry its model's name (QwQ-32B).
OUR_LABELS = {"direct": "Direct", "rag": "RAG", "rag-agent": "RAgent", "search-o1": "Search-o1"}


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
        # The paper's subset where it used one (LiveCodeBench v1-v4), so the sizes match.
        split = PAPER_SPLITS.get(dataset)
        data = load_dataset(dataset, data_dir=opts.data_dir, split=split, limit=opts.limit)
    except InputFileError as e:
        return CellResult(dataset, method, note=f"no data: {e}")
    cell = resolve(settings, dataset=data.name, task=data.task, method=method)
    # The paper backs off every retrieval method's invalid answers to the direct run's.
    direct = opts.out / f"{dataset}.direct"
    backoff = direct if method != "direct" and (direct / runfiles.METRICS).exists() else None
    run = RunOptions(
        method=method,
        out=opts.out / f"{dataset}.{method}",
        concurrency=cell.concurrency,
        schedule=cell.schedule,
        limits=opts.sandbox,
        on_progress=opts.on_progress,
        argv=opts.argv,
        settings=cell,
        backoff=backoff,
    )
    async with open_pipeline(cell, search=get_method(method).needs_search) as engine:
        # A dead server stops the table at its first cell, in seconds, as it stops eval
        # (each item of every cell failed after its retries).
        await preflight(engine, data, method)
        outcome = await run_eval(engine, data, run)
    note = failure_note(outcome.failed, outcome.failures)
    return CellResult(dataset, method, outcome.metrics, note, outcome.failed)


def failure_note(failed: int, causes: Counter[str]) -> str:
    """What a cell's note says of its failed items: how many, and the commonest cause.

    >>> failure_note(3, Counter({"openai: HTTP 503": 2, "openai: timed out": 1}))
    '3 items failed (rerun to retry); 2 of them: openai: HTTP 503'
    >>> failure_note(0, Counter())
    ''
    """
    if not failed:
        return ""
    note = f"{failed} items failed (rerun to retry)"
    for cause, count in causes.most_common(1):
        note += f"; {count} of them: {cause}" if count < failed else f": {cause}"
    return note


async def run_matrix(settings: Settings, opts: MatrixOptions) -> list[CellResult]:
    """Run (or resume) every cell, one after another, then write OUT/summary.md."""
    opts.out.mkdir(parents=True, exist_ok=True)
    results = [await _run_cell(settings, d, m, opts) for d, m in cells(opts)]
    text = render_matrix(opts.table, results, profile=settings.profile, model=model_label(settings))
    (opts.out / SUMMARY).write_text(text, encoding="utf-8")
    return results


# A column of the summary: a dataset, and a split label (None: the overall column).
Column = tuple[str, str | None]


def _columns(datasets: Sequence[str]) -> list[Column]:
    """Each dataset's split columns (Table 1's domains and difficulties), then its overall."""
    out: list[Column] = []
    for d in datasets:
        out += [(d, label) for _, label in SPLITS.get(d, ("", ()))[1]]
        out.append((d, None))
    return out


def _values(metrics: dict[str, Any], column: Column, backoff: bool) -> dict[str, Any] | None:
    """A column's scores in a run's metrics (with back-off: as the paper counts them)."""
    dataset, label = column
    found: dict[str, Any] | None
    if label is None:
        found = metrics.get("backoff" if backoff else "overall")
    else:
        splits = metrics.get("backoff_breakdowns" if backoff else "breakdowns") or {}
        found = splits.get(SPLITS[dataset][0], {}).get(label)
    return found


def _ours(
    metrics: dict[str, Any] | None, table: str, column: Column, *, backoff: bool = False
) -> str:
    values = None if metrics is None else _values(metrics, column, backoff)
    if metrics is None or values is None:
        return "–"
    if table == "qa":
        return f"{100 * values['em']:.1f}/{100 * values['f1']:.1f}"
    return f"{100 * values[metrics['primary']]:.1f}"


def _size(column: Column, results: Sequence[CellResult]) -> int:
    """Items in a column: the most that any method's run of the set scored there."""
    dataset, label = column

    def n(metrics: dict[str, Any]) -> int:
        if label is None:
            return int(metrics.get("n", 0))
        values = _values(metrics, column, False)
        return int(values["n"]) if values else 0

    return max((n(r.metrics) for r in results if r.dataset == dataset and r.metrics), default=0)


def _title(column: Column, results: Sequence[CellResult]) -> str:
    dataset, label = column
    short = {lb: s for s, lb in SPLITS.get(dataset, ("", ()))[1]}.get(label) if label else None
    return f"{title_of(dataset)}{' ' + short if short else ''} (n={_size(column, results)})"


def _paper_size(column: Column) -> str:
    dataset, label = column
    size = PAPER_SIZES.get(f"{dataset}:{label}" if label else dataset)
    return "–" if size is None else str(size)


def model_label(settings: Settings) -> str:
    """The model our rows ran, as the settings name it (the paper's rows ran QwQ-32B)."""
    if settings.model:
        return settings.model
    if settings.llm_backend == "embedded":
        return f"{EMBEDDED_MODEL}, embedded"
    return "the --base-url server's model"


def render_matrix(
    table: str, results: Sequence[CellResult], *, profile: str = "ours", model: str | None = None
) -> str:
    """summary.md: one row of ours and one of the paper's per method, a column per set
    (and per GPQA domain and LiveCodeBench difficulty, as Table 1 has them). Our rows
    are named by the method and `model`, never by the paper's model (QwQ-32B)."""
    datasets = list(dict.fromkeys(r.dataset for r in results))
    columns = _columns(datasets)
    methods = list(dict.fromkeys(r.method for r in results))
    by = {(r.dataset, r.method): r for r in results}
    header = ["Method", *(_title(c, results) for c in columns)]
    # How many problems each side's numbers are over: ours in the header, the paper's here.
    rows = [["Problems · paper", *(_paper_size(c) for c in columns)]]
    for m in methods:
        label = f"{OUR_LABELS.get(m, m)} · ours{f' ({model})' if model else ''}"
        cells = [(by[(c[0], m)].metrics, c) for c in columns]
        rows.append([label, *(_ours(x, table, c) for x, c in cells)])
        if any((x or {}).get("backoff") for x, _ in cells):
            backoff = (_ours(x, table, c, backoff=True) for x, c in cells)
            rows.append([f"{label} + back-off", *backoff])
        paper = f"{METHOD_LABELS.get(m, m)} · paper"
        rows.append([paper, *(paper_cell(m, d, lb) for d, lb in columns)])
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
        "",
        "Each cell is a run directory `<dataset>.<method>/` (metrics.json, summary.md). "
        "\"+ back-off\": invalid answers take the direct run's, as the paper's numbers do.",
    ]
    return [*runs, *(["", "Notes:", *notes] if notes else [])]
