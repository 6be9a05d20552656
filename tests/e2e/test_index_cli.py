"""`search-o1 index` as a user runs it: the installed console script in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXE = Path(sys.executable).parent / "search-o1"


def run(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    if not EXE.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(cache)}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    rows = [
        {"id": "t", "contents": '"Tosca"\nTosca is an opera by Giacomo Puccini.'},
        {"id": "p", "title": "Giacomo Puccini", "text": "Puccini was born in Lucca, Italy."},
        {"id": "b", "text": "Bread is made from flour and water."},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0]


def test_build_info_search(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "idx"
    built = run("index", "build", str(corpus), "--out", str(out), cache=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "indexed 3 passages" in built.stdout
    assert (out / "manifest.json").is_file()

    info = run("index", "info", str(out), "--json", cache=tmp_path)
    assert info.returncode == 0 and json.loads(info.stdout)["count"] == 3

    found = run("index", "search", str(out), "where was Puccini born", "-k", "1", cache=tmp_path)
    assert found.returncode == 0 and "Giacomo Puccini (p)" in found.stdout


def test_existing_index_needs_force(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "idx"
    assert run("index", "build", str(corpus), "--out", str(out), cache=tmp_path).returncode == 0
    again = run("index", "build", str(corpus), "--out", str(out), cache=tmp_path)
    assert_one_line_error(again, "--force")
    forced = run("index", "build", str(corpus), "--out", str(out), "--force", cache=tmp_path)
    assert forced.returncode == 0, forced.stderr


def test_missing_source_is_one_line_exit_2(tmp_path: Path) -> None:
    result = run("index", "build", str(tmp_path / "nope.jsonl"), "--out", "x", cache=tmp_path)
    assert_one_line_error(result, "nope.jsonl", "no such file")


def test_malformed_jsonl_names_lines_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{broken\n{"text": "fine"}\n[]\n')
    out = tmp_path / "idx"
    result = run("index", "build", str(bad), "--out", str(out), cache=tmp_path)
    assert_one_line_error(result, "line 2", "line 4")
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.jsonl"]  # no temp folder left


def test_info_on_a_non_index_is_one_line_exit_2(tmp_path: Path) -> None:
    assert_one_line_error(run("index", "info", str(tmp_path), cache=tmp_path), "not an index")


def test_build_from_a_relative_folder_and_file(tmp_path: Path) -> None:
    # Relative document paths used to fail: "relative path can't be expressed as a file URI".
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "p.txt").write_text("Puccini was born in Lucca, Italy.\n")
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "cache")}
    for source, out in (("notes", "a"), ("./notes", "b"), ("notes/p.txt", "c")):
        built = subprocess.run(
            [str(EXE), "index", "build", source, "--out", out],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert built.returncode == 0, built.stderr
        assert "indexed 1 passages" in built.stdout
