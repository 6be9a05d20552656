"""`OpenAILLM.converse` over OpenAI's Responses API (`--tools-api`), beside _openai_tools.

Which wire a tools turn takes is `chosen`: the Responses API when asked for, or under
`auto` when the server is api.openai.com (the one place where it keeps a reasoning
model's thinking between calls); chat completions otherwise. Only tools-mode turns go
here: Reason-in-Documents and the marker modes stay on their endpoints.

Everything but the body and the reply is the chat tools turn's (`run_turn`): one retry
policy, the deadline, the stall timeout, typed errors, and fields the server refuses
learned from its 400s once per client (a reasoning model's `temperature`/`top_p`; the
`reasoning` field when the organisation may not have reasoning summaries).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from search_o1.chat import ToolReply
from search_o1.llm import _responses_wire as rw
from search_o1.llm._openai_discovery import discover
from search_o1.llm._openai_stream import is_streamed, malformed, read_stream, read_whole
from search_o1.llm._openai_tools import run_turn
from search_o1.llm.tools import ToolRequest
from search_o1.types import TextSink

if TYPE_CHECKING:
    from search_o1.llm.openai import OpenAILLM


def chosen(tools_api: str, kind: str) -> bool:
    """Whether a tools turn goes to the Responses API (`kind`: what discovery found).

    >>> chosen("auto", "openai"), chosen("auto", "vllm"), chosen("responses", "vllm")
    (True, False, True)
    """
    return tools_api == "responses" or (tools_api == "auto" and kind == "openai")


async def converse(
    llm: OpenAILLM,
    request: ToolRequest,
    *,
    on_text: TextSink | None = None,
    on_reasoning: TextSink | None = None,
) -> ToolReply:
    """POST one tools turn to /v1/responses; the turn's output items come back in its echo."""
    info = await discover(llm)
    stream = on_text is not None or on_reasoning is not None

    def body() -> dict[str, Any]:
        sent = rw.request_body(request, model=llm.model, stream=stream)
        return llm._fields.apply(sent, kind=info.kind)

    url = llm.base_url + "/responses"
    return await run_turn(llm, url, body, _post_once, (on_text, on_reasoning), "input")


async def _post_once(
    llm: OpenAILLM, url: str, body: dict[str, Any], on_text: TextSink, on_reasoning: TextSink
) -> ToolReply:
    async with llm._deadline(url), llm._open(url, body) as response:
        if response.status_code != 200:
            await response.aread()
            raise llm._http_error(url, response)
        if is_streamed(body, response):
            state = rw.ResponsesStreamState(on_reasoning)
            await read_stream(url, response, on_text, stall_s=llm.stall_timeout_s, state=state)
            try:
                return state.tool_reply()
            except ValueError as e:
                raise malformed(url, e) from None
        reply = await read_whole(url, response, rw.parse_response)
        if body.get("stream"):  # a server that ignored `stream`: show the turn at once
            for show, piece in ((on_reasoning, reply.reasoning), (on_text, reply.content)):
                if piece:
                    show(piece)
        return reply
