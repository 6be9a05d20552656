"""Small CLI mistakes answered in one line, before any work: --trace-out a folder,
--config a folder, a failed `cache import` leaving no cache behind."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from search_o1.cli import cli
from search_o1.cli.stopping import Stopped, run_stoppable


def test_trace_out_on_a_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    args = ["ask", "Who?", "--trace-out", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: --trace-out {tmp_path} is a folder; pass a file name"
    ]


def test_config_on_a_folder_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ask", "Who?", "--config", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: config file {tmp_path} is a folder; pass a .toml file"
    ]


def test_a_failed_cache_import_creates_no_cache(tmp_path: Path) -> None:
    bad = tmp_path / "export.jsonl"
    bad.write_text("not an export\n")
    cache = tmp_path / "c.sqlite"
    result = CliRunner().invoke(cli, ["cache", "import", str(bad), "--cache-path", str(cache)])
    assert result.exit_code == 2 and "not a search-o1 cache export" in result.stderr
    assert not cache.exists() and list(tmp_path.iterdir()) == [bad]
    missing = CliRunner().invoke(cli, ["cache", "import", "nope", "--cache-path", str(cache)])
    assert missing.exit_code == 2 and not cache.exists()


def test_index_search_counts_one_hit_in_the_singular(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(tmp_path / "idx"))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "1", "title": "Tosca", "text": "Tosca is an opera."}\n')
    result = CliRunner().invoke(cli, ["index", "search", str(corpus), "opera", "-k", "1"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("1 hit in ")


async def _interrupted_self() -> str:
    os.kill(os.getpid(), signal.SIGINT)
    await asyncio.sleep(30)  # cancelled at this await when the press is taken
    return "finished"


def test_ctrl_c_notice_takes_a_python_handler_and_leaves_an_ignored_sigint_ignored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        seen.append(signum)

    before = signal.signal(signal.SIGINT, handler)
    before_term = signal.getsignal(signal.SIGTERM)
    try:
        # A Python handler is the command's to replace: the press cancels the run at an
        # await (it does not reach the old handler) and ends in Stopped(SIGINT).
        with pytest.raises(Stopped) as stopped:
            run_stoppable(_interrupted_self(), stopping="stopping")
        assert stopped.value.signum == signal.SIGINT and seen == []
        assert "Ctrl-C: stopping" in capsys.readouterr().err
        # The command is ending: a second press must not break its last line.
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        # A run that finishes puts the handler back.
        signal.signal(signal.SIGINT, handler)
        assert run_stoppable(asyncio.sleep(0, "done"), stopping="stopping") == "done"
        assert signal.getsignal(signal.SIGINT) is handler  # put back
        # A job started in the background ignores SIGINT: the notice must not undo that.
        signal.signal(signal.SIGINT, signal.SIG_IGN)

        async def ignored() -> str:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(0)
            return "finished"

        assert run_stoppable(ignored(), stopping="stopping") == "finished"
        assert seen == [] and "stopping" not in capsys.readouterr().err
    finally:
        signal.signal(signal.SIGINT, before)
        signal.signal(signal.SIGTERM, before_term)
