"""Ctrl-C and SIGTERM stop a command's run at an await, keeping what finished.

A signal handler that raises (Python's own for Ctrl-C, or asyncio's on a second press)
lands wherever the interpreter happens to be: inside any task, which then dies with the
exception and prints "Task exception was never retrieved" after the command's last line.
Here the handler only asks the event loop to cancel the run's task; the run unwinds at
its next await (finishing writes, closing servers) and the command then raises `Stopped`
outside the loop, which the CLI turns into one line and 128 + the signal.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

import click

T = TypeVar("T")
_NAMES: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}
_Handler = Callable[[int, FrameType | None], Any] | int | None


class Stopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the run; `signum` says which (the shell sees 128 + it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _StopRequested(Exception):
    """The run's task ended because a signal cancelled it.

    An ordinary exception on purpose: a KeyboardInterrupt leaving a task is also stored
    on it, and then reported as never retrieved.
    """


@dataclass
class _Stop:
    stopping: str
    signum: int | None = None
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None
    previous: dict[int, _Handler] = field(default_factory=dict)

    def handler(self, signum: int, frame: FrameType | None) -> None:
        # Runs between any two bytecodes of the main thread: no output and no raising
        # here, only a note and a wake-up for the loop. Later presses change nothing.
        if self.signum is not None:
            return
        self.signum = signum
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.cancel)

    def notice(self) -> None:
        name = _NAMES.get(self.signum or signal.SIGINT, "signal")
        click.echo(f"\n{name}: {self.stopping}", err=True)

    def cancel(self) -> None:
        self.notice()
        if self.task is not None:
            self.task.cancel()


def _take_over(stop: _Stop) -> None:
    """Route Ctrl-C and SIGTERM to `stop`, where they are the command's to handle.

    A SIGINT that is ignored (a job started in the background) or a SIGTERM that is not
    the default (nohup and the like) is left as it is.
    """
    for signum in _NAMES:
        current = signal.getsignal(signum)
        ours = callable(current) if signum == signal.SIGINT else current is signal.SIG_DFL
        if ours:
            stop.previous[signum] = current
            signal.signal(signum, stop.handler)


async def _guarded(main: Coroutine[Any, Any, T], stop: _Stop) -> T:
    stop.loop, stop.task = asyncio.get_running_loop(), asyncio.current_task()
    if stop.signum is not None:  # a signal came before the loop started
        main.close()
        stop.notice()
        raise _StopRequested
    try:
        return await main
    except asyncio.CancelledError:
        if stop.signum is None:
            raise
        raise _StopRequested from None


def run_stoppable(
    main: Coroutine[Any, Any, T], *, stopping: str = "stopping (finishing writes, closing servers)…"
) -> T:
    """`asyncio.run(main)`, where Ctrl-C or SIGTERM says "Ctrl-C: `stopping`" on stderr
    and cancels `main`, then raises `Stopped` once the loop has wound down.

    The handlers stay in place for the whole of the loop's life (its shutdown too), so
    no press can land inside a task. After a stop both signals stay ignored: the
    command is ending, and a second press must not break its last line. A run that
    finishes, or fails on its own, puts the previous handlers back.
    """
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)  # signals reach only the main thread: nothing to route
    stop = _Stop(stopping)
    _take_over(stop)
    try:
        result = asyncio.run(_guarded(main, stop))
    except _StopRequested:
        pass
    finally:
        for signum, previous in stop.previous.items():
            signal.signal(signum, previous if stop.signum is None else signal.SIG_IGN)
    if stop.signum is not None:
        raise Stopped(stop.signum)
    return result
