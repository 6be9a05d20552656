"""Text from outside (datasets, search replies, model replies) made valid where it enters.

A lone surrogate such as ``"\\ud800"`` is a legal Python ``str`` but not encodable as
UTF-8, so it passes through parsing and then fails far away, when a request body or a
result line is written. Replacing it with U+FFFD where the text enters keeps one bad
character from ending a run; callers count the replacements in the trace.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REPLACEMENT", "scrub", "scrub_count", "scrub_data", "terminal_json", "terminal_text"]

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, and the C1 controls (U+009B is CSI on its own).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What json.dumps(ensure_ascii=False) leaves raw inside strings: DEL and the C1 controls.
_RAW_IN_JSON = re.compile("[\x7f-\x9f]")


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


def scrub_data(data: Any) -> tuple[Any, int]:
    """Parsed JSON (dicts, lists, strings, numbers) with every string scrubbed, keys too,
    and how many characters were replaced. Unchanged data is returned as it was.

    >>> scrub_data({"q": ["a\\udfff", 1], "\\ud800": None})
    ({'q': ['a\ufffd', 1], '\ufffd': None}, 2)
    """
    if isinstance(data, str):
        return scrub_count(data)
    if isinstance(data, list):
        pairs = [scrub_data(x) for x in data]
        total = sum(n for _, n in pairs)
        return ([x for x, _ in pairs] if total else data), total
    if isinstance(data, dict):
        total = 0
        out = {}
        for key, value in data.items():
            new_key, n = scrub_count(key) if isinstance(key, str) else (key, 0)
            new_value, m = scrub_data(value)
            out[new_key] = new_value
            total += n + m
        return (out if total else data), total
    return data, 0


def terminal_text(text: str) -> str:
    """Outside text made safe to print on a terminal: every control character it would act
    on is shown as U+FFFD. ESC opens sequences that recolour, clear the screen, retitle
    the window or write the clipboard, CR overwrites the line, C1 codes act like ESC on
    some terminals; a model reply, a page or a dataset row may hold any of them. Tabs
    and newlines stay (a CR before a newline goes).

    >>> terminal_text("ok\\x1b]0;owned\\x07 \\x9b2J\\r\\n\\tdone")
    'ok\ufffd]0;owned\ufffd \ufffd2J\\n\\tdone'
    """
    return _CONTROL.sub(REPLACEMENT, text.replace("\r\n", "\n"))


def terminal_json(text: str) -> str:
    """JSON text (from json.dumps with ensure_ascii=False) with DEL and the C1 controls,
    which it leaves raw and some terminals act on, written as \\u escapes: the same
    JSON, safe to print.

    >>> terminal_json('{"a": "x\\x9b2J"}')
    '{"a": "x\\\\u009b2J"}'
    """
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
