"""Process entry point shared by ``python -m nexus_agent.sandbox.github`` and ``nexus-agent sandbox github``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio

from nexus_agent.sandbox.github.server import GitHubSandboxServer, open_sandbox


def serve(data_dir: Path, *, reset: bool, http: bool, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Open (seeding if needed) the sandbox in ``data_dir`` and serve it until the client disconnects.

    stdio by default; with ``http`` streamable HTTP at ``http://host:port/mcp``. Logs go to stderr
    because stdout is the stdio transport.
    """
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sandbox = open_sandbox(data_dir, reset=reset)
    server = GitHubSandboxServer(sandbox)
    try:
        if http:
            print(f"nexus github sandbox: http://{host}:{port}/mcp (data: {data_dir})", file=sys.stderr, flush=True)
            anyio.run(server.run_http, host, port)
        else:
            anyio.run(server.run_stdio)
    finally:
        sandbox.close()
