"""Text blocks that list search results, as real MCP search servers write them, read
back as one hit per result (`--search mcp`)."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, TextContent

from search_o1.search.mcp_tool import hits_from_result
from search_o1.search.text_listing import hits_from_listing

# The layout of Brave's reference MCP server (brave_web_search): records of labelled
# lines, a blank line between them, all in one text block.
BRAVE = (
    "Title: Tosca - Wikipedia\n"
    "Description: Tosca is an opera in three acts by Giacomo Puccini.\n"
    "URL: https://en.wikipedia.org/wiki/Tosca\n"
    "\n"
    "Title: Puccini\n"
    "Description: Italian composer, born in Lucca.\n"
    "URL: https://en.wikipedia.org/wiki/Giacomo_Puccini"
)
# Tavily's MCP server: an answer, a heading, then Title/URL/Content/Raw Content records,
# then the images.
TAVILY = (
    "Answer: Puccini was born in Lucca.\n"
    "Detailed Results:\n"
    "\n"
    "Title: Giacomo Puccini | Britannica\n"
    "URL: https://www.britannica.com/biography/Giacomo-Puccini\n"
    "Content: Giacomo Puccini, born December 22, 1858, Lucca.\n"
    "Raw Content: Giacomo Puccini (1858-1924) was an Italian composer.\n"
    "Favicon: https://www.britannica.com/favicon.ico\n"
    "\n"
    "Title: Lucca\n"
    "URL: https://en.wikipedia.org/wiki/Lucca\n"
    "Content: Lucca is a city in Tuscany.\n"
    "\n"
    "Images:\n"
    "\n"
    "[1] URL: https://img.test/lucca.jpg\n"
    "   Description: The walls of Lucca"
)
# DuckDuckGo's MCP server: a count, then numbered titles with URL and Summary lines.
DUCKDUCKGO = (
    "Found 2 search results:\n"
    "\n"
    "1. Tosca - Wikipedia\n"
    "   URL: https://en.wikipedia.org/wiki/Tosca\n"
    "   Summary: Tosca is an opera by Puccini.\n"
    "\n"
    "2. Puccini biography\n"
    "   URL: https://puccini.test/bio\n"
    "   Summary: Born in Lucca in 1858;\n"
    "   died in Brussels: 1924.\n"
)
MARKDOWN = (
    "## Results\n"
    "1. [Tosca](https://en.wikipedia.org/wiki/Tosca) - an opera by Puccini\n"
    "- [Lucca](https://en.wikipedia.org/wiki/Lucca)\n"
    "  A city in Tuscany.\n"
)


def shape(text: str) -> list[tuple[str, str | None, str]]:
    return [(h.title, h.url, h.snippet) for h in hits_from_listing(text, "mcp")]


def test_labelled_records_as_brave_writes_them() -> None:
    assert shape(BRAVE) == [
        (
            "Tosca - Wikipedia",
            "https://en.wikipedia.org/wiki/Tosca",
            "Tosca is an opera in three acts by Giacomo Puccini.",
        ),
        (
            "Puccini",
            "https://en.wikipedia.org/wiki/Giacomo_Puccini",
            "Italian composer, born in Lucca.",
        ),
    ]


def test_tavilys_records_with_raw_content_and_images_left_out() -> None:
    hits = hits_from_listing(TAVILY, "mcp")
    assert [(h.title, h.url) for h in hits] == [
        ("Giacomo Puccini | Britannica", "https://www.britannica.com/biography/Giacomo-Puccini"),
        ("Lucca", "https://en.wikipedia.org/wiki/Lucca"),
    ]
    assert hits[0].snippet == "Giacomo Puccini, born December 22, 1858, Lucca."
    assert hits[0].text == "Giacomo Puccini (1858-1924) was an Italian composer."
    assert hits[1].snippet == "Lucca is a city in Tuscany."  # not the image's description


def test_numbered_items_as_duckduckgo_writes_them() -> None:
    assert shape(DUCKDUCKGO) == [
        (
            "Tosca - Wikipedia",
            "https://en.wikipedia.org/wiki/Tosca",
            "Tosca is an opera by Puccini.",
        ),
        (
            "Puccini biography",
            "https://puccini.test/bio",
            "Born in Lucca in 1858; died in Brussels: 1924.",
        ),
    ]


def test_markdown_links() -> None:
    assert shape(MARKDOWN) == [
        ("Tosca", "https://en.wikipedia.org/wiki/Tosca", "an opera by Puccini"),
        ("Lucca", "https://en.wikipedia.org/wiki/Lucca", "A city in Tuscany."),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Tosca is an opera by Puccini.\nIt premiered in Rome in 1900.",
        "Tosca is an opera by Puccini.\nSource: https://en.wikipedia.org/wiki/Tosca",
        "Title: Notes\nNothing here links anywhere.",
    ],
)
def test_text_that_lists_no_web_result_is_no_listing(text: str) -> None:
    assert hits_from_listing(text, "mcp") == []


def test_a_tool_result_with_a_listing_is_one_hit_per_result() -> None:
    result = CallToolResult(content=[TextContent(type="text", text=BRAVE)])
    hits = hits_from_result(result, k=5)
    assert [h.url for h in hits] == [
        "https://en.wikipedia.org/wiki/Tosca",
        "https://en.wikipedia.org/wiki/Giacomo_Puccini",
    ]
    assert all(h.source == "mcp" and h.id == h.url for h in hits)
    assert len(hits_from_result(result, k=1)) == 1
    # Plain text is still one hit per block.
    plain = CallToolResult(content=[TextContent(type="text", text="Tosca is an opera.")])
    assert [h.text for h in hits_from_result(plain, k=5)] == ["Tosca is an opera."]
