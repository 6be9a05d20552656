"""Dense search as a user runs it, with the real bundled model (all-MiniLM-L6-v2) on a tiny
corpus: `index build --dense`, `index search --dense`, `serve --search dense` and
`--search bm25,dense` answering /retrieve, and a FlashRAG-format index loaded as it is."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("sentence_transformers", reason="the dense extra is not installed")
pytest.importorskip("faiss", reason="the dense extra is not installed")

from tests.servers.openai_server import openai_server

EXE = Path(sys.executable).with_name("search-o1")
ROWS = [
    {"id": "t", "title": "Tosca", "text": "Tosca is an opera by Giacomo Puccini, staged in Rome."},
    {"id": "p", "title": "Giacomo Puccini", "text": "Puccini was born in Lucca, Italy, in 1858."},
    {"id": "b", "title": "Bread", "text": "Bread is baked from flour, water and yeast."},
    {"id": "m", "title": "Mount Everest", "text": "Everest is the highest mountain on Earth."},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "cache")}


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=_env(tmp_path), timeout=300
    )


def test_index_build_dense_then_search_by_meaning(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "idx"
    built = run(tmp_path, "index", "build", str(corpus), "--out", str(out), "--dense")
    assert built.returncode == 0, built.stderr
    assert "dense: 384-dim vectors (flat)" in built.stdout
    assert "dense" in run(tmp_path, "index", "info", str(out)).stdout
    # No word in common with the passage: only the embedding can find it.
    query = "tallest peak in the world"
    found = run(tmp_path, "index", "search", str(out), query, "--dense", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert "Mount Everest (m)" in found.stdout
    assert "embedding" not in found.stderr  # the vectors built ahead were used


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _retrieve(url: str, proc: subprocess.Popen[str], body: dict[str, Any]) -> Any:
    deadline = time.monotonic() + 240  # the model loads before the server answers
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            if httpx.get(url + "/health").status_code == 200:
                return httpx.post(url + "/retrieve", json=body, timeout=60).json()
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("serve did not become healthy")


@pytest.mark.parametrize("search", ["dense", "bm25,dense"])
def test_serve_answers_retrieve(tmp_path: Path, corpus: Path, search: str) -> None:
    with openai_server(lambda body: "unused") as model:
        port = _free_port()
        cmd = [str(EXE), "serve", "--port", str(port), "--base-url", model.url]
        cmd += ["--corpus", str(corpus), "--search", search, "--chat-template", "chatml"]
        proc = subprocess.Popen(
            cmd, cwd=tmp_path, env=_env(tmp_path), text=True, stderr=subprocess.PIPE
        )
        try:
            body = {"queries": ["tallest peak in the world", "birthplace of Puccini"], "topk": 2}
            answer = _retrieve(f"http://127.0.0.1:{port}", proc, {**body, "return_scores": True})
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    first, second = answer["result"]
    assert first[0]["document"]["id"] == "m" and second[0]["document"]["id"] == "p"
    assert first[0]["document"]["contents"].startswith("Mount Everest\n")
    assert len({d["document"]["id"] for d in first}) == len(first)  # fused once per passage


def test_flashrag_index_built_elsewhere_loads_without_re_embedding(tmp_path: Path) -> None:
    """The FAISS file is made here the way FlashRAG makes one (the model over `contents`,
    normalised, inner product, ids = corpus lines); we search it as it is."""
    import faiss
    from sentence_transformers import SentenceTransformer

    from search_o1.corpus.embed import SentenceEncoder, default_model_dir
    from search_o1.search.dense import DenseSearch

    contents = [f'"{r["title"]}"\n{r["text"]}' for r in ROWS]
    corpus = tmp_path / "wiki.jsonl"
    rows = [json.dumps({"id": str(i), "contents": c}) for i, c in enumerate(contents)]
    corpus.write_text("\n".join(rows) + "\n")
    model = SentenceTransformer(str(default_model_dir()), device="cpu")
    index = faiss.index_factory(384, "Flat", faiss.METRIC_INNER_PRODUCT)
    index.add(model.encode(contents, normalize_embeddings=True))
    faiss.write_index(index, str(tmp_path / "minilm_Flat.index"))

    encoder = SentenceEncoder.open()
    calls: list[int] = []
    original = encoder.encode_passages

    def counted(texts: Any, progress: Any = None) -> Any:
        calls.append(len(texts))
        return original(texts)

    encoder.encode_passages = counted  # type: ignore[method-assign]
    dense = DenseSearch.from_flashrag(tmp_path / "minilm_Flat.index", corpus, encoder)
    hits = asyncio.run(dense.search("tallest peak in the world", k=1))
    assert (hits[0].id, hits[0].title) == ("3", "Mount Everest") and calls == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["minilm_Flat.index", "wiki.jsonl"]
