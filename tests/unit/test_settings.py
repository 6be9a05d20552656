"""Settings: one name per setting in the file, the environment and the flags; --help."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from search_o1.cli import cli
from search_o1.cli.options import GroupedCommand, setting_options
from search_o1.config import ConfigWarning, Settings, load_settings, unknown_env
from search_o1.errors import ConfigError


def test_timeout_in_toml_and_in_the_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "search-o1.toml"
    cfg.write_text("timeout = 5\ncache_ttl = 60\npage_service = 'http://p'\n")
    s = load_settings(config_file=cfg, environ={})
    assert (s.timeout, s.cache_ttl, s.page_service) == (5.0, 60.0, "http://p")
    s = load_settings(environ={"SEARCH_O1_TIMEOUT": "5", "SEARCH_O1_CONNECT_TIMEOUT": "2"})
    assert (s.timeout, s.connect_timeout) == (5.0, 2.0)


def test_precedence_is_file_then_environment_then_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("timeout = 1\nretries = 1\nseed = 1\n")
    env = {"SEARCH_O1_RETRIES": "2", "SEARCH_O1_SEED": "2"}
    s = load_settings({"seed": 3, "model": None}, config_file=cfg, environ=env)
    assert (s.timeout, s.retries, s.seed, s.model) == (1.0, 2, 3, None)
    assert {"timeout", "retries", "seed"} <= s.model_fields_set


def test_environment_values_are_parsed_per_type() -> None:
    env = {
        "SEARCH_O1_BASE_URL": "http://a:1/v1, http://b:1/v1",
        "SEARCH_O1_FETCH": "false",
        "search_o1_search": "bm25,serper",
    }
    s = load_settings(environ=env)
    assert s.base_url == ["http://a:1/v1", "http://b:1/v1"]
    assert s.search == ["bm25", "serper"]
    assert s.fetch is False


def test_settings_built_in_code_read_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_O1_TOP_K", "7")
    assert Settings().top_k == 10
    assert load_settings().top_k == 7


def test_an_unknown_environment_variable_is_reported_once() -> None:
    env = {"SEARCH_O1_TIMEOUT_S": "5", "SEARCH_O1_DATA_DIR": "d", "SEARCH_O1_TOP_K": "3"}
    with pytest.warns(ConfigWarning) as caught:
        s = load_settings(environ=env)
    assert s.top_k == 3 and s.timeout == 600.0
    assert [str(w.message) for w in caught] == [
        "unknown environment variable SEARCH_O1_TIMEOUT_S, ignored (did you mean 'timeout'?)"
    ]
    assert unknown_env({"SEARCH_O1_INDEX_CACHE": "x", "OTHER_TIMEOUT": "1"}) == []


def test_file_errors_are_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("timeout_s = 5\n")
    with pytest.raises(ConfigError, match=r"c.toml: unknown setting 'timeout_s' .*'timeout'"):
        load_settings(config_file=cfg, environ={})
    with pytest.raises(ConfigError, match="is a folder"):
        load_settings(config_file=tmp_path, environ={})
    with pytest.raises(ConfigError, match="setting timeout: Input should be greater than 0"):
        load_settings({"timeout": 0}, environ={})
    with pytest.raises(ConfigError, match="setting top_k"):
        load_settings(environ={"SEARCH_O1_TOP_K": "many"})


def test_every_setting_is_a_flag_with_its_default_in_help() -> None:
    result = CliRunner().invoke(cli, ["ask", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for name in Settings.model_fields:
        assert f"--{name.replace('_', '-')}" in result.output, name
    for title in ("Model:", "Search:", "Limits:", "Sampling:", "Cache:", "Output:"):
        assert re.search(rf"^{title}$", result.output, re.M), title
    assert re.search(r"--timeout FLOAT\s+Read timeout .*\[default: 600.0\]", result.output)
    assert re.search(r"--reader / --no-reader .*\[default: on\]", result.output)


def test_every_option_of_every_command_says_what_it_does() -> None:
    def commands(group: click.Group) -> list[click.Command]:
        found: list[click.Command] = []
        for command in group.commands.values():
            found += commands(command) if isinstance(command, click.Group) else [command]
        return found

    assert isinstance(cli, click.Group)
    silent = [
        f"{command.name} {param.opts[0]}"
        for command in commands(cli)
        for param in command.params
        if isinstance(param, click.Option) and not param.help
    ]
    assert silent == []


def test_flags_reach_settings_and_unknown_env_prints_one_line() -> None:
    seen: list[Settings] = []

    @click.command(cls=GroupedCommand)
    @setting_options
    def probe(config_file: Path | None, **flags: object) -> None:
        from search_o1.cli.options import settings_from_flags

        seen.append(settings_from_flags(config_file, dict(flags)))

    env = {"SEARCH_O1_TIMEOUT_S": "9", "SEARCH_O1_TIMEOUT": "7"}
    args = [
        "--base-url",
        "http://a/v1",
        "--base-url",
        "http://b/v1",
        "--no-fetch",
        "--cache-ttl",
        "5",
    ]
    result = CliRunner().invoke(probe, args, env=env)
    assert result.exit_code == 0, result.output
    s = seen[0]
    assert (s.base_url, s.fetch, s.cache_ttl, s.timeout) == (
        ["http://a/v1", "http://b/v1"],
        False,
        5.0,
        7.0,
    )
    assert result.stderr.count("\n") == 1 and "SEARCH_O1_TIMEOUT_S" in result.stderr


def test_a_bad_setting_exits_2_with_one_line() -> None:
    result = CliRunner().invoke(cli, ["ask", "q", "--top-k", "0"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: setting top_k: Input should be greater than or equal to 1"
    ]


def test_a_model_url_without_a_scheme_is_one_line_with_the_fix() -> None:
    # It failed inside the HTTP client, in that library's words.
    result = CliRunner().invoke(cli, ["ask", "q", "--base-url", "localhost:8000/v1"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: setting base_url: 'localhost:8000/v1' is not an http(s) URL; "
        "did you mean http://localhost:8000/v1?"
    ]
