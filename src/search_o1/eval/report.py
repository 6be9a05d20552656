"""Reading finished runs: summary.md, runs side by side, a per-item diff, a scaling plot.

Tables are Markdown, so the same text reads well in a terminal, a README and a PR.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from search_o1.errors import ConfigError, InputFileError
from search_o1.eval import runfiles
from search_o1.eval.datasets import title_of
from search_o1.eval.scoring import COLUMNS

_NAMES = {
    "em": "EM",
    "f1": "F1",
    "acc": "Acc",
    "valid": "Valid",
    "math_equal": "math_equal",
    "math_verify": "Math-Verify",
    "acc_lenient": "Acc (lenient)",
    "valid_lenient": "Valid (lenient)",
    "pass@1": "Pass@1",
    "em_lenient": "EM (lenient)",
    "f1_lenient": "F1 (lenient)",
    "pass@1_lenient": "Pass@1 (lenient)",
}
# Which of our columns the paper's tables print, per task, said in every summary.md.
PAPER_COLUMNS = {
    "qa": "EM and F1 (the lenient columns are ours)",
    "multihop": "EM and F1 (the lenient columns are ours)",
    "math": "math_equal (string equivalence after the MATH normalisation; Math-Verify is ours)",
    "choice": "EM with the strict validity rule (one letter only; the lenient columns are ours)",
    "code": "Pass@1 (the paper's judge: every problem as a stdin program, 10 s per test; "
    "the lenient column is ours)",
}
# The paper's per-domain columns: GPQA by domain, LiveCodeBench by difficulty.
_PAPER_GROUP = {"choice": "domain", "code": "difficulty"}


@dataclass
class Run:
    path: Path
    config: dict[str, Any]
    metrics: dict[str, Any]

    @property
    def label(self) -> str:
        return self.path.name or str(self.path)

    def records(self) -> dict[str, dict[str, Any]]:
        return runfiles.read_records(self.path)


def load_run(path: Path) -> Run:
    config = runfiles.read_json(path / runfiles.CONFIG)
    if not (path / runfiles.METRICS).exists():
        # A run killed outright (SIGKILL, out of memory) before its summary: it is a run
        # directory, and "is this a run directory?" sent its owner looking elsewhere.
        argv = config.get("run", {}).get("argv")
        command = f"`search-o1 {shlex.join(argv)}`" if isinstance(argv, list) else "its eval"
        raise InputFileError(
            str(path), f"an unfinished run (no metrics.json): rerun {command} to finish it"
        )
    return Run(path, config, runfiles.read_json(path / runfiles.METRICS))


def _pct(value: Any) -> str:
    return f"{100 * float(value):.1f}" if isinstance(value, int | float) else "–"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _paper_row(metrics: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Header and values shaped like the paper's table for this task."""
    task, primary = metrics["task"], metrics["primary"]
    group = _PAPER_GROUP.get(task)
    labels = list(metrics.get("breakdowns", {}).get(group, {})) if group else []
    if labels:
        cells = [metrics["breakdowns"][group][lb].get(primary) for lb in labels]
        header = [*(lb[:4].title() for lb in labels), f"Overall ({_NAMES[primary]})"]
        return header, [*(_pct(c) for c in cells), _pct(metrics["overall"].get(primary))]
    cols = _shown(task)
    return [_NAMES[c] for c in cols], [_pct(metrics["overall"].get(c)) for c in cols]


def _shown(task: str) -> list[str]:
    """The score columns of a task's tables (validity is reported as counts; the
    `*_lenient` columns have their own line)."""
    return [c for c in COLUMNS[task] if not c.startswith("valid") and not c.endswith("_lenient")]


def _lenient_line(metrics: Mapping[str, Any]) -> list[str]:
    """Our lenient extraction's scores, beside the paper's row, as one line."""
    cols = [c for c in COLUMNS[metrics["task"]] if c.endswith("_lenient")]
    if not cols or not metrics.get("n"):
        return []
    values = " · ".join(f"{_NAMES[c]} {_pct(metrics['overall'].get(c))}" for c in cols)
    return [f"ours, lenient answer extraction: {values}"]


