"""Pure pieces of dense search: prefixes, model identity, progress text, BM25 term ids."""

from __future__ import annotations

import doctest
import io
import json
from pathlib import Path

import pytest

from search_o1.corpus import progress as progress_module
from search_o1.corpus import vectors
from search_o1.corpus.embed import (
    PREFIX_STYLES,
    Prefixes,
    detect_prefixes,
    model_identity,
    resolve_prefixes,
)
from search_o1.corpus.progress import RateProgress
from search_o1.errors import ConfigError
from search_o1.search.bm25 import Tokenizer


def _model(tmp_path: Path, name: str, **files: object) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file, content in files.items():
        (folder / f"{file}.json").write_text(json.dumps(content))
    return folder


def test_prefixes_come_from_the_sentence_transformers_prompts(tmp_path: Path) -> None:
    prompts = {"prompts": {"query": "search_query: ", "document": "search_document: "}}
    folder = _model(tmp_path, "nomic", config_sentence_transformers=prompts)
    assert detect_prefixes(folder) == Prefixes("search_query: ", "search_document: ")


@pytest.mark.parametrize(
    ("recorded", "style"),
    [
        ("intfloat/e5-base-v2", "e5"),
        ("intfloat/multilingual-e5-large", "e5"),
        ("BAAI/bge-large-en-v1.5", "bge"),
        ("sentence-transformers/all-MiniLM-L6-v2", "none"),
        ("", "none"),
    ],
)
def test_prefixes_from_the_family_in_config(tmp_path: Path, recorded: str, style: str) -> None:
    folder = _model(tmp_path, "model", config={"_name_or_path": recorded})
    assert detect_prefixes(folder) == PREFIX_STYLES[style]


def test_a_folder_named_like_the_family_is_recognised(tmp_path: Path) -> None:
    assert detect_prefixes(_model(tmp_path, "e5-small-v2", config={})) == PREFIX_STYLES["e5"]


def test_explicit_prefixes_win_and_unknown_ones_are_refused(tmp_path: Path) -> None:
    folder = _model(tmp_path, "e5-small-v2", config={})
    assert resolve_prefixes(folder, "none") == Prefixes()
    assert resolve_prefixes(folder, "bge").query.startswith("Represent this sentence")
    with pytest.raises(ConfigError, match="unknown embedding prefixes"):
        resolve_prefixes(folder, "e6")


def test_model_identity_follows_configs_and_prefixes(tmp_path: Path) -> None:
    folder = _model(tmp_path, "m", config={"hidden_size": 384})
    base = model_identity(folder, Prefixes())
    assert model_identity(folder, Prefixes()) == base
    assert model_identity(folder, Prefixes("query: ", "passage: ")) != base
    (folder / "config.json").write_text(json.dumps({"hidden_size": 768}))
    assert model_identity(folder, Prefixes()) != base


def test_progress_reports_rate_and_time_left_every_so_often() -> None:
    now = [0.0]
    out = io.StringIO()
    report = RateProgress("embedding passages", stream=out, every_s=30, clock=lambda: now[0])
    now[0] = 10.0
    report(100, 1000)
    now[0] = 20.0
    report(200, 1000)  # within 30 s of the last line: quiet
    now[0] = 50.0
    report(500, 1000)
    now[0] = 60.0
    report(1000, 1000)  # the last one always reports
    lines = out.getvalue().splitlines()
    assert lines[0] == "embedding passages: 100/1,000 (10/s, about 1 min 30 s left)"
    assert lines[1].startswith("embedding passages: 500/1,000") and len(lines) == 3


def test_corpus_term_ids_match_tokenizing_each_text() -> None:
    texts = ["Running runners ran.", "The runner runs", "", "Tosca, an opera by Puccini"]
    tokenize = Tokenizer()
    ids, vocab = tokenize.corpus_ids(texts)
    terms = {i: t for t, i in vocab.items()}
    assert [[terms[i] for i in doc] for doc in ids] == [tokenize(t) for t in texts]
    assert sorted(vocab.values()) == list(range(len(vocab)))  # dense ids, as bm25s needs


@pytest.mark.parametrize("module", [vectors, progress_module])
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0  # type: ignore[arg-type]


def test_a_missing_dense_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from search_o1.corpus import embed
    from search_o1.errors import MissingExtraError

    monkeypatch.setattr(embed, "_DENSE_PACKAGES", (("no_such_module_xyz", "faiss-cpu"),))
    with pytest.raises(MissingExtraError, match=r"pip install 'search-o1\[dense\]'"):
        embed.require_dense()
