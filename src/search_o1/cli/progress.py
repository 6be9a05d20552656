"""What the terminal shows while a long command runs: the eval progress bar, Ctrl-C notice.

The library reports progress through a callback (`RunOptions.on_progress`); drawing it is
the command's business, so a library caller gets no bar it did not ask for.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import click
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


class Terminated(KeyboardInterrupt):
    """SIGTERM, stopping a run the way Ctrl-C does; the shell sees 128 + 15."""

    signum = signal.SIGTERM


@contextmanager
def interrupt_notice(message: str) -> Iterator[None]:
    """On Ctrl-C, say `message` at once, then let the interrupt proceed as before.

    Stopping cleanly (cancelling requests, writing metrics, closing servers) takes a
    moment; the user should know it is under way rather than see nothing.
    """
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        # Ignored (a job started in the background) or left to the OS: not ours to
        # change. Only a Python handler (asyncio's, which cancels the run at an await)
        # stops the run cleanly; raising from here could land in any task.
        yield
        return

    def notice(signum: int, frame: FrameType | None) -> None:
        click.echo(f"\n{message}", err=True)
        previous(signum, frame)

    signal.signal(signal.SIGINT, notice)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def terminate_cancels(message: str) -> Iterator[Callable[[], bool]]:
    """Inside a running event loop: SIGTERM says `message` and cancels the current task,
    so the run stops at an await and keeps what finished, as on Ctrl-C. Yields a check
    of whether that happened (the caller then raises `Terminated` outside the loop).

    A SIGTERM that is ignored (nohup and the like) stays ignored.
    """
    fired = False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield lambda: fired
        return
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_term() -> None:
        nonlocal fired
        if not fired and task is not None:
            fired = True
            click.echo(f"\n{message}", err=True)
            task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_term)
    try:
        yield lambda: fired
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
