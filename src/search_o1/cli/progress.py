"""What the terminal shows while a long command runs: the eval progress bar.

The library reports progress through a callback (`RunOptions.on_progress`); drawing it is
the command's business, so a library caller gets no bar it did not ask for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from search_o1.eval.runner import Progress as RunProgress


@contextmanager
def progress_bar(*, enabled: bool = True) -> Iterator[Callable[[RunProgress], None]]:
    """A rich bar on stderr; yields the callback that moves it."""
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[metric]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )
    tasks: dict[str, Any] = {}  # one bar per run (reproduce runs several, one by one)

    def update(p: RunProgress) -> None:
        if p.run not in tasks:
            tasks[p.run] = bar.add_task(p.run, total=p.total, metric=p.label())
        bar.update(tasks[p.run], completed=p.done, metric=p.label())

    with bar:
        yield update
