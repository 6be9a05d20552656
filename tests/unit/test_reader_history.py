"""Reason-in-Documents sees every earlier query and its facts whole, at every hop."""

from __future__ import annotations

from search_o1 import markers as mk
from search_o1.engine import Engine
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.types import FinishReason, Hit

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY
FACTS = [
    "The film Amelie was directed by Jean-Pierre Jeunet.\nIt premiered in 2001.",
    "Jean-Pierre Jeunet was born in Roanne.\nHe trained in animation.",
    "Roanne lies on the Loire.",
]


def reader_reply(facts: str) -> str:
    return f"Reading the pages.\n**Final Information**\n\n{facts}"


async def test_the_third_reader_prompt_holds_the_facts_of_searches_one_and_two() -> None:
    thinking = "\n".join(f"Thought {i} about the question." for i in range(12))
    model = ScriptedLLM(
        [
            f"{thinking}\nFirst the director. {Q}director of Amelie{EQ}",
            reader_reply(FACTS[0]),
            f"{thinking}\nNow the birthplace. {Q}Jeunet birthplace{EQ}",
            reader_reply(FACTS[1]),
            f"{thinking}\nAnd the river. {Q}Roanne river{EQ}",
            reader_reply(FACTS[2]),
            "So the answer is \\boxed{Loire}.",
        ]
    )
    search = MemorySearch(
        {
            "director of Amelie": [Hit("d1", "Amelie", "Amelie is a film by Jeunet.")],
            "Jeunet birthplace": [Hit("d2", "Jeunet", "Jeunet was born in Roanne.")],
            "Roanne river": [Hit("d3", "Roanne", "Roanne is on the Loire.")],
        }
    )
    trace = await Engine(model, search).run("Which river?", task="multihop")
    assert trace.finish_reason is FinishReason.ANSWERED and len(trace.searches) == 3
    third = trace.searches[2].reader
    assert third is not None
    for query, facts in zip(["director of Amelie", "Jeunet birthplace"], FACTS[:2], strict=True):
        assert f"{Q}{query}{EQ}" in third.prompt
        assert f"{mk.BEGIN_RESULT}\n{facts}\n{mk.END_RESULT}" in third.prompt
    # The thinking between the searches was trimmed, so trimming did take place.
    assert third.prompt.count("Thought 5 about the question.") == 0
