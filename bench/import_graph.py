"""The package's import graph, read from the source (nothing is imported).

    python -m bench.import_graph                  # text: each module and what it imports
    python -m bench.import_graph --dot > g.dot    # Graphviz (packages as clusters)
    python -m bench.import_graph --dot --packages # one node per package
    python -m bench.import_graph --mermaid --packages --reduce  # the picture in docs
    python -m bench.import_graph --cycles         # import cycles; exit status 1 if any

Every import counts: at module level, inside functions and under `TYPE_CHECKING`
(a type-only cycle still ties two modules together for a reader). Importing `a.b.c`
from outside package `a.b` also runs `a/b/__init__.py`, so it counts as an import of
`a.b` too; from inside `a.b` it does not (the package is already loading). The root
package (the public facade) counts only where a module imports a name from it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "search_o1"

Graph = dict[str, set[str]]


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Module name -> file, for every module of `package` under `root`."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_package(name: str, known: Mapping[str, Path]) -> bool:
    return known[name].name == "__init__.py"


def _imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of the package that module `name` imports, by any import statement."""
    base = name if _is_package(name, known) else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                anchor = base.split(".")[: len(base.split(".")) - node.level + 1]
                module = ".".join([*anchor, module] if module else anchor)
            # `from pkg import sub` imports the submodule `pkg.sub`; `pkg` itself counts
            # only for names that are not submodules (it is loaded first either way).
            subs = {f"{module}.{alias.name}" for alias in node.names}
            targets |= subs
            if not subs <= known.keys():
                targets.add(module)
    found = {t for t in targets if t in known}
    for target in list(found):
        found |= _parents_run(name, target, known)
    found.discard(name)
    return found


def _parents_run(importer: str, target: str, known: Mapping[str, Path]) -> set[str]:
    """Packages whose `__init__` importing `target` runs, seen from `importer`."""
    parts = target.split(".")
    parents = {".".join(parts[:i]) for i in range(2, len(parts))}
    return {p for p in parents if p in known and not (importer + ".").startswith(p + ".")}


def graph(root: Path = ROOT, package: str = PACKAGE) -> Graph:
    """Module -> the package's modules it imports."""
    known = modules(root, package)
    return {name: _imported(name, path, known) for name, path in known.items()}


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, each sorted.

    >>> cycles({"a": ["b"], "b": ["a"], "c": ["a"]})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def collapse(edges: Mapping[str, Iterable[str]], depth: int = 2) -> Graph:
    """The graph between packages: each module named by its first `depth` parts."""
    out: Graph = {}
    for src, targets in edges.items():
        head = ".".join(src.split(".")[:depth])
        out.setdefault(head, set())
        for target in targets:
            other = ".".join(target.split(".")[:depth])
            if other != head:
                out[head].add(other)
    return out


def reduce(edges: Mapping[str, Iterable[str]]) -> Graph:
    """Leave out each edge that another path already implies (the layers stay visible).

    >>> reduce({"a": ["b", "c"], "b": ["c"], "c": []})
    {'a': {'b'}, 'b': {'c'}, 'c': set()}
    """
    full = {k: set(v) for k, v in edges.items()}

    def reachable(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in full.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {a: {c for c in targets if c not in reachable(a, (a, c))} for a, targets in full.items()}


def to_dot(edges: Mapping[str, Iterable[str]]) -> str:
    """Graphviz text; modules of one subpackage sit in one cluster."""
    lines = ["digraph imports {", "  rankdir=BT;", "  node [shape=box, fontsize=10];"]
    groups: dict[str, list[str]] = {}
    for name in sorted(edges):
        parts = name.split(".")
        groups.setdefault(parts[1] if len(parts) > 2 else "", []).append(name)
    for group, names in sorted(groups.items()):
        if group:
            lines.append(f'  subgraph "cluster_{group}" {{ label="{group}";')
        lines.extend(f'    "{n}" [label="{_short(n)}"];' for n in names)
        if group:
            lines.append("  }")
    for src in sorted(edges):
        lines.extend(f'  "{src}" -> "{dst}";' for dst in sorted(edges[src]))
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_mermaid(edges: Mapping[str, Iterable[str]]) -> str:
    """A Mermaid flowchart (Markdown viewers draw it), importers above what they import."""
    ids = {name: f"n{i}" for i, name in enumerate(sorted(edges))}
    lines = ["flowchart TD"]
    lines.extend(f'  {ids[n]}["{_short(n)}"]' for n in sorted(edges))
    for src in sorted(edges):
        lines.extend(f"  {ids[src]} --> {ids[dst]}" for dst in sorted(edges[src]) if dst in ids)
    return "\n".join(lines) + "\n"


def _short(name: str) -> str:
    return name.removeprefix(PACKAGE + ".") or name


def to_text(edges: Mapping[str, Iterable[str]]) -> str:
    return "".join(
        f"{_short(src)} -> {', '.join(_short(d) for d in sorted(edges[src])) or '-'}\n"
        for src in sorted(edges)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="write Graphviz DOT")
    parser.add_argument("--mermaid", action="store_true", help="write a Mermaid flowchart")
    parser.add_argument(
        "--packages", action="store_true", help="one node per package (the facade left out)"
    )
    parser.add_argument(
        "--reduce", action="store_true", help="leave out edges another path implies"
    )
    parser.add_argument("--cycles", action="store_true", help="list import cycles")
    args = parser.parse_args(argv)
    edges = graph()
    if args.packages:
        # The facade re-exports everything; as a node it would only hide the layers.
        edges = collapse({k: v for k, v in edges.items() if k != PACKAGE})
    if args.cycles:
        found = cycles(edges)
        for component in found:
            print(" <-> ".join(_short(n) for n in component))
        return 1 if found else 0
    if args.reduce:
        edges = reduce(edges)
    write = to_dot if args.dot else to_mermaid if args.mermaid else to_text
    print(write(edges), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
