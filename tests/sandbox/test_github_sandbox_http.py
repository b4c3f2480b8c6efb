"""The sandbox over streamable HTTP (``--http --port``), driven by the official mcp client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from gh_sandbox_support import ERAS, call_ok
from mcp import Client, MCPError, types

STARTUP_DEADLINE_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)  # readiness polling, not ordering
    raise AssertionError(f"server did not listen on {port} within {STARTUP_DEADLINE_S}s")


@pytest.mark.parametrize("mode", list(ERAS))
async def test_streamable_http(tmp_path: Path, mode: str) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nexus_agent.sandbox.github",
            "--http",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "gh"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_listening(proc, port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode=mode) as s:
            assert s.protocol_version == ERAS[mode]
            tools = (await s.list_tools()).tools
            assert len(tools) == 86
            me = await call_ok(s, "get_me")
            assert me["login"] == "octo-dev"
            created = await call_ok(
                s, "issue_write", method="create", owner="acme", repo="web", title="Served over HTTP"
            )
            number = int(created["url"].rsplit("/", 1)[1])
            issue = await call_ok(s, "issue_read", method="get", owner="acme", repo="web", issue_number=number)
            assert issue["title"] == "Served over HTTP"
            result = await s.call_tool("get_job_logs", {"owner": "acme", "repo": "web"})
            assert result.is_error
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One sandbox served over HTTP for the header and routing tests below; yields its port."""
    port, data_dir = _free_port(), str(tmp_path_factory.mktemp("gh"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus_agent.sandbox.github", "--http", "--port", str(port), "--data-dir", data_dir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_listening(proc, port)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
_ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 200),
        ({"Origin": "http://localhost:5173"}, 200),
        ({"Host": "localhost"}, 200),
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "evil.example.com", "Origin": "http://evil.example.com"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
    ],
)
def test_dns_rebinding_protection_without_redirect(
    served: int, path: str, headers: dict[str, str], status: int
) -> None:
    # follow_redirects=False: the printed URL must answer itself, not 307 to /mcp/.
    with httpx2.Client(follow_redirects=False, timeout=30) as http:
        response = http.post(f"http://127.0.0.1:{served}{path}", json=_INITIALIZE, headers={**_ACCEPT, **headers})
    assert response.status_code == status, response.text


@pytest.mark.parametrize("mode", list(ERAS))
async def test_unknown_tool_is_a_jsonrpc_error(served: int, mode: str) -> None:
    async with Client(f"http://127.0.0.1:{served}/mcp", mode=mode) as s:
        with pytest.raises(MCPError) as caught:
            await s.call_tool("no_such_tool", {})
    assert caught.value.error.code == types.INVALID_PARAMS
    assert caught.value.error.message == "Unknown tool: no_such_tool"
