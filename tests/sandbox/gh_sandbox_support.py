"""Helpers for the GitHub sandbox tests: start the real server process and talk to it with the mcp client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from mcp import Client, types

from nexus_agent.sandbox.github import sandbox_server_params
from nexus_agent.sandbox.github.context import DB_NAME
from nexus_agent.sandbox.github.store import Store

# The two protocol eras the sandbox serves, as the SDK client's ``mode`` and the revision it then negotiates:
# "auto" probes server/discover and gets 2026-07-28; "legacy" is a 2025-era client's initialize handshake.
ERAS = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@asynccontextmanager
async def stdio_session(data_dir: Path, mode: str = "auto") -> AsyncIterator[Client]:
    """A connected MCP client of ``python -m nexus_agent.sandbox.github`` over stdio, in the era ``mode`` picks."""
    async with Client(sandbox_server_params(data_dir), mode=mode) as client:
        assert client.protocol_version == ERAS[mode]
        yield client


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent), first
    return first.text


async def call_ok(session: Client, name: str, /, **arguments: Any) -> Any:
    """Call a tool that must succeed; JSON results are decoded, text (e.g. diffs) returned as is."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, f"{name} failed: {text_of(result)}"
    text = text_of(result)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def call_err(session: Client, name: str, /, **arguments: Any) -> str:
    """Call a tool that must fail; return its error text."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, f"{name} unexpectedly succeeded: {text_of(result)[:300]}"
    return text_of(result)


def git(data_dir: Path, repo: str, *args: str) -> str:
    """Run git directly against a sandbox repository (bypassing the server) and return stdout."""
    owner, name = repo.split("/")
    git_dir = data_dir / "repos" / owner / f"{name}.git"
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True).stdout


WORLDS = Path(__file__).resolve().parent / "worlds"
# The world with something of every area: the area tests run on copies of it (conftest.py: ``harbor``).
HARBOR = WORLDS / "harbor.json"


@asynccontextmanager
async def world_session(data_dir: Path, world: Path = HARBOR) -> AsyncIterator[Client]:
    """A connected MCP client of the sandbox process serving ``data_dir``, seeded from ``world`` if empty."""
    async with Client(sandbox_server_params(data_dir, world=world)) as client:
        yield client


@contextmanager
def store_of(data_dir: Path) -> Iterator[Store]:
    """The sandbox database of ``data_dir``, opened beside the server process, for assertions on the state."""
    store = Store(data_dir / DB_NAME)
    try:
        yield store
    finally:
        store.close()
