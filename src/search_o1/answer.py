"""Pull the final answer out of a reasoning chain: the last \\boxed{...}, or a code block."""

from __future__ import annotations

import re
from collections.abc import Iterator

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TEXT = re.compile(r"^\\(?:text|textbf|mathrm)\s*\{(.*)\}$", re.DOTALL)
# The placeholder in any spelling a model writes it: YOUR_ANSWER, YOUR\_ANSWER, your answer.
_PLACEHOLDER = re.compile(r"your[\s_\\]*answer", re.IGNORECASE)
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


def _boxes(text: str) -> Iterator[str]:
    """The contents of the complete boxes, last first, \\text{} unwrapped."""
    for match in reversed(list(_BOXED.finditer(text))):
        content = _balanced(text, match.end())
        if content is None:
            continue  # an unclosed box (cut generation): try an earlier one
        content = content.strip()
        inner = _TEXT.match(content)
        if inner and _balanced(content, content.index("{") + 1) == inner.group(1):
            content = inner.group(1).strip()
        yield content


def extract_boxed(text: str) -> str | None:
    """The content of the last complete \\boxed{...} (balanced braces), \\text{} unwrapped.

    >>> extract_boxed(r"so \\boxed{\\frac{1}{2}} done")
    '\\\\frac{1}{2}'
    >>> extract_boxed(r"\\boxed{1} then \\boxed{\\text{Paris}}")
    'Paris'
    >>> extract_boxed("no box") is None
    True
    """
    return next(_boxes(text), None)


def is_placeholder(answer: str, task: str) -> bool:
    r"""Whether a box holds the answer-format instruction's placeholder (ours and the
    paper's say "\boxed{YOUR_ANSWER}", ours for choices "\boxed{LETTER}"): a small model
    copies it; that is no answer. LaTeX may escape the underscore (`YOUR\_ANSWER`).

    >>> is_placeholder("YOUR\\_ANSWER", "qa"), is_placeholder("your answer", "math")
    (True, True)
    >>> is_placeholder("LETTER", "choice"), is_placeholder("letter", "qa")
    (True, False)
    """
    text = answer.strip()
    return bool(_PLACEHOLDER.fullmatch(text)) or (task == "choice" and text == "LETTER")


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
    """The answer for a task kind: code for "code", the last box otherwise, passing over
    boxes that hold the instruction's placeholder.

    >>> extract_answer(r"\\boxed{Lucca}; answer as \\boxed{YOUR_ANSWER}", "qa")
    'Lucca'
    >>> extract_answer(r"\\boxed{YOUR_ANSWER}", "qa") is None
    True
    """
    if task == "code":
        return extract_code(text)
    # The last box that is not the instruction's placeholder echoed back.
    answer = next((b for b in _boxes(text) if not is_placeholder(b, task)), None)
    if answer is not None and task == "choice":
        answer = answer.strip().strip("()").strip()
    return answer
