"""``mcpServers`` config parsing: valid shapes, and errors that name the file, the key and the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexus_agent.mcp import ConfigError, HttpServerConfig, StdioServerConfig, load_config


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def _error(tmp_path: Path, data: Any) -> ConfigError:
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.file.startswith(str(path))
    return info.value


def test_claude_desktop_style_config_loads_both_shapes(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "x"},
                },
                "remote": {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer t"}},
                "cursor-style": {
                    "type": "stdio",
                    "command": "uvx",
                    "args": ["mcp-server-time"],
                    "autoApprove": ["x"],
                },
                "off": {"command": "x", "disabled": True},
            }
        },
    )
    config = load_config(path)
    assert list(config.servers) == ["github", "remote", "cursor-style"]
    github = config.servers["github"]
    assert isinstance(github, StdioServerConfig)
    assert (github.command, github.args, github.env) == (
        "npx",
        ["-y", "@modelcontextprotocol/server-github"],
        {"GITHUB_PERSONAL_ACCESS_TOKEN": "x"},
    )
    remote = config.servers["remote"]
    assert isinstance(remote, HttpServerConfig)
    assert (remote.url, remote.headers, remote.transport) == (
        "http://127.0.0.1:3001/mcp",
        {"Authorization": "Bearer t"},
        "streamable-http",
    )
    assert config.source == str(path)


def test_wrong_type_names_file_key_and_problem(tmp_path: Path) -> None:
    path = _write(tmp_path, {"mcpServers": {"github": {"command": 3}}})
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: mcpServers.github.command: expected a string, got 3"
    assert (info.value.key, info.value.problem) == ("mcpServers.github.command", "expected a string, got 3")


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        (
            {"mcpServers": {"a": {"command": "x", "args": "-y pkg"}}},
            "mcpServers.a.args",
            'expected a list, got "-y pkg"',
        ),
        (
            {"mcpServers": {"a": {"command": "x", "args": ["ok", 5]}}},
            "mcpServers.a.args.1",
            "expected a string, got 5",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "env": {"PORT": 8080}}}},
            "mcpServers.a.env.PORT",
            "expected a string, got 8080",
        ),
        ({"mcpServers": {"a": {"command": ""}}}, "mcpServers.a.command", "must not be empty"),
        (
            {"mcpServers": {"a": {"url": "ftp://host/mcp"}}},
            "mcpServers.a.url",
            'expected an http:// or https:// URL, got "ftp://host/mcp"',
        ),
        (
            {"mcpServers": {"a": {"url": "http://h/mcp", "headers": ["x"]}}},
            "mcpServers.a.headers",
            'expected an object, got ["x"]',
        ),
        (
            {"mcpServers": {"a": {"args": ["x"]}}},
            "mcpServers.a",
            'unknown server shape: expected "command" (stdio) or "url" (streamable HTTP), got keys: args',
        ),
        (
            {"mcpServers": {"a": {"command": "x", "url": "http://h"}}},
            "mcpServers.a",
            'unknown server shape: has both "command" (stdio) and "url" (HTTP)',
        ),
        (
            {"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}},
            "mcpServers.a.type",
            "the SSE transport is not supported; use streamable HTTP",
        ),
        (
            {"mcpServers": {"a": "npx server"}},
            "mcpServers.a",
            'expected an object with "command" or "url", got "npx server"',
        ),
        ({"mcpServers": []}, "mcpServers", "expected an object of servers by name, got []"),
        (
            {"servers": {}},
            "mcpServers",
            'required key is missing (VS Code\'s "servers" key is not read; rename it to "mcpServers")',
        ),
        (
            {"mcpServers": {"a": {"url": "http://h/mcp", "protocol": "2025-06-18"}}},
            "mcpServers.a.protocol",
            "input should be 'auto', 'legacy' or '2026-07-28', got \"2025-06-18\"",
        ),
        (
            {"mcpServers": {"a": {"command": "x", "disabled": "yes"}}},
            "mcpServers.a.disabled",
            'expected true or false, got "yes"',
        ),
    ],
)
def test_invalid_configs_name_key_and_problem(tmp_path: Path, data: Any, key: str, problem: str) -> None:
    err = _error(tmp_path, data)
    assert (err.key, err.problem) == (key, problem)
    assert str(err) == f"{err.file}: {key}: {problem}"


def test_protocol_pins_the_negotiation(tmp_path: Path) -> None:
    config = load_config(
        _write(
            tmp_path,
            {"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://h/mcp", "protocol": "legacy"}}},
        )
    )
    assert [s.protocol for s in config.servers.values()] == ["auto", "legacy"]


def test_bad_server_name_is_rejected(tmp_path: Path) -> None:
    err = _error(tmp_path, {"mcpServers": {"my__server": {"command": "x"}}})
    assert err.key == "mcpServers.my__server"
    assert "'__'" in err.problem


def test_invalid_json_gives_line_and_column(tmp_path: Path) -> None:
    err = _error(tmp_path, '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n')
    assert err.file == f"{tmp_path / 'config.json'}:3:26"
    assert err.problem.startswith("invalid JSON: ")
    assert str(err).startswith(f"{tmp_path / 'config.json'}:3:26: invalid JSON")


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    err = _error(tmp_path, [1, 2])
    assert err.key == ""
    assert "expected a JSON object" in err.problem and "got [1, 2]" in err.problem


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.json: file not found"):
        load_config(tmp_path / "nope.json")
