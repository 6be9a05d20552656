"""The model client's connections: an httpx client over a transport that spreads them
over several small pools."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from search_o1._http import USER_AGENT, ssl_context

# Connections per httpcore pool: 8, 16 and 32 measured alike on the benchmark; 16 it is.
POOL_SIZE = 16

log = logging.getLogger(__name__)

# How a server hanging up on a request shows: the end of the stream before any answer
# (RemoteProtocolError) or a reset (ReadError; WriteError when the write itself fails).
HUNG_UP = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


def http_client(
    api_key: str | None,
    timeout: httpx.Timeout,
    max_connections: int,
    transport: httpx.AsyncBaseTransport | None,
) -> httpx.AsyncClient:
    """The client one model server is talked to through (`transport`: tests' mock)."""
    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    # httpx's default cap (100 connections) is below the scheduler's 256 model requests
    # in flight; requests past it queued in httpcore, whose pool then matched every
    # queued request against every connection on each request and response (half the
    # orchestrator's CPU at 200 questions on one server).
    size = max(1, max_connections)
    return httpx.AsyncClient(
        headers=headers,
        timeout=timeout,
        transport=transport or ShardedTransport(size),
        # Only for proxies taken from the environment, which get their own transports.
        limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
    )


class ShardedTransport(httpx.AsyncBaseTransport):
    """A client's connections split over several httpcore pools of at most `POOL_SIZE`.

    httpcore's pool walks all its connections on every request and every response close,
    and for each idle one counts all of them again (O(idle x connections)); with a couple
    of hundred requests in flight to one server that bookkeeping was the orchestrator's
    largest CPU cost. Small pools keep it cheap. A request goes to the pool with the
    fewest requests in flight, so together the pools honour `max_connections`; each keeps
    all its connections alive (httpcore closes idle ones whenever a pool holds more than
    its keep-alive count, which would mean reconnecting on most requests).
    """

    def __init__(self, max_connections: int) -> None:
        count = -(-max_connections // POOL_SIZE)
        # Sizes differ by at most one, larger first: ties in `busy` go to the lowest index,
        # so no request waits in a full pool while another has room.
        sizes = [max_connections // count + (i < max_connections % count) for i in range(count)]
        self._pools = [
            httpx.AsyncHTTPTransport(
                verify=ssl_context(),
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
            )
            for size in sizes
        ]
        self._busy = [0] * count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        busy = self._busy
        index = busy.index(min(busy))
        busy[index] += 1
        try:
            response = await send(self._pools[index], request)
        except BaseException:
            busy[index] -= 1
            raise

        def release() -> None:
            busy[index] -= 1

        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Released(response.stream, release)
        return response

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


class _Released(httpx.AsyncByteStream):
    """A response body that calls `release` once, when it is closed."""

    def __init__(self, stream: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()  # no generator layer of our own per chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            if self._release is not None:
                self._release()
                self._release = None


async def send(pool: httpx.AsyncBaseTransport, request: httpx.Request) -> httpx.Response:
    """`request` through `pool`, resent when a kept-alive connection died under it.

    A server closes an idle kept-alive connection when it likes (an idle timeout, a
    restart, a stream it ended without saying `Connection: close`); when its FIN has not
    reached us before the pool hands that connection out again, the request is written
    into a dead socket and the server hangs up without ever handling it. That request was
    not an attempt: it is resent at once, on another connection, without counting against
    the caller's retries. Only a hang-up before any answer, on a connection this request
    did not open, is resent; a new connection failing is a real failure. Each dead
    connection is dropped from the pool as it fails, so the resends are bounded by the
    pool's size.
    """
    resendable = isinstance(request.stream, httpx.ByteStream)  # a body that can be re-read
    outer = request.extensions.get("trace")
    for resends in itertools.count():
        opened = False

        async def trace(event: str, info: dict[str, Any]) -> None:
            nonlocal opened
            opened = opened or event.startswith("connection.connect_")
            if outer is not None:
                await outer(event, info)

        request.extensions = {**request.extensions, "trace": trace}
        try:
            return await pool.handle_async_request(request)
        except HUNG_UP as e:
            if opened or not resendable or resends >= POOL_SIZE:
                raise
            log.info("%s: kept-alive connection closed by the server (%s); resent", request.url, e)
    raise AssertionError("unreachable")  # pragma: no cover
