"""Turning what a model server did wrong into one typed, one-line BackendError.

Pure functions of the response (status, headers, body) and the URL: the client decides
nothing here beyond the error's kind and whether trying again could help.
"""

from __future__ import annotations

import httpx

from search_o1._http import retry_after_s
from search_o1.errors import BackendError, ContextOverflowError
from search_o1.llm.openai import wire

BACKEND = "openai"


class NoEndpoint(BackendError):
    """The server has no such path or method (404/405/501 not about the model)."""


def _server(response: httpx.Response) -> str:
    name = response.headers.get("server", "")
    return f" (server: {name[:60]})" if name else ""


def not_openai(url: str, response: httpx.Response) -> str:
    """What answered instead of an OpenAI-compatible API, and what was expected."""
    what = wire.describe_body(response.headers.get("content-type", ""), response.text)
    return (
        f"{url} answered with {what}{_server(response)}; "
        "expected an OpenAI-compatible JSON API (check --base-url, usually ending in /v1)"
    )


def http_error(
    url: str, response: httpx.Response, *, model: str | None, secret: str | None
) -> BackendError:
    """The error for a non-200 answer to a model request."""
    status = response.status_code
    ctype = response.headers.get("content-type", "")
    if wire.is_html(ctype, response.text):
        message = not_openai(url, response)
    else:
        message = wire.body_message(response.text)
    if secret:  # some servers quote the key they rejected
        message = message.replace(secret, "***")
    if wire.is_overflow(status, message):
        return ContextOverflowError(BACKEND, f"{url}: {message}", status=status)
    if wire.no_such_endpoint(status, message):
        return NoEndpoint(BACKEND, _endpoint_message(url, message), status=status)
    if status == 404:
        message = f"unknown model {model!r} at {url}: {message}"
    elif status in (401, 403):
        message = f"{url}: not authorised (check the API key variable): {message}"
    elif not message.startswith(url):
        message = f"{url}: {message}"
    return BackendError(
        BACKEND,
        message,
        status=status,
        retry_after=retry_after_s(response.headers.get("retry-after")),
        retryable=wire.is_retryable(status),
    )


def _endpoint_message(url: str, message: str) -> str:
    return message if message.startswith(url) else f"endpoint not found: {url}: {message}"


def not_a_completion(url: str, response: httpx.Response) -> BackendError:
    """A 200 whose body is not a completion (a proxy's HTML error page, say): a server
    fault, retried like a 5xx, never taken as the model's answer."""
    return BackendError(BACKEND, not_openai(url, response), status=200, retryable=True)


# Failures where the server never started (or visibly dropped) the work: safe to resend.
_RETRYABLE_TRANSPORT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
)


def transport_error(url: str, error: httpx.TransportError) -> BackendError:
    kind = type(error).__name__
    if isinstance(error, httpx.TimeoutException) and not isinstance(error, httpx.ConnectTimeout):
        # A read timeout means a generation still running or a stuck server; resending
        # would start the whole generation again, so it is reported, not retried.
        return BackendError(BACKEND, f"{url}: no answer within the read timeout ({kind})")
    detail = str(error) or kind
    retryable = isinstance(error, _RETRYABLE_TRANSPORT)
    return BackendError(BACKEND, f"cannot reach {url}: {kind}: {detail}", retryable=retryable)


def overdue(url: str, seconds: float) -> BackendError:
    """The whole request ran past its deadline (not retried: it would run as long)."""
    return BackendError(BACKEND, f"{url}: no complete answer within {seconds:g} s (--deadline)")


def unless_shown(error: BackendError, shown: list[str]) -> BackendError:
    """`error`, not to be retried when text was already shown live (it cannot be taken
    back, so a replay would show it twice)."""
    if shown:
        error.retryable = False
    return error
