"""``nexus-agent route`` and ``nexus-agent eval-routing``: the routing pipeline from the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nexus_agent import defaults
from nexus_agent.examples.uses import ARMS as EXAMPLE_ARMS
from nexus_agent.routing.options import Relevance, RouterOptions
from nexus_agent.splice.mode import SpliceMode

if TYPE_CHECKING:
    from nexus_agent.backend import RemoteBackend
    from nexus_agent.registry import Registry, Tool
    from nexus_agent.routing.router import Router

_D = RouterOptions()  # the defaults of every flag below


SPLICE_DEFAULT = _D.splice
RELEVANCE_DEFAULT = _D.relevance


RegistryOpt = Annotated[Path, typer.Option("--registry", help="registry folder (<server>/<tool>.json) or tool folder")]
ProfileOpt = Annotated[str | None, typer.Option("--profile", help="profile name from profiles.json (default: all)")]
EmbedderOpt = Annotated[str, typer.Option("--embedder", help="embedder: minilm-tools, minilm, nomic, gemma, st")]
EmbedderModelOpt = Annotated[str | None, typer.Option("--embedder-model", help="model name or path")]
RerankerOpt = Annotated[str, typer.Option("--reranker", help="llm-choice, llm-pointwise, cross-encoder or none")]
RerankerModelOpt = Annotated[str | None, typer.Option("--reranker-model", help="LLM name/path or cross-encoder path")]
PoolOpt = Annotated[int, typer.Option("--pool", help="candidates handed to the reranker")]
GateOpt = Annotated[bool, typer.Option("--gate/--no-gate", help="--no-gate: retrieval top-1 is always final")]
SynthOpt = Annotated[
    bool | None,
    typer.Option("--synthetic/--no-synthetic", help="index synthetic example queries (default: embedder's choice)"),
]
HybridOpt = Annotated[bool, typer.Option("--hybrid/--no-hybrid", help="fuse BM25 with dense retrieval")]
ThreadsOpt = Annotated[int, typer.Option("--threads", help="CPU threads for the models")]
# --splice and --relevance, shared with ``run`` and ``eval-args``: typer checks the value against the enums, the
# one lists of each (engine.blocks.SpliceMode, routing.options.Relevance)
SpliceOpt = Annotated[
    SpliceMode,
    typer.Option(
        "--splice",
        help=f"compiled tool blocks for the LLM decision: {', '.join(SpliceMode)} (docs/atb-format.md)",
    ),
]
RelevanceOpt = Annotated[
    Relevance,
    typer.Option(
        "--relevance",
        help=f"whether a tool is needed: {', '.join(Relevance)} (llm also asks the decision's LLM)",
    ),
]
EXAMPLES_DEFAULT = defaults.EXAMPLES
ExamplesOpt = Annotated[
    str,
    typer.Option(
        "--examples",
        help=f"where the servers' usage examples are used: {', '.join(EXAMPLE_ARMS)} (docs/examples.md)",
        callback=lambda v: _known_examples(v),
    ),
]


def _known_examples(value: str) -> str:
    if value not in EXAMPLE_ARMS:
        raise typer.BadParameter(f"{value!r}; known: {', '.join(EXAMPLE_ARMS)}")
    return value


EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="URL",
        help="an OpenAI-compatible server's base URL: the LLM decision and the relevance judge ask it (retrieval "
        "stays local); key from NEXUS_API_KEY or OPENAI_API_KEY",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", help="the decision's LLM: short name or GGUF path; with --engine, the served model's name"),
]


def remote_backend(engine: str | None, model: str | None) -> RemoteBackend | None:
    """The server ``--engine`` names (None without it); a bad URL is a usage error naming the flag."""
    if engine is None:
        return None
    from pydantic import ValidationError

    from nexus_agent.backend import RemoteBackend, RemoteConfig

    try:
        return RemoteBackend(RemoteConfig(url=engine, model=model))
    except ValidationError as e:
        raise typer.BadParameter(str(e.errors()[0]["msg"]), param_hint="--engine") from e


def _router(
    registry: Path,
    profile: str | None,
    options: RouterOptions,
    remote: RemoteBackend | None = None,
    examples: str = defaults.EXAMPLES,
) -> tuple[Registry, list[Tool], Router]:
    """(registry, the profile's tools, a router over them, using the shipped examples as ``examples`` says) for both
    commands."""
    from dataclasses import asdict

    from nexus_agent.examples import gather
    from nexus_agent.examples.uses import example_uses
    from nexus_agent.registry import load_registry
    from nexus_agent.routing.options import RouterConfig
    from nexus_agent.routing.router import build_router

    reg = load_registry(registry)
    tools = reg.profile(profile)
    uses = example_uses(examples)
    bank = gather(tools, {}, lambda line: typer.echo(f"note: {line}", err=True)) if uses.any else None
    tuning = RouterConfig().tuned(examples=asdict(uses))
    try:
        return reg, tools, build_router(tools, options, remote, tuning=tuning, examples=bank)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--reranker") from e


@contextmanager
def remote_errors() -> Iterator[None]:
    """A failed request to ``--engine`` ends the command with its message and exit code 1, not a traceback."""
    from nexus_agent.backend import RemoteError

    try:
        yield
    except RemoteError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e


def _options(params: dict[str, object]) -> RouterOptions:
    """The router options among a command's parameters (``locals()``): both commands declare the same option set.
    ``--model`` names the decision's LLM in-process (``--reranker-model`` too); with ``--engine`` the served model."""
    own = {k: (v.value if isinstance(v, Enum) else v) for k, v in params.items() if k in RouterOptions.model_fields}
    if params.get("model") and not params.get("engine"):
        own["reranker_model"] = own.get("reranker_model") or params["model"]
    return RouterOptions.model_validate(own)


def register(app: typer.Typer) -> None:
    @app.command("route")
    def route(
        query: Annotated[str, typer.Argument(help="the user request")],
        registry: RegistryOpt,
        profile: ProfileOpt = None,
        embedder: EmbedderOpt = _D.embedder,
        embedder_model: EmbedderModelOpt = _D.embedder_model,
        reranker: RerankerOpt = _D.reranker,
        reranker_model: RerankerModelOpt = _D.reranker_model,
        pool: PoolOpt = _D.pool,
        gate: GateOpt = _D.gate,
        synthetic: SynthOpt = _D.synthetic,
        hybrid: HybridOpt = _D.hybrid,
        top: Annotated[int, typer.Option("--top", help="candidates to print")] = 10,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
        threads: ThreadsOpt = _D.threads,
        splice: SpliceOpt = SPLICE_DEFAULT,
        relevance: RelevanceOpt = RELEVANCE_DEFAULT,
        engine: EngineOpt = None,
        model: ModelOpt = None,
    ) -> None:
        """Rank the tools for QUERY and show the gate's decision (auto, escalated or no-tool)."""
        _, _, router = _router(registry, profile, _options(locals()), remote_backend(engine, model))
        calib = router.calibrate()
        with remote_errors():
            res = router.route(query)
        if as_json:
            out = res.to_json()
            out["candidates"] = out["candidates"][:top]
            out["tau"] = calib["tau"]
            typer.echo(json.dumps(out, indent=2))
            return
        for i, c in enumerate(res.candidates[:top]):
            mark = "*" if c.key == res.tool else " "
            typer.echo(f"{mark}{i + 1:>2}. {c.key:<55} score={c.score:.4f} dense={c.dense:.4f} bm25={c.lexical:.3f}")
        typer.echo(
            f"decision: {res.decision}  tool: {res.tool or '-'}  margin={res.margin:.4f} "
            f"tau={calib['tau']:.4f}  latency={res.latency_ms:.1f}ms"
            + ("" if res.exemplar_similarity is None else f"  no-tool exemplar={res.exemplar_similarity:.4f}")
            + ("" if res.judge_log_odds is None else f"  judge log-odds={res.judge_log_odds:+.2f}")
        )

    @app.command("eval-routing")
    def eval_routing(
        eval_file: Annotated[Path, typer.Option("--eval", help="JSONL eval file (data/eval format)")],
        registry: RegistryOpt,
        json_out: Annotated[Path, typer.Option("--json", help="write the summary JSON here")],
        profile: ProfileOpt = None,
        n_tools: Annotated[int | None, typer.Option("--n-tools", help="tools per item (distractors sampled)")] = None,
        seed: Annotated[int, typer.Option("--seed")] = 0,
        embedder: EmbedderOpt = _D.embedder,
        embedder_model: EmbedderModelOpt = _D.embedder_model,
        reranker: RerankerOpt = _D.reranker,
        reranker_model: RerankerModelOpt = _D.reranker_model,
        pool: PoolOpt = _D.pool,
        gate: GateOpt = _D.gate,
        synthetic: SynthOpt = _D.synthetic,
        hybrid: HybridOpt = _D.hybrid,
        limit: Annotated[int | None, typer.Option("--limit", help="only the first N lines")] = None,
        threads: ThreadsOpt = _D.threads,
        splice: SpliceOpt = SPLICE_DEFAULT,
        relevance: RelevanceOpt = RELEVANCE_DEFAULT,
        split: Annotated[str | None, typer.Option("--split", help="only this split's lines: tune or check")] = None,
        engine: EngineOpt = None,
        model: ModelOpt = None,
        examples: ExamplesOpt = EXAMPLES_DEFAULT,
    ) -> None:
        """Evaluate routing on an eval set; prints a one-line summary and writes the JSON summary."""
        from nexus_agent.evaluation.files import write_json
        from nexus_agent.evaluation.routing import evaluate, load_eval, summary_line

        reg, tools, router = _router(registry, profile, _options(locals()), remote_backend(engine, model), examples)
        try:
            items = load_eval(eval_file, reg, split)[:limit]
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint="--split") from e
        calib = router.calibrate()
        with remote_errors():
            summary, _ = evaluate(router, items, [t.qualified_name for t in tools], n_tools, seed)
        summary.update(
            {
                "tau": calib["tau"],
                "n_tools": n_tools or len(tools),
                "embedder": embedder,
                "reranker": reranker,
                "profile": profile,
                "seed": seed,
                "splice": splice.value if engine is None else "off",
                "relevance": relevance.value,
                "split": split,
                "engine": engine or "in-process",
                "examples": examples,
            }
        )
        write_json(json_out, summary)
        typer.echo(summary_line(summary))
