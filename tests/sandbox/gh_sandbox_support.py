"""Helpers for the GitHub sandbox tests: start the real server process and talk to it with the mcp client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, types
from mcp.client.stdio import stdio_client

from nexus_agent.sandbox.github import sandbox_server_params


@asynccontextmanager
async def stdio_session(data_dir: Path) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session with ``python -m nexus_agent.sandbox.github`` over stdio."""
    async with stdio_client(sandbox_server_params(data_dir)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent), first
    return first.text


async def call_ok(session: ClientSession, name: str, **arguments: Any) -> Any:
    """Call a tool that must succeed; JSON results are decoded, text (e.g. diffs) returned as is."""
    result = await session.call_tool(name, arguments)
    assert not result.isError, f"{name} failed: {text_of(result)}"
    text = text_of(result)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def call_err(session: ClientSession, name: str, **arguments: Any) -> str:
    """Call a tool that must fail; return its error text."""
    result = await session.call_tool(name, arguments)
    assert result.isError, f"{name} unexpectedly succeeded: {text_of(result)[:300]}"
    return text_of(result)


def git(data_dir: Path, repo: str, *args: str) -> str:
    """Run git directly against a sandbox repository (bypassing the server) and return stdout."""
    owner, name = repo.split("/")
    git_dir = data_dir / "repos" / owner / f"{name}.git"
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True).stdout
