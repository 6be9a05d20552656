"""What `ask` shows while it runs: the reasoning streamed, each search once, a spinner
while the model loads, and the summary at the end."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.status import Status

from search_o1 import markers as mk
from search_o1.sources import answer_sources
from search_o1.text_safety import terminal_text
from search_o1.types import (
    Event,
    Finished,
    Hit,
    SearchFinished,
    SearchStarted,
    Source,
    TextDelta,
    Trace,
)


def shown(text: str) -> str:
    """Outside text (model, pages, search replies, their errors) as printable markup: no
    terminal control codes, and no brackets that rich would read as its own tags."""
    return escape_markup(terminal_text(text))


def hit_label(hit: Hit, width: int = 60) -> str:
    """A readable name for a hit: its title, else the start of its text, else its id.

    >>> hit_label(Hit("p7", "", "Giacomo Puccini was born in Lucca in 1858."), width=20)
    'Giacomo Puccini was…'
    """
    if hit.title.strip():
        return hit.title.strip()
    text = " ".join(hit.text.split())
    if not text:
        return f"(passage {hit.id})"
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


class LiveView:
    """Streams the reasoning and shows each search as it happens.

    A query the model writes is not echoed as it streams: the `search:` line shows it
    once, when it runs. With `loading`, a spinner runs until the model's first words.
    """

    def __init__(self, console: Console, *, loading: bool = False) -> None:
        self.console = console
        self._status: Status | None = None
        if loading:
            self._status = console.status("loading the model…", spinner="dots")
            self._status.start()
        self._in_query = False
        self._held = ""  # a tail that may be the start of a query marker
        self._wrote = False  # anything shown yet: a run that failed at once shows nothing

    def on_event(self, event: Event) -> None:
        self._stop_spinner()
        if isinstance(event, TextDelta):
            self._text(event)
        elif isinstance(event, SearchStarted):
            self._in_query, self._held = False, ""
            self.console.print(f"\n[bold cyan]search:[/] {shown(event.query)}")
            self._wrote = True
        elif isinstance(event, SearchFinished):
            self._search(event)
        elif isinstance(event, Finished):
            self._print(self._held)
            if self._wrote:  # ends the streamed line
                self.console.print()

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _text(self, event: TextDelta) -> None:
        if event.inserted:
            # Results show in their own block; an inserted opening marker (a forced
            # first search) means the model now writes a query.
            self._in_query = event.text.rstrip().endswith(mk.BEGIN_QUERY)
            return
        if self._in_query:
            return
        text = self._held + event.text
        head, found, _ = text.partition(mk.BEGIN_QUERY)
        if found:
            self._in_query, self._held = True, ""
            self._print(head)
            return
        keep = _marker_prefix_len(text, mk.BEGIN_QUERY)
        self._held = text[len(text) - keep :] if keep else ""
        self._print(text[: len(text) - keep])

    def _print(self, text: str) -> None:
        if text:
            self.console.print(shown(text), end="", style="dim", soft_wrap=True)
            self._wrote = True

    def _search(self, event: SearchFinished) -> None:
        record = event.record
        if record.outcome != "searched":
            why = f": {shown(record.error)}" if record.error else ""
            self.console.print(f"[yellow]  ({record.outcome}{why})[/]")
            return
        for hit in record.hits[:5]:
            where = f" <{hit.url}>" if hit.url else ""
            self.console.print(f"  [green]•[/] {shown(hit_label(hit))}{shown(where)}")
        if len(record.hits) > 5:
            self.console.print(f"  … {len(record.hits) - 5} more")
        if record.reader is not None:
            self.console.print(f"[bold magenta]  facts:[/] {shown(record.reader.refined[:400])}")

    def summary(self, trace: Trace, wall_s: float) -> None:
        self._stop_spinner()
        c = self.console
        c.rule()
        # One line each whatever the width (a pipe is 80 columns to rich), so a script
        # can pick out the answer and the finish line, as the sources' lines already are.
        c.print(f"[bold]answer:[/] {shown(trace.answer or '(none)')}", soft_wrap=True)
        reason = trace.finish_reason.value if trace.finish_reason else "?"
        c.print(
            f"finish: {reason} · searches: {trace.searches_summary} · "
            f"tokens: {trace.usage.completion_tokens} generated, "
            f"{trace.reader_usage.completion_tokens} by the reader · {wall_s:.1f}s",
            soft_wrap=True,
        )
        self._sources(answer_sources(trace))
        sys.stdout.flush()

    def _sources(self, sources: list[Source]) -> None:
        """The answer's numbered sources: title, URL or passage id, supporting sentence."""
        if not sources:
            return
        c = self.console
        c.print("[bold]sources:[/]")
        for s in sources:
            where = s.url or f"passage {s.id}"
            c.print(f"  {shown(f'[{s.n}]')} {shown(s.title)} · {shown(where)}", soft_wrap=True)
            if s.quote:
                c.print(f"      “{shown(s.quote)}”", style="dim", soft_wrap=True)


def _marker_prefix_len(text: str, marker: str) -> int:
    """How many trailing characters of `text` could begin `marker` (held back a moment).

    >>> _marker_prefix_len("so <|begin_se", "<|begin_search_query|>")
    10
    """
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-n:]):
            return n
    return 0
