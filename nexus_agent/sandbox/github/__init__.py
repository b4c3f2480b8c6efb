"""An offline GitHub MCP server: the exact ``github_all`` tool definitions over SQLite + local git.

``sandbox_server_params(data_dir)`` gives the stdio launch parameters for an MCP client, and
``sandbox_mcp_config(data_dir)`` the same as an ``mcpServers`` config; the server
itself is ``python -m nexus_agent.sandbox.github`` (or ``nexus-agent sandbox github``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_agent.paths import nexus_home

if TYPE_CHECKING:
    from mcp import StdioServerParameters

# Environment variables the server needs and the MCP client's default (minimal) environment drops.
_PASS_THROUGH_ENV = ("NEXUS_HOME", "PYTHONPATH")


def default_data_dir() -> Path:
    """``$NEXUS_HOME/sandbox/github``."""
    return nexus_home() / "sandbox" / "github"


def sandbox_server_params(
    data_dir: Path | None = None, *, reset: bool = False, world: Path | None = None
) -> StdioServerParameters:
    """How to start the sandbox over stdio with the current interpreter (no console script needed).

    ``world``: a world file (JSON, ``nexus_agent.sandbox.github.world``) the server seeds an empty ``data_dir``
    from instead of the acme demo data.
    """
    # Imported here: the CLI imports this package for its options, and the MCP SDK takes a second to load.
    from mcp import StdioServerParameters
    from mcp.client.stdio import get_default_environment

    args = ["-m", "nexus_agent.sandbox.github", "--data-dir", str(data_dir or default_data_dir())]
    if reset:
        args.append("--reset")
    if world is not None:
        args += ["--world", str(world.resolve())]
    env = get_default_environment()
    env.update({k: os.environ[k] for k in _PASS_THROUGH_ENV if k in os.environ})
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def sandbox_mcp_config(data_dir: Path, *, world: Path | None = None) -> dict[str, Any]:
    """An ``mcpServers`` config (Claude Desktop / Cursor format) that starts the sandbox over stdio as ``github``,
    with its data in ``data_dir`` (seeded from ``world`` if given): for ``--config`` / ``AgentConfig.config_file``
    with a private sandbox."""
    params = sandbox_server_params(data_dir, world=world)
    return {"mcpServers": {"github": {"command": params.command, "args": list(params.args)}}}
