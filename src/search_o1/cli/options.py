"""Backend flags shared by `ask`, `eval` and `serve`, and their merge into Settings.

Every flag defaults to None ("not given") so search-o1.toml and SEARCH_O1_* values show
through; the option's `dest` is the Settings field name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from search_o1.config import TASKS, Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path),
        help="Settings file (default: ./search-o1.toml if present).",
    ),
    # model
    click.option(
        "--backend",
        help="Model backend: auto (openai with --base-url, else embedded), openai, embedded, "
        "or a plugin's name.",
    ),
    click.option(
        "--base-url",
        multiple=True,
        help="OpenAI-compatible server, e.g. http://host:8000/v1 (repeatable).",
    ),
    click.option("--model", help="Model name on the server (default: its first model)."),
    click.option("--api-key-env", help="Environment variable holding the API key."),
    click.option(
        "--api-mode",
        type=click.Choice(["completions", "chat"]),
        help="Raw /v1/completions (default, prefix-cache friendly) or chat.",
    ),
    click.option(
        "--chat-template", help="server | chatml | qwen-think | deepseek | llama3 | FILE.jinja"
    ),
    click.option("--context-length", type=int, help="Model context window in tokens."),
    click.option("--timeout", "timeout_s", type=float, help="Read timeout per request (s)."),
    # reader
    click.option("--reader-model", help="Model for Reason-in-Documents (default: --model)."),
    click.option("--reader-base-url", help="Server for the reader model."),
    click.option(
        "--reader/--no-reader",
        "reader",
        default=None,
        help="--no-reader inserts the documents themselves.",
    ),
    # search
    click.option("--search", help="Search backend(s): bm25, serper, ...; a,b fuses them."),
    click.option("--corpus", help="JSONL file, folder, or built index for bm25."),
    click.option("--search-endpoint", help="Endpoint URL of the search backend."),
    click.option("--top-k", type=int, help="Documents per search (default 10)."),
    click.option("--max-doc-chars", type=int, help="Characters of context per document."),
    click.option(
        "--fetch/--no-fetch",
        "fetch",
        default=None,
        help="Fetch result pages (default) or use snippets only.",
    ),
    click.option(
        "--allow-private-hosts",
        is_flag=True,
        default=None,
        help="Allow fetching pages on private/loopback addresses.",
    ),
    click.option("--max-fetch-concurrency", type=int, help="Pages fetched at once."),
    click.option(
        "--cache",
        type=click.Choice(["record", "replay", "off"]),
        help="Search/page cache mode (default record).",
    ),
    click.option("--cache-path", help="Cache file (SQLite)."),
    click.option(
        "--cache-ttl",
        "cache_ttl_s",
        type=float,
        help="Treat cache entries older than this many seconds as missing.",
    ),
    click.option(
        "--page-reader",
        "page_reader_url",
        help="Read pages through a reader service: GET URL/<page url>.",
    ),
    click.option(
        "--respect-robots",
        is_flag=True,
        default=None,
        help="Skip pages that robots.txt disallows for our user agent.",
    ),
    # chain
    click.option("--task", type=click.Choice(TASKS), help="Task kind (default qa)."),
    click.option("--max-searches", type=int, help="Searches per question (default 5)."),
    click.option("--max-turns", type=int, help="Generation turns per question (default 15)."),
    click.option("--max-tokens", type=int, help="Budget of new tokens per question."),
    click.option(
        "--force-search/--no-force-search",
        "force_search",
        default=None,
        help="Open the chain with a query (default: on for the embedded model).",
    ),
    # sampling
    click.option("--temperature", type=float, help="Default 0.7."),
    click.option("--top-p", type=float, help="Default 0.8."),
    click.option("--top-k-sampling", type=int, help="Default 20."),
    click.option("--repetition-penalty", type=float, help="Default 1.05."),
    click.option("--seed", type=int, help="Sampling seed, where the server supports it."),
]


def backend_options(func: F) -> F:
    """Add every backend flag to a click command."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


def settings_from_flags(config_file: Path | None, flags: dict[str, Any]) -> Settings:
    """Settings from file < env < the given flags (None and empty tuples = not given)."""
    given = {k: v for k, v in flags.items() if v is not None and v != ()}
    if "base_url" in given:
        given["base_url"] = list(given["base_url"])
    return load_settings(given, config_file=config_file)
