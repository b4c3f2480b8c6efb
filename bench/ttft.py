#!/usr/bin/env python3
"""Local TTFT benchmark: time to the first argument token, three arms, as the tool count N grows.

(a) retrieval-decoupled: route with the SLB over N tools, then write arguments over the compressed signature;
(b) re-prefill the selected tool's full JSON schema each turn (same routing, full schema instead of IR);
(c) concatenate every schema of the N tools into the prompt (a stateless client re-sends them each turn).

Routing is retrieval only by default (``--reranker none``): an escalated decision adds the same LLM time
to every arm, so leaving it out isolates what the arms differ in.
(a) and (b) run after a warm conversation prefix (system + one earlier turn, cached in the main sequence), as
in a live session; (c) is prefilled cold each turn. The selected tool for (a)/(b) is what the router picks, so
(a) includes routing time. Main-context tokens are the prompt tokens each arm puts in the main sequence; "turn
tokens" are those beyond the warm prefix, i.e. what the arm prefills in this turn (system prompt and history are
shared by (a) and (b) and already cached, so this is where the two arms differ). "Tool definition tokens" count
the tool text alone: (a)'s signature of the tool as argument writing sees it (``arg_view``: required parameters plus
the optional ones the conversation bears on, exactly what the agent prefills) against (b)'s full JSON schema.

Splice arms (``--splice``, written apart to ``<json stem>_splice.json/.md``), each against a text prefill of the same
prompt in the same run:
(d) the routing decision's candidate list (the retrieval pool of the N tools, one line each) spliced from compiled
    blocks behind the decision's pinned system head, against prefilling the list: time to the first logits;
(e) every one of the N tools' full JSON schemas spliced into the concat-all prompt of (c), cold, against (c)'s
    prefill, where the context holds them. Blocks are compiled before timing (``--splice on`` compiles on first use).

usage: python bench/ttft.py [--model M] [--sizes 10,50,100,250] [--queries K] [--json OUT] [--splice]
Writes bench/results/ttft.json, bench/results/ttft.md and bench/results/ttft.png.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import SHARED  # noqa: E402

from nexus_agent.agent.api import DEFAULT_MODEL  # noqa: E402
from nexus_agent.agent.args import ARG_SIGNATURE, arg_prompt  # noqa: E402
from nexus_agent.agent.prompts import SYSTEM_MAIN, arg_request  # noqa: E402
from nexus_agent.agent.routing_adapter import AgentRouter  # noqa: E402
from nexus_agent.agent.schema import grammar_for  # noqa: E402
from nexus_agent.backend import LocalBackend  # noqa: E402
from nexus_agent.engine import MAIN, SCRATCH, Engine, EngineConfig  # noqa: E402
from nexus_agent.registry import Tool, load_registry  # noqa: E402
from nexus_agent.routing.embedders.base import DEFAULT_EMBEDDER  # noqa: E402
from nexus_agent.routing.options import RouterOptions  # noqa: E402
from nexus_agent.signature import full_schema_text, signature  # noqa: E402

HISTORY = [
    {"role": "user", "content": "hi, I'm working on the acme-corp/web repo today"},
    {"role": "assistant", "content": "Great, I can look at issues, pull requests and files in acme-corp/web."},
]


def sample_tools(pool: list[Tool], must: Tool, n: int, rng: random.Random) -> list[Tool]:
    others = [t for t in pool if t.qualified_name != must.qualified_name]
    picked = rng.sample(others, min(n - 1, len(others)))
    return [must, *picked]


def ttft(engine: Engine, msgs: list[dict[str, str]], tool: Tool, seq: int) -> tuple[float, int]:
    prompt = engine.tokenize_chat(msgs)
    if len(prompt) + 2 > engine.ctx.n_ctx:
        return float("nan"), len(prompt)
    gen = engine.generate(prompt, seq=seq, grammar=grammar_for(tool), max_tokens=1, keep=False)
    return gen.ttft_ms, len(prompt)


def tool_def_tokens(engine: Engine, view: Tool, tool: Tool) -> tuple[int, int]:
    """Tokens of the tool definition alone: (a) the signature of ``view`` (the tool as argument writing sees it)
    and (b) the full JSON schema of ``tool``."""
    return (
        len(engine.model.tokenize(signature(view, ARG_SIGNATURE), add_special=False)),
        len(engine.model.tokenize(full_schema_text(tool), add_special=False)),
    )


def definition_tokens(engine: Engine, reg: Any, files: list[str]) -> dict[str, Any]:
    """Tool-definition tokens of (a) and (b) for every tool item of ``files``: the gold tool's signature as
    argument writing sees it for that item's conversation, against its full JSON schema. Counting needs no
    timing, so this covers whole eval sets rather than the few timed queries."""
    per: list[tuple[int, int]] = []
    for f in files:
        for line in Path(f).read_text().splitlines():
            it = json.loads(line) if line.strip() else {}
            if not it.get("tool"):
                continue
            tool = reg.find(it["tool"], it.get("server"))
            view, _ = arg_prompt(tool, it["query"], list(it.get("history") or []))
            per.append(tool_def_tokens(engine, view, tool))
    a, b = [x for x, _ in per], [y for _, y in per]
    return {
        "files": [Path(f).name for f in files],
        "n_items": len(per),
        "median_a": statistics.median(a),
        "median_b": statistics.median(b),
        "median_item_saving": statistics.median(1 - x / y for x, y in per),
        "total_saving": 1 - sum(a) / sum(b),
    }


def splice_arms(a: argparse.Namespace, reg: Any, pool: list[Tool], items: list[dict[str, Any]]) -> None:
    """Arms (d) and (e): see the module docstring. Medians over the queries; the default repair schedule."""
    import tempfile

    from nexus_agent.backend.session import PrefixCachedLLM
    from nexus_agent.engine.blocks import SpliceConfig, Splicer
    from nexus_agent.routing.rerank.llm_choice import build_messages, candidate_lines

    engine = Engine(EngineConfig(model=a.model, n_ctx=a.n_ctx))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        splicer = Splicer(engine, SpliceConfig(mode="on", root=Path(tmp)))
        assert splicer.active
        llm = PrefixCachedLLM(engine, SCRATCH, splicer)

        def timed(parts: list[Any], keep: int, on: bool) -> tuple[float, int]:
            engine.truncate(SCRATCH, keep)
            llm.splicer = splicer if on else None
            t0 = time.perf_counter()
            llm.logits_after_parts(parts)
            ms = (time.perf_counter() - t0) * 1000
            decoded = splicer.last.n_decoded if on and splicer.last else sum(len(p.tokens) for p in parts) - keep
            return ms, decoded

        for n in [int(x) for x in a.sizes.split(",")]:
            d_on: list[float] = []
            d_off: list[float] = []
            e_on: list[float] = []
            e_off: list[float] = []
            d_tok: list[int] = []
            e_tok: list[int] = []
            e_fits = True
            for qi, it in enumerate(items):
                must = reg.find(it["tool"], it.get("server"))
                tools = sample_tools(pool, must, n, random.Random(f"{a.seed}-{n}-{qi}"))
                router = AgentRouter.create(tools, RouterOptions(embedder=a.embedder, reranker="none"), None)
                router.router.calibrate()
                cands = [router.router.tools[c.key] for c in router.router.retrieve(it["query"])[:20]]
                parts = llm.render_parts(build_messages(it["query"], cands, []), candidate_lines(cands))
                head = len(parts[0].tokens)  # the decision's header: pinned in a live agent
                splicer.prefill_segments(parts, SCRATCH)  # compile what is missing (on first use)
                for on in (False, True):
                    timed(parts, head, on)  # warm
                    ms, dec = timed(parts, head, on)
                    (d_on if on else d_off).append(ms)
                    if on:
                        d_tok.append(dec)
                if qi >= a.c_queries:
                    continue
                msgs = [
                    {
                        "role": "system",
                        "content": f"{SYSTEM_MAIN}\nTools:\n" + "\n".join(full_schema_text(t) for t in tools),
                    },
                    *HISTORY,
                    {"role": "user", "content": it["query"]},
                ]
                full = llm.render_parts(msgs, [full_schema_text(t) for t in tools])
                if sum(len(p.tokens) for p in full) + 8 > engine.ctx.n_ctx:
                    e_fits = False
                    continue
                splicer.prefill_segments(full, SCRATCH)
                for on in (False, True):
                    ms, dec = timed(full, 0, on)
                    (e_on if on else e_off).append(ms)
                    if on:
                        e_tok.append(dec)
                print(
                    f"N={n} q={qi} d: {d_off[-1]:.0f} -> {d_on[-1]:.0f} ms"
                    + (f"  e: {e_off[-1]:.0f} -> {e_on[-1]:.0f} ms" if e_on else ""),
                    flush=True,
                )
            med = statistics.median
            rows.append(
                {
                    "n_tools": n,
                    "decision_prefill_ms": med(d_off),
                    "decision_splice_ms": med(d_on),
                    "decision_speedup": med(d_off) / med(d_on),
                    "decision_decoded_tokens_splice": med(d_tok),
                    "all_prefill_ms": med(e_off) if e_off else None,
                    "all_splice_ms": med(e_on) if e_on else None,
                    "all_speedup": med(e_off) / med(e_on) if e_on else None,
                    "all_fits": e_fits,
                }
            )
    engine.close()
    out = Path(a.json_out)
    out = out.with_name(out.stem + "_splice.json")
    out.write_text(
        json.dumps({"model": a.model, "n_ctx": a.n_ctx, "policy": splicer.cfg.policy, "rows": rows}, indent=1)
    )
    lines = [
        f"Splice arms, model {a.model}, n_ctx {a.n_ctx}, repair {splicer.cfg.policy} (default schedule); median ms",
        "",
        "| N | (d) decision list prefill | spliced | speedup | (e) all N schemas prefill | spliced | speedup |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        e = (
            f"{r['all_prefill_ms']:.0f} | {r['all_splice_ms']:.0f} | {r['all_speedup']:.2f}×"
            if r["all_splice_ms"]
            else "overflow | - | -"
        )
        lines.append(
            f"| {r['n_tools']} | {r['decision_prefill_ms']:.0f} | {r['decision_splice_ms']:.0f} | "
            f"{r['decision_speedup']:.2f}× | {e} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--sizes", default="10,50,100,250")
    ap.add_argument("--queries", type=int, default=6)
    ap.add_argument("--c-queries", type=int, default=2, help="queries for arm (c), which is slow")
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--registry", default=str(SHARED / "mcp-registry"))
    ap.add_argument("--eval", default=str(SHARED / "eval" / "github_dev.jsonl"))
    ap.add_argument("--profile", default="desktop_all_plus_github")
    ap.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    ap.add_argument(
        "--reranker",
        default="none",
        help="routing's escalation decider; 'none' keeps routing at retrieval cost so the arms differ "
        "only in what they prefill (escalations add the same LLM time to every arm)",
    )
    ap.add_argument(
        "--token-evals",
        default=",".join(str(SHARED / "eval" / f) for f in ("github_dev.jsonl", "mixed_dev.jsonl")),
        help="eval files whose every tool item (gold tool, own history) is counted for tool-definition tokens",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", dest="json_out", default=str(ROOT / "bench" / "results" / "ttft.json"))
    ap.add_argument("--splice", action="store_true", help="run the splice arms (d) and (e) only")
    a = ap.parse_args()

    reg = load_registry(a.registry)
    pool = reg.profile(a.profile)
    items = [json.loads(x) for x in Path(a.eval).read_text().splitlines() if x.strip()]
    items = [it for it in items if it.get("tool") and not it.get("history")]
    rng = random.Random(a.seed)
    rng.shuffle(items)
    items = items[: a.queries]
    if a.splice:
        splice_arms(a, reg, pool, items)
        return
    engine = Engine(EngineConfig(model=a.model, n_ctx=a.n_ctx))
    rows: list[dict[str, Any]] = []
    try:
        prefix = engine.tokenize_chat([{"role": "system", "content": SYSTEM_MAIN}, *HISTORY])[:-3]
        for n in [int(x) for x in a.sizes.split(",")]:
            arm: dict[str, list[float]] = {"a": [], "b": [], "c": [], "route": []}
            toks: dict[str, list[int]] = {
                "a": [],
                "b": [],
                "c": [],
                "turn_a": [],
                "turn_b": [],
                "def_a": [],
                "def_b": [],
            }
            overflow_c = False
            for qi, it in enumerate(items):
                must = reg.find(it["tool"], it.get("server"))
                tools = sample_tools(pool, must, n, random.Random(f"{a.seed}-{n}-{qi}"))
                options = RouterOptions(embedder=a.embedder, reranker=a.reranker)
                router = AgentRouter.create(tools, options, LocalBackend(engine))
                router.router.calibrate()  # once per registry, at start-up: not part of a turn
                engine.prefill(prefix, seq=MAIN, n_logits=1)  # warm conversation prefix
                t0 = time.perf_counter()
                route = router.route_turn(it["query"], [])
                route_ms = (time.perf_counter() - t0) * 1000
                chosen = next((t for t in tools if t.qualified_name == route.tool), must)
                # The agent's own prompt (ArgumentWriter.write): the signature of the tool as argument writing sees
                # it, i.e. required parameters plus the optional ones this conversation bears on.
                view, msgs = arg_prompt(chosen, it["query"], HISTORY)
                ms, nt = ttft(engine, msgs, view, MAIN)
                def_a, def_b = tool_def_tokens(engine, view, chosen)
                toks["def_a"].append(def_a)
                toks["def_b"].append(def_b)
                arm["a"].append(route_ms + ms)
                arm["route"].append(route_ms)
                toks["a"].append(nt)
                toks["turn_a"].append(nt - len(prefix))
                full = [
                    {"role": "system", "content": SYSTEM_MAIN},
                    *HISTORY,
                    {"role": "user", "content": arg_request(it["query"], full_schema_text(chosen))},
                ]
                ms, nt = ttft(engine, full, chosen, MAIN)
                arm["b"].append(route_ms + ms)
                toks["b"].append(nt)
                toks["turn_b"].append(nt - len(prefix))
                if qi < a.c_queries:
                    all_schemas = "\n".join(full_schema_text(t) for t in tools)
                    msgs = [
                        {"role": "system", "content": f"{SYSTEM_MAIN}\nTools:\n{all_schemas}"},
                        *HISTORY,
                        {
                            "role": "user",
                            "content": f"{it['query']}\n\nCall one of the tools: reply with "
                            f"the JSON arguments of {chosen.name} only.",
                        },
                    ]
                    engine.clear()  # cold: the whole prompt is prefilled this turn (no lane may lend a prefix)
                    ms, nt = ttft(engine, msgs, chosen, SCRATCH)
                    toks["c"].append(nt)
                    if ms != ms:  # NaN: does not fit the context
                        overflow_c = True
                    else:
                        arm["c"].append(ms)
                print(
                    f"N={n} q={qi} a={arm['a'][-1]:.0f}ms b={arm['b'][-1]:.0f}ms tokens a={toks['a'][-1]} "
                    f"b={toks['b'][-1]}" + (f" c={toks['c'][-1]}" if qi < a.c_queries else ""),
                    flush=True,
                )
            med = {k: (statistics.median(v) if v else None) for k, v in arm.items()}
            mt = {k: (statistics.median(v) if v else None) for k, v in toks.items()}
            rows.append(
                {
                    "n_tools": n,
                    "ttft_ms_a": med["a"],
                    "ttft_ms_b": med["b"],
                    "ttft_ms_c": None if overflow_c else med["c"],
                    "route_ms": med["route"],
                    "tokens_a": mt["a"],
                    "tokens_b": mt["b"],
                    "tokens_c": mt["c"],
                    "c_overflows": overflow_c,
                    "speedup_a_vs_b": (med["b"] / med["a"]) if med["a"] and med["b"] else None,
                    "token_saving_a_vs_b": (1 - mt["a"] / mt["b"]) if mt["a"] and mt["b"] else None,
                    "turn_tokens_a": mt["turn_a"],
                    "turn_tokens_b": mt["turn_b"],
                    "turn_token_saving_a_vs_b": (
                        (1 - mt["turn_a"] / mt["turn_b"]) if mt["turn_a"] and mt["turn_b"] else None
                    ),
                    # the tool definition alone: signature IR (a) vs full JSON schema (b), same tool
                    "tool_def_tokens_a": mt["def_a"],
                    "tool_def_tokens_b": mt["def_b"],
                    "tool_def_token_saving_a_vs_b": (
                        (1 - mt["def_a"] / mt["def_b"]) if mt["def_a"] and mt["def_b"] else None
                    ),
                    "n_queries": len(items),
                }
            )
        defs = definition_tokens(engine, reg, [f for f in a.token_evals.split(",") if f])
    finally:
        engine.close()
    report = {
        "model": a.model,
        "n_ctx": a.n_ctx,
        "embedder": a.embedder,
        "reranker": a.reranker,
        "rows": rows,
        "tool_def_tokens_eval": defs,
    }
    out = Path(a.json_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    lines = [
        f"TTFT to first argument token, model {a.model}, n_ctx {a.n_ctx} (median over queries)",
        "",
        "| N | (a) IR ms | (b) full schema ms | (c) all schemas ms | a vs b | tokens a | tokens b | tokens c "
        "| token saving a vs b | turn tokens a / b | turn token saving | tool definition tokens a / b | saving |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        c = "overflow" if r["c_overflows"] else (f"{r['ttft_ms_c']:.0f}" if r["ttft_ms_c"] else "-")
        lines.append(
            f"| {r['n_tools']} | {r['ttft_ms_a']:.0f} | {r['ttft_ms_b']:.0f} | {c} | "
            f"{r['speedup_a_vs_b']:.2f}× | {r['tokens_a']:.0f} | {r['tokens_b']:.0f} | "
            f"{r['tokens_c'] if r['tokens_c'] is not None else '-'} | {r['token_saving_a_vs_b']:.0%} | "
            f"{r['turn_tokens_a']:.0f} / {r['turn_tokens_b']:.0f} | {r['turn_token_saving_a_vs_b']:.0%} | "
            f"{r['tool_def_tokens_a']:.0f} / {r['tool_def_tokens_b']:.0f} | "
            f"{r['tool_def_token_saving_a_vs_b']:.0%} |"
        )
    lines += [
        "",
        f"Tool-definition tokens over every tool item of {' + '.join(defs['files'])} ({defs['n_items']} "
        f"items, gold tool, each item's own conversation): median {defs['median_a']:.0f} (a) vs "
        f"{defs['median_b']:.0f} (b); median saving per item {defs['median_item_saving']:.0%}, "
        f"total {defs['total_saving']:.0%}.",
    ]
    md = "\n".join(lines) + "\n"
    out.with_suffix(".md").write_text(md)
    print(md)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ns = [r["n_tools"] for r in rows]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(ns, [r["ttft_ms_a"] for r in rows], "o-", label="(a) retrieval + signature IR")
        ax.plot(ns, [r["ttft_ms_b"] for r in rows], "s-", label="(b) full schema re-prefill")
        cs = [(r["n_tools"], r["ttft_ms_c"]) for r in rows if r["ttft_ms_c"]]
        if cs:
            ax.plot([x for x, _ in cs], [y for _, y in cs], "^-", label="(c) all schemas")
        for r in rows:
            if r["c_overflows"]:
                ax.axvline(r["n_tools"], color="grey", ls=":", lw=0.8)
        ax.set_xlabel("tools in registry (N)")
        ax.set_ylabel("TTFT to first argument token (ms)")
        ax.set_yscale("log")
        ax.set_title(f"{a.model}, n_ctx={a.n_ctx}; dotted: (c) overflows")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out.with_suffix(".png"), dpi=120)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
