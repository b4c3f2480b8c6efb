"""``nexus-agent run``: the agent, as a REPL, a one-shot run (``-p``), or JSON lines (``--json``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from nexus_agent import defaults
from nexus_agent.agent.view import AnswerView
from nexus_agent.cli.cmd_route import (
    EXAMPLES_DEFAULT,
    RELEVANCE_DEFAULT,
    SPLICE_DEFAULT,
    ExamplesOpt,
    RelevanceOpt,
    SpliceOpt,
)
from nexus_agent.kv.policies import EVICT_CHOICES, POLICIES, check_evict
from nexus_agent.routing.embedders.base import DEFAULT_EMBEDDER


def _evict(value: str) -> str:
    """--kv-policy: a name of the eviction registry (nexus_agent/kv/policies), or none."""
    try:
        return check_evict(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e


EVICT_DEFAULT = defaults.KV_SCORER
EvictOpt = Annotated[
    str,
    typer.Option(
        "--kv-policy",
        "--evict",
        parser=_evict,
        metavar="|".join(EVICT_CHOICES),
        help=f"the KV memory's scorer under --kv-budget (each turn scored once): {', '.join(POLICIES)}",
    ),
]

ENGINE_HELP = (
    "an OpenAI-compatible server's base URL (vLLM, SGLang, llama-server), e.g. http://127.0.0.1:8000/v1: the routing "
    "decision, arguments and answers go there, retrieval stays local; key from NEXUS_API_KEY or OPENAI_API_KEY"
)

_err = Console(stderr=True)


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
        elif t == "tool_skipped":
            self.c.print(f"[dim]· {ev.name} not used: {ev.reason}[/dim]")
        elif t == "token":
            self.c.print(ev.text, end="", markup=False, highlight=False)
            self.streaming = True
        elif t == "error":
            self.c.print(f"[red]error ({ev.stage}):[/red] {ev.message}")


class _LineReader:
    """Reads terminal lines on a daemon thread. A thread blocked in ``input()`` cannot be interrupted, and
    asyncio's default executor joins its threads at exit, so with ``asyncio.to_thread(input)`` Ctrl-C at the
    prompt would hang until Enter. ``None`` means end of input or Ctrl-C.

    An interrupted read leaves its ``input()`` waiting; the next read takes that line instead of starting a
    second ``input()``, which would queue behind the first and never show its prompt."""

    def __init__(self) -> None:
        self._pending: asyncio.Future[str | None] | None = None
        self._reading = False  # a thread is blocked in input(); only touched on the event loop
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401 - line editing and history for input()

    async def read(self, prompt: str) -> str | None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[str | None] = loop.create_future()
        self._pending = fut
        if self._reading:
            print(prompt, end="", flush=True)
        else:
            self._reading = True

            def work() -> None:
                try:
                    line: str | None = input(prompt)
                except (EOFError, OSError):
                    line = None
                loop.call_soon_threadsafe(self._deliver, line)

            threading.Thread(target=work, name="nexus-repl-input", daemon=True).start()
        try:
            return await fut
        finally:
            self._pending = None

    def _deliver(self, line: str | None) -> None:
        self._reading = False
        if self._pending is not None and not self._pending.done():
            self._pending.set_result(line)

    def interrupt(self) -> bool:
        """End a pending read with None; False if no read is pending."""
        if self._pending is None or self._pending.done():
            return False
        self._pending.set_result(None)
        return True


async def _answer_elicitation(ev: Any, reader: _LineReader) -> None:
    """A server's question during a tool call, asked on the terminal: each field checked against the requested schema,
    Enter takes a field's default. Without a terminal (pipes, CI) it is cancelled: ``--yes`` never answers it."""
    from nexus_agent.mcp.elicitation import ElicitationRequest, apply_defaults, check_content, choices, parse_field

    if not sys.stdin.isatty():
        _err.print(f"[yellow]note:[/yellow] {ev.server} asked a question (no terminal to ask it on; cancelled)")
        ev.cancel()
        return
    _err.print(f"[yellow]?[/yellow] [bold]{ev.server}[/bold] asks: {ev.message}")
    if ev.mode == "url":
        _err.print(f"  it wants you to open: {ev.url}")
        answer = await reader.read("  open it? [y/N, c = cancel] ")
        if answer is None or answer.strip().lower() in ("c", "cancel"):
            ev.cancel()
        elif answer.strip().lower() in ("y", "yes"):
            ev.accept()
        else:
            ev.decline()
        return
    request = ElicitationRequest(server=ev.server, message=ev.message, schema=ev.requested_schema)
    answer = await reader.read("  answer? [Y/n, c = cancel] ")
    if answer is None or answer.strip().lower() in ("c", "cancel"):
        ev.cancel()
        return
    if answer.strip().lower() in ("n", "no"):
        ev.decline()
        return
    required = request.required
    for _attempt in range(3):
        content: dict[str, Any] = {}
        for name, prop in request.fields.items():
            label = prop.get("title") or name
            hints = [str(prop["description"])] if prop.get("description") else []
            if opts := choices(prop):
                hints.append(
                    "one of " + ", ".join(opts) + (" (comma-separated)" if prop.get("type") == "array" else "")
                )
            if "default" in prop:
                hints.append(f"Enter for {json.dumps(prop['default'])}")
            elif name not in required:
                hints.append("Enter to skip")
            while True:
                line = await reader.read(f"  {label}{' (' + '; '.join(hints) + ')' if hints else ''}: ")
                if line is None:
                    ev.cancel()
                    return
                if not line.strip():
                    if "default" in prop or name not in required:
                        break
                    _err.print("  [red]required[/red]")
                    continue
                try:
                    content[name] = parse_field(prop, line)
                    break
                except ValueError as e:
                    _err.print(f"  [red]{e}[/red]")
        problems = check_content(request, apply_defaults(request, content))
        if not problems:
            ev.accept(content)
            return
        _err.print("  [red]" + "; ".join(problems) + "[/red]")
    ev.cancel()


