"""`search-o1 report RUN_DIR...`: runs side by side, a per-item diff, or a scaling plot."""

from __future__ import annotations

from pathlib import Path

import click

from search_o1.errors import ConfigError
from search_o1.eval.report import diff, load_run, plot, side_by_side
from search_o1.text_safety import terminal_text

_RUN_DIR = click.Path(path_type=Path, exists=True, file_okay=False)


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=_RUN_DIR)
@click.option("--diff", "show_diff", is_flag=True, help="Per-item diff of exactly two runs.")
@click.option("--all", "all_changes", is_flag=True, help="With --diff: every changed prediction.")
@click.option("--plot", "make_plot", is_flag=True, help="Plot --metric against setting --x.")
@click.option(
    "--x",
    "x_setting",
    default="top_k",
    show_default=True,
    help="Setting on the x axis (numbers: lines; names such as method: bars).",
)
@click.option("--metric", help="Metric to plot (default: each run's primary metric).")
@click.option("--out", type=click.Path(path_type=Path), help="PNG file for --plot.")
def command(
    runs: tuple[Path, ...],
    show_diff: bool,
    all_changes: bool,
    make_plot: bool,
    x_setting: str,
    metric: str | None,
    out: Path | None,
) -> None:
    """Show finished runs side by side (metrics in percent)."""
    loaded = [load_run(p) for p in runs]
    if make_plot:
        if out is None:
            raise ConfigError("--plot needs --out FILE.png")
        chosen = metric or str(loaded[0].metrics["primary"])
        click.echo(f"wrote {plot(loaded, x=x_setting, metric=chosen, out=out)}")
        return
    if show_diff:
        if len(loaded) != 2:
            raise ConfigError(f"--diff compares exactly two runs, got {len(loaded)}")
        # Questions and predictions are outside text: no terminal control codes.
        click.echo(terminal_text(diff(loaded[0], loaded[1], all_changes=all_changes)))
        return
    click.echo(terminal_text(side_by_side(loaded)))
