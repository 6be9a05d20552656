"""Benchmark loaders: the paper's eleven sets in their native, FlashRAG and paper formats.

A dataset is a list of `Item`s plus what was skipped and why. Each known name fixes the
task kind (which prompt the engine uses) and the metric; any JSON/JSONL/CSV file works
with `--task` and, when its fields are unusual, a field mapping. Nothing is downloaded:
a missing file names where it is expected and where the data comes from.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from search_o1.errors import ConfigError, InputFileError
from search_o1.eval.rows import Item, RowError, parse_row, row_id
from search_o1.tasks import TASKS, TaskKind

DATA_DIR_ENV = "SEARCH_O1_DATA_DIR"
PRIMARY_METRIC: dict[str, str] = {
    "qa": "em",
    "multihop": "em",
    "math": "math_equal",
    "choice": "em",
    "code": "pass@1",
}


@dataclass(frozen=True)
class Skipped:
    line: int
    id: str | None
    reason: str


@dataclass
class Dataset:
    name: str
    task: TaskKind
    path: Path
    items: list[Item]
    skipped: list[Skipped] = field(default_factory=list)
    integer_answers: bool = False

    @property
    def metric(self) -> str:
        return PRIMARY_METRIC[self.task]


@dataclass(frozen=True)
class Spec:
    """A known benchmark: task, expected files per split (first found wins), provenance."""

    name: str
    task: TaskKind
    splits: Mapping[str, tuple[str, ...]]
    source: str
    integer_answers: bool = False
    title: str = ""
    # split -> which items of its file it keeps (a named subset of a larger file)
    subsets: Mapping[str, Callable[[Item], bool]] = field(default_factory=dict)


def _lcb_v1_v4(item: Item) -> bool:
    """The paper's LiveCodeBench subset: releases v1-v4 (problems up to September 2024),
    contest dates from 2024-08-01 (the paper: 112 problems; 113 in our later release)."""
    date = str(item.meta.get("contest_date", ""))[:10]
    return "2024-08-01" <= date <= "2024-09-30"


def _qa(name: str, task: TaskKind, native: str, paper: str, source: str, title: str) -> Spec:
    splits = {"test": (paper, native), "paper": (paper,), "native": (native,)}
    return Spec(name, task, splits, source, title=title)


_FLASHRAG = "FlashRAG (huggingface.co/datasets/RUC-NLPIR/FlashRAG_datasets)"
KNOWN: dict[str, Spec] = {
    s.name: s
    for s in (
        Spec(
            "gpqa",
            "choice",
            {
                "diamond": ("gpqa/gpqa_diamond.csv", "GPQA/diamond.json"),
                "main": ("gpqa/gpqa_main.csv", "GPQA/main.json"),
                "extended": ("gpqa/gpqa_extended.csv", "GPQA/extended.json"),
            },
            "the official CSVs in dataset.zip of github.com/idavidrein/gpqa (see its README)",
            title="GPQA",
        ),
        Spec(
            "math500",
            "math",
            {"test": ("math/math500_test.json", "MATH500/test.json", "math/math500_test.jsonl")},
            "huggingface.co/datasets/HuggingFaceH4/MATH-500",
            title="MATH500",
        ),
        Spec(
            "aime24",
            "math",
            {"test": ("math/aime2024_test.jsonl", "AIME/test.json")},
            "huggingface.co/datasets/AI-MO/aimo-validation-aime (rows from 2024)",
            integer_answers=True,
            title="AIME24",
        ),
        Spec(
            "amc23",
            "math",
            {"test": ("math/amc2023_test.jsonl", "AMC/test.json")},
            "huggingface.co/datasets/AI-MO/aimo-validation-amc (rows from 2023)",
            integer_answers=True,
            title="AMC23",
        ),
        Spec(
            "livecodebench",
            "code",
            {
                "test": (
                    "code/livecodebench_2024-08_to_2024-11_public.json",
                    "LiveCodeBench/test.json",
                ),
                "v1-v4": (
                    "code/livecodebench_2024-08_to_2024-11_public.json",
                    "LiveCodeBench/test.json",
                ),
            },
            "huggingface.co/datasets/livecodebench/code_generation_lite (2024-08..2024-11)",
            title="LiveCodeBench",
            subsets={"v1-v4": _lcb_v1_v4},
        ),
        _qa("nq", "qa", "qa/nq_test_1000.jsonl", "QA_Datasets/nq.json", _FLASHRAG, "NQ"),
        _qa(
            "triviaqa",
            "qa",
            "qa/triviaqa_test_1000.jsonl",
            "QA_Datasets/triviaqa.json",
            _FLASHRAG,
            "TriviaQA",
        ),
        _qa(
            "hotpotqa",
            "multihop",
            "multihop/hotpotqa_dev_distractor_200.jsonl",
            "searcho1_format/hotpotqa_500.json",
            "hotpotqa.github.io (dev, distractor)",
            "HotpotQA",
        ),
        _qa(
            "2wiki",
            "multihop",
            "multihop/2wiki_dev_164.jsonl",
            "searcho1_format/2wikimultihopqa_500.json",
            "github.com/Alab-NII/2wikimultihop (dev)",
            "2Wiki",
        ),
        _qa(
            "musique",
            "multihop",
            "multihop/musique_ans_dev_200.jsonl",
            "searcho1_format/musique_500.json",
            "github.com/StonyBrookNLP/musique (ans, dev)",
            "MuSiQue",
        ),
        _qa(
            "bamboogle",
            "multihop",
            "qa/bamboogle_test.jsonl",
            "searcho1_format/bamboogle_125.json",
            _FLASHRAG,
            "Bamboogle",
        ),
    )
}
ALIASES = {
    "aime": "aime24",
    "aime2024": "aime24",
    "amc": "amc23",
    "amc2023": "amc23",
    "livecode": "livecodebench",
    "lcb": "livecodebench",
    "math": "math500",
    "2wikimultihopqa": "2wiki",
    "gpqa-diamond": "gpqa",
}


def default_data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV) or "data")


def expected_files() -> dict[str, dict[str, tuple[str, ...]]]:
    """Every known name -> split -> the file names looked for under the data dir."""
    return {name: dict(spec.splits) for name, spec in KNOWN.items()}


def _resolve_known(spec: Spec, split: str | None, data_dir: Path) -> Path:
    split = split or next(iter(spec.splits))
    if split not in spec.splits:
        raise ConfigError(f"{spec.name} has no split {split!r}; splits: {', '.join(spec.splits)}")
    candidates = spec.splits[split]
    for rel in candidates:
        if (data_dir / rel).is_file():
            return data_dir / rel
    wanted = " or ".join(str(data_dir / rel) for rel in candidates)
    raise ConfigError(
        f"dataset {spec.name} ({split}) not found: put it at {wanted} "
        f"(or pass --data-dir / {DATA_DIR_ENV}); it comes from {spec.source}"
    )


# Bytes that are not UTF-8 are read as lone surrogates, which `parse_row` then replaces
# with U+FFFD and counts, as it does for a \ud800 escape: one bad byte costs one
# character, not the run.
_UNDECODED = "surrogateescape"


def _read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | RowError]]:
    """(line or row number, row) pairs; unreadable rows come back as RowError."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8-sig", errors=_UNDECODED) as f:
            for n, row in enumerate(csv.DictReader(f), start=2):  # line 1 is the header
                yield n, dict(row)
        return
    if suffix == ".jsonl":
        # Lines end at \n only: a stray \r inside a row must not split it (and shift
        # every later line number in what is reported).
        with path.open(encoding="utf-8", errors=_UNDECODED, newline="\n") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as e:  # also an integer past Python's digit limit
                    yield n, RowError(f"invalid JSON: {getattr(e, 'msg', e)}")
                    continue
                except RecursionError:
                    yield n, RowError("invalid JSON: nested too deeply")
                    continue
                yield n, row if isinstance(row, dict) else RowError("not a JSON object")
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors=_UNDECODED))
    except json.JSONDecodeError as e:
        # One object, then more: JSON lines under another name (rows.json, rows.txt).
        hint = "; one object per line? name the file .jsonl" if e.msg == "Extra data" else ""
        raise InputFileError(str(path), f"invalid JSON: {e.msg}{hint}", e.lineno) from None
    except (ValueError, RecursionError) as e:  # a huge integer; nesting past the parser
        raise InputFileError(str(path), f"invalid JSON: {e}") from None
    if isinstance(data, dict):  # {"data": [...]} or {id: row}
        data = data.get("data", list(data.values()))
    if not isinstance(data, list):
        raise InputFileError(str(path), "expected a JSON list of objects")
    for n, row in enumerate(data, start=1):
        yield n, row if isinstance(row, dict) else RowError("not a JSON object")


