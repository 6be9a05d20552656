"""MemorySearch takes hits as the JSON hits format writes them (plain dicts), not only as
Hit objects; a malformed one is refused when it is given, not deep inside a run."""

from __future__ import annotations

import pytest

from search_o1 import markers as mk
from search_o1.engine import Engine
from search_o1.errors import ConfigError
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.types import FinishReason, Hit

HITS = {"Puccini birthplace": [{"id": 7, "title": "Puccini", "text": "Born in Lucca."}]}


async def test_dict_hits_run_through_the_engine() -> None:
    # It used to fail in the engine: AttributeError: 'dict' object has no attribute 'text'.
    model = ScriptedLLM(
        [
            f"{mk.BEGIN_QUERY}Puccini birthplace{mk.END_QUERY}",
            "Reading.\n**Final Information**\n\nPuccini was born in Lucca.",
            "\\boxed{Lucca}",
        ]
    )
    trace = await Engine(model, MemorySearch(HITS)).run("Where was Puccini born?")
    assert trace.finish_reason is FinishReason.ANSWERED and trace.answer == "Lucca"
    assert list(trace.searches[0].hits) == [Hit("7", "Puccini", "Born in Lucca.")]
    assert "Born in Lucca." in trace.searches[0].documents[0].text


async def test_a_function_may_return_dicts() -> None:
    search = MemorySearch(lambda q: [{"id": "a", "title": q}])
    assert await search.search("Tosca", k=3) == [Hit("a", "Tosca")]


@pytest.mark.parametrize(
    ("hit", "problem"),
    [
        ({"title": "no id"}, "lacks 'id' or 'title'"),
        ({"id": 1, "title": "t", "body": "x"}, "has unknown fields ['body']"),
        ("just text", "is a str, not a Hit or a dict"),
    ],
)
def test_a_malformed_hit_is_refused_at_construction(hit: object, problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        MemorySearch({"q": [hit]})  # type: ignore[list-item]
    assert str(refused.value) == f"memory search: a hit of 'q' {problem}"
