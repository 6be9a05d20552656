"""`search-o1 ask` over web search: a local server speaking each provider's documented
format and serving the result pages; then the same run through `--cache replay` with that
server stopped. The facts are only in the pages (the snippets are vague), so a right answer
means the pages were fetched and read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.e2e.web_support import FORMATS, QUESTION, ask_args, check_answer, site_for
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.servers.web import Reply, page_reader, web_server
from tests.two_hop import respond_body as reasoning_model

from search_o1.cli import cli

EXE = Path(sys.executable).with_name("search-o1")


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with openai_server(reasoning_model, return_stop=False, models=["m", "reader"]) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for env in ("SERPER_API_KEY", "BRAVE_API_KEY", "TAVILY_API_KEY", "BING_API_KEY"):
        monkeypatch.setenv(env, "test-key")
    yield


@pytest.mark.parametrize("provider", sorted(FORMATS))
def test_ask_over_provider_then_replay(
    provider: str, model: FakeOpenAIServer, tmp_path: Path
) -> None:
    site = site_for(provider)
    endpoint = site.url(FORMATS[provider][0])
    cache = tmp_path / "cache.sqlite"
    runner = CliRunner()
    out = runner.invoke(cli, ask_args(model, endpoint, provider, cache))
    site.stop()
    assert out.exit_code == 0, out.output
    recorded = json.loads(out.stdout)
    check_answer(recorded, site)
    out = runner.invoke(cli, [*ask_args(model, endpoint, provider, cache), "--cache", "replay"])
    assert out.exit_code == 0, out.output
    replayed = json.loads(out.stdout)
    check_answer(replayed, site)
    assert replayed["searches"] == recorded["searches"]


def test_ask_through_a_page_reader(model: FakeOpenAIServer, tmp_path: Path) -> None:
    """--page-service, --respect-robots and --cache-ttl reach the fetcher and the cache."""
    site = site_for("serper")
    with web_server({"*": page_reader(preamble=False)}) as reader:
        flags = ["--page-service", reader.base, "--respect-robots", "--cache-ttl", "3600"]
        args = [*ask_args(model, site.url("/search"), "serper", tmp_path / "c.sqlite"), *flags]
        out = CliRunner().invoke(cli, args)
        site.stop()
    assert out.exit_code == 0, out.output
    check_answer(json.loads(out.stdout), site)
    read = sorted(r.path for r in reader.requests)
    assert read == ["/" + site.url(p) for p in ("/bridge", "/kelp", "/venn")]
    assert all(r.headers["x-robots-txt"].startswith("search-o1/") for r in reader.requests)
    assert site.hits("/robots.txt") == 0  # the service was asked to obey it instead


def test_ask_as_a_user_subprocess_with_replay_miss(model: FakeOpenAIServer, tmp_path: Path) -> None:
    """The real console script: record, replay offline, and a clear replay miss."""
    site = site_for("serper")
    endpoint = site.url("/search")
    env = {**os.environ, "SERPER_API_KEY": "test-key"}

    def run(*extra: str, question: str = QUESTION) -> subprocess.CompletedProcess[str]:
        args = ask_args(model, endpoint, "serper", tmp_path / "c.sqlite")
        args[1] = question
        return subprocess.run(
            [str(EXE), *args, *extra],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )

    first = run()
    site.stop()
    assert first.returncode == 0, first.stderr
    check_answer(json.loads(first.stdout), site)
    again = run("--cache", "replay")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["searches"] == json.loads(first.stdout)["searches"]
    miss = run("--cache", "replay", "--top-k", "3")  # top-k is part of the search key
    assert miss.returncode == 2 and "Traceback" not in miss.stderr
    assert "no recorded search for 'Glimmer Bridge designer'" in miss.stderr
    stats_cmd = [str(EXE), "cache", "stats", "--json", "--cache-path", str(tmp_path / "c.sqlite")]
    stats = subprocess.run(stats_cmd, capture_output=True, text=True)
    assert json.loads(stats.stdout)["entries"] == {"search": 2, "page": 3}


def test_a_dripping_search_api_fails_the_search_not_the_run(
    model: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Headers at once, then one byte a second: the read timeout never trips. The
    search deadline ends each search; each is recorded as failed, nothing is cached,
    and the chain still ends with an answer (the default deadline, 20 s, is far below
    the two minutes such a server used to hold `ask` for)."""
    path, fmt = FORMATS["serper"]
    drip = Reply(body=fmt([("Glimmer Bridge", "http://x.test/b", "a bridge")]), drip_s=1.0)
    with web_server({path: drip}) as site:
        args = ask_args(model, site.url(path), "serper", tmp_path / "c.sqlite")
        out = CliRunner().invoke(cli, [*args, "--search-deadline", "1.5"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["finish_reason"] == "answered" and result["answer"] == "?"
    records = [step["search"] for step in result["trace"]["steps"] if step["search"]]
    assert [r["outcome"] for r in records] == ["failed", "failed"]
    assert all("no complete answer within 1.5 s" in r["error"] for r in records)
    stats = CliRunner().invoke(cli, ["cache", "stats", "--json", "--cache-path", args[-1]])
    assert json.loads(stats.stdout)["entries"].get("search", 0) == 0
