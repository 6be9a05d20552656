"""`--search mcp`: an MCP tool's results as hits, and which tool and arguments to call."""

from __future__ import annotations

import json

import pytest
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

from search_o1.errors import BackendError, ConfigError
from search_o1.search.mcp_tool import McpSearch, ToolCall, hits_from_result, plan_call


def tool(name: str, props: dict[str, dict[str, str]], required: list[str] | None = None) -> Tool:
    schema = {"type": "object", "properties": props, "required": required or []}
    return Tool(name=name, input_schema=schema)


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def test_structured_results_become_hits_with_urls_text_and_scores() -> None:
    rows = [
        {
            "id": "a",
            "title": "A page",
            "url": "https://a.test/",
            "content": "Alpha text.",
            "score": 2,
        },
        {"name": "B", "link": "https://b.test/", "description": "Beta snippet."},
    ]
    result = CallToolResult(content=[], structured_content={"results": rows})
    a, b = hits_from_result(result, 10)
    assert (a.id, a.title, a.url, a.text, a.score) == (
        "a",
        "A page",
        "https://a.test/",
        "Alpha text.",
        2.0,
    )
    assert a.snippet == "Alpha text." and a.source == "mcp"
    assert (b.id, b.title, b.url, b.snippet) == (
        "https://b.test/",
        "B",
        "https://b.test/",
        "Beta snippet.",
    )


def test_json_text_nested_lists_and_k() -> None:
    body = {
        "web": {"results": [{"title": f"T{i}", "url": f"https://t.test/{i}"} for i in range(5)]}
    }
    hits = hits_from_result(CallToolResult(content=[text(json.dumps(body))]), 3)
    assert [h.title for h in hits] == ["T0", "T1", "T2"]


def test_a_passage_without_url_keeps_its_text_for_the_reader() -> None:
    row = {"id": "p7", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly."}
    [hit] = hits_from_result(CallToolResult(content=[text(json.dumps([row]))]), 5)
    assert hit.url is None and hit.text == row["text"] and hit.snippet == ""


def test_plain_text_blocks_are_one_hit_each_named_by_their_content() -> None:
    blocks = [text("Tosca\nAn opera by Puccini."), text("Lucca\nA city in Tuscany.")]
    first, second = hits_from_result(CallToolResult(content=blocks), 5)
    assert first.title == "Tosca" and first.text == "Tosca\nAn opera by Puccini."
    assert first.id.startswith("text-") and first.id != second.id
    [again] = hits_from_result(CallToolResult(content=blocks[:1]), 5)
    assert again.id == first.id  # the same text, the same id, whatever its position


def test_resource_links_and_embedded_resources() -> None:
    link = ResourceLink(
        type="resource_link", uri="https://x.test/doc", name="Doc", description="About x."
    )
    local = ResourceLink(type="resource_link", uri="file:///notes/y.md", name="y.md")
    embedded = EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri="memo://z", text="Zed heading\nbody", mimeType=None),
    )
    hits = hits_from_result(CallToolResult(content=[link, local, embedded]), 5)
    assert [(h.id, h.title, h.url, h.snippet) for h in hits[:2]] == [
        ("https://x.test/doc", "Doc", "https://x.test/doc", "About x."),
        ("file:///notes/y.md", "y.md", None, ""),
    ]
    assert (hits[2].id, hits[2].title, hits[2].text) == (
        "memo://z",
        "Zed heading",
        "Zed heading\nbody",
    )


def test_a_tool_error_is_a_backend_error() -> None:
    result = CallToolResult(content=[text("quota exceeded")], is_error=True)
    with pytest.raises(BackendError, match="the search tool failed: quota exceeded"):
        hits_from_result(result, 5)


def test_plan_picks_the_tool_and_its_query_and_count_arguments() -> None:
    web = tool("web_search", {"q": {"type": "string"}, "count": {"type": "integer"}})
    assert plan_call([web], None) == ToolCall("web_search", "q", "count")
    other = tool("fetch", {"url": {"type": "string"}})
    search = tool("search", {"topic": {"type": "string"}}, ["topic"])
    assert plan_call([other, search], None) == ToolCall("search", "topic", None)
    assert plan_call([other, search], "fetch") == ToolCall("fetch", "url", None)
    assert ToolCall("s", "q", "k").arguments("tosca", 3) == {"q": "tosca", "k": 3}


def test_plan_refuses_what_it_cannot_choose() -> None:
    a, b = tool("a", {"q": {"type": "string"}}), tool("b", {"q": {"type": "string"}})
    with pytest.raises(ConfigError, match="has 2 tools \\(a, b\\); name the search tool"):
        plan_call([a, b], None)
    with pytest.raises(
        ConfigError, match="--mcp-tool c: the server has no such tool; it has: a, b"
    ):
        plan_call([a, b], "c")
    with pytest.raises(ConfigError, match="takes no text argument"):
        plan_call([tool("n", {"x": {"type": "integer"}})], None)


def test_the_cache_key_names_the_server_and_tool() -> None:
    backend = McpSearch("python srv.py corpus.jsonl", "links")
    assert backend.cache_identity() == {"server": "python srv.py corpus.jsonl", "tool": "links"}
    with pytest.raises(ConfigError, match="needs --mcp-server"):
        McpSearch("  ")


async def test_an_unreachable_server_is_a_backend_error() -> None:
    backend = McpSearch("/nonexistent/mcp-server --flag")
    with pytest.raises(BackendError, match="could not reach the MCP server"):
        await backend.search("x", k=3)
    await backend.aclose()
