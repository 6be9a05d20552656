"""Reason-in-Documents: condense retrieved documents into the facts the chain needs."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from search_o1.errors import ContextOverflowError
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.markers import neutralise
from search_o1.prompts import NOTHING_FOUND
from search_o1.prompts.templates import PromptSet, page_fields
from search_o1.reader_history import paper_prev_reasoning, trim_reasoning
from search_o1.sources import CITE_INSTRUCTION
from search_o1.tokens import estimate_tokens
from search_o1.types import Document, Hit, Message, Prompt, ReaderResult, Sampling, Usage


def format_documents(documents: Sequence[Document]) -> str:
    """Documents numbered for a prompt, marker strings neutralised."""
    parts = []
    for i, doc in enumerate(documents, 1):
        head = f"**Document {i}**: {doc.hit.title}"
        if doc.hit.url:
            head += f" ({doc.hit.url})"
        parts.append(f"{head}\n{doc.text.strip()}")
    return neutralise("\n\n".join(parts)) if parts else "(no documents)"


def format_hits(hits: Sequence[Hit]) -> str:
    """Raw results for rag-agent: title, URL (or id) and a snippet, neutralised."""
    if not hits:
        return "No results."
    lines = []
    for i, h in enumerate(hits, 1):
        snippet = h.snippet or h.text[:300]
        lines.append(f"{i}. {h.title}\n   URL: {h.url or h.id}\n   {snippet.strip()}")
    return neutralise("\n".join(lines))


# Tokens a chat template adds around the reader's one message (a generous guess).
_TEMPLATE_TOKENS = 64
_HEADING = re.compile(r"\*\*\s*Final Information\s*\*\*:?", re.IGNORECASE)


def parse_refined(raw: str) -> tuple[str, bool]:
    """(text after the last Final Information heading, whether a heading was found).

    >>> parse_refined("thinking...\\n**Final Information**\\n\\nParis is the capital.")
    ('Paris is the capital.', True)
    >>> parse_refined("no heading here")
    ('No helpful information found.', False)
    """
    matches = list(_HEADING.finditer(raw))
    if not matches:
        return NOTHING_FOUND, False
    text = raw[matches[-1].end() :].strip().strip("`").strip()
    return (text or NOTHING_FOUND), True


_PAPER_INFO = "\n**Final Information**"
_PAPER_STEPS = "\n**Modified Reasoning Steps**"


def paper_refined(raw: str) -> tuple[str, bool]:
    """(the facts, whether a heading was found) exactly as the paper's script reads them.

    Only `"\\n**Final Information**"` counts (case, asterisks and the line break before
    it as written): the text after its last occurrence, line breaks removed, backticks
    stripped from both ends, then spaces. Else the text after the last
    `"\\n**Modified Reasoning Steps**"`, else "No helpful information found.".

    >>> paper_refined("Reading.\\n\\n**Final Information**\\n\\nLine one.\\nLine two.\\n```")
    ('Line one.Line two.', True)
    >>> paper_refined("**Final Information**\\n\\nAt the start, no line break before it.")
    ('No helpful information found.', False)
    """
    if _PAPER_INFO in raw:
        return raw.split(_PAPER_INFO)[-1].replace("\n", "").strip("`").strip(), True
    if _PAPER_STEPS in raw:
        return raw.split(_PAPER_STEPS)[-1].strip("`").strip(), True
    return NOTHING_FOUND, False


class Reader:
    """Runs Reason-in-Documents with its own model (the main one by default).

    `max_tokens` is cut to what the reader model's window leaves after the prompt, so a
    large limit (the paper's: the main model's) never makes the server refuse the call.
    `cite`: ask for a document number after each fact (`search_o1.sources`), only on
    our built-in prompt: a prompt template of the user's is sent as written.
    `paper`: the previous steps and the reply's parse exactly as the paper's script
    (`paper_prev_reasoning`, `paper_refined`); ours otherwise.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        sampling: Sampling,
        max_tokens: int = 32768,
        prompts: PromptSet | None = None,
        cite: bool = False,
        paper: bool = False,
    ) -> None:
        self.llm = llm
        self.sampling = sampling
        self.max_tokens = max_tokens
        self.prompts = prompts or PromptSet()
        self.cite = cite
        self.paper = paper

    async def refine(
        self, chain: str, query: str, documents: Sequence[Document], *, task: str = "qa"
    ) -> ReaderResult:
        steps = paper_prev_reasoning(chain) if self.paper else trim_reasoning(chain)
        prompt = self.prompts.reader(
            task,
            steps,
            query,
            self.prompts.documents(
                task, page_fields(documents), lambda: format_documents(documents)
            ),
            page_fields(documents),
        )
        if self.cite and not self._templated(task):
            prompt += CITE_INSTRUCTION + "\n"
        start = time.perf_counter()
        completion = await self.llm.complete(
            CompletionRequest(
                Prompt((Message("user", prompt),)),
                stop=[],
                max_tokens=await self._room(prompt),
                sampling=self.sampling,
                role="reader",
            )
        )
        parse = paper_refined if self.paper else parse_refined
        refined, found = parse(completion.text)
        return ReaderResult(
            prompt=prompt,
            raw=completion.text,
            refined=neutralise(refined),
            found=found,
            usage=Usage(completion.prompt_tokens, completion.completion_tokens),
            latency_s=time.perf_counter() - start,
            truncated=completion.finish == "length",
        )

    def _templated(self, task: str) -> bool:
        templates = self.prompts.templates
        return f"reader.{task}" in templates or "reader" in templates

    async def _room(self, prompt: str) -> int:
        context = await self.llm.context_length()
        if context is None:
            return self.max_tokens
        # A quarter more than the estimate: dense text (code, numbers) has more tokens.
        needed = estimate_tokens(prompt) * 5 // 4 + _TEMPLATE_TOKENS
        if needed >= context:
            raise ContextOverflowError(
                "reader",
                f"the reader prompt (~{needed} tokens) does not fit the reader "
                f"model's {context}-token window",
            )
        return min(self.max_tokens, context - needed)
