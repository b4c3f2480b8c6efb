"""The sandbox over streamable HTTP (``--http --port``), driven by the official mcp client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gh_sandbox_support import ERAS, call_ok
from mcp import Client

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