def render_summary(metrics: Mapping[str, Any]) -> str:
    """summary.md for one run: the paper-shaped row, counts, backoff and breakdowns.

    A metric over no items is "–", never 0.0 (a run where everything failed scored nothing).
    """
    title = title_of(str(metrics["dataset"]))
    header, values = _paper_row(metrics)
    if not metrics.get("n"):
        values = ["–"] * len(values)
    rows = [[str(metrics["method"]), *values]]
    backoff = metrics.get("backoff")
    if backoff:
        cols = _shown(metrics["task"])
        rows.append([f"{metrics['method']} + backoff", *(_pct(backoff.get(c)) for c in cols)])
        if len(cols) != len(values):
            rows[-1] += ["–"] * (len(values) - len(cols))
    parts = [f"# {title} · {metrics['method']}", "", _table(["Method", *header], rows), ""]
    parts.append(
        f"{metrics['n']} of {metrics['items']} items scored · valid answers "
        f"{metrics['num_valid']} of {metrics['n']} · missing {metrics['missing']} · "
        f"malformed rows skipped {metrics['skipped_rows']}"
    )
    parts.append(f"the paper's tables use: {PAPER_COLUMNS[metrics['task']]}")
    parts += _lenient_line(metrics)
    docs = metrics.get("documents") or {}
    if any(docs.values()):
        parts.append(
            f"documents: {docs.get('ok', 0)} read · {docs.get('snippet_only', 0)} snippet only"
            f" · {docs.get('failed', 0)} fetch failed · {docs.get('empty', 0)} empty pages"
            " (failed and empty fell back to the snippet)"
        )
    if backoff:
        parts.append(f"backoff: {int(backoff['replaced'])} invalid answers took the direct run's")
    parts += _breakdowns(metrics)
    return "\n".join(parts) + "\n"


def _breakdowns(metrics: Mapping[str, Any]) -> list[str]:
    """One "By <group>" table per breakdown (difficulty, hops, ...), as summary.md lines."""
    cols = _shown(metrics["task"])
    parts: list[str] = []
    for group, labels in metrics.get("breakdowns", {}).items():
        table_rows = [
            [label, str(int(v["n"])), *(_pct(v.get(c)) for c in cols)]
            for label, v in labels.items()
        ]
        header = [group, "n", *(_NAMES[c] for c in cols)]
        parts += ["", f"## By {group}", "", _table(header, table_rows)]
    return parts


def _columns_of(run: Run) -> list[tuple[str, Any]]:
    m = run.metrics
    out = [(f"{_NAMES.get(c, c)}", v) for c, v in m["overall"].items()]
    if m.get("backoff"):
        out += [
            (f"{_NAMES.get(c, c)} +backoff", v) for c, v in m["backoff"].items() if c != "replaced"
        ]
    for group, labels in m.get("breakdowns", {}).items():
        out += [
            (f"{group}={label} {_NAMES[m['primary']]}", v.get(m["primary"]))
            for label, v in labels.items()
        ]
    return out


def side_by_side(runs: Sequence[Run]) -> str:
    """Every metric of every run, one column per run (values in percent)."""
    header = ["", *(f"{r.label}" for r in runs)]
    info = [
        ["dataset", *(str(r.metrics["dataset"]) for r in runs)],
        ["method", *(str(r.metrics["method"]) for r in runs)],
        ["items", *(f"{r.metrics['n']}/{r.metrics['items']}" for r in runs)],
    ]
    keys: list[str] = []
    values: list[dict[str, Any]] = []
    for run in runs:
        cols = dict(_columns_of(run))
        keys += [k for k in cols if k not in keys]
        values.append(cols)
    rows = info + [[k, *(_pct(v.get(k)) for v in values)] for k in keys]
    tokens = [["mean tokens", *(_mean_tokens(r) for r in runs)]]
    searches = [["mean searches", *(f"{r.metrics['searches']['mean']:.2f}" for r in runs)]]
    return _table(header, rows + tokens + searches)


def _mean_tokens(run: Run) -> str:
    n = run.metrics.get("n") or 0
    total = run.metrics.get("tokens", {}).get("completion", 0)
    return f"{total / n:.0f}" if n else "–"