async def _main(cfg: Any, prompt: str | None, as_json: bool) -> int:
    from nexus_agent.agent.api import NexusAgent

    out = Console()
    status_ctx = _err.status("starting: MCP servers, model, tool index …") if not as_json else None

    def notice(msg: str) -> None:
        _err.print(f"[yellow]note:[/yellow] {msg}")

    reader = _LineReader()

    async def confirm(name: str, args: dict[str, Any], ann: Mapping[str, Any] | None) -> bool:
        """Ask on the terminal; without one (pipes, CI) the answer is no, so nothing is modified silently. Read
        through the REPL's reader, so Ctrl-C at this question answers no and stops the turn."""
        if not sys.stdin.isatty():
            return False
        kind = "destructive" if (ann or {}).get("destructiveHint") else "may modify data"
        _err.print(f"[yellow]?[/yellow] run [bold]{name}[/bold] ({kind}) with {json.dumps(args, ensure_ascii=False)}")
        answer = await reader.read("  allow? [y/N] ")
        return (answer or "").strip().lower() in ("y", "yes")

    agent = NexusAgent(cfg, confirm=confirm, on_notice=notice)
    if status_ctx:
        status_ctx.start()
    try:
        await agent.start()
    finally:
        if status_ctx:
            status_ctx.stop()
    if prompt is None and not as_json:
        n = len(agent.tools)
        _err.print(f"[dim]{n} tools ready. Ctrl-C stops a turn; Ctrl-D, Ctrl-C at the prompt or /exit quits.[/dim]")

    loop = asyncio.get_running_loop()
    turn: asyncio.Task[None] | None = None

    def on_sigint() -> None:
        # Ctrl-C stops the running turn and returns to the prompt; at the prompt it quits; a second Ctrl-C while a
        # turn is stopping (it stops at its next event) quits at once.
        if turn is not None and not turn.done():
            if turn.cancelling():
                _err.print("[red]aborted[/red]")
                os._exit(130)
            _err.print("\n[yellow]interrupting …[/yellow]")
            reader.interrupt()  # a pending confirmation question is answered no
            turn.cancel()
        elif not reader.interrupt():
            raise KeyboardInterrupt

    with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal handlers off the main thread
        loop.add_signal_handler(signal.SIGINT, on_sigint)

    failed = interrupted = False

    async def one_turn(q: str) -> None:
        nonlocal failed
        printer = _Printer(out)
        spinner = _err.status("thinking …") if not as_json else None
        if spinner:
            spinner.start()
        try:
            async for ev in agent.run(q):
                if spinner:
                    spinner.stop()
                    spinner = None
                if as_json:
                    print(ev.model_dump_json(), flush=True)
                else:
                    printer(ev)
                if ev.type == "elicitation":
                    await _answer_elicitation(ev, reader)
                failed = failed or ev.type == "error"
        finally:
            if spinner:
                spinner.stop()
            if not as_json:
                out.print()

    try:
        queries = [prompt] if prompt is not None else None
        while True:
            if queries is not None:
                if not queries:
                    break
                q = queries.pop()
            else:
                line = await reader.read("you> ")
                if line is None:
                    break
                q = line.strip()
                if not q:
                    continue
                if q in ("/exit", "/quit"):
                    break
            turn = asyncio.create_task(one_turn(q))
            try:
                await turn
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # this coroutine itself is being cancelled, not just the turn
                interrupted = True
                _err.print("[yellow]turn interrupted[/yellow]")
            finally:
                turn = None
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await agent.aclose()
    if prompt is not None and interrupted:
        return 130
    return 1 if failed and prompt is not None else 0


