"""`reproduce` under `--api-mode tools`: a method without a tools mode is a noted cell."""

from __future__ import annotations

import asyncio
from pathlib import Path

from search_o1.config import load_settings
from search_o1.eval.reproduce import MatrixOptions, run_matrix
from search_o1.methods import get_method, has_tools_mode


def test_a_method_without_tools_mode_is_a_noted_cell_in_tools_mode(tmp_path: Path) -> None:
    # No model server and no data: the cell is decided before either is touched.
    settings = load_settings(
        {"api_mode": "tools", "base_url": ["http://127.0.0.1:9/v1"]}, environ={}
    )
    opts = MatrixOptions(table="qa", out=tmp_path, datasets=["nq"], methods=["rag-agent"])
    (result,) = asyncio.run(run_matrix(settings, opts))
    assert result.metrics is None
    assert result.note == "not run: no tools mode (--api-mode tools)"
    summary = (tmp_path / "summary.md").read_text()
    assert "| RAgent-QwQ-32B · ours | – |" in summary
    assert "- nq · rag-agent: not run: no tools mode (--api-mode tools)" in summary
    assert [has_tools_mode(get_method(m)) for m in ("direct", "rag", "rag-agent", "search-o1")] == [
        True, True, False, True,
    ]  # fmt: skip
