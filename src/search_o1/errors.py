"""Typed errors. Everything the library raises on purpose derives from SearchO1Error.

The CLI turns a SearchO1Error into a one-line message and exit code 2; anything else is
a bug and keeps its traceback.
"""

from __future__ import annotations

import re

# scheme://user:password@ in a URL quoted by a message; the user info may hold a password.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")


class SearchO1Error(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(SearchO1Error):
    """Bad settings or input from the user: unknown backend, empty question, bad file."""


class InputFileError(ConfigError):
    """A user-supplied file is missing or malformed; names the file and the line."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class MissingExtraError(ConfigError):
    """An optional dependency is not installed; says which extra brings it."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{package} is not installed; install it with: pip install 'search-o1[{extra}]'"
        )


class BackendError(SearchO1Error):
    """A model server, search engine or page failed.

    `status` is the HTTP status when there was one; `retry_after` the server's hint in
    seconds; `retryable` whether trying again could help (429, 5xx, connection errors).
    """

    def __init__(
        self,
        backend: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool = False,
    ) -> None:
        self.backend = backend
        self.status = status
        self.retry_after = retry_after
        self.retryable = retryable
        prefix = f"{backend}: HTTP {status}: " if status else f"{backend}: "
        # Messages name the URL that failed; they are printed, logged, saved in traces
        # and sent to serve's clients, so never with its user info.
        super().__init__(prefix + without_userinfo(message))


def without_userinfo(text: str) -> str:
    """`text` with the user info of every URL in it removed.

    >>> without_userinfo("cannot reach http://me:pw@host:8000/v1/models: refused")
    'cannot reach http://host:8000/v1/models: refused'
    """
    return _USERINFO.sub(r"\1", text)


class ContextOverflowError(BackendError):
    """The request would not fit the model's context window."""

    def __init__(self, backend: str, message: str, *, status: int | None = None) -> None:
        super().__init__(backend, message, status=status)


class FetchError(BackendError):
    """One web page could not be read (blocked, timed out, HTTP error, unreadable body).

    `reason` is the short text the document's status shows ("failed: <reason>"); a
    failed page is told to the model as a failure and never cached.
    """

    def __init__(self, reason: str) -> None:
        super().__init__("fetch", reason)
        self.reason = reason


class CacheError(ConfigError):
    """The cache file cannot be used: not SQLite, damaged, or not writable as asked.

    Names the file and what to do; raised when the cache is opened, before any work.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"cache {path}: {message}")


class QueueFull(SearchO1Error):
    """The server's running slots and queue places are all taken (HTTP 429)."""


class ReplayMissError(SearchO1Error):
    """Replay mode asked the cache for something a recorded run never fetched."""
