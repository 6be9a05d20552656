"""`search-o1 reproduce --table qa` on two small slices against a loopback model server:
every cell a run directory, then one summary.md with our numbers beside the paper's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.eval_support import prompt_text, responder
from tests.servers.openai_server import openai_server

from search_o1 import markers as mk
from search_o1.cli import cli

NQ = [
    {"id": "n1", "Question": "Who painted the Night Watch?", "answer": ["Rembrandt"]},
    {"id": "n2", "Question": "What is the capital of Peru?", "answer": ["Lima"]},
    {"id": "n3", "Question": "Not in the slice?", "answer": ["x"]},
]
HOTPOT = [
    {
        "id": "h1",
        "Question": "Which river runs through the birthplace of Jeunet?",
        "answer": ["Loire"],
    },
    {"id": "h2", "Question": "Who directed the film that won in 2001?", "answer": ["Jeunet"]},
]
ANSWERS = {
    "Who painted the Night Watch?": "\\boxed{Rembrandt}",
    "What is the capital of Peru?": "I think it is Cusco.",  # no box: invalid
    "Which river runs through the birthplace of Jeunet?": "\\boxed{the Loire}",
    "Who directed the film that won in 2001?": "\\boxed{Jean-Pierre Jeunet}",
}
CORPUS = [
    {"id": "c1", "title": "Night Watch", "text": "The Night Watch was painted by Rembrandt."},
    {"id": "c2", "title": "Peru", "text": "Lima is the capital of Peru."},
    {"id": "c3", "title": "Roanne", "text": "Roanne, birthplace of Jeunet, is on the Loire."},
]


def respond(body: dict[str, Any]) -> str:
    """The table's answers; only the direct method (no search, no documents) knows Lima."""
    text = prompt_text(body)
    direct = mk.BEGIN_QUERY not in text and "Documents:" not in text
    if direct and "What is the capital of Peru?" in text:
        return "\\boxed{Lima}"
    return responder(ANSWERS)(body)


def test_reproduce_qa_on_two_slices_writes_the_side_by_side_table(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "QA_Datasets").mkdir(parents=True)
    (data / "searcho1_format").mkdir()
    (data / "QA_Datasets" / "nq.json").write_text(json.dumps(NQ))
    (data / "searcho1_format" / "hotpotqa_500.json").write_text(json.dumps(HOTPOT))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(c) for c in CORPUS))
    out = tmp_path / "repro"
    args = [
        *("reproduce", "--table", "qa", "--datasets", "nq,hotpotqa", "--limit", "2"),
        *("--no-progress", "--chat-template", "chatml", "--search", "bm25"),
        *("--data-dir", str(data), "--out", str(out), "--corpus", str(corpus)),
        *("--cache-path", str(tmp_path / "cache.sqlite")),
    ]
    with openai_server(respond) as srv:
        result = CliRunner().invoke(cli, [*args, "--base-url", srv.url, "--model", "fake-model"])
        assert result.exit_code == 0, result.output
        cells = sorted(p.name for p in out.iterdir() if p.is_dir())
        assert cells == sorted(
            f"{d}.{m}"
            for d in ("nq", "hotpotqa")
            for m in ("direct", "rag", "rag-agent", "search-o1")
        )
        for cell in cells:
            metrics = json.loads((out / cell / "metrics.json").read_text())
            assert metrics["n"] == 2
        summary = (out / "summary.md").read_text()
        # By hand: NQ EM 1/2 (the Peru answer has no box), F1 1/2; direct knows Lima: 2/2.
        # HotpotQA EM 1/2 ("the Loire" -> loire; "Jean-Pierre Jeunet" vs "Jeunet": EM 0,
        # F1 2*(1/2*1)/(1/2+1) = 2/3). Back-off: the invalid Peru answer takes direct's.
        assert "| Method | NQ (n=2) | HotpotQA (n=2) |" in summary
        # Our rows name the model run (they said "QwQ-32B (direct) · ours"), the paper's
        # row below each names the paper's.
        assert "| Direct · ours (fake-model) | 100.0/100.0 | 50.0/83.3 |" in summary
        assert "| QwQ-32B (direct) · paper | 23.0/33.1 | 25.4/33.3 |" in summary
        assert "| Search-o1 · ours (fake-model) | 50.0/50.0 | 50.0/83.3 |" in summary
        assert "| Search-o1 · ours (fake-model) + back-off | 100.0/100.0 | 50.0/83.3 |" in summary
        assert "| Search-o1 · paper | 34.0/49.7 | 45.2/57.3 |" in summary
        assert "| RAgent-QwQ-32B · paper | 33.6/48.4 | 43.0/55.2 |" in summary
        assert summary in result.output
        # Resumable: a rerun sends no new completion requests.
        before = len(srv.completion_requests)
        again = CliRunner().invoke(cli, [*args, "--base-url", srv.url, "--model", "fake-model"])
        assert again.exit_code == 0, again.output
        assert len(srv.completion_requests) == before