def run(
    mcp: list[str] = typer.Option([], "--mcp", help="server preset, e.g. github (repeatable)"),  # noqa: B008
    config: Path | None = typer.Option(None, "--config", help="mcpServers JSON file (Claude Desktop / Cursor)"),  # noqa: B008
    prompt: str | None = typer.Option(None, "-p", "--prompt", help="one-shot request; omit for a REPL"),
    as_json: bool = typer.Option(False, "--json", help="print typed events as JSON lines"),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="run tools that may modify data without asking (a question to a declared write asks)"
    ),
    model: str | None = typer.Option(
        None, "--model", help="short name or GGUF path; with --engine, the served model's name (default: its first)"
    ),
    engine: str | None = typer.Option(None, "--engine", metavar="URL", help=ENGINE_HELP),
    engine_timeout: float = typer.Option(120.0, "--engine-timeout", help="seconds per request to --engine"),
    embedder: str = typer.Option(DEFAULT_EMBEDDER, "--embedder", help="minilm-tools, minilm, nomic, gemma or st"),
    n_ctx: int = typer.Option(8192, "--n-ctx", help="context size in tokens"),
    splice: SpliceOpt = SPLICE_DEFAULT,
    relevance: RelevanceOpt = RELEVANCE_DEFAULT,
    kv_budget: float | None = typer.Option(
        None,
        "--kv-budget",
        metavar="CELLS|FRACTION",
        help="KV cells the conversation may hold (or a fraction of --n-ctx, e.g. 0.25): it keeps its whole trace, "
        "pins requests, calls and returned identifiers, evicts whole spans and recalls them when asked (default: no "
        "budget; the prompt keeps the last 4 turns)",
    ),
    evict: EvictOpt = EVICT_DEFAULT,
    head_cache: bool = typer.Option(
        True, "--head-cache/--no-head-cache", help="load stable prompt heads from $NEXUS_HOME/heads (or decode them)"
    ),
    answer_view: AnswerView = typer.Option(  # noqa: B008
        AnswerView.COMPACT,
        "--answer-view",
        help="compact: answers read the tool output's identifying and requested fields; full: the whole output",
    ),
    answer_items: int = typer.Option(20, "--answer-items", min=1, help="rows of a listed result the answer reads"),
    max_steps: int = typer.Option(
        defaults.MAX_STEPS,
        "--max-steps",
        min=1,
        max=16,
        help="tool calls one request may make: after each result the agent decides between another call and the "
        "answer (1: one call)",
    ),
    examples: ExamplesOpt = EXAMPLES_DEFAULT,
) -> None:
    """Run the agent against MCP servers."""
    from nexus_agent.agent.api import AgentConfig, KVBudgetError
    from nexus_agent.mcp import ConfigError, MCPClientError
    from nexus_agent.models import ModelError

    if not mcp and config is None:
        _err.print("[red]error:[/red] give --mcp PRESET (e.g. --mcp github) and/or --config FILE")
        raise typer.Exit(2)
    try:
        cfg = AgentConfig(
            model=model,
            engine=engine,
            engine_timeout_s=engine_timeout,
            mcp=mcp,
            config_file=config,
            yes=yes,
            embedder=embedder,
            n_ctx=n_ctx,
            splice=splice,
            relevance=relevance,
            kv_budget=kv_budget,
            evict=evict,
            head_cache=head_cache,
            answer_view=answer_view,
            answer_items=answer_items,
            max_steps=max_steps,
            examples=examples,
            warm_next=prompt is None,  # one request: nothing comes after it to prefill for
        )
    except ValidationError as e:
        err = e.errors()[0]
        where = f"{err['loc'][0]}: " if err["loc"] else ""
        _err.print(f"[red]error:[/red] bad option: {where}{err['msg']}")
        raise typer.Exit(2) from e
    try:
        code = asyncio.run(_main(cfg, prompt, as_json))
    except (ConfigError, ModelError, KVBudgetError) as e:
        _err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    except MCPClientError as e:
        _err.print(f"[red]error:[/red] MCP: {e}")
        raise typer.Exit(1) from e
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
