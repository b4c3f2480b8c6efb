"""``nexus-agent run``: the agent, as a REPL, a one-shot run (``-p``), or JSON lines (``--json``)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console

from nexus_agent.routing.embedders.base import DEFAULT_EMBEDDER

_err = Console(stderr=True)


def _confirm_on_terminal(name: str, args: dict[str, Any], ann: Mapping[str, Any] | None) -> bool:
    """Ask on the terminal; without one (pipes, CI) the answer is no, so nothing is modified silently."""
    if not sys.stdin.isatty():
        return False
    kind = "destructive" if (ann or {}).get("destructiveHint") else "may modify data"
    _err.print(f"[yellow]?[/yellow] run [bold]{name}[/bold] ({kind}) with {json.dumps(args, ensure_ascii=False)}")
    try:
        answer = input("  allow? [y/N] ").strip().lower()
    except EOFError:
        return False
    return answer in ("y", "yes")


class _Printer:
    """Readable output for people: route, tool call, result surrogate, streamed answer."""

    def __init__(self, console: Console) -> None:
        self.c = console
        self.streaming = False

    def __call__(self, ev: Any) -> None:
        t = ev.type
        if t != "token" and self.streaming:
            self.c.print()
            self.streaming = False
        if t == "route":
            if ev.tool is None:
                self.c.print(f"[dim]route: no tool ({ev.decision}, {ev.latency_ms:.0f} ms)[/dim]")
            else:
                self.c.print(f"[dim]route: {ev.tool} ({ev.decision}, {ev.latency_ms:.0f} ms)[/dim]")
        elif t == "tool_call":
            args = json.dumps(ev.arguments, ensure_ascii=False)
            mark = "" if ev.confirmed else " [red](not confirmed)[/red]"
            self.c.print(f"[cyan]→ {ev.name}[/cyan] {args}{mark}")
        elif t == "tool_result":
            colour = "red" if ev.is_error else "green"
            self.c.print(f"[{colour}]← {ev.name}[/{colour}] [dim]{ev.text[:300]}[/dim]")
        elif t == "token":
            self.c.print(ev.text, end="", markup=False, highlight=False)
            self.streaming = True
        elif t == "error":
            self.c.print(f"[red]error ({ev.stage}):[/red] {ev.message}")


async def _main(cfg: Any, prompt: str | None, as_json: bool) -> int:
    from nexus_agent.agent.api import NexusAgent

    out = Console()
    status_ctx = _err.status("starting: MCP servers, model, tool index …") if not as_json else None

    def notice(msg: str) -> None:
        _err.print(f"[yellow]note:[/yellow] {msg}")

    agent = NexusAgent(cfg, confirm=_confirm_on_terminal, on_notice=notice)
    if status_ctx:
        status_ctx.start()
    try:
        await agent.start()
    finally:
        if status_ctx:
            status_ctx.stop()
    failed = False
    try:
        printer = _Printer(out)
        queries = [prompt] if prompt is not None else None
        while True:
            if queries is not None:
                if not queries:
                    break
                q = queries.pop()
            else:
                try:
                    q = (await asyncio.to_thread(input, "you> ")).strip()
                except (EOFError, KeyboardInterrupt):
                    break
                if not q:
                    continue
                if q in ("/exit", "/quit"):
                    break
            spinner = _err.status("thinking …") if not as_json else None
            if spinner:
                spinner.start()
            async for ev in agent.run(q):
                if spinner:
                    spinner.stop()
                    spinner = None
                if as_json:
                    print(ev.model_dump_json(), flush=True)
                else:
                    printer(ev)
                failed = failed or ev.type == "error"
            if spinner:
                spinner.stop()
            if not as_json:
                out.print()
    finally:
        await agent.aclose()
    return 1 if failed and prompt is not None else 0


def run(
    mcp: list[str] = typer.Option([], "--mcp", help="server preset, e.g. github (repeatable)"),  # noqa: B008
    config: Path | None = typer.Option(None, "--config", help="mcpServers JSON file (Claude Desktop / Cursor)"),  # noqa: B008
    prompt: str | None = typer.Option(None, "-p", "--prompt", help="one-shot request; omit for a REPL"),
    as_json: bool = typer.Option(False, "--json", help="print typed events as JSON lines"),
    yes: bool = typer.Option(False, "--yes", "-y", help="run tools that may modify data without asking"),
    model: str | None = typer.Option(None, "--model", help="short name or GGUF path"),
    embedder: str = typer.Option(DEFAULT_EMBEDDER, "--embedder", help="minilm-tools, minilm, nomic or st"),
    n_ctx: int = typer.Option(8192, "--n-ctx", help="context size in tokens"),
) -> None:
    """Run the agent against MCP servers."""
    from nexus_agent.agent.api import DEFAULT_MODEL, AgentConfig
    from nexus_agent.mcp import ConfigError, MCPClientError
    from nexus_agent.models import ModelError

    if not mcp and config is None:
        _err.print("[red]error:[/red] give --mcp PRESET (e.g. --mcp github) and/or --config FILE")
        raise typer.Exit(2)
    try:
        cfg = AgentConfig(model=model or DEFAULT_MODEL, mcp=mcp, config_file=config, yes=yes, embedder=embedder,
                          n_ctx=n_ctx)
    except ValidationError as e:
        _err.print(f"[red]error:[/red] bad option: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}")
        raise typer.Exit(2) from e
    try:
        code = asyncio.run(_main(cfg, prompt, as_json))
    except (ConfigError, ModelError) as e:
        _err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    except MCPClientError as e:
        _err.print(f"[red]error:[/red] MCP: {e}")
        raise typer.Exit(1) from e
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
