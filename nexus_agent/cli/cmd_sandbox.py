"""``nexus-agent sandbox``: offline local MCP servers standing in for hosted ones."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    sandbox = typer.Typer(help="Offline local MCP servers that stand in for hosted ones.", no_args_is_help=True)

    @sandbox.command("github")
    def github(
        data_dir: Annotated[
            Path | None, typer.Option("--data-dir", help="Default: $NEXUS_HOME/sandbox/github.")
        ] = None,
        reset: Annotated[bool, typer.Option("--reset", help="Delete the data dir and reseed the demo data.")] = False,
        http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
        port: Annotated[int, typer.Option("--port", help="HTTP port (with --http); host is 127.0.0.1.")] = 8765,
    ) -> None:
        """Serve the GitHub MCP tools (github_all, 86 tools) from a local SQLite + git sandbox."""
        from nexus_agent.sandbox.github import default_data_dir
        from nexus_agent.sandbox.github.app import serve

        serve(data_dir or default_data_dir(), reset=reset, http=http, host="127.0.0.1", port=port)

    app.add_typer(sandbox, name="sandbox")
