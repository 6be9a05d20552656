"""Settings: one flat model, filled from search-o1.toml < SEARCH_O1_* env < command-line flags.

Keys are the flag names with underscores (`--max-searches` = `max_searches` =
`SEARCH_O1_MAX_SEARCHES`), so a user learns one vocabulary for all three places.
Secrets are never settings: `api_key_env` names the variable that holds the key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from search_o1.errors import ConfigError
from search_o1.types import Sampling

CONFIG_FILE = "search-o1.toml"
ENV_PREFIX = "SEARCH_O1_"
TaskKind = Literal["qa", "multihop", "math", "choice", "code"]
TASKS: tuple[str, ...] = ("qa", "multihop", "math", "choice", "code")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # --- model ---
    backend: str = "auto"  # auto: openai when base_url is set, else embedded
    base_url: list[str] = Field(default_factory=list)
    model: str | None = None
    api_key_env: str | None = None
    api_mode: Literal["completions", "chat"] = "completions"
    chat_template: str | None = None  # "server", a built-in name, or a .jinja file
    context_length: int | None = None
    timeout_s: float = 600.0
    connect_timeout_s: float = 10.0
    retries: int = 4
    # --- reader (Reason-in-Documents) ---
    reader: bool = True
    reader_model: str | None = None
    reader_base_url: str | None = None
    reader_max_tokens: int = 2048
    # --- search ---
    search: list[str] = Field(default_factory=lambda: ["bm25"])
    corpus: str | None = None
    search_endpoint: str | None = None
    top_k: int = Field(10, ge=1, le=100)
    max_doc_chars: int = Field(3000, ge=100)
    # --- the chain ---
    task: TaskKind = "qa"
    max_searches: int = Field(5, ge=0)
    max_turns: int = Field(15, ge=1)
    max_tokens: int = Field(32768, ge=1)
    force_search: bool | None = None  # None: on for the embedded model only
    # --- sampling (the paper's defaults) ---
    temperature: float = Field(0.7, ge=0)
    top_p: float = Field(0.8, gt=0, le=1)
    top_k_sampling: int = 20
    repetition_penalty: float = 1.05
    seed: int | None = None
    # --- web fetch & cache (used by web backends) ---
    fetch: bool = True
    allow_private_hosts: bool = False
    max_fetch_concurrency: int = Field(16, ge=1)
    page_reader_url: str | None = None  # a Jina-Reader-style service: GET {url}/{page}
    respect_robots: bool = False
    cache: Literal["record", "replay", "off"] = "record"
    cache_path: str = ".search-o1/cache.sqlite"
    cache_ttl_s: float | None = Field(None, gt=0)
    # --- scheduling ---
    schedule: Literal["async", "rounds"] = "async"
    concurrency: int = Field(16, ge=1)  # questions in flight
    # Model requests in flight across all questions: vLLM's default max_num_seqs (more
    # only queue inside the server).
    max_llm_inflight: int = Field(256, ge=1)
    # Searches in flight: search APIs rate-limit, and local indexes gain nothing past this.
    max_search_inflight: int = Field(64, ge=1)

    @field_validator("base_url", "search", mode="before")
    @classmethod
    def _split_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [p.strip() for p in v.split(",") if p.strip()]
        return v

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


def _env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    fields = Settings.model_fields
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX) :].lower()
            if name in fields:
                out[name] = value
    return out


def _file_values(path: Path | None) -> dict[str, Any]:
    if path is None:
        path = Path(CONFIG_FILE)
        if not path.exists():
            return {}
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    return {k.replace("-", "_"): v for k, v in data.items()}


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge file < environment < flags (flags with value None are 'not given')."""
    values = _file_values(config_file)
    values.update(_env_values(os.environ if environ is None else environ))
    values.update({k: v for k, v in (flags or {}).items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            raise ConfigError(f"unknown setting {where!r}") from None
        raise ConfigError(f"setting {where}: {first['msg']}") from None
