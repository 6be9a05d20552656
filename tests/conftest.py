"""Shared test setup: a guard that fails any test trying to reach beyond this machine."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

_real_connect = socket.socket.connect
_real_getaddrinfo = socket.getaddrinfo


def _is_local(host: Any) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    if not _is_local(host):
        raise RuntimeError(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not _is_local(host if isinstance(host, str) else host.decode()):
        raise RuntimeError(f"test tried to resolve a remote host: {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", _guarded_getaddrinfo)
    yield


@pytest.fixture(scope="session")
def multihop_bm25(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The BM25 index of the closed multi-hop corpus, built once for the whole run."""
    from search_o1.search.bm25 import BM25Search

    corpus = SHARED_DATA / "corpus" / "multihop_closed.jsonl"
    if not corpus.exists():
        pytest.skip(f"benchmark data not found at {SHARED_DATA}")
    return BM25Search.open(corpus, cache_dir=tmp_path_factory.mktemp("multihop-index"))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"benchmark data not found at ../shared/data (looked in {SHARED_DATA.parent})")
    return SHARED_DATA
