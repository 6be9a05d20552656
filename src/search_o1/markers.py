"""The marker strings of the method and pure functions that find and wrap them.

Markers are plain text, not special tokens: a model learns them from the instruction.
"""

from __future__ import annotations

import re

BEGIN_QUERY = "<|begin_search_query|>"
END_QUERY = "<|end_search_query|>"
BEGIN_RESULT = "<|begin_search_result|>"
END_RESULT = "<|end_search_result|>"
# The rag-agent baseline also lets the model ask for a full page.
BEGIN_URL = "<|begin_url|>"
END_URL = "<|end_url|>"
BEGIN_FULL_PAGE = "<|begin_full_page|>"
END_FULL_PAGE = "<|end_full_page|>"

# The think block of reasoning models (QwQ, DeepSeek-R1, Qwen3 and most others).
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

ALL_MARKERS = (
    BEGIN_QUERY,
    END_QUERY,
    BEGIN_RESULT,
    END_RESULT,
    BEGIN_URL,
    END_URL,
    BEGIN_FULL_PAGE,
    END_FULL_PAGE,
)

# Any `<|...|>` shaped token, with optional spaces inside, matched loosely so that
# near-misses such as "< |end_search_result| >" are neutralised too.
_MARKERISH = re.compile(r"<\s*\|\s*(/?[a-z_]+)\s*\|\s*>", re.IGNORECASE)


def neutralise(text: str) -> str:
    """Defuse anything that looks like a marker in retrieved or generated-by-reader text.

    `<|end_search_result|>` becomes `<end_search_result>`, so a document can never close
    the result block early or open a query in the model's name.

    >>> neutralise("x <|end_search_result|> y")
    'x <end_search_result> y'
    """
    return _MARKERISH.sub(lambda m: f"<{m.group(1)}>", text)


def last_between(text: str, begin: str, end: str) -> str | None:
    """The stripped content of the last `begin ... end` pair in `text`, or None.

    If `end` is missing after the last `begin` (servers that drop the stop string),
    the text after the last `begin` counts.

    >>> last_between("a <|begin_search_query|> q1 <|end_search_query|>", BEGIN_QUERY, END_QUERY)
    'q1'
    """
    start = text.rfind(begin)
    if start < 0:
        return None
    rest = text[start + len(begin) :]
    stop = rest.find(end)
    return (rest if stop < 0 else rest[:stop]).strip()


def left_open(text: str, begin: str = BEGIN_QUERY, end: str = END_QUERY) -> bool:
    """Whether `text` ends inside a non-empty `begin ...` span that `end` never closed.

    >>> left_open("a <|begin_search_query|>q"), left_open("<|begin_search_query|>")
    (True, False)
    """
    start = text.rfind(begin)
    return start > text.rfind(end) and bool(text[start + len(begin) :])


def result_block(content: str) -> str:
    """Wrap refined facts (already neutralised) the way the paper inserts them."""
    return f"\n\n{BEGIN_RESULT}\n{content.strip()}\n{END_RESULT}\n\n"


def page_block(text: str) -> str:
    """Wrap a page the rag-agent baseline asked to read (already neutralised)."""
    return f"\n\n{BEGIN_FULL_PAGE}\n{text.strip()}\n{END_FULL_PAGE}\n\n"


# The paper profile inserts what the paper's scripts insert, byte for byte: refined facts
# on one line, tight between the markers with a blank line each side; notices, raw
# results and pages as they are, one line break each side of each marker.
def paper_facts_block(facts: str) -> str:
    """Refined facts as `run_search_o1.py` inserts them (line breaks already removed).

    >>> paper_facts_block("Lucca.")
    '\\n\\n<|begin_search_result|>Lucca.<|end_search_result|>\\n\\n'
    """
    return f"\n\n{BEGIN_RESULT}{facts}{END_RESULT}\n\n"


def paper_result_block(content: str) -> str:
    """A notice or rag-agent's raw results as the paper's scripts insert them.

    >>> paper_result_block("No more searches.")
    '\\n<|begin_search_result|>\\nNo more searches.\\n<|end_search_result|>\\n'
    """
    return f"\n{BEGIN_RESULT}\n{content}\n{END_RESULT}\n"


def paper_page_block(content: str) -> str:
    """rag-agent's pages (or its page-limit notice) as the paper's script inserts them."""
    return f"\n{BEGIN_FULL_PAGE}\n{content}\n{END_FULL_PAGE}\n"


def reopen_thinking(chain: str) -> str:
    """`chain` with its last `</think>` removed when a later query follows it.

    Called when the chain ends in a query: a model that closed its thinking and then
    searched gets the result inside its thinking, where the method puts it, not in its
    visible answer. Removing the close reopens the block the model (or its template)
    opened, without writing a second `<think>`.

    >>> reopen_thinking("<think>\\nhm</think>\\n\\nCheck <|begin_search_query|>q")
    '<think>\\nhm\\n\\nCheck <|begin_search_query|>q'
    >>> reopen_thinking("<think>\\nstill open <|begin_search_query|>q")
    '<think>\\nstill open <|begin_search_query|>q'
    """
    close = chain.rfind(THINK_CLOSE)
    if close < 0 or chain.rfind(THINK_OPEN) > close:
        return chain
    return chain[:close] + chain[close + len(THINK_CLOSE) :]
