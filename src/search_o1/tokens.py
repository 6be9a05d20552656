"""One estimate of tokens from characters, for when no tokenizer or server count is at hand.

Four characters per token is the usual figure for English text under the BPE
vocabularies of current models; code and other scripts run denser, which is why the
engine re-bases its estimate on the server's own count after every call and only
estimates the text appended since (a few inserted blocks at most).
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str | int) -> int:
    """Tokens in `text` (or in that many characters), rounded up; 0 only for nothing.

    >>> estimate_tokens("abcdefgh"), estimate_tokens("abc"), estimate_tokens(""), estimate_tokens(9)
    (2, 1, 0, 3)
    """
    chars = text if isinstance(text, int) else len(text)
    return -(-chars // CHARS_PER_TOKEN) if chars > 0 else 0
