"""Process entry point shared by ``python -m nexus_agent.sandbox.github`` and ``nexus-agent sandbox github``.

:func:`command` holds the one option set; the CLI registers it as ``sandbox github`` and ``__main__`` runs it
on its own, so both accept the same flags with the same defaults.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from nexus_agent.sandbox.github import default_data_dir


def serve(
    data_dir: Path,
    *,
    reset: bool,
    http: bool,
    host: str = "127.0.0.1",
    port: int = 8765,
    world: Path | None = None,
) -> None:
    """Open (seeding if needed, from ``world`` when given) the sandbox in ``data_dir`` and serve it until the
    client disconnects.

    stdio by default; with ``http`` streamable HTTP at ``http://host:port/mcp``. Logs go to stderr
    because stdout is the stdio transport.
    """
    # Imported here: the CLI imports this module for its options, and the server loads the MCP SDK.
    import anyio

    from nexus_agent.sandbox.github.server import GitHubSandboxServer, open_sandbox
    from nexus_agent.sandbox.github.world import load_world

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        doc = None if world is None else load_world(world)
    except ValueError as e:  # pydantic's ValidationError and a JSON syntax error are both ValueErrors
        raise typer.BadParameter(f"{world}: {e}", param_hint="--world") from e
    sandbox = open_sandbox(data_dir, reset=reset, world=doc)
    server = GitHubSandboxServer(sandbox)
    try:
        if http:
            # Not library code: this module is the process entry point (`nexus-agent sandbox github`, `python -m`),
            # and where to connect is its output to the user.
            print(f"nexus github sandbox: http://{host}:{port}/mcp (data: {data_dir})", file=sys.stderr, flush=True)
            anyio.run(server.run_http, host, port)
        else:
            anyio.run(server.run_stdio)
    finally:
        sandbox.close()


def command(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Default: $NEXUS_HOME/sandbox/github.")] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Delete the data dir and reseed the demo data.")] = False,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    # Hidden: `nexus-agent sandbox github --help` never listed it; `python -m` always accepted it.
    host: Annotated[str, typer.Option("--host", help="HTTP host (with --http).", hidden=True)] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port (with --http); host is 127.0.0.1.")] = 8765,
    world: Annotated[
        Path | None,
        typer.Option("--world", help="Seed an empty data dir from this world file (JSON) instead of the demo data."),
    ] = None,
) -> None:
    """Serve the GitHub MCP tools (github_all, 86 tools) from a local SQLite + git sandbox."""
    serve(data_dir or default_data_dir(), reset=reset, http=http, host=host, port=port, world=world)


def main(argv: list[str] | None = None) -> None:
    """Run :func:`command` as a program of its own (``python -m nexus_agent.sandbox.github``)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(command)
    app(args=argv, prog_name="python -m nexus_agent.sandbox.github")
