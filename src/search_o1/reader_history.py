"""The previous reasoning as Reason-in-Documents sees it: numbered steps, trimmed.

The paper's rule: a step is a line of the chain. With more than four steps, keep the
first, the last three and every step that holds a search query or a search result;
each run of dropped steps becomes "...". (The official script counts a trailing empty
step, so its "last four" are the last three lines.) So the search history always
reaches the reader.

One difference from a plain split at line breaks: a query or a result block that
spans several lines is one step, kept whole. The official script inserts results with
their newlines removed, so there a result is always one line; ours keeps the reader's
line breaks, and without this rule the facts of an earlier search would be dropped as
"..." between its markers.
"""

from __future__ import annotations

from search_o1.markers import BEGIN_QUERY, BEGIN_RESULT, END_QUERY, END_RESULT

__all__ = ["KEEP_LAST", "paper_prev_reasoning", "split_steps", "trim_reasoning"]

KEEP_LAST = 3
_BLOCKS = ((BEGIN_QUERY, END_QUERY), (BEGIN_RESULT, END_RESULT))


def _open_block(line: str) -> str | None:
    """The end marker a line leaves open (a block begun on it and not closed), or None."""
    for begin, end in _BLOCKS:
        start = line.rfind(begin)
        if start >= 0 and line.find(end, start) < 0:
            return end
    return None


def split_steps(chain: str) -> list[str]:
    """The chain's steps: its non-blank lines, a multi-line marker block as one step.

    >>> split_steps("a\\n\\n<|begin_search_result|>\\nfact 1\\nfact 2\\n<|end_search_result|>\\nb")
    ['a', '<|begin_search_result|>\\nfact 1\\nfact 2\\n<|end_search_result|>', 'b']
    """
    steps: list[str] = []
    waiting: str | None = None  # the end marker of the block being joined
    for line in chain.split("\n"):
        if waiting is not None:
            if line.strip():
                steps[-1] += "\n" + line
            if waiting in line:
                waiting = _open_block(line[line.find(waiting) + len(waiting) :])
            continue
        if line.strip():
            steps.append(line)
            waiting = _open_block(line)
    return steps


def _searched(step: str) -> bool:
    return BEGIN_QUERY in step or BEGIN_RESULT in step


def trim_reasoning(chain: str) -> str:
    """Numbered steps with the paper's trimming (see the module docstring).

    >>> print(trim_reasoning("a\\nb"))
    Step 1: a
    Step 2: b
    >>> text = "\\n".join(["s1", "s2", "<|begin_search_query|>q<|end_search_query|>",
    ...                    "s4", "s5", "s6", "s7", "s8"])
    >>> print(trim_reasoning(text))
    Step 1: s1
    ...
    Step 3: <|begin_search_query|>q<|end_search_query|>
    ...
    Step 6: s6
    Step 7: s7
    Step 8: s8
    """
    steps = [f"Step {i}: {s}" for i, s in enumerate(split_steps(chain), 1)]
    if len(steps) <= KEEP_LAST + 1:
        return "\n".join(steps)
    out: list[str] = []
    for i, step in enumerate(steps):
        if i == 0 or i >= len(steps) - KEEP_LAST or _searched(step):
            out.append(step)
        elif out[-1] != "...":
            out.append("...")
    return "\n".join(out)


def paper_prev_reasoning(output: str) -> str:
    """The previous steps exactly as the paper's script gives them to the reader.

    Its rule, on the chain so far: `replace("\\n\\n", "\\n")` once (so of a blank
    line pair one line break remains, and three line breaks leave an empty step), split
    at line breaks, write each part as `Step i: part` followed by a blank line, split
    that at blank lines again (the last part is empty). Up to five parts: all, joined
    by blank lines. More: the first, the last four and every part holding a query or a
    result marker; each run of others becomes one `...`. Then line breaks are stripped
    from both ends.

    >>> print(paper_prev_reasoning("a\\n\\nb"))
    Step 1: a
    <BLANKLINE>
    Step 2: b
    """
    lines = output.replace("\n\n", "\n").split("\n")
    parts = "".join(f"Step {i}: {line}\n\n" for i, line in enumerate(lines, 1)).split("\n\n")
    if len(parts) <= 5:
        return "\n\n".join(parts).strip("\n")
    text = ""
    for i, part in enumerate(parts):
        if i == 0 or i >= len(parts) - 4 or BEGIN_QUERY in part or BEGIN_RESULT in part:
            text += part + "\n\n"
        elif not text.endswith("\n\n...\n\n"):
            text += "...\n\n"
    return text.strip("\n")
