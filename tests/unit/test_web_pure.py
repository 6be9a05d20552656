"""Pure pieces of the web layer: mappings, fusion, header parsing, the address check."""

from __future__ import annotations

import doctest
import email.utils
import importlib
import time

import httpx
import pytest

from search_o1._http import retry_after_s as parse_retry_after
from search_o1.fetch.guard import BlockedURLError, HostPolicy, is_public_address
from search_o1.fetch.robots import rules_from
from search_o1.page_text import decode, extract_text, plain_html_text
from search_o1.search.duckduckgo import hits_from_rows
from search_o1.search.fusion import reciprocal_rank_fusion
from search_o1.search.http import clean_snippet
from search_o1.types import Hit

MODULES = [
    "search_o1.fetch.guard",
    "search_o1.fetch.robots",
    "search_o1.search.fusion",
    "search_o1.search.retriever",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0


def test_duckduckgo_mapping() -> None:
    rows = [
        {"title": "Tosca", "href": "https://e.org/tosca", "body": "An <b>opera</b> &amp; more"},
        {"title": "no link", "body": "skipped"},
    ]
    assert hits_from_rows(rows) == [
        Hit(
            id="https://e.org/tosca",
            title="Tosca",
            url="https://e.org/tosca",
            snippet="An opera & more",
            source="duckduckgo",
        )
    ]


def test_fusion_prefers_hits_on_several_lists() -> None:
    a = [Hit(id="1", title="a", url="u/a"), Hit(id="2", title="b", url="u/b")]
    b = [Hit(id="x", title="b again", url="u/b"), Hit(id="c1", title="corpus", source="bm25")]
    fused = reciprocal_rank_fusion([a, b], 10)
    assert [h.title for h in fused] == ["b", "a", "corpus"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert len(reciprocal_rank_fusion([a, b], 1)) == 1


def test_retry_after_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after(later) or 0) <= 31


def test_clean_snippet() -> None:
    assert clean_snippet("a <strong>b</strong>\n c &quot;d&quot;") == 'a b c "d"'
    assert clean_snippet(None) == ""


@pytest.mark.parametrize(
    ("ip", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("192.168.1.1", False),
        ("::1", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("fe80::1%eth0", False),
        ("240.0.0.1", False),
    ],
)
def test_public_addresses(ip: str, public: bool) -> None:
    assert is_public_address(ip) is public


@pytest.mark.parametrize(
    ("ip", "public"),
    [
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::169.254.169.254", False),  # NAT64 of the cloud metadata address
        ("64:ff9b::10.1.2.3", False),
        ("64:ff9b::8.8.8.8", True),  # NAT64 of a public address stays public
        ("64:ff9b:1::a00:1", False),  # local-use NAT64 prefix
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("2002:c0a8:101::1", False),  # 6to4 of 192.168.1.1
        ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
        ("::ffff:169.254.169.254", False),
        ("::10.0.0.1", False),  # IPv4-compatible (deprecated) form
    ],
)
def test_embedded_ipv4_forms_are_judged_by_their_ipv4(ip: str, public: bool) -> None:
    assert is_public_address(ip) is public


async def test_guard_refuses_names_and_literals_that_embed_private_ipv4() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return {"nat64.test": ["64:ff9b::a9fe:a9fe"], "sixtofour.test": ["2002:a00:1::1"]}[host]

    policy = HostPolicy(resolver=resolver)
    for host in ("nat64.test", "sixtofour.test"):
        with pytest.raises(BlockedURLError, match="private address"):
            await policy.resolve(host, 80)
    for literal in ("http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]:8080/"):
        with pytest.raises(BlockedURLError, match="private address"):
            policy.check_url(httpx.URL(literal))


def test_policy_trust_entries() -> None:
    p = HostPolicy(allowed=frozenset({"intranet.local", "10.0.0.5:8080"}))
    assert p.trusts("intranet.local", 443) and p.trusts("10.0.0.5", 8080)
    assert not p.trusts("10.0.0.5", 80) and HostPolicy(allow_private=True).trusts("x", 1)


def test_decoding_rules() -> None:
    assert decode("é".encode("utf-8-sig")) == "é"
    assert decode("é".encode("latin-1"), "iso-8859-1") == "é"
    assert decode("é".encode(), "no-such-charset") == "é"
    assert decode(b'<meta charset="koi8-r">' + "мир".encode("koi8-r"), html=True).endswith("мир")


def test_plain_extractor_and_sniffing() -> None:
    html = "<html><script>bad()</script><nav>menu</nav><p>Hello</p><p>world &amp; all</p></html>"
    assert plain_html_text(html) == "Hello\n\nworld & all"
    # Mislabelled as octet-stream but clearly HTML: sniffed.
    assert "Hello" in extract_text(html.encode(), "application/octet-stream", "http://x/")


def test_robots_answers_per_rfc_9309() -> None:
    rules = b"User-agent: search-o1\nDisallow: /wiki/Special:\n\nUser-agent: *\nDisallow: /\n"
    ua = "search-o1/0.1 (research agent)"
    parsed = rules_from(200, rules)
    assert parsed.refusal_for("https://w.test/wiki/Tosca", ua) is None
    assert (
        parsed.refusal_for("https://w.test/wiki/Special:Random", ua) == "disallowed by robots.txt"
    )
    assert parsed.refusal_for("https://w.test/wiki/Tosca", "OtherBot/1.0") is not None
    for status in (401, 403, 404, 410):  # "unavailable": no rules at all
        assert rules_from(status, b"").refusal_for("https://w.test/x", ua) is None
    for status in (429, 500, 502, 503):  # "unreachable": refuse everything
        assert rules_from(status, b"").refusal == f"robots.txt unreachable (HTTP {status})"
    assert rules_from(200, b"\xff\xfe garbage").refusal_for("https://w.test/x", ua) is None
