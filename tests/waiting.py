"""Waiting in a test for something another thread or process does: poll until it holds.

The limit is generous on purpose: it is reached only when the test fails anyway, and a
loaded machine must not turn a slow success into a failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(check: Callable[[], object], what: str, *, timeout_s: float = 60.0) -> None:
    """Return once `check()` is true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout_s:g} s: {what}")
        time.sleep(0.02)
