"""Settings: one flat model, filled from search-o1.toml < SEARCH_O1_* env < command-line flags.

One name per setting: the TOML key, the environment suffix and the flag are the same word
(`max_searches` = `SEARCH_O1_MAX_SEARCHES` = `--max-searches`), so a user learns one
vocabulary for all three places. Secrets are never settings: `api_key_env` names the
variable that holds the key. Units are part of the help, not of the name (seconds).

HOW TO ADD A SETTING: declare one field below with `setting(default, GROUP, "help")`
(pydantic constraints as keywords: `ge=`, `gt=`, `le=`; `factory=` for a mutable default;
`shown=` for the default's wording in --help when the value alone would not say it;
`results=False` when it cannot change an answer, so an eval run may resume with it changed).
Nothing else: `load_settings` reads it from the file and the environment, and
`search_o1.cli.options` turns it into the flag `--its-name` on ask/eval/serve, listed in
that group of `--help` with its default. `bool` becomes `--x/--no-x`, a `Literal` becomes
a choice, `list[str]` takes a comma list or a repeated flag (annotate it `NoDecode` like
`base_url`). A new group name works as is; add it to GROUPS to place it in --help.

`Settings(...)` built in code holds only what it is given plus defaults; `load_settings`
is what reads the file and the environment (pydantic-settings sources, see
`Settings.settings_customise_sources`; the readers themselves are in `config_sources`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from search_o1.config_sources import (
    CONFIG_FILE,
    ENV_PREFIX,
    LOADING,
    EnvSource,
    Inputs,
    did_you_mean,
    file_values,
    unknown_env_lines,
)
from search_o1.errors import ConfigError
from search_o1.tasks import TaskKind
from search_o1.types import Sampling

# The order of the setting groups in --help; a group not listed here comes after them.
GROUPS: tuple[str, ...] = (
    "model",
    "reader",
    "search",
    "dense",
    "limits",
    "sampling",
    "fetch",
    "cache",
    "scheduling",
    "profile",
)


class ConfigWarning(UserWarning):
    """Something in the configuration is ignored (e.g. an unknown SEARCH_O1_* variable)."""


def setting(
    default: Any = None,
    group: str = "other",
    help: str = "",
    *,
    factory: Callable[[], Any] | None = None,
    shown: str | None = None,
    results: bool = True,
    **constraints: Any,
) -> Any:
    """A Settings field: its default, its --help group and text, and pydantic constraints.

    `results=False` marks a setting that cannot change an answer (where a server is, how
    long to wait, how much runs at once): an eval run may resume with it changed.
    """
    extra: dict[str, Any] = {"group": group}
    if not results:
        extra["results"] = False
    if shown is not None:
        extra["shown"] = shown
    if factory is not None:
        return Field(
            default_factory=factory, description=help, json_schema_extra=extra, **constraints
        )
    return Field(default, description=help, json_schema_extra=extra, **constraints)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", frozen=True, case_sensitive=False
    )

    # --- model ---
    backend: str = setting(
        "auto",
        "model",
        "auto (openai with --base-url, else embedded), openai, embedded, or a plugin's name.",
    )
    base_url: Annotated[list[str], NoDecode] = setting(
        group="model",
        factory=list,
        shown="none",
        help="OpenAI-compatible server(s), e.g. http://host:8000/v1 (repeat or a,b).",
        results=False,
    )
    model: str | None = setting(None, "model", "Model name on the server.", shown="its first")
    api_key_env: str | None = setting(
        None, "model", "Environment variable holding the API key.", results=False
    )
    api_mode: Literal["completions", "chat", "tools"] = setting(
        "completions",
        "model",
        "Raw /v1/completions (prefix-cache friendly), chat, or tools (the model searches "
        "by calling a `search` function tool).",
    )
    tools_api: Literal["auto", "chat", "responses"] = setting(
        "auto",
        "model",
        "Wire of --api-mode tools: chat (/v1/chat/completions), responses "
        "(OpenAI's /v1/responses: reasoning kept between calls), or auto (responses on "
        "api.openai.com, else chat).",
    )
    chat_template: str | None = setting(
        None,
        "model",
        "server | chatml | qwen-think (qwq) | deepseek (deepseek-r1) | qwen3 | llama3 | "
        "FILE.jinja.",
        shown="per backend",
    )
    context_length: int | None = setting(
        None, "model", "Model context window in tokens.", shown="asked from the server", gt=0
    )
    timeout: float = setting(
        600.0, "model", "Read timeout per model request, seconds.", gt=0, results=False
    )
    connect_timeout: float = setting(
        10.0, "model", "Connect timeout, seconds.", gt=0, results=False
    )
    retries: int = setting(4, "model", "Retries of a failed request.", ge=0, results=False)
    deadline: float = setting(
        3600.0, "model", "Whole model request, all its tokens, seconds.", gt=0, results=False
    )
    stall_timeout: float = setting(
        120.0,
        "model",
        "Silence inside a started model stream that counts as a stall, seconds.",
        gt=0,
        results=False,
    )
    # --- reader (Reason-in-Documents) ---
    reader: bool = setting(
        True, "reader", "Reason-in-Documents; --no-reader inserts the documents."
    )
    reader_model: str | None = setting(
        None, "reader", "Model for Reason-in-Documents.", shown="--model"
    )
    reader_base_url: str | None = setting(
        None, "reader", "Server for the reader model.", shown="--base-url"
    )
    reader_max_call_tokens: int | None = setting(
        None,
        "reader",
        "New tokens per reader call.",
        shown="the main model's per-call limit",
        ge=1,
    )
    # --- search ---
    search: Annotated[list[str], NoDecode] = setting(
        group="search",
        factory=lambda: ["bm25"],
        shown="bm25",
        help="Search backend(s): bm25, serper, retriever, ...; a,b fuses them.",
    )
    corpus: str | None = setting(
        None, "search", "JSONL file, folder, or built index for bm25 and dense."
    )
    search_endpoint: str | None = setting(None, "search", "Endpoint URL of the search backend.")
    mcp_server: str | None = setting(
        None,
        "search",
        '--search mcp: the MCP server, as a command line ("CMD ARGS", run over stdio) or '
        "a streamable HTTP URL.",
    )
    mcp_tool: str | None = setting(
        None,
        "search",
        "--search mcp: the server's search tool.",
        shown="its only tool, or the one named search",
    )
    mcp_key_env: str | None = setting(
        None,
        "search",
        "--search mcp: environment variable holding a bearer token for an --mcp-server URL.",
        results=False,
    )
    top_k: int = setting(10, "search", "Documents per search.", ge=1, le=100)
    search_deadline: float = setting(
        20.0, "search", "Whole search API request, every byte, seconds.", gt=0, results=False
    )
    max_doc_chars: int = setting(3000, "search", "Characters of context per document.", ge=100)
    max_page_chars: int = setting(
        50_000,
        "search",
        "Characters of a fetched page the context window is cut from (the paper: 8000).",
        ge=100,
    )
    # --- dense search (the [dense] extra; see docs/dense.md) ---
    embedding_model: str | None = setting(
        None,
        "dense",
        "Sentence-transformers model folder for dense search.",
        shown="all-MiniLM-L6-v2 (bundled)",
    )
    embedding_prefixes: Literal["auto", "e5", "bge", "none"] = setting(
        "auto", "dense", "Query/passage prefixes: e5, bge, none, or auto (from the model's config)."
    )
    faiss_index: str | None = setting(
        None, "dense", "A FlashRAG FAISS index file; --corpus is then the JSONL it was built from."
    )
    dense_index: Literal["flat", "ivf", "hnsw"] = setting(
        "flat", "dense", "FAISS index kind: flat (exact), ivf or hnsw (approximate, for millions)."
    )
    nprobe: int = setting(32, "dense", "IVF clusters scanned per query (recall vs. speed).", ge=1)
    ef_search: int = setting(
        128, "dense", "HNSW candidates kept per query (recall vs. speed).", ge=1
    )
    # --- the chain ---
    task: TaskKind = setting("qa", "limits", "Task kind: the instructions and answer format.")
    max_searches: int = setting(5, "limits", "Searches per question (10 suits multi-hop).", ge=0)
    max_turns: int = setting(15, "limits", "Generation turns per question.", ge=1)
    max_call_tokens: int | None = setting(
        None,
        "limits",
        "New tokens per generation call (the paper's max_tokens).",
        shown="per dataset and --paper-model: 32768 on AIME/AMC/LiveCodeBench and outside "
        "eval, 20480 elsewhere; other models 8192",
        ge=1,
    )
    max_total_tokens: int | None = setting(
        None,
        "limits",
        "Budget of new tokens per question, all calls together.",
        shown="none beyond the context window",
        ge=1,
    )
    force_search: bool | None = setting(
        None, "limits", "Open the chain with a query.", shown="on for the embedded model only"
    )
    # --- profile: ours or the paper's ---
    profile: Literal["ours", "paper"] = setting(
        "ours",
        "profile",
        "paper: every value the paper's scripts use where ours differ "
        "(docs/paper-profile.md); settings you give still win.",
    )
    paper_model: Literal["qwq", "other"] = setting(
        "qwq",
        "profile",
        "Which of the paper's model rows per-dataset values follow: qwq "
        "(QwQ-32B) or other (its 8192-token, no-repetition-penalty row).",
    )
    repeated_query: Literal["reuse", "notice"] = setting(
        "reuse",
        "profile",
        "A repeated query: reuse (insert its earlier result again) or "
        "notice (the paper: the limit is checked first, then a notice).",
    )
    page_chars: int | None = setting(
        None,
        "profile",
        "rag-agent: a page the model asks for is its first N characters (the paper: 8000).",
        shown="the window around its snippet",
        ge=100,
    )
    prompts: str | None = setting(
        None,
        "profile",
        "Folder of Jinja prompt templates, one per slot (docs/prompts.md).",
        shown="built-in prompts",
    )
    # --- sampling (the paper's defaults) ---
    temperature: float = setting(0.7, "sampling", "Sampling temperature.", ge=0)
    top_p: float = setting(0.8, "sampling", "Nucleus sampling.", gt=0, le=1)
    top_k_sampling: int = setting(20, "sampling", "Top-k sampling (not --top-k documents).")
    repetition_penalty: float = setting(1.05, "sampling", "Repetition penalty.")
    seed: int | None = setting(None, "sampling", "Sampling seed, where the server supports it.")
    # --- web fetch (used by web backends) ---
    fetch: bool = setting(True, "fetch", "Fetch result pages; --no-fetch uses snippets only.")
    allow_private_hosts: bool = setting(
        False, "fetch", "Allow fetching pages on private/loopback addresses."
    )
    max_fetch_concurrency: int = setting(16, "fetch", "Pages fetched at once.", ge=1, results=False)
    page_service: str | None = setting(
        None, "fetch", "Read pages through a page service (Jina Reader style): GET URL/<page>."
    )
    respect_robots: bool = setting(
        False, "fetch", "Skip pages that robots.txt disallows for our user agent."
    )
    # --- cache ---
    cache: Literal["record", "replay", "off"] = setting(
        "record", "cache", "Search/page cache: record, replay (cache only) or off.", results=False
    )
    cache_path: str = setting(
        ".search-o1/cache.sqlite", "cache", "Cache file (SQLite).", results=False
    )
    cache_ttl: float | None = setting(
        None,
        "cache",
        "Entries older than this many seconds count as missing.",
        shown="never expire",
        gt=0,
        results=False,
    )
    # --- scheduling ---
    schedule: Literal["async", "rounds"] = setting(
        "async",
        "scheduling",
        "async: each question moves on at once; rounds: the paper's lock-step batches.",
        results=False,
    )
    concurrency: int = setting(16, "scheduling", "Questions in flight.", ge=1, results=False)
    # vLLM's default max_num_seqs: more only queue inside the server.
    max_llm_inflight: int = setting(
        256, "scheduling", "Model requests in flight.", ge=1, results=False
    )
    # Search APIs rate-limit, and local indexes gain nothing past this.
    max_search_inflight: int = setting(64, "scheduling", "Searches in flight.", ge=1, results=False)

    @field_validator("base_url", "search", mode="before")
    @classmethod
    def _split_list(cls, v: Any) -> Any:
        items = [v] if isinstance(v, str) else v
        if isinstance(items, list | tuple):
            return [p.strip() for item in items for p in str(item).split(",") if p.strip()]
        return v

    @field_validator("base_url", "reader_base_url", "search_endpoint", mode="after")
    @classmethod
    def _web_urls(cls, v: Any) -> Any:
        # Without a scheme the HTTP client fails deep in a request with its own words.
        for url in [v] if isinstance(v, str) else v or []:
            if not url.lower().startswith(("http://", "https://")):
                raise ValueError(f"{url!r} is not an http(s) URL; did you mean http://{url}?")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Highest first: flags (init values) > environment > file; in code, only init."""
        inputs = LOADING.get()
        if inputs is None:
            return (init_settings,)
        return (
            init_settings,
            EnvSource(settings_cls, inputs.environ),
            InitSettingsSource(settings_cls, inputs.file_values),
        )

    @property
    def sampling(self) -> Sampling:
        return Sampling(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k_sampling,
            repetition_penalty=self.repetition_penalty,
            seed=self.seed,
        )

    @property
    def llm_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        return "openai" if self.base_url else "embedded"

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


