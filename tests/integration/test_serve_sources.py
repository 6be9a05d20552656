"""The answer's sources through `search-o1 serve`, read by the official `openai` client:
`url_citation` annotations on the message (and on the last delta when streaming) and a
top-level `citations` list, for the two-hop question over a local corpus."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from tests.two_hop import ANSWER, QUESTION, two_hop_engine

from search_o1._http import ssl_context
from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread

openai_http = openai.DefaultHttpxClient(verify=ssl_context())


def teardown_module() -> None:
    openai_http.close()


@pytest.fixture
def client() -> Iterator[openai.OpenAI]:
    with serve_in_thread(create_app(two_hop_engine())) as url:
        yield openai.OpenAI(
            base_url=url + "/v1", api_key="unused", max_retries=0, http_client=openai_http
        )


MESSAGES: list[Any] = [{"role": "user", "content": QUESTION}]


def test_message_annotations_and_citations_name_both_hops(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="search-o1", messages=MESSAGES)
    message = reply.choices[0].message
    assert message.content == ANSWER
    assert message.annotations is not None
    cited = [a.url_citation for a in message.annotations if a.type == "url_citation"]
    assert [(c.url, c.title) for c in cited] == [
        ("passage:b1", "Glimmer Bridge"),
        ("passage:p1", "Orla Venn"),
    ]
    assert all((c.start_index, c.end_index) == (0, len(ANSWER)) for c in cited)
    assert (cited[1].model_extra or {})["quote"] == "Orla Venn was born in Tessaly in 1931."
    assert (reply.model_extra or {})["citations"] == ["passage:b1", "passage:p1"]
    done = (reply.model_extra or {})["search_o1"]
    assert [s["id"] for s in done["sources"]] == ["b1", "p1"]


def test_streamed_annotations_come_with_the_answer(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="search-o1", messages=MESSAGES, stream=True)
    content, annotations, citations = "", [], None
    for chunk in stream:
        extra = chunk.model_extra or {}
        citations = extra.get("citations", citations)
        if chunk.choices and chunk.choices[0].delta.content:
            content += chunk.choices[0].delta.content
            annotations += (chunk.choices[0].delta.model_extra or {}).get("annotations") or []
    assert content == ANSWER
    assert [a["url_citation"]["url"] for a in annotations] == ["passage:b1", "passage:p1"]
    assert citations == ["passage:b1", "passage:p1"]


def test_every_chunk_from_the_answer_on_carries_the_citations(client: openai.OpenAI) -> None:
    # Clients of Perplexity-style streams keep the last chunk (with usage, or with the
    # finish reason) and read `citations` off it.
    stream = client.chat.completions.create(
        model="search-o1",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    answer = next(i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content)
    assert chunks[answer + 1].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None and not chunks[-1].choices
    cited = [(c.model_extra or {}).get("citations") for c in chunks]
    assert cited[:answer] == [None] * answer  # none before the answer is known
    assert cited[answer:] == [["passage:b1", "passage:p1"]] * 3
