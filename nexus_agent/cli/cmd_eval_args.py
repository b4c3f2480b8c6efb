"""``nexus-agent eval-args``: routing + argument generation on an eval set (no tool execution)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from nexus_agent import defaults
from nexus_agent.cli.cmd_route import (
    EXAMPLES_DEFAULT,
    RELEVANCE_DEFAULT,
    SPLICE_DEFAULT,
    EngineOpt,
    ExamplesOpt,
    RelevanceOpt,
    SpliceOpt,
    remote_backend,
    remote_errors,
)

_err = Console(stderr=True)


def eval_args(
    eval_file: Path = typer.Option(..., "--eval", help="eval JSONL (data/eval format)"),  # noqa: B008
    registry: Path = typer.Option(..., "--registry", help="registry folder or folder of MCP Tool JSON"),  # noqa: B008
    profile: str | None = typer.Option(None, "--profile", help="profile name in profiles.json"),
    json_out: Path | None = typer.Option(None, "--json", help="write the report here"),  # noqa: B008
    model: str | None = typer.Option(
        None, "--model", help="short name or GGUF path; with --engine, the served model's name (default: its first)"
    ),
    embedder: str = typer.Option(defaults.EMBEDDER, "--embedder", help="minilm-tools, minilm, nomic, gemma or st"),
    limit: int | None = typer.Option(None, "--limit", help="first N items only"),
    split: str | None = typer.Option(None, "--split", help="only the items of this split (dialogues: tune, check)"),
    own_profile: bool = typer.Option(
        False, "--own-profile", help="only the items whose own `profile` is --profile (sets that span profiles)"
    ),
    n_ctx: int = typer.Option(8192, "--n-ctx"),
    splice: SpliceOpt = SPLICE_DEFAULT,
    relevance: RelevanceOpt = RELEVANCE_DEFAULT,
    engine: EngineOpt = None,
    examples: ExamplesOpt = EXAMPLES_DEFAULT,
) -> None:
    """Route and write arguments for every item; check them BFCL-style."""
    from nexus_agent.agent.routing_adapter import AgentRouter
    from nexus_agent.backend import Backend, LocalBackend
    from nexus_agent.engine import Engine, EngineConfig
    from nexus_agent.evaluation.args import load_items, run_eval, to_json
    from nexus_agent.evaluation.files import write_json
    from nexus_agent.examples import gather
    from nexus_agent.examples.uses import example_uses
    from nexus_agent.registry import RegistryError, load_registry
    from nexus_agent.routing.options import RouterOptions

    try:
        items = load_items(eval_file)
        reg = load_registry(registry)
        tools = reg.profile(profile)
    except (OSError, ValueError, RegistryError) as e:
        _err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    if split is not None:
        items = [it for it in items if it.get("split") == split]
        if not items:
            _err.print(f"[red]error:[/red] {eval_file}: no item has split {split!r}")
            raise typer.Exit(2)
    if own_profile:
        items = [it for it in items if it.get("profile") == profile]
        if not items:
            _err.print(f"[red]error:[/red] {eval_file}: no item has profile {profile!r}")
            raise typer.Exit(2)
    if limit:
        items = items[:limit]
    remote = remote_backend(engine, model)
    local: Engine | None = None
    backend: Backend
    if remote is None:
        local = Engine(EngineConfig(model=model or defaults.CHAT_MODEL, n_ctx=n_ctx))
        backend = LocalBackend(local)
    else:
        backend = remote
    try:
        options = RouterOptions(embedder=embedder, reranker=defaults.RERANKER, splice=splice, relevance=relevance)
        uses = example_uses(examples)
        bank = gather(tools, {}, lambda line: _err.print(f"note: {line}")) if uses.any else None
        router = AgentRouter.create(tools, options, backend, bank, uses)
        with remote_errors():
            summary, results = run_eval(items, tools, router, backend, uses=uses)
            summary["model"] = (remote.capabilities().model if remote else None) or model or defaults.CHAT_MODEL
    finally:
        if local is not None:
            local.close()
        if remote is not None:
            remote.close()
    summary["splice"] = splice.value if remote is None else "off"
    summary["relevance"] = relevance.value
    summary["engine"] = engine or "in-process"
    summary["examples"] = examples
    lo, hi = summary["end_to_end_accuracy_ci95"]
    print(
        f"eval-args n={summary['n']} routing={summary['routing_accuracy']:.3f} "
        f"args|routed={summary['arg_accuracy_on_routed']:.3f} e2e={summary['end_to_end_accuracy']:.3f} "
        f"[{lo:.3f}, {hi:.3f}] json_valid={summary['json_valid_rate']:.3f} "
        f"p50={summary['latency_ms_p50']:.0f} ms"
    )
    if json_out:
        # indent 1, no final newline: the format of the reports already in bench/results/
        write_json(json_out, to_json(summary, results), indent=1, ensure_ascii=False, end="")


def register(app: typer.Typer) -> None:
    app.command("eval-args")(eval_args)
