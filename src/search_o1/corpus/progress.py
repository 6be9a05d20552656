"""Progress of long corpus jobs (embedding) with rate and time left, for any caller.

The CLI's `index build` draws its own bar; this reporter is for the first search over a
corpus inside `ask`, `eval` or `serve`, where embedding can take minutes: on a terminal it
rewrites one line on stderr, elsewhere (a log file) it writes a line every `every_s` seconds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["RateProgress", "eta_text"]


def eta_text(seconds: float) -> str:
    """Seconds as a short duration.

    >>> eta_text(42), eta_text(150), eta_text(7300)
    ('42 s', '2 min 30 s', '2 h 1 min')
    """
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


class RateProgress:
    """A `progress(done, total)` callback that reports done/total, rate and time left."""

    def __init__(
        self,
        what: str,
        *,
        stream: TextIO | None = None,
        every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self._clock = clock
        self._started = clock()
        self._last = float("-inf")

    def line(self, done: int, total: int) -> str:
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 else float("inf")
        eta = eta_text(left) if left != float("inf") else "?"
        return f"{self.what}: {done:,}/{total:,} ({rate:,.0f}/s, about {eta} left)"

    def __call__(self, done: int, total: int) -> None:
        text = self.line(done, total)
        if self.stream.isatty():
            end = "\n" if done >= total else ""
            self.stream.write(f"\r{text}\033[K{end}")
            self.stream.flush()
            return
        now = self._clock()
        if now - self._last >= self.every_s or done >= total:
            self._last = now
            self.stream.write(text + "\n")
            self.stream.flush()
