"""``--mcp github``: which way of running GitHub's server is chosen on a staged machine, and why."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from mcp_test_support import STARTUP_TIMEOUT

from nexus_agent.mcp import (
    PRESETS,
    ConfigError,
    MCPServerSource,
    MultiServerClient,
    PresetContext,
    SourceOptions,
    StdioServerConfig,
    resolve_preset,
)

TOKEN = "ghp_test_token_0123456789"


def machine(
    tmp_path: Path,
    *,
    env: dict[str, str] | None = None,
    on_path: Sequence[str] = (),
    commands: dict[str, str | None] | None = None,
    online: bool = True,
) -> tuple[PresetContext, list[list[str]]]:
    """A staged machine: ``on_path`` programs exist; ``commands`` maps a command line to its stdout (None =
    fails). Returns the context and the list of commands the preset ran."""
    ran: list[list[str]] = []

    def run(cmd: Sequence[str], timeout: float) -> str | None:
        ran.append(list(cmd))
        return (commands or {}).get(" ".join(cmd))

    ctx = PresetContext(
        env=env or {},
        which=lambda name: f"/usr/bin/{name}" if name in on_path else None,
        run=run,
        resolves=lambda host: online,
        sandbox_dir=tmp_path / "sandbox",
    )
    return ctx, ran


def test_github_is_registered() -> None:
    assert "github" in PRESETS


def test_native_binary_is_preferred_and_gets_the_token(tmp_path: Path) -> None:
    ctx, _ = machine(
        tmp_path, env={"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}, on_path=["github-mcp-server", "docker", "npx"]
    )
    res = resolve_preset("github", ctx)
    assert (res.choice, res.fallback, res.server_name) == ("github-mcp-server", False, "github")
    assert isinstance(res.server, StdioServerConfig)
    assert (res.server.command, res.server.args) == ("/usr/bin/github-mcp-server", ["stdio"])
    assert res.server.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}
    assert TOKEN not in res.reason and TOKEN not in repr(res)


def test_token_from_gh_cli(tmp_path: Path) -> None:
    ctx, ran = machine(tmp_path, on_path=["gh", "github-mcp-server"], commands={"gh auth token": TOKEN + "\n"})
    res = resolve_preset("github", ctx)
    assert res.choice == "github-mcp-server"
    assert isinstance(res.server, StdioServerConfig)
    assert res.server.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}
    assert "gh auth token" in res.reason
    assert ["gh", "auth", "token"] in ran


def test_docker_only_when_the_engine_answers(tmp_path: Path) -> None:
    env = {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}
    ctx, _ = machine(tmp_path, env=env, on_path=["docker", "npx"], commands={"docker info": "Server: ok"})
    res = resolve_preset("github", ctx)
    assert res.choice == "docker"
    assert isinstance(res.server, StdioServerConfig)
    assert (res.server.command, res.server.args) == (
        "docker",
        ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
    )

    # A docker client with no engine (as on this machine): fall through to npx and say why.
    ctx, ran = machine(tmp_path, env=env, on_path=["docker", "npx"], commands={"docker info": None})
    res = resolve_preset("github", ctx)
    assert res.choice == "npx"
    assert isinstance(res.server, StdioServerConfig)
    assert res.server.args == ["-y", "@modelcontextprotocol/server-github"]
    assert "docker has no reachable engine" in res.reason
    assert ["docker", "info"] in ran


def test_unknown_preset(tmp_path: Path) -> None:
    ctx, _ = machine(tmp_path)
    with pytest.raises(ConfigError, match=r"--mcp: gitlab: unknown preset; known presets: .*github"):
        resolve_preset("gitlab", ctx)


@pytest.mark.parametrize(
    ("env", "on_path", "online", "reason"),
    [
        ({}, ["github-mcp-server", "npx"], True, "no GitHub token found: using the offline sandbox"),
        (
            {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN},
            ["github-mcp-server"],
            False,
            "api.github.com does not resolve (no network?): using the offline sandbox",
        ),
        (
            {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN},
            [],
            True,
            "neither github-mcp-server, a Docker engine nor npx is available: using the offline sandbox",
        ),
    ],
)
def test_falls_back_to_the_offline_sandbox_with_a_reason(
    tmp_path: Path, env: dict[str, str], on_path: list[str], online: bool, reason: str
) -> None:
    ctx, _ = machine(tmp_path, env=env, on_path=on_path, online=online)
    res = resolve_preset("github", ctx)
    assert (res.choice, res.fallback, res.reason) == ("sandbox", True, reason)
    assert isinstance(res.server, StdioServerConfig)
    assert TOKEN not in str(res.server.env)


async def test_sandbox_fallback_starts_and_lists_github_tools(tmp_path: Path) -> None:
    ctx, _ = machine(tmp_path)
    res = resolve_preset("github", ctx)
    assert res.fallback
    options = SourceOptions(startup_timeout=STARTUP_TIMEOUT, log_dir=tmp_path / "logs")
    async with MultiServerClient([MCPServerSource(res.server_name, res.server, options)]) as hub:
        names = {t.qualified_name for t in hub.tools}
    assert {"github__get_me", "github__list_pull_requests", "github__create_pull_request"} <= names
