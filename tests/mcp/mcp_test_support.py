"""Helpers for the MCP client tests: where the third-party servers live, how to find their processes.

The servers are installed by ``scripts/setup --test``: the npm ones in ``tests/mcp_servers/node_modules``, the
PyPI ones (``mcp-server-time``, ``mcp-server-git``) into the project's own venv, beside the client. A missing
server fails the test with that instruction rather than skipping it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The venv the tests run in: the reference servers' console scripts sit beside its python.
SERVER_VENV_BIN = Path(sys.executable).parent
NODE_MODULES = ROOT / "tests" / "mcp_servers" / "node_modules" / "@modelcontextprotocol"
EVERYTHING_JS = NODE_MODULES / "server-everything" / "dist" / "index.js"
FILESYSTEM_JS = NODE_MODULES / "server-filesystem" / "dist" / "index.js"
PROBE = Path(__file__).resolve().parent / "servers" / "probe_server.py"

# Start-up on a loaded 2-core machine (node + npm packages, a fresh Python venv) can take many seconds.
STARTUP_TIMEOUT = 90.0


def installed(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.fail(f"{what} is not installed ({path} is missing): run `scripts/setup --test`")
    return path


def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is needed for the npm MCP servers (node not on PATH)")
    return node


def child_pids(marker: str) -> list[int]:
    """Pids of live (non-zombie) children of this test process whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid ...
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid() and state != "Z" and marker in cmdline:
            found.append(int(entry.name))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = STARTUP_TIMEOUT) -> None:
    """Block until something accepts connections on 127.0.0.1:port (the server is up), or fail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"HTTP test server exited early with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)  # polling a port, not ordering events
    pytest.fail(f"HTTP test server did not listen on port {port} within {timeout}s")


class HttpServerProcess:
    """A test MCP server over streamable HTTP on a free loopback port, as a child process; restartable on the port."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that start the server on ``self.port``."""
        raise NotImplementedError

    def start(self) -> None:
        argv, env = self.command()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        wait_for_port(self.port, self.proc)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


class HttpEverything(HttpServerProcess):
    """server-everything (npm, 2025-era) in streamableHttp mode."""

    def command(self) -> tuple[list[str], dict[str, str]]:
        argv = [node(), str(installed(EVERYTHING_JS, "server-everything")), "streamableHttp"]
        return argv, dict(os.environ, PORT=str(self.port))


class HttpProbe(HttpServerProcess):
    """The probe server over streamable HTTP (both protocol eras)."""

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, str(PROBE), "--http", str(self.port)], dict(os.environ)


# What a client of each era ends with (conftest.ERAS): the 2026 client negotiates 2026-07-28 with a server that
# offers it; the 2025 handshake negotiates the newest 2025 revision.
NEGOTIATED = {"2026": "2026-07-28", "2025": "2025-11-25"}
