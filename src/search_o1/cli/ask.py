"""`search-o1 ask "QUESTION"`: one question, reasoning streamed live, or one JSON object."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from search_o1.cli.demo import DEMO_HINT, DEMO_QUESTION, demo_closing, demo_flags, demo_settings
from search_o1.cli.live import LiveView
from search_o1.cli.options import (
    GroupedCommand,
    option,
    replay_note,
    setting_options,
    settings_from_flags,
)
from search_o1.cli.stopping import run_stoppable
from search_o1.config import Settings
from search_o1.engine import get_method, method_names
from search_o1.errors import ConfigError, SearchO1Error
from search_o1.pipeline import open_pipeline
from search_o1.profiles import resolve
from search_o1.sources import answer_sources
from search_o1.text_safety import scrub, terminal_json
from search_o1.types import FinishReason, Trace, to_jsonable


@click.command("ask", cls=GroupedCommand)
@click.argument("question", required=False)
@option(
    "--method",
    type=click.Choice(method_names()),
    default="search-o1",
    help="search-o1, or one of the paper's baselines.",
)
@option("--demo", is_flag=True, help=f"Use the demo setup ({DEMO_HINT}).")
@option("--json", "as_json", is_flag=True, group="output", help="Print one JSON object only.")
@option(
    "--trace-out", type=click.Path(path_type=Path), group="output", help="Write the trace here."
)
@setting_options
def command(
    question: str | None,
    method: str,
    as_json: bool,
    trace_out: Path | None,
    demo: bool,
    config_file: Path | None,
    **flags: Any,
) -> None:
    """Answer QUESTION, searching in the middle of reasoning (--demo: a question of its own
    when none is given)."""
    if question is None and demo:
        question = DEMO_QUESTION
    if question is None:
        raise click.UsageError(
            "Missing argument 'QUESTION'. (Or try `search-o1 ask --demo`: a question of its "
            "own on the embedded model.)"
        )
    # Bytes that are not UTF-8 in the argument arrive as lone surrogates: made U+FFFD here.
    question = scrub(question)
    if not question.strip():
        raise ConfigError("the question is empty")
    if demo:
        flags = demo_flags(flags)
    settings = settings_from_flags(config_file, flags)
    if demo:
        settings = demo_settings(settings)
    check_writable(trace_out, "--trace-out")  # before the run, not after it
    view = None if as_json else LiveView(Console(highlight=False), loading=demo)
    start = time.perf_counter()
    trace = run_stoppable(_run(settings, question, method, view), stopping="stopping…")
    wall = time.perf_counter() - start
    failure = _failure(trace)
    if failure is not None:
        # Nothing half-written: a failed run writes no files; --json still tells why.
        if as_json:
            click.echo(terminal_json(json.dumps(ask_json(trace, wall), ensure_ascii=False)))
        raise failure
    if trace_out is not None:
        _write_atomic(trace_out, json.dumps(trace.to_dict(), ensure_ascii=False, indent=1))
    if as_json:
        click.echo(terminal_json(json.dumps(ask_json(trace, wall), ensure_ascii=False)))
    elif view is not None:
        view.summary(trace, wall)
        closing = demo_closing(settings, question, trace.answer is not None) if demo else None
        if closing:
            click.echo(closing)
    replay_note(settings)


def _failure(trace: Trace) -> SearchO1Error | None:
    """The error to exit with: a backend failure, or a question too long for the model."""
    if trace.finish_reason is FinishReason.ERROR:
        return SearchO1Error(trace.error or "the run failed")
    if trace.prompt_too_long is not None:
        return ConfigError(trace.prompt_too_long)
    return None


def check_writable(path: Path | None, flag: str) -> None:
    """Refuse an output path that cannot be a file, before any work is done."""
    if path is None:
        return
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a folder; pass a file name")
    parent = path.parent if path.parent != Path("") else Path(".")
    if parent.exists() and not parent.is_dir():
        raise ConfigError(f"{flag} {path}: {parent} is not a folder")


async def _run(settings: Settings, question: str, method: str, view: LiveView | None) -> Trace:
    # The profile's values for this method (the paper's baselines send 32,768 tokens), as
    # eval resolves them.
    settings = resolve(settings, method=method)
    async with open_pipeline(settings, search=get_method(method).needs_search) as engine:
        return await engine.run(question, method=method, on_event=view.on_event if view else None)


def ask_json(trace: Trace, wall_s: float) -> dict[str, Any]:
    """The `--json` object: answer, finish reason, its numbered sources, the searches
    actually run, usage, trace."""
    searches = [
        {
            "query": s.query,
            # A failed search (its backend or reader down) said nothing of it: it looked
            # like a search that found nothing.
            "outcome": s.outcome,
            "error": s.error,
            "hits": [{"id": h.id, "title": h.title, "url": h.url} for h in s.hits],
            "documents": [{"id": d.hit.id, "status": d.status} for d in s.documents],
        }
        for s in trace.searches
        if s.outcome in ("searched", "failed")
    ]
    return {
        "answer": trace.answer,
        "finish_reason": trace.finish_reason.value if trace.finish_reason else None,
        "error": trace.error,
        "sources": [to_jsonable(s) for s in answer_sources(trace)],
        "searches": searches,
        "usage": {
            "prompt_tokens": trace.usage.prompt_tokens,
            "completion_tokens": trace.usage.completion_tokens,
            "reader_prompt_tokens": trace.reader_usage.prompt_tokens,
            "reader_completion_tokens": trace.reader_usage.completion_tokens,
        },
        "documents": trace.document_counts(),
        "wall_s": round(wall_s, 3),
        "trace": to_jsonable(trace),
    }


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
