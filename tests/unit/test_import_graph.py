"""The package's import graph (bench/import_graph.py) and the rule it checks: no
module imports, even for types only, a module that imports it back."""

from pathlib import Path

import pytest
from bench.import_graph import collapse, cycles, graph, main


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_type_only_import_closes_a_cycle(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import B\n",
            "b.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"
            ),
            "c.py": "from pkg import a\n",
        },
    )
    edges = graph(root, "pkg")
    assert edges["pkg.c"] == {"pkg.a"}  # a submodule import does not count the facade
    assert cycles(edges) == [["pkg.a", "pkg.b"]]


def test_importing_into_a_package_runs_its_init(tmp_path: Path) -> None:
    # The shape that bit the engine package: `m` imports `sub.options`, which runs
    # `sub/__init__`, which imports a module that imports `m`.
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "m.py": "from pkg.sub.options import X\n",
            "sub/__init__.py": "from pkg.sub.core import Core\n",
            "sub/options.py": "X = 1\n",
            "sub/core.py": "from pkg.m import Method\n",
        },
    )
    assert cycles(graph(root, "pkg")) == [["pkg.m", "pkg.sub", "pkg.sub.core"]]


def test_no_import_cycle_in_the_package() -> None:
    edges = graph()
    assert cycles(edges) == []
    # Nor between its packages (the facade, which re-exports everything, left out).
    assert cycles(collapse({k: v for k, v in edges.items() if k != "search_o1"})) == []


def test_nothing_the_engine_imports_reads_settings() -> None:
    # Config sits on top: the pipeline maps settings onto the engine's options.
    edges = graph()
    seen: set[str] = set()
    todo = [m for m in edges if m.startswith("search_o1.engine")]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(edges[module])
    above = {"search_o1.config", "search_o1.pipeline", "search_o1.scheduler", "search_o1"}
    assert not seen & above
    assert "search_o1.engine.options" in seen


# Above the pipeline, or the wiring itself: the modules that may read `Settings`.
_READS_SETTINGS = ("config", "config_sources", "pipeline", "registry", "profiles", "wiring")
_FRONT_ENDS = ("api", "cli", "serve", "mcp", "eval")


def test_no_module_below_the_pipeline_imports_config() -> None:
    # Backends, search, fetching, corpus, cache, reader and engine take explicit
    # arguments; `search_o1.wiring` maps settings onto them (type-only imports count).
    edges = graph()
    above = tuple(f"search_o1.{name}" for name in _READS_SETTINGS + _FRONT_ENDS)
    below = [
        m
        for m in edges
        if m != "search_o1" and not any(m == a or m.startswith(a + ".") for a in above)
    ]
    readers = sorted(m for m in below if "search_o1.config" in edges[m])
    assert readers == []
    for module in ("search_o1.llm.openai.client", "search_o1.search.bm25", "search_o1.cache"):
        assert module in below  # the rule covers the backends, not only the engine
    assert "search_o1.config" in edges["search_o1.wiring.searches"]


def test_the_command_writes_dot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dot", "--packages"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph imports {")
    assert '"search_o1.engine" -> "search_o1.reader";' in out
