"""What one server is (kind, default model, context window), asked once per client.

Apart from the client because it is a different talk with the server: a few GETs whose
failure at worst loses a hint, where the client owns the requests that must succeed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

import httpx

from search_o1.errors import BackendError
from search_o1.llm.openai import errors, ollama, wire
from search_o1.llm.openai.connection import Connection

log = logging.getLogger(__name__)


def one_url(base_url: str | Sequence[str]) -> str:
    """The one server's URL; a one-element list is accepted as before."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    if len(urls) != 1:
        raise ValueError(
            f"OpenAILLM talks to one server, got {len(urls)} base URLs; "
            "for several use search_o1.llm.pool.PoolLLM (pipeline.build_llm does)"
        )
    return urls[0].rstrip("/")


def root(base_url: str) -> str:
    """The server root for non-/v1 endpoints (/apply-template, /tokenize, /props)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


_HOSTS = {
    "api.openai.com": "openai",
    "api.deepseek.com": "deepseek",
    "openrouter.ai": "openrouter",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gemini",
}


def host_kind(url: str) -> wire.ServerKind:
    """The hosted API a base URL points at, or "unknown" (self-hosted servers).

    >>> host_kind("https://api.deepseek.com/v1"), host_kind("http://10.0.0.5:8000/v1")
    ('deepseek', 'unknown')
    """
    # Only for hosted APIs, whose rules (extra fields, continuation) follow the host;
    # self-hosted servers say what they are in /v1/models.
    return cast(wire.ServerKind, _HOSTS.get(urlsplit(url).hostname or "", "unknown"))


class Discovery:
    """What the server at `connection.base_url` is, asked on first use and kept.

    `model`: the configured model id, or (after the first `info`) the server's first one.
    `configured_context`: the window to fall back to when the server reports none.
    """

    def __init__(
        self, connection: Connection, *, model: str | None, configured_context: int | None
    ) -> None:
        self.model = model
        self._connection = connection
        self._configured_context = configured_context
        self._info: wire.ServerInfo | None = None
        self._context: int | None = None
        self._context_known = False
        # Concurrent first requests ask the server once, not once each.
        self._lock = asyncio.Lock()

    @property
    def configured_context(self) -> int | None:
        """The context window the user configured, if any."""
        return self._configured_context

    async def info(self) -> wire.ServerInfo:
        """GET /v1/models once: the server kind, a default model id, maybe the context.
        A server that does not say what it is may be Ollama (`/api/version`)."""
        if self._info is not None:
            return self._info
        async with self._lock:
            if self._info is None:
                url = self._connection.base_url + "/models"
                info = await self._connection.retry.call(lambda: self._fetch(url), what=url)
                if info.kind == "unknown":
                    info = await self._ollama(info)
                if self.model is None:
                    self.model = _default_model(info)
                self._info = info
        return self._info

    async def _ollama(self, info: wire.ServerInfo) -> wire.ServerInfo:
        """`info` as Ollama's when the server answers `/api/version` (its `/v1/models`
        says `owned_by` the model's namespace, e.g. "library"); its models from
        `/api/tags` when the base URL has no `/v1` for `/v1/models` to answer."""
        server = root(self._connection.base_url)
        payload = await self._get_json(server + "/api/version")
        if ollama.version(payload) is None:
            return info
        ids = info.model_ids or ollama.model_names(await self._get_json(server + "/api/tags"))
        if self._configured_context is None:
            log.warning(
                "%s is Ollama: it runs a model with its own default window (a few thousand "
                "tokens) and cuts a longer prompt from the front; set --context-length",
                server,
            )
        return wire.ServerInfo("ollama", ids, info.context_length)

    async def _get_json(self, url: str) -> Any:
        """A best-effort GET: the JSON answer, or None for anything else."""
        try:
            response = await self._connection.get(url)
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, BackendError):
            return None

    async def context_length(self) -> int | None:
        """The server's context window when it reports one, else the configured one."""
        if not self._context_known:
            info = await self.info()
            found = info.context_length or await self._props_context()
            self._context = found or self._configured_context
            self._context_known = True
        return self._context

    async def _fetch(self, url: str) -> wire.ServerInfo:
        response = await self._connection.get(url)
        if wire.is_retryable(response.status_code):
            raise self._connection.http_error(url, response, self.model)
        try:
            payload = response.json() if response.status_code == 200 else None
        except ValueError:
            payload = None  # discovery is best effort; the completion call will tell
        return wire.parse_models(payload, host_kind=host_kind(url))

    async def _props_context(self) -> int | None:
        url = root(self._connection.base_url) + "/props"
        try:
            response = await self._connection.get(url)
            return wire.props_context(response.json()) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, BackendError):
            return None


def _default_model(info: wire.ServerInfo) -> str | None:
    if info.model_ids:
        return info.model_ids[0]
    if info.kind == "openai":
        raise BackendError(errors.BACKEND, "no model given: set --model")
    return None  # llama.cpp-like servers serve one model and ignore the field
