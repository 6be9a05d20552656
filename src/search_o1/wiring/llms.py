"""The built-in model backends' factories: `(settings, *, role) -> LLM`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from search_o1.config import Settings
from search_o1.errors import ConfigError

if TYPE_CHECKING:
    from search_o1.llm.embedded import EmbeddedLLM
    from search_o1.llm.openai import OpenAILLM

__all__ = ["embedded", "openai"]


def openai(settings: Settings, *, role: Literal["main", "reader"] = "main") -> OpenAILLM:
    """One OpenAI-compatible server; the reader role uses reader_base_url/reader_model
    when set.

    One server only: pipeline.build_llm turns several base URLs into a PoolLLM of these.
    """
    from search_o1.llm.openai import OpenAILLM

    urls = list(settings.base_url)
    model = settings.model
    if role == "reader":
        urls = [settings.reader_base_url] if settings.reader_base_url else urls
        model = settings.reader_model or model
    if not urls:
        raise ConfigError("the openai backend needs --base-url (e.g. http://host:8000/v1)")
    if len(urls) > 1:
        raise ConfigError(
            "the openai backend's factory takes one --base-url; "
            "search_o1.pipeline.build_llm routes over several"
        )
    return OpenAILLM(
        urls[0],
        model=model,
        api_key=settings.api_key,
        api_mode=settings.api_mode,
        tools_api=settings.tools_api,
        chat_template=settings.chat_template,
        context_length=settings.context_length,
        timeout_s=settings.timeout,
        connect_timeout_s=settings.connect_timeout,
        deadline_s=settings.deadline,
        stall_timeout_s=settings.stall_timeout,
        retries=settings.retries,
        max_connections=settings.max_llm_inflight,
    )


def embedded(settings: Settings, *, role: Literal["main", "reader"] = "main") -> EmbeddedLLM:
    """The bundled local model. Both roles share one server and model; `role` is
    accepted for the registry's uniform call shape."""
    from search_o1.llm.embedded import CONTEXT, EmbeddedLLM

    return EmbeddedLLM(
        context=min(settings.context_length or CONTEXT, CONTEXT),
        timeout_s=settings.timeout,
        retries=min(settings.retries, 2),
        deadline_s=settings.deadline,
        stall_timeout_s=settings.stall_timeout,
    )
