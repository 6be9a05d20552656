"""The browser guard's rules, one request at a time (the real-browser attacks are in
tests/e2e/test_page_origins.py)."""

from __future__ import annotations

from typing import Any

import pytest

from search_o1.serve.guard import BrowserGuard, host_names


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not reached")


def scope(method: str = "GET", **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "method": method, "path": "/", "headers": raw}


def test_host_names_of_binds() -> None:
    assert host_names("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert host_names("[::1]") == {"127.0.0.1", "localhost", "::1"}
    assert host_names("192.0.2.5", ["Search.Example"]) == {"192.0.2.5", "search.example"}


@pytest.mark.parametrize(
    ("request_scope", "status"),
    [
        (scope(host="127.0.0.1:8000"), None),
        (scope(host="localhost:8000"), None),
        (scope(host="[::1]:8000"), None),
        (scope(host="evil.example:8000"), 421),
        (scope(host="127.0.0.1.evil.example"), 421),
        (scope(host="[::1]evil.example"), 421),
        (scope(host="[::1"), 421),
        (scope(), 421),
        (scope(host="127.0.0.1:8000", origin="http://127.0.0.1:8000"), None),
        (scope(host="127.0.0.1:8000", origin="http://127.0.0.1:9999"), 403),
        (scope(host="127.0.0.1:8000", origin="null"), 403),
        (scope("POST", host="127.0.0.1:8000", content_type="application/json"), None),
        (
            scope("POST", host="127.0.0.1:8000", content_type="Application/JSON; charset=utf-8"),
            None,
        ),
        (scope("POST", host="127.0.0.1:8000", content_type="text/plain"), 415),
        (scope("POST", host="127.0.0.1:8000"), 415),
    ],
)
def test_refusals(request_scope: dict[str, Any], status: int | None) -> None:
    guard = BrowserGuard(_never, hosts=host_names("127.0.0.1"))
    refusal = guard.refusal(request_scope)
    assert (refusal[0] if refusal else None) == status


def test_allowed_origins_and_any_host() -> None:
    guard = BrowserGuard(_never, hosts=["*"], cors_origins=["https://app.example/"])
    assert guard.refusal(scope(host="anything", origin="https://app.example")) is None
    assert guard.refusal(scope(host="anything", origin="https://other.example")) is not None
