"""Pull the final answer out of a reasoning chain: the last \\boxed{...}, or a code block."""

from __future__ import annotations

import re

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TEXT = re.compile(r"^\\(?:text|textbf|mathrm)\s*\{(.*)\}$", re.DOTALL)
_CODE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def _balanced(text: str, start: int) -> str | None:
    """The content of the brace group whose `{` is at text[start-1], or None if unclosed."""
    depth = 1
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":  # an escaped brace \{ does not open or close a group
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return None


def extract_boxed(text: str) -> str | None:
    """The content of the last complete \\boxed{...} (balanced braces), \\text{} unwrapped.

    >>> extract_boxed(r"so \\boxed{\\frac{1}{2}} done")
    '\\\\frac{1}{2}'
    >>> extract_boxed(r"\\boxed{1} then \\boxed{\\text{Paris}}")
    'Paris'
    >>> extract_boxed("no box") is None
    True
    """
    for match in reversed(list(_BOXED.finditer(text))):
        content = _balanced(text, match.end())
        if content is None:
            continue  # an unclosed box (cut generation): try an earlier one
        content = content.strip()
        inner = _TEXT.match(content)
        if inner and _balanced(content, content.index("{") + 1) == inner.group(1):
            content = inner.group(1).strip()
        return content
    return None


def extract_code(text: str) -> str | None:
    """The last fenced code block, preferring python-tagged ones.

    >>> extract_code("x\\n```python\\nprint(1)\\n```\\n")
    'print(1)'
    """
    blocks = _CODE.findall(text)
    if not blocks:
        return None
    python = [body for lang, body in blocks if lang.lower() in ("python", "py", "python3")]
    body: str = (python or [b for _, b in blocks])[-1]
    return body.strip("\n")


def extract_answer(text: str, task: str) -> str | None:
    """The answer for a task kind: code for "code", the last box otherwise."""
    if task == "code":
        return extract_code(text)
    answer = extract_boxed(text)
    if answer is not None and task == "choice":
        answer = answer.strip().strip("()").strip()
    return answer
