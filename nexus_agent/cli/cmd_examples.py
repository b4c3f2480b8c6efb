"""``nexus-agent examples``: check an examples file against its server's tools, and compile the fixed argument
examples of every tool ahead of the first request (docs/examples.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    from nexus_agent.registry import Tool

_err = Console(stderr=True)
app = typer.Typer(help="usage examples of the servers' tools (docs/examples.md)", no_args_is_help=True)


@app.command("check")
def check(
    file: Path = typer.Argument(..., help="an examples file (JSON Lines)"),  # noqa: B008
    server: str = typer.Option(..., "--server", help="the server (a name in --config, or a preset) it is for"),
    config: Path | None = typer.Option(None, "--config", help="mcpServers JSON file"),  # noqa: B008
    mcp: list[str] = typer.Option([], "--mcp", help="server preset, e.g. github"),  # noqa: B008
) -> None:
    """Read FILE as the agent does: its first malformed line (file, line, reason; exit 2), else how many examples it
    has and, with --config or --mcp (the server is started to list its tools), which name tools the server does not
    offer (exit 1)."""
    from nexus_agent.examples import ExamplesError, gather, load_examples

    try:
        rows = load_examples(file, server)
    except ExamplesError as e:
        _err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    if config is None and not mcp:
        typer.echo(
            f"{file}: {len(rows)} examples, well formed (give --config or --mcp to check them against the tools)"
        )
        return
    tools = [t for t in asyncio.run(_listed(config, mcp)) if t.server == server]
    if not tools:
        _err.print(f"[red]error:[/red] the server {server!r} offers no tools (is it in --config / --mcp?)")
        raise typer.Exit(2)
    notes: list[str] = []
    got = gather(tools, {server: str(file)}, notes.append, shipped=False)
    typer.echo(f"{file}: {len(rows)} examples, {len(got)} usable on {server!r} ({len(tools)} tools)")
    for line in notes:
        _err.print(f"note: {line}")
    raise typer.Exit(1 if notes else 0)


async def _listed(config: Path | None, presets: list[str]) -> list[Tool]:
    """The tools the servers of ``config`` and ``presets`` offer (started, listed, stopped: no model loads)."""
    from nexus_agent.mcp import MultiServerClient, load_config, resolve_preset
    from nexus_agent.mcp.config import MCPConfig

    servers = dict(load_config(config).servers) if config is not None else {}
    for name in presets:
        res = resolve_preset(name)
        servers[res.server_name] = res.server
    hub = MultiServerClient.from_config(MCPConfig(servers=servers))
    await hub.start()
    try:
        return [t.to_registry_tool() for t in hub.tools]
    finally:
        await hub.aclose()


@app.command("compile")
def compile_(
    config: Path | None = typer.Option(None, "--config", help="mcpServers JSON file"),  # noqa: B008
    mcp: list[str] = typer.Option([], "--mcp", help="server preset, e.g. github"),  # noqa: B008
    model: str | None = typer.Option(None, "--model", help="short name or GGUF path (default: the agent's)"),
) -> None:
    """Decode and store the fixed argument examples of every tool (and operation) of the servers, for the model, so
    that no request decodes them (they load from $NEXUS_HOME/heads)."""
    from nexus_agent.agent.api import AgentConfig, NexusAgent

    if config is None and not mcp:
        _err.print("[red]error:[/red] give --mcp PRESET and/or --config FILE")
        raise typer.Exit(2)

    async def run() -> int:
        agent = NexusAgent(AgentConfig(mcp=mcp, config_file=config, model=model), on_notice=lambda m: _err.print(m))
        await agent.start()
        try:
            return await asyncio.to_thread(agent.compile_examples, lambda key, n: typer.echo(f"{key}: {n} tokens"))
        finally:
            await agent.aclose()

    typer.echo(f"{asyncio.run(run())} example heads ready")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="examples")
