"""What one server is (kind, default model, context window), asked once per `OpenAILLM`.

Apart from openai.py because it is a different talk with the server: a few GETs whose
failure at worst loses a hint, where openai.py owns the requests that must succeed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import httpx

from search_o1.errors import BackendError
from search_o1.llm import _openai_errors as errors
from search_o1.llm import _openai_wire as wire
from search_o1.llm import _reasoning as rsn

if TYPE_CHECKING:
    from search_o1.llm.openai import OpenAILLM


@dataclass
class Discovered:
    """What discovery learned, with the configured window it falls back to.

    `lock`: concurrent first requests ask the server once, not once each.
    """

    configured_context: int | None = None
    info: wire.ServerInfo | None = None
    context: int | None = None
    context_known: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


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


def _host_kind(base_url: str) -> wire.ServerKind:
    # Only for hosted APIs, whose rules (extra fields, continuation) follow the host;
    # self-hosted servers say what they are in /v1/models.
    return cast(wire.ServerKind, rsn.host_kind(base_url))


async def discover(llm: OpenAILLM) -> wire.ServerInfo:
    """GET /v1/models once: the server kind, a default model id, maybe the context."""
    found = llm._server
    if found.info is not None:
        return found.info
    async with found.lock:
        if found.info is None:
            url = llm.base_url + "/models"
            info = await llm.retry.call(lambda: _fetch_models(llm, url), what=url)
            if llm.model is None:
                llm.model = _default_model(info)
            found.info = info
    return found.info


async def context_length(llm: OpenAILLM) -> int | None:
    """The server's context window when it reports one, else the configured one."""
    found = llm._server
    if not found.context_known:
        info = await discover(llm)
        found.context = info.context_length or await _props_context(llm)
        found.context = found.context or found.configured_context
        found.context_known = True
    return found.context


async def _fetch_models(llm: OpenAILLM, url: str) -> wire.ServerInfo:
    try:
        async with llm._deadline(url):
            response = await llm._client.get(url)
    except httpx.TransportError as e:
        raise errors.transport_error(url, e) from None
    if wire.is_retryable(response.status_code):
        raise llm._http_error(url, response)
    try:
        payload = response.json() if response.status_code == 200 else None
    except ValueError:
        payload = None  # discovery is best effort; the completion call will tell
    return wire.parse_models(payload, host_kind=_host_kind(url))


def _default_model(info: wire.ServerInfo) -> str | None:
    if info.model_ids:
        return info.model_ids[0]
    if info.kind == "openai":
        raise BackendError(errors.BACKEND, "no model given: set --model")
    return None  # llama.cpp-like servers serve one model and ignore the field


async def _props_context(llm: OpenAILLM) -> int | None:
    url = root(llm.base_url) + "/props"
    try:
        async with llm._deadline(url):
            response = await llm._client.get(url)
        return wire.props_context(response.json()) if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, BackendError):
        return None
