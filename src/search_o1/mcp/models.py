"""The typed results of the MCP tools: pydantic models, published as output schemas."""

from __future__ import annotations

from pydantic import BaseModel, Field

from search_o1.types import Hit, SearchRecord, Source, Trace

__all__ = [
    "AskResult",
    "HitOut",
    "RetrieveResult",
    "SearchMade",
    "SearchResult",
    "SourceOut",
    "UsageOut",
]


class SourceOut(BaseModel):
    """A numbered source: a document that facts behind the answer were read from."""

    n: int = Field(description="Its number, 1 first.")
    title: str
    url: str | None = Field(description="The page's URL; null for a local passage.")
    id: str = Field(description="Passage or hit id.")
    quote: str = Field(description="The document's sentence(s) the fact came from, or ''.")
    query: str = Field(description="The search that found it.")

    @classmethod
    def of(cls, source: Source) -> SourceOut:
        # The fields are named as the dataclass's: pydantic reads them off it.
        return cls.model_validate(source, from_attributes=True)


class SearchMade(BaseModel):
    """One query the model wrote, and what became of it."""

    query: str
    outcome: str = Field(description="searched, repeated, limit, empty, placeholder or failed.")
    hits: int = Field(description="Hits the search returned.")
    error: str | None = None

    @classmethod
    def of(cls, record: SearchRecord) -> SearchMade:
        return cls(
            query=record.query, outcome=record.outcome, hits=len(record.hits), error=record.error
        )


class UsageOut(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    reader_prompt_tokens: int
    reader_completion_tokens: int


class AskResult(BaseModel):
    """A question answered: the answer, its numbered sources, and the searches made."""

    answer: str | None = Field(description="The final answer; null when none was given.")
    finish_reason: str = Field(
        description="answered, no_answer, max_tokens, max_turns, context_overflow or error."
    )
    error: str | None = None
    sources: list[SourceOut]
    searches: list[SearchMade]
    usage: UsageOut

    @classmethod
    def of(cls, trace: Trace, sources: list[Source]) -> AskResult:
        usage = UsageOut(
            prompt_tokens=trace.usage.prompt_tokens,
            completion_tokens=trace.usage.completion_tokens,
            reader_prompt_tokens=trace.reader_usage.prompt_tokens,
            reader_completion_tokens=trace.reader_usage.completion_tokens,
        )
        reason = trace.finish_reason.value if trace.finish_reason else "error"
        return cls(
            answer=trace.answer,
            finish_reason=reason,
            error=trace.error,
            sources=[SourceOut.of(s) for s in sources],
            searches=[SearchMade.of(r) for r in trace.searches],
            usage=usage,
        )


class SearchResult(BaseModel):
    """What Reason-in-Documents extracted from one search, with the documents behind it."""

    query: str
    facts: str = Field(description="The extracted facts (marks like [2] name a source).")
    found: bool = Field(description="Whether the documents held anything useful.")
    sources: list[SourceOut]


class HitOut(BaseModel):
    id: str
    title: str
    url: str | None = None
    text: str = Field(description="The passage text (local corpora) or ''.")
    snippet: str = Field(description="The search engine's snippet (web) or ''.")
    score: float | None = None

    @classmethod
    def of(cls, hit: Hit) -> HitOut:
        return cls.model_validate(hit, from_attributes=True)


class RetrieveResult(BaseModel):
    """The raw hits of one search, best first."""

    query: str
    hits: list[HitOut]
