"""`search-o1 index`: build, inspect and try local indexes (BM25, and dense vectors)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from search_o1.cli.stopping import run_stoppable
from search_o1.corpus.embed import require_dense
from search_o1.corpus.load import iter_passages
from search_o1.corpus.passage import Passage
from search_o1.corpus.store import is_index_dir, source_key
from search_o1.corpus.vectors import INDEX_KINDS, IndexKind
from search_o1.errors import ConfigError, InputFileError
from search_o1.search.bm25 import BM25Search, read_manifest
from search_o1.search.dense import DenseSearch
from search_o1.text_safety import terminal_text

_err = Console(stderr=True)
_PROGRESS_EVERY = 500


@click.group("index")
def command() -> None:
    """Build and inspect local search indexes (BM25; dense vectors with --dense)."""


def _check_out(out: Path, force: bool) -> None:
    """Refuse to overwrite anything but an earlier index, and that only with --force."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    if not is_index_dir(out):
        raise ConfigError(f"{out} exists and is not an index; choose another --out")
    if not force:
        raise ConfigError(f"{out} already holds an index; pass --force to replace it")


def _counted(passages: Iterator[Passage], progress: Progress) -> Iterator[Passage]:
    task = progress.add_task("reading passages", total=None)
    n = 0
    for n, passage in enumerate(passages, start=1):
        if n % _PROGRESS_EVERY == 0:
            progress.update(task, description=f"reading passages: {n:,}")
        yield passage
    progress.update(task, description=f"read {n:,} passages")
    progress.stop_task(task)


def _progress() -> Progress:
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    return Progress(*columns, console=_err, transient=True, disable=not _err.is_terminal)


def _embed_progress(progress: Progress, total: int | None) -> Callable[[int, int], None]:
    task = progress.add_task("embedding passages", total=total)
    return lambda done, of: progress.update(task, completed=done, total=of)


def _bar() -> Progress:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=_err, disable=not _err.is_terminal)


def _build_dense(out: Path, model: str | None, prefixes: str, kind: IndexKind) -> str:
    """Embed the passages of the index at `out` into it; returns a line for the summary."""
    from search_o1.corpus.embed import SentenceEncoder

    with _err.status("loading the embedding model…"):  # seconds, with nothing else shown
        encoder = SentenceEncoder.open(model, prefixes)
    with _bar() as progress:
        total = int(read_manifest(out)["count"])
        dense = DenseSearch.open(out, encoder, kind=kind, progress=_embed_progress(progress, total))
    rate = dense.manifest.get("passages_per_second", "?")
    return f"dense: {encoder.dim}-dim vectors ({kind}), {rate} passages/s"


@command.command("build")
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path), help="Index folder.")
@click.option("--force", is_flag=True, help="Replace an existing index at --out.")
@click.option("--dense", is_flag=True, help="Also embed the passages for --search dense.")
@click.option("--embedding-model", metavar="PATH", help="Sentence-transformers model folder.")
@click.option(
    "--embedding-prefixes",
    type=click.Choice(["auto", "e5", "bge", "none"]),
    default="auto",
    show_default=True,
    help="Query/passage prefixes (auto: from the model's config).",
)
@click.option(
    "--dense-index",
    type=click.Choice(INDEX_KINDS),
    default="flat",
    show_default=True,
    help="FAISS index kind to build beside the vectors.",
)
def build(
    src: Path,
    out: Path,
    force: bool,
    dense: bool,
    embedding_model: str | None,
    embedding_prefixes: str,
    dense_index: IndexKind,
) -> None:
    """Index SRC (a JSONL file or a folder of .txt/.md/.html/.pdf) into the folder --out."""
    if not src.exists():
        raise InputFileError(str(src), "no such file or folder")
    _check_out(out, force)
    if dense:
        require_dense()  # fail before the BM25 work, not after it
    started = time.perf_counter()
    with _progress() as progress:
        passages = list(_counted(iter_passages(src), progress))
        if not passages:
            raise InputFileError(str(src), "no passages found (empty corpus)")
        read_s = time.perf_counter() - started
        progress.add_task(f"indexing {len(passages):,} passages", total=None)
        key = source_key(src)
        index = BM25Search.build(passages, source=str(src.resolve()), content_hash=key)
        index.save(out, replace=force)
    extra = _build_dense(out, embedding_model, embedding_prefixes, dense_index) if dense else ""
    total = time.perf_counter() - started
    click.echo(
        f"indexed {len(index):,} passages from {src} in {total:.1f} s "
        f"(read {read_s:.1f} s, index and save {total - read_s:.1f} s) -> {out}"
        + (f"\n{extra}" if extra else "")
    )
    replaced = index.manifest["replaced"]
    if replaced:
        click.echo(
            f"note: {replaced:,} characters of {src} were not valid text "
            "(lone surrogates) and became U+FFFD",
            err=True,
        )


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@command.command("info")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def info(directory: Path, as_json: bool) -> None:
    """Describe the index in DIRECTORY."""
    manifest = read_manifest(directory)
    if as_json:
        click.echo(json.dumps(manifest, indent=2))
        return
    for key in ("source", "count", "content_hash", "created", "build_seconds", "bm25s"):
        click.echo(f"{key:>13}: {manifest.get(key)}")
    for sub in sorted(directory.glob("dense-*/manifest.json")):
        dense = json.loads(sub.read_text(encoding="utf-8"))
        click.echo(f"{'dense':>13}: {dense.get('dim')}-dim, model {dense.get('model')}")
    click.echo(f"{'size':>13}: {_size(directory) / 1e6:.1f} MB")


@command.command("search")
@click.argument("corpus")
@click.argument("query")
@click.option(
    "-k",
    "--top-k",
    "k",
    default=5,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Passages to show.",
)
@click.option("--dense", is_flag=True, help="Search by embeddings instead of BM25.")
@click.option("--embedding-model", metavar="PATH", help="Sentence-transformers model folder.")
def search(corpus: str, query: str, k: int, dense: bool, embedding_model: str | None) -> None:
    """Try QUERY against CORPUS (an index folder, JSONL file, document folder or 'demo')."""
    index: BM25Search | DenseSearch
    if dense:
        from search_o1.corpus.embed import SentenceEncoder

        with _err.status("loading the embedding model…"):
            encoder = SentenceEncoder.open(embedding_model)
        with _bar() as progress:
            index = DenseSearch.open(corpus, encoder, progress=_embed_progress(progress, None))
    else:
        index = BM25Search.open(corpus)
    started = time.perf_counter()
    hits = run_stoppable(index.search(query, k=k), stopping="stopping…")
    elapsed_ms = (time.perf_counter() - started) * 1000
    for rank, hit in enumerate(hits, start=1):
        snippet = hit.text[:160].replace("\n", " ")
        line = f"{rank:>2}. [{hit.score:.2f}] {hit.title} ({hit.id})\n    {snippet}"
        click.echo(terminal_text(line))  # the corpus is outside text
    click.echo(f"{len(hits)} hit{'' if len(hits) == 1 else 's'} in {elapsed_ms:.1f} ms")
