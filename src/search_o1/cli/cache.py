"""`search-o1 cache stats|export|import`: inspect the store, share a run's entries.

`export FILE --run RUN_ID` writes exactly the searches and pages one recorded run used,
so someone else can `import` them and reproduce that run with `--cache replay`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from search_o1.cache import Cache, CacheMode
from search_o1.config import load_settings
from search_o1.errors import ConfigError

# The rule (pipeline.build_search): a local corpus answers the same way every time, cheaply.
_WHAT_IS_CACHED = (
    "only web searches and fetched pages are cached; local corpus searches "
    "(bm25, dense, memory) are not"
)

_path_option = click.option(
    "--cache-path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The cache file (default: the cache_path setting, .search-o1/cache.sqlite).",
)


def _open(cache_path: str | None, mode: CacheMode = "replay") -> Cache:
    # Reading (stats, export) opens read-only, so a shared read-only snapshot works.
    path = Path(load_settings({"cache_path": cache_path}).cache_path)
    if mode == "replay" and not path.exists():
        raise ConfigError(f"no cache at {path}; {_WHAT_IS_CACHED}")
    return Cache(path, mode)


@click.group("cache")
def command() -> None:
    """Inspect, export and import the search/page cache.

    To clear it, delete the cache file (.search-o1/cache.sqlite unless --cache-path or
    the cache_path setting names another).
    """


@command.command("stats")
@_path_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def stats(cache_path: str | None, as_json: bool) -> None:
    """Entries by kind, stored size, and the runs that used them (web searches and pages
    only: local corpus searches are not cached)."""
    cache = _open(cache_path)
    try:
        s = cache.stats()
    finally:
        cache.close()
    if as_json:
        click.echo(json.dumps(s.to_dict()))
        return
    click.echo(f"cache: {s.path}")
    click.echo(
        f"searches: {s.entries.get('search', 0)}  pages: {s.entries.get('page', 0)}"
        f"  stored: {s.bytes / 1e6:.2f} MB (compressed)"
    )
    for run, n in s.runs:
        click.echo(f"run {run}: {n} entries")


@command.command("export")
@click.argument("file", type=click.Path(dir_okay=False, writable=True))
@click.option(
    "--run",
    "run",
    default="all",
    show_default=True,
    help="A run id from `cache stats`, 'last', or 'all'.",
)
@_path_option
def export(file: str, run: str, cache_path: str | None) -> None:
    """Write entries to FILE (JSON lines) for `cache import` elsewhere."""
    cache = _open(cache_path)
    try:
        chosen: str | None = None if run == "all" else run
        if run == "last":
            chosen = cache.last_run()
            if chosen is None:
                raise ConfigError(f"no recorded runs in {cache.path}")
        count = cache.export(file, run=chosen)
    finally:
        cache.close()
    click.echo(f"exported {count} entries to {file}")


@command.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@_path_option
def import_(file: str, cache_path: str | None) -> None:
    """Add the entries of an exported FILE to the cache (created if missing)."""
    if not Path(file).is_file():
        raise ConfigError(f"{file}: file not found")
    path = Path(load_settings({"cache_path": cache_path}).cache_path)
    existed = path.exists()
    cache = _open(cache_path, "record")
    try:
        count = cache.import_file(file)
    except BaseException:
        cache.close()
        if not existed:  # a failed import leaves no new, empty cache behind
            for leftover in (path, *(path.with_name(path.name + x) for x in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
        raise
    cache.close()
    click.echo(f"imported {count} entries into {cache.path}")
