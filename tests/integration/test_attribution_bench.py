"""The attribution bench on a few HotpotQA questions: its rows hold together."""

from __future__ import annotations

import json
from pathlib import Path

from bench.attribution_bench import lexical_reader, run

from search_o1.search.bm25 import BM25Search
from search_o1.sources import CITE_INSTRUCTION


async def test_marks_cite_fewer_documents_than_the_searches_retrieved(
    shared_data: Path, multihop_bm25: BM25Search
) -> None:
    path = shared_data / "multihop" / "hotpotqa_dev_distractor_200.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()[:8]]
    result = await run(rows, multihop_bm25, 5)
    ours, paper, ceiling = (
        result[k] for k in ("marks (ours)", "no marks (paper profile)", "retrieved (all hits)")
    )
    assert ours["questions"] > 0 and paper["questions"] > 0
    for row in (ours, paper, ceiling):
        assert 0 <= row["recall"] <= 1 and 0 <= row["precision"] <= 1
    # Marks keep a subset of each search's documents; without them every one counts.
    assert ours["sources_per_question"] <= paper["sources_per_question"]
    assert ours["recall"] <= paper["recall"] <= ceiling["recall"]
    assert ours["recall"] > 0  # the marks do reach gold paragraphs


def test_the_lexical_reader_marks_only_when_asked() -> None:
    prompt = (
        "**Current search query**\nOrla Venn birthplace\n\n**Search results**\n"
        "**Document 1**: Kelp\nKelp grows in cold water.\n\n"
        "**Document 2**: Orla Venn\nOrla Venn was born in Tessaly. She built bridges.\n"
    )
    facts = lexical_reader(prompt + CITE_INSTRUCTION)
    assert facts.endswith("According to Orla Venn, Orla Venn was born in Tessaly. [2]")
    assert lexical_reader(prompt).endswith("Orla Venn was born in Tessaly.")
