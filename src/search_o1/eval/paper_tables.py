"""The paper's printed numbers (arXiv 2501.05366 v1, QwQ-32B-Preview) and its matrices.

Table 1 (reasoning sets, pass@1 in percent: EM on GPQA-diamond, `math_equal` on
MATH500/AMC23/AIME24, pass@1 on LiveCodeBench) and Table 3 (QA sets, EM / F1), method by
method, so `reproduce` can print ours beside theirs.
"""

from __future__ import annotations

__all__ = [
    "METHOD_LABELS",
    "PAPER",
    "PAPER_SIZES",
    "PAPER_SPLITS",
    "SPLITS",
    "TABLES",
    "paper_cell",
]

# table -> the datasets of its columns (our known names), in the paper's order.
TABLES: dict[str, tuple[str, ...]] = {
    "reasoning": ("gpqa", "math500", "amc23", "aime24", "livecodebench"),
    "qa": ("nq", "triviaqa", "hotpotqa", "2wiki", "musique", "bamboogle"),
}
METHODS: tuple[str, ...] = ("direct", "rag", "rag-agent", "search-o1")
# How the paper names each method's row.
METHOD_LABELS = {
    "direct": "QwQ-32B (direct)",
    "rag": "RAG-QwQ-32B",
    "rag-agent": "RAgent-QwQ-32B",
    "search-o1": "Search-o1",
}
# Table 1, overall columns, in TABLES["reasoning"] order.
_TABLE_1 = {
    "direct": "58.1 83.2 82.5 53.3 33.0",
    "rag": "58.6 84.8 82.5 50.0 24.1",
    "rag-agent": "61.6 85.0 85.0 56.7 26.8",
    "search-o1": "63.6 86.4 85.0 56.7 33.0",
}
# Table 1's split columns, shown before each set's overall column: GPQA by domain and
# LiveCodeBench by difficulty. dataset -> (the metrics' breakdown group, (short title,
# label) per column); the labels are the datasets' own.
SPLITS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "gpqa": ("domain", (("Phy", "Physics"), ("Chem", "Chemistry"), ("Bio", "Biology"))),
    "livecodebench": ("difficulty", (("E", "easy"), ("M", "medium"), ("H", "hard"))),
}
# Table 1, split columns: GPQA Phy Chem Bio, then LiveCodeBench E M H.
_TABLE_1_SPLITS = {
    "direct": "75.6 39.8 68.4 61.5 29.7 20.4",
    "rag": "76.7 38.7 73.7 57.7 16.2 12.2",
    "rag-agent": "76.7 46.2 68.4 65.4 18.9 12.2",
    "search-o1": "77.9 47.3 78.9 57.7 32.4 20.4",
}
# Table 3, EM/F1, in TABLES["qa"] order.
_TABLE_3 = {
    "direct": "23.0/33.1 53.8/60.7 25.4/33.3 34.4/40.9 9.0/18.9 38.4/53.7",
    "rag": "29.6/44.4 65.6/77.6 34.2/46.4 35.6/46.2 10.6/20.2 55.2/67.4",
    "rag-agent": "33.6/48.4 62.0/74.0 43.0/55.2 58.4/71.2 13.6/25.5 52.0/64.7",
    "search-o1": "34.0/49.7 63.4/74.1 45.2/57.3 58.0/71.4 16.6/28.2 56.0/67.8",
}


# How many problems the paper's numbers are over, per column ("dataset:label" for a
# split column): GPQA-diamond's domains; LiveCodeBench's difficulties, as its percentages
# imply (61.5 = 16/26, 29.7 = 11/37, 20.4 = 10/49); the QA sets, the first 500 lines its
# preprocessing keeps (Bamboogle has 125).
PAPER_SIZES: dict[str, int] = {
    "gpqa": 198,
    "gpqa:Physics": 86,
    "gpqa:Chemistry": 93,
    "gpqa:Biology": 19,
    "math500": 500,
    "amc23": 40,
    "aime24": 30,
    "livecodebench": 112,
    "livecodebench:easy": 26,
    "livecodebench:medium": 37,
    "livecodebench:hard": 49,
    "nq": 500,
    "triviaqa": 500,
    "hotpotqa": 500,
    "2wiki": 500,
    "musique": 500,
    "bamboogle": 125,
}
# The split `reproduce` runs where the paper used a subset of our file: LiveCodeBench
# releases v1-v4 dated from 2024-08-01 (112 problems there, 113 in our file).
PAPER_SPLITS: dict[str, str] = {"livecodebench": "v1-v4"}


def _parse(
    rows: dict[str, str], datasets: tuple[str, ...]
) -> dict[tuple[str, str], tuple[float, ...]]:
    return {
        (method, dataset): tuple(float(v) for v in cell.split("/"))
        for method, line in rows.items()
        for dataset, cell in zip(datasets, line.split(), strict=True)
    }


def _split_columns() -> tuple[str, ...]:
    """'dataset:label' for each split column of Table 1, in _TABLE_1_SPLITS order."""
    return tuple(f"{d}:{label}" for d, (_, cols) in SPLITS.items() for _, label in cols)


# (method, dataset) -> the paper's numbers: one value (reasoning) or (EM, F1) (QA); a
# split column's dataset is "dataset:label" ("gpqa:Physics").
PAPER: dict[tuple[str, str], tuple[float, ...]] = {
    **_parse(_TABLE_1, TABLES["reasoning"]),
    **_parse(_TABLE_1_SPLITS, _split_columns()),
    **_parse(_TABLE_3, TABLES["qa"]),
}


def paper_cell(method: str, dataset: str, label: str | None = None) -> str:
    """The paper's number(s) for a cell as printed ("63.6", "34.0/49.7"), or "–";
    `label` picks a split column (a GPQA domain, a LiveCodeBench difficulty).

    >>> paper_cell("search-o1", "gpqa"), paper_cell("rag", "nq"), paper_cell("x", "nq")
    ('63.6', '29.6/44.4', '–')
    >>> paper_cell("search-o1", "gpqa", "Chemistry"), paper_cell("direct", "livecodebench", "hard")
    ('47.3', '20.4')
    """
    values = PAPER.get((method, f"{dataset}:{label}" if label else dataset))
    return "/".join(f"{v:.1f}" for v in values) if values else "–"