def diff(a: Run, b: Run, *, all_changes: bool = False) -> str:
    """Items whose primary metric differs between two runs (or any prediction, with all)."""
    if a.metrics["dataset"] != b.metrics["dataset"]:
        raise ConfigError(
            f"--diff compares runs of one dataset: {a.label} is {a.metrics['dataset']}, "
            f"{b.label} is {b.metrics['dataset']}"
        )
    primary = a.metrics["primary"]
    ra, rb = a.records(), b.records()
    rows: list[list[str]] = []
    a_only = b_only = 0
    for item_id in [i for i in ra if i in rb]:
        x, y = ra[item_id], rb[item_id]
        sx, sy = x["metrics"].get(primary, 0.0), y["metrics"].get(primary, 0.0)
        a_only += sx > sy
        b_only += sy > sx
        if sx != sy or (all_changes and x.get("prediction") != y.get("prediction")):
            gold = "; ".join(map(str, x.get("gold", [])))[:40]
            said_a, said_b = _cell(x.get("prediction")), _cell(y.get("prediction"))
            rows.append([item_id, gold, said_a, said_b, _pct(sx), _pct(sy)])
    shared = sum(1 for i in ra if i in rb)
    if not rows:
        what = "predictions" if all_changes else primary
        return f"no differences in {what} over the {shared} items both runs scored"
    head = f"{a.label}: {a_only} better · {b.label}: {b_only} better · {len(rows)} shown\n\n"
    header = ["id", "gold", f"{a.label}", f"{b.label}", f"{primary} A", f"{primary} B"]
    return head + _table(header, rows)


def _cell(value: Any) -> str:
    text = "(none)" if value is None else str(value).replace("\n", " ").replace("|", "\\|")
    return text[:60]


def _setting(run: Run, name: str) -> Any:
    for section in ("settings", "run"):
        value = run.config.get(section, {}).get(name)
        if value is not None:
            return value
    raise ConfigError(f"{run.path}: no setting {name!r} in config.json")


def _x_value(run: Run, name: str) -> float | str:
    """A setting as a plot position: a number, or a category's name (method, dataset, a
    backend list)."""
    value = _setting(run, name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def plot(runs: Sequence[Run], *, x: str, metric: str, out: Path) -> Path:
    """A PNG of `metric` against setting `x`: one line per (dataset, method) when every
    value of `x` is a number, else grouped bars, a group per value of `x`."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[float | str, float]]] = {}
    for run in runs:
        value = run.metrics["overall"].get(metric)
        if value is None:
            raise ConfigError(
                f"{run.path}: no metric {metric!r}; has {', '.join(run.metrics['overall'])}"
            )
        # The part of (dataset, method) that is on the x axis does not name a series.
        parts = {"dataset": title_of(run.metrics["dataset"]), "method": run.metrics["method"]}
        key = " · ".join(v for k, v in parts.items() if k != x)
        series.setdefault(key, []).append((_x_value(run, x), 100 * float(value)))
    fig, ax = plt.subplots(figsize=(6, 4))
    numeric = {
        k: [(float(a), b) for a, b in points]
        for k, points in series.items()
        if all(isinstance(a, float) for a, _ in points)
    }
    if len(numeric) == len(series):
        for key, points in sorted(numeric.items()):
            xs, ys = zip(*sorted(points), strict=True)
            ax.plot(xs, ys, marker="o", label=key)
        scale_axes(ax, numeric)
    else:
        _bars(ax, series)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{_NAMES.get(metric, metric)} (%)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _bars(ax: Any, series: Mapping[str, Sequence[tuple[float | str, float]]]) -> None:
    """Grouped bars: a group per category (in the order the runs were given), a bar per
    series; percent from 0, as the line plot has it."""
    categories = list(dict.fromkeys(str(a) for points in series.values() for a, _ in points))
    width = 0.8 / len(series)
    for i, (key, points) in enumerate(sorted(series.items())):
        spots = [categories.index(str(a)) + (i - (len(series) - 1) / 2) * width for a, _ in points]
        ax.bar(spots, [b for _, b in points], width=width, label=key)
    ax.set_xticks(range(len(categories)), categories)
    top = max((b for points in series.values() for _, b in points), default=0.0)
    ax.set_ylim(0, min(100.0, top * 1.15) if top > 0 else 100.0)


def scale_axes(ax: Any, series: Mapping[str, Sequence[tuple[float, float]]]) -> None:
    """Percent from 0 (never a ±0.04 axis around all-zero data); whole-number x ticks
    when every x is a whole number (top-k, searches), as such settings take no fractions."""
    from matplotlib.ticker import MaxNLocator

    top = max((y for points in series.values() for _, y in points), default=0.0)
    ax.set_ylim(0, min(100.0, top * 1.15) if top > 0 else 100.0)
    xs = [x for points in series.values() for x, _ in points]
    if all(float(x).is_integer() for x in xs):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if xs and max(xs) - min(xs) < 2:
            # One value (every run at top_k 10): matplotlib's own margin spans less than
            # one unit, where no whole-number ticks fit (it drew 9.45, 9.60, ...).
            ax.set_xlim(min(xs) - 1, max(xs) + 1)
