"""The Responses API as the wire of a tools turn (`--tools-api`), beside _openai_tools' chat.

Which wire a tools turn takes is `chosen`: the Responses API when asked for, or under
`auto` when the server is api.openai.com (the one place where it keeps a reasoning
model's thinking between calls); chat completions otherwise. Only tools-mode turns go
here: Reason-in-Documents and the marker modes stay on their endpoints.

`RESPONSES` holds what differs (path, body, how the reply is read); everything else is
the chat tools turn's (_openai_tools.converse and run_turn): one retry
policy, the deadline, the stall timeout, typed errors, and fields the server refuses
learned from its 400s once per client (a reasoning model's `temperature`/`top_p`; the
`reasoning` field when the organisation may not have reasoning summaries).
"""

from __future__ import annotations

from typing import Any

from search_o1.llm import _responses_wire as rw
from search_o1.llm._openai_tools import TurnWire
from search_o1.llm._openai_wire import ServerKind
from search_o1.llm.tools import ToolRequest


def _body(
    request: ToolRequest, model: str | None, stream: bool, kind: ServerKind, extras: bool
) -> dict[str, Any]:
    # The Responses API has no room for our extensions, and no field depends on the kind.
    return rw.request_body(request, model=model, stream=stream)


RESPONSES = TurnWire("/responses", _body, rw.ResponsesStreamState, rw.parse_response, "input")


def chosen(tools_api: str, kind: str) -> bool:
    """Whether a tools turn goes to the Responses API (`kind`: what discovery found).

    >>> chosen("auto", "openai"), chosen("auto", "vllm"), chosen("responses", "vllm")
    (True, False, True)
    """
    return tools_api == "responses" or (tools_api == "auto" and kind == "openai")
