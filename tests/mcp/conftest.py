"""Fixtures for the MCP client tests (server locations and helpers are in ``mcp_test_support``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from mcp_test_support import (
    EVERYTHING_JS,
    FILESYSTEM_JS,
    PROBE,
    SERVER_VENV_BIN,
    STARTUP_TIMEOUT,
    HttpEverything,
    HttpProbe,
    HttpServerProcess,
    installed,
    node,
)

from nexus_agent.mcp import SourceOptions, StdioServerConfig

S = TypeVar("S", bound=HttpServerProcess)

# Every MCP client test runs in both protocol eras: "2026" lets the client negotiate (server/discover, then the
# handshake if the server does not know it), "2025" forces the initialize handshake of the 2025 revisions.
ERAS = {"2026": "auto", "2025": "legacy"}


@pytest.fixture(params=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def options(tmp_path: Path, era: str) -> SourceOptions:
    return SourceOptions(startup_timeout=STARTUP_TIMEOUT, log_dir=tmp_path / "logs", protocol=ERAS[era])


@pytest.fixture
def everything_cfg() -> StdioServerConfig:
    return StdioServerConfig(command=node(), args=[str(installed(EVERYTHING_JS, "server-everything")), "stdio"])


@pytest.fixture
def filesystem_cfg(tmp_path: Path) -> StdioServerConfig:
    root = tmp_path / "files"
    root.mkdir()
    return StdioServerConfig(command=node(), args=[str(installed(FILESYSTEM_JS, "server-filesystem")), str(root)])


@pytest.fixture
def time_cfg() -> StdioServerConfig:
    exe = installed(SERVER_VENV_BIN / "mcp-server-time", "mcp-server-time")
    return StdioServerConfig(command=str(exe), args=["--local-timezone", "UTC"])


@pytest.fixture
def git_cfg() -> StdioServerConfig:
    return StdioServerConfig(command=str(installed(SERVER_VENV_BIN / "mcp-server-git", "mcp-server-git")))


@pytest.fixture
def probe_cfg() -> StdioServerConfig:
    return StdioServerConfig(command=sys.executable, args=[str(PROBE)])


@pytest.fixture
def http_everything(tmp_path: Path) -> Iterator[HttpEverything]:
    yield from _serving(HttpEverything(tmp_path / "everything-http.log"))


@pytest.fixture
def http_probe(tmp_path: Path) -> Iterator[HttpProbe]:
    yield from _serving(HttpProbe(tmp_path / "probe-http.log"))


def _serving(server: S) -> Iterator[S]:
    server.start()
    try:
        yield server
    finally:
        server.stop()