def parse_fields(spec: str | None) -> dict[str, str]:
    """`question=q,answer=gold,id=qid` -> {"question": "q", ...}.

    >>> parse_fields("question=q, answer=a")
    {'question': 'q', 'answer': 'a'}
    """
    if not spec:
        return {}
    out: dict[str, str] = {}
    for part in spec.split(","):
        ours, sep, theirs = part.partition("=")
        if not sep or not ours.strip() or not theirs.strip():
            raise ConfigError(f"bad field mapping {part!r}: use ours=theirs, e.g. question=q")
        out[ours.strip()] = theirs.strip()
    return out


def load_file(
    path: Path,
    task: TaskKind,
    *,
    name: str | None = None,
    seed: int = 0,
    fields: Mapping[str, str] | None = None,
    integer_answers: bool = False,
) -> Dataset:
    """Load any supported file as `task`; malformed rows are skipped and listed."""
    if not path.is_file():
        raise InputFileError(str(path), "no such file")
    items: list[Item] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for n, row in _read_rows(path):
        if isinstance(row, RowError):
            skipped.append(Skipped(n, None, row.reason))
            continue
        try:
            item = parse_row(row, task, index=n, seed=seed, fields=fields or {})
        except RowError as e:
            skipped.append(Skipped(n, row_id(row, fields or {}), e.reason))
            continue
        if item.id in seen:  # ids key the resume file, so they must be unique
            skipped.append(Skipped(n, item.id, "duplicate id"))
            continue
        seen.add(item.id)
        items.append(item)
    return Dataset(name or path.stem, task, path, items, skipped, integer_answers)


