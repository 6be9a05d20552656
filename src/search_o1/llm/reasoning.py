"""Reasoning as chain text: the thinking a server returned apart, joined back into the chain.

The engine works on one raw chain of text. A server running a reasoning parser returns the
model's thinking apart from its answer, so a reply is joined back into the chain: thinking
opens with `<think>\\n` and a switch to the answer writes `</think>`, exactly the text a
`<think>`-template model produces on a raw completions endpoint. Pure functions, shared by
the OpenAI client (chat mode), its tools turns and the engine's tools driver; which fields
hold the thinking on the wire is the OpenAI client's business (`openai.wire`). Public: the
engine (a layer above the model clients) uses it, so it is part of the `llm` package's
surface, not a private helper.
"""

from __future__ import annotations

from search_o1.markers import THINK_CLOSE, THINK_OPEN

__all__ = ["OPENING", "ChainJoiner", "join_prompt", "join_reply", "split_chain", "thinking_open"]

OPENING = THINK_OPEN + "\n"


def thinking_open(text: str) -> bool:
    """Whether `text` ends inside a think block.

    >>> thinking_open("<think>\\nhm"), thinking_open("<think>a</think>b"), thinking_open("x")
    (True, False, False)
    """
    return text.rfind(THINK_OPEN) > text.rfind(THINK_CLOSE)


class ChainJoiner:
    """Joins one reply's reasoning and content pieces into raw chain text, in order.

    `thinking`: whether the chain is inside a think block when the reply starts. The
    first reasoning piece of a chain not yet thinking writes `<think>\\n`; the first
    content piece after reasoning in this reply writes `</think>`. Content with no
    reasoning before it in the reply is appended as it is: the server may simply have
    no reasoning parser, and then its content is the raw text.
    """

    def __init__(self, thinking: bool) -> None:
        self.thinking = thinking
        self.reasoned = False

    def reasoning(self, piece: str) -> str:
        """The chain text of a reasoning piece. A parser that cut `<think>` off the
        model's output may leave its newline at the start of the reasoning (vLLM's
        qwen3 parser does): the opening then is `<think>` alone, as the model wrote it.

        >>> ChainJoiner(False).reasoning("\\nhm"), ChainJoiner(False).reasoning("hm")
        ('<think>\\nhm', '<think>\\nhm')
        """
        if not piece:
            return ""
        opening = "" if self.thinking else OPENING
        if opening and piece.startswith("\n"):
            opening = THINK_OPEN
        self.thinking = self.reasoned = True
        return opening + piece

    def content(self, piece: str) -> str:
        if not piece:
            return ""
        if self.thinking and self.reasoned:
            self.thinking = False
            return THINK_CLOSE + piece
        return piece


def join_reply(thinking: bool, reasoning: str, content: str) -> str:
    """A whole reply as raw chain text (the same rule as streaming with ChainJoiner).

    >>> join_reply(False, "hm, search", "")
    '<think>\\nhm, search'
    >>> join_reply(True, "found it\\n", "\\n\\nAnswer: 4")
    'found it\\n</think>\\n\\nAnswer: 4'
    """
    joiner = ChainJoiner(thinking)
    return joiner.reasoning(reasoning) + joiner.content(content)


def split_chain(text: str) -> tuple[str, str]:
    """(thinking, answer) of raw chain text that opens with `<think>`; else ("", text).

    >>> split_chain("<think>\\nhm</think>\\n\\nok")
    ('hm', '\\n\\nok')
    >>> split_chain("<think>\\nstill thinking")
    ('still thinking', '')
    """
    stripped = text.lstrip()
    if not stripped.startswith(THINK_OPEN):
        return "", text
    body = stripped[len(THINK_OPEN) :].removeprefix("\n")
    thinking, closed, answer = body.partition(THINK_CLOSE)
    return (thinking, answer) if closed else (body, "")


def join_prompt(rendered: str, chain: str) -> str:
    """A rendered instruction prompt plus a chat-mode chain, with one `<think>` only.

    A chain read from a chat server opens with `<think>\\n` (written by ChainJoiner); a
    template whose generation prompt already opened it must not get a second one.

    >>> join_prompt("<|im_start|>assistant\\n<think>\\n", "<think>\\nhm")
    '<|im_start|>assistant\\n<think>\\nhm'
    """
    if chain.startswith(THINK_OPEN) and rendered.rstrip().endswith(THINK_OPEN):
        chain = chain[len(THINK_OPEN) :].removeprefix("\n")
    return rendered + chain
