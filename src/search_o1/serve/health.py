"""Readiness: is the model server reachable now, and is a search index loaded?

An HTTP model is probed with a cheap `GET {base}/models` on every check (its cached
context length would say nothing about now); in-process models (embedded, scripted)
are asked for their context length, which they answer without a network round trip.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from search_o1._http import USER_AGENT, ssl_context
from search_o1.engine import Engine
from search_o1.llm.base import LLM

PROBE_TIMEOUT_S = 5.0


async def health_report(
    engine: Engine, *, api_key: str | None = None, detail: bool = True
) -> dict[str, Any]:
    """{"status": "ok" | "unavailable", "model": {...}, "reader": {...}?, "search": {...}}.

    `api_key`: the model server's key, sent with the probe (never shown). `detail=False`
    (a client without the serve key) leaves out where the model servers are and what
    their errors said: only how many answer.
    """
    report: dict[str, Any] = {"model": await _probe(engine.llm, api_key)}
    if engine.reader.llm is not engine.llm:
        report["reader"] = await _probe(engine.reader.llm, api_key)
    if not detail:
        for part in report.values():
            _hide_where(part)
    report["search"] = _search_info(engine)
    ready = all(part.get("ok") for part in report.values())
    report["status"] = "ok" if ready else "unavailable"
    return report


async def _probe(llm: LLM, api_key: str | None) -> dict[str, Any]:
    urls: list[str] = list(getattr(llm, "base_urls", None) or [])
    info: dict[str, Any] = {"backend": llm.name}
    try:
        if urls:
            # Shown without user info, which may hold a password.
            reachable = await _reachable(urls, api_key)
            info["reachable"] = [str(httpx.URL(u).copy_with(userinfo=b"")) for u in reachable]
            info["ok"] = bool(info["reachable"])
        else:
            await asyncio.wait_for(llm.context_length(), PROBE_TIMEOUT_S)
            info["ok"] = True
    except Exception as e:  # a probe reports failures; it must never fail the endpoint
        info["ok"] = False
        info["error"] = f"{type(e).__name__}: {e}"[:200]
    return info


async def _reachable(urls: list[str], api_key: str | None) -> list[str]:
    """The base URLs that answer GET /models with 200 (the key is sent, never shown)."""
    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    async with httpx.AsyncClient(
        timeout=PROBE_TIMEOUT_S, headers=headers, verify=ssl_context()
    ) as client:

        async def one(url: str) -> bool:
            try:
                response = await client.get(url.rstrip("/") + "/models")
            except httpx.HTTPError:
                return False
            return response.status_code == 200

        answers = await asyncio.gather(*(one(u) for u in urls))
    return [u for u, ok in zip(urls, answers, strict=True) if ok]


def _hide_where(info: dict[str, Any]) -> None:
    if "reachable" in info:
        info["reachable"] = len(info["reachable"])
    if "error" in info:
        info["error"] = info["error"].split(":", 1)[0]  # the error's type, not its text


def _search_info(engine: Engine) -> dict[str, Any]:
    search = engine.search
    if search is None:
        return {"ok": False, "backend": None}
    info: dict[str, Any] = {"ok": True, "backend": search.name}
    size = getattr(search, "__len__", None)
    if callable(size):
        info["documents"] = size()  # a local index: how many passages it loaded
    return info