def unknown_env(environ: Mapping[str, str]) -> list[str]:
    """Lines for SEARCH_O1_* variables that name no setting.

    >>> unknown_env({"SEARCH_O1_TIMEOUT_S": "5", "SEARCH_O1_TOP_K": "3", "HOME": "/"})
    ["unknown environment variable SEARCH_O1_TIMEOUT_S, ignored (did you mean 'timeout'?)"]
    """
    return unknown_env_lines(environ, Settings.model_fields)


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge file < environment < flags (flags with value None are 'not given').

    An unknown SEARCH_O1_* variable is reported as a ConfigWarning (one line each).
    """
    env = os.environ if environ is None else environ
    for line in unknown_env(env):
        warnings.warn(line, ConfigWarning, stacklevel=2)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    values = file_values(config_file, Settings.model_fields)
    token = LOADING.set(Inputs(environ=env, file_values=values))
    try:
        return Settings(**given)
    except ValidationError as e:
        raise ConfigError(_one_line(e, _origins(given, env, values, config_file))) from None
    except SettingsError as e:
        raise ConfigError(f"settings: {e}") from None
    finally:
        LOADING.reset(token)


def _origins(
    given: Mapping[str, Any],
    environ: Mapping[str, str],
    values: Mapping[str, Any],
    config_file: Path | None,
) -> dict[str, str]:
    """Where each setting not given in code came from: its variable or the file (a bad
    value names it, or a user who set it in one place cannot tell which to fix)."""
    env = {k.upper(): k for k in environ}
    origins = {}
    for name in Settings.model_fields:
        if name in given:
            continue
        if (ENV_PREFIX + name).upper() in env:
            origins[name] = env[(ENV_PREFIX + name).upper()]
        elif name in values:
            origins[name] = str(config_file or CONFIG_FILE)
    return origins


def _one_line(e: ValidationError, origins: Mapping[str, str] | None = None) -> str:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"unknown setting {where!r}{did_you_mean(where, Settings.model_fields)}"
    origin = (origins or {}).get(where)
    message = first["msg"].removeprefix("Value error, ")  # pydantic's wrapping of our own
    return f"setting {where}{f' (from {origin})' if origin else ''}: {message}"


def result_settings(settings: Settings) -> dict[str, Any]:
    """The settings that can change an answer (JSON values): a resumed run must match them.

    >>> "top_k" in result_settings(Settings()), "timeout" in result_settings(Settings())
    (True, False)
    """
    dumped = settings.model_dump(mode="json")
    return {
        name: dumped[name]
        for name, field in Settings.model_fields.items()
        if not (
            isinstance(field.json_schema_extra, dict)
            and field.json_schema_extra.get("results") is False
        )
    }
