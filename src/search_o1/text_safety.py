"""Text from outside (datasets, search replies, model replies) made valid where it enters.

A lone surrogate such as ``"\\ud800"`` is a legal Python ``str`` but not encodable as
UTF-8, so it passes through parsing and then fails far away, when a request body or a
result line is written. Replacing it with U+FFFD where the text enters keeps one bad
character from ending a run; callers count the replacements in the trace.
"""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "scrub", "scrub_count"]

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_count(text: str) -> tuple[str, int]:
    """The text with every lone surrogate replaced by U+FFFD, and how many were replaced.

    >>> scrub_count("ok\\ud800!")
    ('ok\\ufffd!', 1)
    >>> scrub_count("plain")
    ('plain', 0)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.subn(REPLACEMENT, text)
    return text, 0


def scrub(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD."""
    return scrub_count(text)[0]