def load_dataset(
    name_or_path: str,
    *,
    data_dir: Path | None = None,
    split: str | None = None,
    task: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    fields: Mapping[str, str] | None = None,
    file_task: str | None = None,
) -> Dataset:
    """A known benchmark by name (files under `data_dir`), or any file with `task`.

    `file_task` is a file's task when `task` is None (a setting from search-o1.toml or
    the environment): it never overrides a known benchmark's own, as `task` (a flag) does.
    """
    key = ALIASES.get(name_or_path.lower(), name_or_path.lower())
    task = task if task is not None or key in KNOWN else file_task
    if task is not None and task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")
    if key in KNOWN:
        spec = KNOWN[key]
        path = _resolve_known(spec, split, data_dir or default_data_dir())
        kind: TaskKind = task or spec.task  # type: ignore[assignment]
        ds = load_file(
            path,
            kind,
            name=spec.name,
            seed=seed,
            fields=fields,
            integer_answers=spec.integer_answers,
        )
        keep = spec.subsets.get(split or "")
        if keep is not None:
            ds = replace(ds, items=[item for item in ds.items if keep(item)])
    else:
        path = Path(name_or_path)
        if not path.exists():
            known = ", ".join(sorted(KNOWN))
            raise ConfigError(f"{name_or_path!r} is neither a known dataset ({known}) nor a file")
        if path.is_dir():
            raise ConfigError(
                f"--dataset {path} is a folder: pass a data file, or a known name with "
                f"--data-dir {path}"
            )
        if task is None:
            raise ConfigError(f"{path}: say what kind of task it is with --task {'|'.join(TASKS)}")
        ds = load_file(path, task, seed=seed, fields=fields)  # type: ignore[arg-type]
    if limit is not None:
        ds = replace(ds, items=ds.items[:limit])
    return ds


def title_of(name: str) -> str:
    """The paper's column title for a dataset name ("gpqa" -> "GPQA")."""
    spec = KNOWN.get(ALIASES.get(name, name))
    return spec.title if spec else name
