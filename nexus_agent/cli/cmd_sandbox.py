"""``nexus-agent sandbox``: offline local MCP servers standing in for hosted ones."""

from __future__ import annotations

import typer

from nexus_agent.sandbox.github.app import command as github_command


def register(app: typer.Typer) -> None:
    sandbox = typer.Typer(help="Offline local MCP servers that stand in for hosted ones.", no_args_is_help=True)
    sandbox.command("github")(github_command)
    app.add_typer(sandbox, name="sandbox")
