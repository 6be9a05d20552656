"""SSRF guard: a page URL from the web may only make us connect to public addresses.

The check runs at connect time, inside the HTTP client's network layer: the host is
resolved once, every address it resolves to must be public (not private, loopback,
link-local, multicast, reserved or unspecified), and the connection goes to exactly
those checked addresses. So a redirect, a new pooled connection or a DNS answer that
changes between check and use (rebinding) cannot reach an internal address.

`allow_private=True` (`--allow-private-hosts`) opts out, for intranets and tests.
`allowed` trusts specific "host", "host:port", "ip" or "ip:port" entries even when
private (for library users: one intranet service, a test's own loopback server; the
CLI's page-reader endpoint is not trusted this way, it needs `allow_private`), and the
resolver is injectable so tests can map names to any address without DNS.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

from search_o1._http import ssl_context

__all__ = ["BlockedURLError", "GuardedTransport", "HostPolicy", "is_public_address"]

Resolver = Callable[[str, int], Awaitable[list[str]]]
RESOLVE_TIMEOUT_S = 10.0
# NAT64 (RFC 6052): a gateway turns 64:ff9b::a.b.c.d into a connection to a.b.c.d.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


class BlockedURLError(Exception):
    """The guard refused a URL or an address; the message says why."""


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def is_public_address(ip: str) -> bool:
    """True for globally routable unicast addresses.

    >>> [is_public_address(a) for a in ("93.184.215.14", "10.0.0.1", "127.0.0.1")]
    [True, False, False]
    >>> [is_public_address(a) for a in ("169.254.169.254", "::ffff:10.0.0.1", "224.0.0.1")]
    [False, False, False]

    IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4, compatible) are judged
    by that IPv4 address:

    >>> [is_public_address(a) for a in ("64:ff9b::127.0.0.1", "2002:a9fe:a9fe::", "::10.0.0.1")]
    [False, False, False]
    """
    addr = ipaddress.ip_address(ip.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(addr, ipaddress.IPv6Address):
        if addr in _NAT64_LOCAL:
            return False  # RFC 8215 local-use NAT64: where the IPv4 part sits varies
        addr = _embedded_ipv4(addr) or addr
    return addr.is_global and not addr.is_multicast


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries, which is where a connection really goes.

    >>> [str(_embedded_ipv4(ipaddress.IPv6Address(a))) for a in
    ...  ("::ffff:10.0.0.1", "64:ff9b::10.0.0.1", "2002:a00:1::1", "::10.0.0.1", "2606::1")]
    ['10.0.0.1', '10.0.0.1', '10.0.0.1', '10.0.0.1', 'None']
    """
    if addr.ipv4_mapped is not None:  # ::ffff:a.b.c.d
        return addr.ipv4_mapped
    if addr.sixtofour is not None:  # 2002:AABB:CCDD::/48, 6to4 (RFC 3056)
        return addr.sixtofour
    if addr in _NAT64 or int(addr) >> 32 == 0:  # 64:ff9b::a.b.c.d, or ::a.b.c.d
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostPolicy:
    allow_private: bool = False
    allowed: frozenset[str] = frozenset()
    resolver: Resolver = field(default=system_resolver, compare=False)

    def trusts(self, host: str, port: int) -> bool:
        host = host.strip("[]").lower()
        return self.allow_private or host in self.allowed or f"{host}:{port}" in self.allowed

    def check_url(self, url: httpx.URL) -> None:
        """Cheap checks before any connection: the scheme, and a literal private IP."""
        if url.scheme not in ("http", "https"):
            raise BlockedURLError(f"scheme {url.scheme or '(none)'!r} is not http(s)")
        if not url.host:
            raise BlockedURLError("URL has no host")
        port = url.port or (443 if url.scheme == "https" else 80)
        literal = url.host.strip("[]")
        if _is_ip(literal) and not self.trusts(literal, port) and not is_public_address(literal):
            raise BlockedURLError(f"private address {url.host}")

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses to connect to; raises BlockedURLError if any is not public."""
        if _is_ip(host):
            ips = [host.strip("[]")]
        else:
            try:
                ips = await asyncio.wait_for(self.resolver(host, port), RESOLVE_TIMEOUT_S)
            except (OSError, TimeoutError) as e:
                raise BlockedURLError(f"cannot resolve {host}: {e or 'timeout'}") from None
        if not ips:
            raise BlockedURLError(f"{host} resolves to no address")
        if self.trusts(host, port):
            return ips
        for ip in ips:
            # Any private answer taints the name: attackers mix public and private records.
            if not is_public_address(ip) and not self.trusts(ip, port):
                raise BlockedURLError(f"{host} resolves to private address {ip}")
        return ips


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves and checks before every TCP connection, then dials the checked address."""

    def __init__(self, policy: HostPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        ips = await self._policy.resolve(host, port)
        error: Exception | None = None
        for ip in ips:
            try:
                return await self._inner.connect_tcp(
                    ip,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                error = e
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedURLError("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport with the guard in its connection pool's network layer.

    httpx exposes no network-backend parameter, so the pool it builds is replaced by an
    identical one that has the guard; proxies are not supported (a proxy would make the
    connection for us, out of the guard's sight).
    """

    def __init__(self, policy: HostPolicy, *, limits: httpx.Limits) -> None:
        super().__init__(verify=ssl_context(), limits=limits, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_GuardedBackend(policy),
        )
