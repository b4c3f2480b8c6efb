"""``nexus-agent auth login|list|logout``: OAuth logins to remote (HTTP) MCP servers, stored in ``$NEXUS_HOME/auth``."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

_err = Console(stderr=True)


def login(
    name: str = typer.Argument(..., help="the server's name in the mcpServers file"),
    config: Path = typer.Option(..., "--config", help="mcpServers JSON file that names the server"),  # noqa: B008
    headless: bool = typer.Option(
        False,
        "--headless",
        help="no browser: follow the authorization URL and take the code from its redirect (only where the "
        "authorization server approves without a person)",
    ),
    no_browser: bool = typer.Option(False, "--no-browser", help="print the URL only; do not open a browser"),
) -> None:
    """Log in to an HTTP MCP server with OAuth: open the browser (or print the URL) and catch the redirect locally."""
    from nexus_agent.mcp import (
        ConfigError,
        HttpServerConfig,
        MCPClientError,
        MCPServerSource,
        SourceOptions,
        load_config,
    )
    from nexus_agent.mcp.auth import AuthOptions, TokenStore

    try:
        cfg = load_config(config)
    except ConfigError as e:
        _err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    server = cfg.servers.get(name)
    if server is None:
        known = ", ".join(cfg.servers) or "none"
        _err.print(f"[red]error:[/red] {config}: no enabled server {name!r} (servers: {known})")
        raise typer.Exit(2)
    if not isinstance(server, HttpServerConfig):
        _err.print(f"[red]error:[/red] {name!r} is a stdio server; OAuth applies to HTTP (url) servers only")
        raise typer.Exit(2)
    if any(k.lower() == "authorization" for k in server.headers):
        _err.print(f"[red]error:[/red] {name!r} has its own Authorization header in {config}; remove it to use OAuth")
        raise typer.Exit(2)

    def show(url: str) -> None:
        _err.print(f"Open this URL to authorize Nexus Agent for [bold]{name}[/bold]:\n{url}", soft_wrap=True)
        _err.print("Waiting for the browser to come back to this machine …")

    TokenStore(name, server.url).clear_tokens()  # a login always asks anew; the client registration is kept
    options = SourceOptions(
        auth=AuthOptions(
            mode="headless" if headless else "interactive",
            config_file=str(config),
            on_url=show,
            open_browser=not (headless or no_browser),
        )
    )

    async def connect() -> tuple[int, bool]:
        source = MCPServerSource(name, server, options)
        async with source:
            return len(source.tools), TokenStore(name, server.url).has_tokens()

    try:
        n_tools, stored = asyncio.run(connect())
    except MCPClientError as e:
        _err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(1) from e
    if stored:
        _err.print(f"[green]Logged in to {name}[/green] ({n_tools} tools); tokens stored for later runs.")
    else:
        _err.print(f"{name} did not ask for authorization ({n_tools} tools); nothing was stored.")


def list_logins() -> None:
    """Show the stored logins (server, URL, scope, expiry): never the tokens."""
    from nexus_agent.mcp.auth import auth_dir, stored_logins

    logins = stored_logins()
    if not logins:
        _err.print(f"No stored logins (in {auth_dir()}).")
        return
    table = Table(title=f"OAuth logins ({auth_dir()})")
    for col in ("server", "url", "scope", "expires", "refresh", "client"):
        table.add_column(col)
    now = time.time()
    for entry in logins:
        if entry.expires_at is None:
            expires = "-"
        elif entry.expires_at <= now:
            expires = "[yellow]expired[/yellow]"
        else:
            expires = f"in {_duration(entry.expires_at - now)}"
        table.add_row(
            entry.server,
            entry.url,
            entry.scope or "-",
            expires,
            "yes" if entry.refreshable else "no",
            entry.client_id or "-",
        )
    Console().print(table)


def logout(name: str = typer.Argument(..., help="the server's name")) -> None:
    """Forget a server's stored tokens and client registration."""
    from nexus_agent.mcp.auth import forget_login

    if forget_login(name):
        _err.print(f"Logged out of {name}.")
    else:
        _err.print(f"No stored login for {name}.")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"


def register(app: typer.Typer) -> None:
    auth = typer.Typer(help="OAuth logins to remote (HTTP) MCP servers.", no_args_is_help=True)
    auth.command("login")(login)
    auth.command("list")(list_logins)
    auth.command("logout")(logout)
    app.add_typer(auth, name="auth")
