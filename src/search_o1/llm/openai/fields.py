"""Which request fields a server takes, learned from the 400s it answers, as pure values.

Servers differ in what they refuse, and say so in the error's text:
- a strict server (a hosted API, a proxy) refuses our non-standard fields (`top_k`,
  `repetition_penalty`, llama.cpp's `grammar`, ...): resend with standard fields only;
- OpenAI's reasoning models (o-series, GPT-5; on Azure too) refuse `max_tokens` ("Use
  'max_completion_tokens' instead") and any `temperature` or `top_p` but the default
  ("Unsupported value: 'temperature' does not support 0.7 with this model"): resend
  with `max_completion_tokens` and without the sampling field named;
- OpenAI gives reasoning summaries (the Responses API's `reasoning.summary`) only to
  verified organisations ("Your organization must be verified to generate reasoning
  summaries"): resend without the `reasoning` field, so the turn goes on unsummarised.
- Ollama answers `think: true` for a model that cannot think with a 400 ("\"llama3\"
  does not support thinking", `server/routes.go`): resend without `think` (Ollama then
  leaves such a model's output as it is).

Each refusal is learned once per client, so a run pays one extra request per field, not
one per call. On api.openai.com `max_completion_tokens` is sent from the start (it
replaced `max_tokens` there for every model). A refused field the method cannot do
without (stop strings) is not dropped: the server's error stands.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from typing import Any

from search_o1.errors import BackendError, ConfigError

log = logging.getLogger(__name__)

__all__ = ["EXTRA_FIELDS", "FieldLearner", "FieldRules", "refused_field"]

# Our non-standard fields (vLLM, SGLang and llama.cpp extensions).
EXTRA_FIELDS = (
    "top_k",
    "repetition_penalty",
    "repeat_penalty",
    "include_stop_str_in_output",
    "continue_final_message",
    "add_generation_prompt",
    "cache_prompt",
    "no_stop_trim",
    "grammar",
    "verbose",
)
# Fields a request is still worth sending without: sampling the server fixes for a model.
_DROPPABLE = frozenset({"temperature", "top_p", "seed"})
_REFUSED = re.compile(r"Unsupported (?:parameter|value): '([A-Za-z_]+)'")
_SUMMARIES = re.compile(r"reasoning summar|reasoning\.summary", re.IGNORECASE)
_NO_THINKING = re.compile(r"does not support thinking")


def refused_field(message: str) -> str | None:
    """The field an OpenAI-style 400 says the model does not support, if it names one.

    >>> refused_field("Unsupported value: 'temperature' does not support 0.7 with this model.")
    'temperature'
    >>> refused_field("context length exceeded") is None
    True
    """
    found = _REFUSED.search(message)
    return found.group(1) if found else None


@dataclass(frozen=True)
class FieldRules:
    """What this client's request bodies leave out or rename, after the server's refusals.

    >>> rules = FieldRules().learn(400, "Unsupported parameter: 'max_tokens' is not "
    ...     "supported with this model. Use 'max_completion_tokens' instead.")
    >>> rules.apply({"max_tokens": 9, "temperature": 0.7}, kind="unknown")
    {'temperature': 0.7, 'max_completion_tokens': 9}
    """

    extras: bool = True  # send our non-standard fields
    completion_tokens: bool = False  # name the limit `max_completion_tokens`
    dropped: frozenset[str] = frozenset()

    def apply(self, body: dict[str, Any], *, kind: str) -> dict[str, Any]:
        """`body` as this server takes it (`kind`: the server, as discovery named it)."""
        out = {k: v for k, v in body.items() if k not in self.dropped}
        if (self.completion_tokens or kind == "openai") and "max_tokens" in out:
            out["max_completion_tokens"] = out.pop("max_tokens")
        return out

    def learn(self, status: int, message: str) -> FieldRules | None:
        """The rules after this refusal; None when it teaches nothing (a real error)."""
        if status not in (400, 422):
            return None
        if _SUMMARIES.search(message) and "reasoning" not in self.dropped:
            return dataclasses.replace(self, dropped=self.dropped | {"reasoning"})
        if _NO_THINKING.search(message) and "think" not in self.dropped:
            return dataclasses.replace(self, dropped=self.dropped | {"think"})
        if self.extras and any(f in message for f in EXTRA_FIELDS):
            return dataclasses.replace(self, extras=False)
        field = refused_field(message)
        if field == "max_tokens" and not self.completion_tokens:
            return dataclasses.replace(self, completion_tokens=True)
        if field in _DROPPABLE and field not in self.dropped:
            return dataclasses.replace(self, dropped=self.dropped | {field})
        return None


class FieldLearner:
    """The field rules one client has learned so far; `learn` takes a server's refusal."""

    def __init__(self) -> None:
        self._rules = FieldRules()

    @property
    def extras(self) -> bool:
        """Whether our non-standard fields are still sent."""
        return self._rules.extras

    def apply(self, body: dict[str, Any], *, kind: str) -> dict[str, Any]:
        return self._rules.apply(body, kind=kind)

    def learn(self, url: str, error: BackendError) -> bool:
        """Whether `error` refused a field we can leave out (then later bodies do).

        A refused `stop` is not: the search markers cannot work without stop strings.
        """
        if refused_field(str(error)) == "stop":
            # Hosted reasoning models refuse stop strings: a query could never end a call.
            raise ConfigError(
                f"{error}; the search markers need stop strings: use --api-mode tools"
            )
        learned = self._rules.learn(error.status or 0, str(error))
        if learned is None:
            return False
        log.warning("%s refused part of a request (%s); sending without it", url, error)
        self._rules = learned
        return True
