"""A block prefix cache like vLLM's automatic prefix caching, over characters.

A prompt is cut into blocks of `block_tokens` tokens; block i is identified by a hash of
block i's text and block i-1's identity, so a block matches only if everything before
it matches too. The cache holds at most `capacity_tokens` tokens, least recently used
blocks going first.
"""

from __future__ import annotations

from collections import OrderedDict

from bench.workload import CHARS_PER_TOKEN


class PrefixCache:
    def __init__(self, capacity_tokens: int, block_tokens: int = 16) -> None:
        self.block_chars = block_tokens * CHARS_PER_TOKEN
        self.block_tokens = block_tokens
        self.capacity = max(1, capacity_tokens // block_tokens)
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def block_ids(self, text: str) -> list[int]:
        ids, previous = [], 0
        size = self.block_chars
        for start in range(0, len(text) - size + 1, size):
            previous = hash((previous, text[start : start + size]))
            ids.append(previous)
        return ids

    def hit_tokens(self, ids: list[int]) -> int:
        """Tokens of the longest cached prefix; touches the blocks it uses."""
        hits = 0
        for block in ids:
            if block not in self._blocks:
                break
            self._blocks.move_to_end(block)
            hits += 1
        return hits * self.block_tokens

    def insert(self, ids: list[int]) -> None:
        for block in ids:
            self._blocks[block] = None
            self._blocks.move_to_end(block)
        while len(self._blocks) > self.capacity:
            self._blocks.popitem(last=False)

    def clear(self) -> None:
        self._blocks.clear()
