"""The backend registry: built-ins through entry points, the stale-metadata fallback,
third-party plugins, in-process registration, and the memory backend's factory."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.plugin_dist import ECHO_ENTRY_POINTS, MODULE, make_plugin

from search_o1 import registry
from search_o1.config import Settings
from search_o1.errors import ConfigError, InputFileError
from search_o1.llm.scripted import ScriptedLLM
from search_o1.registry import BUILTINS, names, register, resolve_llm, resolve_search, unregister
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit
from search_o1.wiring import searches

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_builtins_table_is_pyprojects_entry_points() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]
    assert declared["search_o1.search"] == BUILTINS["search"]
    assert declared["search_o1.llm"] == BUILTINS["llm"]


def test_pyproject_declares_the_builtins_as_the_table_does() -> None:
    # The repository's declaration, not the installed metadata (stale until a reinstall).
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["entry-points"]
    for kind in ("llm", "search"):
        assert declared[f"search_o1.{kind}"] == BUILTINS[kind], kind


def test_stale_metadata_falls_back_to_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_entry_points", lambda kind: [])
    assert resolve_search("memory") == searches.memory
    assert "bm25" in names("search") and "openai" in names("llm")


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown search backend 'nope'; known: .*bm25"):
        resolve_search("nope")
    with pytest.raises(ValueError, match="kind"):
        names("model")  # type: ignore[arg-type]


def test_register_wins_and_unregister_restores() -> None:
    def scripted(settings: Settings, *, role: str = "main") -> ScriptedLLM:
        return ScriptedLLM(["hi"])

    def memory(settings: Settings) -> MemorySearch:
        return MemorySearch({"q": [Hit(id="1", title="T")]})

    register("llm", "scripted", scripted)
    register("search", "memory", memory)  # over a built-in, on purpose
    try:
        assert resolve_llm("scripted") is scripted and "scripted" in names("llm")
        assert resolve_search("memory") is memory
    finally:
        unregister("llm", "scripted")
        unregister("search", "memory")
    assert "scripted" not in names("llm")
    assert resolve_search("memory") == searches.memory


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # The plugin also claims "bm25": a built-in name it must not take over silently.
    eps = ECHO_ENTRY_POINTS + f"bm25 = {MODULE}:EchoSearch.from_settings\n"
    root = make_plugin(tmp_path / "site", entry_points=eps)
    monkeypatch.syspath_prepend(str(root))
    yield root


async def test_a_plugin_backend_is_found_like_a_builtin(plugin_path: Path) -> None:
    assert "echo" in names("search")
    backend = resolve_search("echo")(Settings(top_k=3))
    hits = await backend.search("who wrote Tosca", k=1)
    assert hits[0].text == "Echo heard: who wrote Tosca."
    assert resolve_search("bm25") == searches.bm25  # ours, not the plugin's


def test_memory_factory_reads_a_hits_file(tmp_path: Path) -> None:
    assert searches.memory(Settings())._results == {}
    path = tmp_path / "hits.json"
    path.write_text(json.dumps({"q": [{"id": 7, "title": "T", "url": "http://x/"}]}))
    backend = searches.memory(Settings(corpus=str(path)))
    assert backend._results == {"q": [Hit(id="7", title="T", url="http://x/")]}
    path.write_text(json.dumps({"q": [{"id": "1", "title": "T", "colour": "red"}]}))
    with pytest.raises(InputFileError, match=r"hits.json: .*unknown fields \['colour'\]"):
        searches.memory(Settings(corpus=str(path)))
    path.write_text("[1, 2]")
    with pytest.raises(InputFileError, match="object mapping queries"):
        searches.memory(Settings(corpus=str(path)))
    with pytest.raises(InputFileError, match="is a folder; memory search reads one JSON file"):
        searches.memory(Settings(corpus=str(tmp_path)))
