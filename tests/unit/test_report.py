"""`report`: a diff across datasets is refused, no differences say so, plots start at 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from search_o1.errors import ConfigError
from search_o1.eval.report import Run, diff, scale_axes


def run(tmp_path: Path, name: str, dataset: str, scores: dict[str, float]) -> Run:
    path = tmp_path / name
    path.mkdir()
    records = [
        {"id": i, "prediction": "p", "gold": ["g"], "metrics": {"em": v}} for i, v in scores.items()
    ]
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    metrics: dict[str, Any] = {"dataset": dataset, "primary": "em"}
    return Run(path, {}, metrics)


def test_diff_refuses_runs_of_different_datasets(tmp_path: Path) -> None:
    a = run(tmp_path, "a", "hotpotqa", {"1": 1.0})
    b = run(tmp_path, "b", "2wiki", {"1": 0.0})
    with pytest.raises(ConfigError, match="one dataset: a is hotpotqa, b is 2wiki"):
        diff(a, b)


def test_diff_without_differences_says_so(tmp_path: Path) -> None:
    a = run(tmp_path, "a", "nq", {"1": 1.0, "2": 0.0})
    b = run(tmp_path, "b", "nq", {"1": 1.0, "2": 0.0, "3": 1.0})
    assert diff(a, b) == "no differences in em over the 2 items both runs scored"
    changed = run(tmp_path, "c", "nq", {"1": 0.0, "2": 0.0})
    assert "a: 1 better · c: 0 better · 1 shown" in diff(a, changed)


def test_plot_axes_start_at_zero_with_whole_number_ticks() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    series = {"nq · direct": [(1.0, 0.0), (2.0, 0.0), (3.0, 0.0)]}
    ax.plot([1, 2, 3], [0, 0, 0])
    scale_axes(ax, series)
    fig.canvas.draw()
    assert ax.get_ylim() == (0.0, 100.0)
    ticks = [t for t in ax.get_xticks() if 1 <= t <= 3]
    assert ticks and all(float(t).is_integer() for t in ticks)
    plt.close(fig)


def test_plot_of_one_whole_number_setting_keeps_whole_number_ticks() -> None:
    """Runs all at top_k 10 were drawn over 9.45 ... 10.50."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    series = {"nq · direct": [(10.0, 50.0)], "nq · rag": [(10.0, 100.0)]}
    ax.plot([10], [50])
    scale_axes(ax, series)
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert 10.0 in ticks and all(float(t).is_integer() for t in ticks)
    plt.close(fig)


def _run_dir(tmp_path: Path, dataset: str, method: str, top_k: int, em: float) -> Path:
    """A finished run's folder as `eval` leaves it, as far as `report` reads it."""
    path = tmp_path / f"{dataset}.{method}.{top_k}"
    path.mkdir()
    config = {"run": {"dataset": dataset, "method": method}, "settings": {"top_k": top_k}}
    (path / "config.json").write_text(json.dumps(config))
    metrics = {"dataset": dataset, "method": method, "primary": "em", "overall": {"em": em}}
    (path / "metrics.json").write_text(json.dumps(metrics))
    return path


@pytest.mark.parametrize("x", ["method", "dataset", "top_k"])
def test_report_plots_a_category_setting_as_bars(tmp_path: Path, x: str) -> None:
    # A non-numeric --x used to fail: "could not convert string to float: 'direct'".
    from click.testing import CliRunner

    from search_o1.cli import cli

    runs = [
        _run_dir(tmp_path, d, m, k, em)
        for d, m, k, em in [
            ("nq", "direct", 5, 0.2),
            ("nq", "search-o1", 5, 0.4),
            ("hotpotqa", "direct", 10, 0.1),
            ("hotpotqa", "search-o1", 10, 0.3),
        ]
    ]
    out = tmp_path / "plot.png"
    args = ["report", *map(str, runs), "--plot", "--x", x, "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out}\n"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
