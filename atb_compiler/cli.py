"""``atb-compile PATH...``: compile tool schemas into KV blocks (.atb) for the routing decision's candidate lines.

PATH is an MCP tool JSON file, a folder of them, or a registry folder (``<server>/<tool>.json``). Blocks go to
``$NEXUS_HOME/atb/<model fingerprint>/`` (``-o DIR``: ``DIR/<model fingerprint>/``); unchanged renderings are
skipped. Exit status: 0 when everything compiled, 1 when some schema or block failed, 2 on bad usage.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from nexus_agent import defaults

_err = Console(stderr=True, soft_wrap=True)  # paths stay whole on narrow terminals
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def compile_cmd(
    paths: list[Path] = typer.Argument(..., help="tool JSON files, folders of them, or registry folders"),  # noqa: B008
    model: str = typer.Option(defaults.CHAT_MODEL, "--model", help="short name or GGUF path"),
    out: Path | None = typer.Option(None, "-o", "--out", help="block folder (default $NEXUS_HOME/atb)"),  # noqa: B008
    verify: bool = typer.Option(False, "--verify", help="re-read every block and check it against the model"),
    force: bool = typer.Option(False, "--force", help="recompile blocks that are already on disk"),
    threads: int = typer.Option(2, "--threads", help="CPU threads"),
) -> None:
    """Compile every candidate line the routing decision can show for these tools."""
    from atb_compiler.compile import compile_tools, gather_tools
    from nexus_agent.backend.session import PrefixCachedLLM
    from nexus_agent.engine import MAIN, Engine, EngineConfig
    from nexus_agent.engine.splice import splice_unsupported
    from nexus_agent.models import ModelError

    tools, errors = gather_tools(paths)
    for line in errors:
        _err.print(f"[red]error:[/red] {line}")
    if not tools:
        _err.print("[red]error:[/red] no tool to compile")
        raise typer.Exit(2)
    try:
        llm = PrefixCachedLLM(Engine(EngineConfig(model=model, n_ctx=4096, n_threads=threads)), MAIN)
    except (ModelError, FileNotFoundError, RuntimeError) as e:
        _err.print(f"[red]error:[/red] model {model}: {e}")
        raise typer.Exit(2) from e
    why = splice_unsupported(llm.engine)
    if why:
        _err.print(f"[red]error:[/red] {model}: {why}")
        raise typer.Exit(2)
    with Progress(
        TextColumn("compiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=_err, transient=True
    ) as bar:
        task = bar.add_task("blocks", total=None)
        rep = compile_tools(
            llm, tools, out, force=force, verify=verify, progress=lambda i, n: bar.update(task, completed=i, total=n)
        )
    for line in rep.errors:
        _err.print(f"[red]error:[/red] {line}")
    root = (out or Path("$NEXUS_HOME/atb")) / llm.engine.fingerprint().digest()
    print(
        f"atb-compile: {len(tools)} tools, {rep.compiled} blocks compiled, {rep.skipped} unchanged"
        + (f", {rep.verified} verified" if verify else "")
        + f", {rep.bytes / 2**20:.1f} MiB on disk, {rep.seconds:.1f} s -> {root}"
    )
    llm.engine.close()
    raise typer.Exit(1 if errors or rep.errors else 0)


def main() -> None:
    sys.exit(app())
