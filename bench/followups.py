"""Follow-up routing: which use of the conversation gets a request that leans on it to the right tool.

Runs on the dialogue set (``data/eval/followups.jsonl``, ``nexus_agent/evaluation/dialogues.py``) at profile
``desktop_realistic`` with the shipped embedder, one router per variant (RouterConfig knobs):

- ``today``: no follow-up handling, and the LLM decision shown the last 2 history messages (before this change);
- ``context``: retrieval also over the request with the previous tool turn's request and tool (averaged);
- ``prior``: a prior for the previous tool, its siblings and its server, and they are kept in the pool;
- ``context+prior``: both, the decision's list in retrieval order;
- ``hint``: the decision's prompt also names the call the request follows; ``first``: the previous tool and its
  siblings head the decision's list; ``first+hint``: both; ``first+pool10``: a pool of 10;
- ``default``: ``first+hint``, and a follow-up the decision gives no tool keeps the head of the list;
- ``gated``: the gate, not the follow-up, decides whether the decision is asked;
- ``rewrite+prior``: the local LLM rewrites the follow-up into a standalone request; retrieval reads the rewrite;
- ``inferred``: the default, given only the chat messages (with the agent's call notes, no structured record):
  the router finds the previous tool turn itself; ``prose``: the messages without call notes or results (each
  turn's request and answer only, as a chat app's history), so it takes the tool retrieval picks for the earlier
  request.

Per variant: the gold tool's presence in the pool the decision sees (``pool_recall``), retrieval's top-1, and
with ``--llm`` the full decision (llm-choice on qwen1.5b) and its latency. The ``session`` rows route standalone
requests of the dev sets behind an unrelated dialogue's turns: what follow-up handling costs a request that stands
on its own. Writes ``<out>.json`` and ``<out>.md``.

    python bench/followups.py --split tune --llm today,default --no-tool
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import Any

from common import ROOT, SHARED, flat_config
from followup_rewrite import QueryRewriter

from nexus_agent import defaults
from nexus_agent.backend import LocalBackend
from nexus_agent.evaluation.args import expected_names, replay
from nexus_agent.evaluation.dialogues import PROFILE, load_dialogues
from nexus_agent.evaluation.files import write_json
from nexus_agent.evaluation.routing import load_eval
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker
from nexus_agent.routing.router import Router, RouterOptions, build_router, create_decision

OFF = {"followups": False}
# the decision's list, prompt and outcome as before
_PLAIN = {"followup_related_first": False, "followup_hint": False, "followup_none_fallback": False}
VARIANTS: dict[str, dict[str, Any]] = {
    "today": OFF,
    "context": {
        **_PLAIN,
        "followup_prior_tool": 0.0,
        "followup_prior_sibling": 0.0,
        "followup_prior_server": 0.0,
        "followup_keep": 0,
    },
    "prior": {**_PLAIN, "followup_context_weight": 0.0},
    "context+prior": _PLAIN,
    "hint": {"followup_related_first": False, "followup_none_fallback": False},
    "first": {"followup_hint": False, "followup_none_fallback": False},
    "first+hint": {"followup_none_fallback": False},
    "first+pool10": {"followup_hint": False, "followup_pool": 10, "followup_none_fallback": False},
    "default": {},  # first + hint + fallback
    # the gate decides on the follow-up's own scores (no forced escalation): faster, when retrieval is sure
    "gated": {"followup_escalate": False, "escalate_back_references": False},
    "rewrite+prior": {},  # the default config; its follow-ups are scored with the LLM rewrite (followup_rewrite.py)
    "inferred": {},
    "prose": {},
}


def prose_turn(turn: dict[str, Any]) -> list[dict[str, str]]:
    """A dialogue turn as a chat app would keep it: the request and the answer, no call, no result."""
    return [{"role": "user", "content": turn["user"]}, {"role": "assistant", "content": turn.get("answer") or ""}]


def run_variant(router: Router, name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    hits = top1 = in_pool = 0
    lat: list[float] = []
    per_item = []
    for it in items:
        window, previous = replay(it)
        if name in ("inferred", "prose"):
            previous = None
        if name == "prose":
            window = [m for t in it["turns"] for m in prose_turn(t)]
        t0 = time.perf_counter()
        res = router.route(it["query"], window, previous=previous)
        lat.append((time.perf_counter() - t0) * 1e3)
        gold = expected_names(it)
        pool = [c.key for c in res.candidates]
        ok = res.tool in gold if gold else res.tool is None
        hits += ok
        top1 += bool(pool) and pool[0] in gold
        in_pool += bool(gold & set(pool)) if gold else res.tool is None
        per_item.append(
            {
                "id": it["id"],
                "kind": it["kind"],
                "routed": res.tool,
                "ok": ok,
                "decision": res.decision,
                "asked": bool(res.rerank_scores),  # the decision ran (its "none" is a fallback's to override)
                "margin": res.margin,
                "top1": pool[0] if pool else None,
                "top1_ok": bool(pool) and pool[0] in gold,
                "in_pool": bool(gold & set(pool)),
            }
        )
    n = len(items)
    return {
        "n": n,
        "accuracy": hits / n,
        "retrieval_top1": top1 / n,
        "pool_recall": in_pool / n,
        "latency_ms_p50": statistics.median(lat),
        "items": per_item,
    }


def session_items(seed: int, n: int) -> list[tuple[str, Any]]:
    """``n`` standalone dev-set requests (no history of their own), each with its profile."""
    reg = load_registry(SHARED / "mcp-registry")
    out = []
    for set_name, profile in (("github_dev", "github_all"), ("mixed_dev", "desktop_all")):
        items = [it for it in load_eval(SHARED / "eval" / f"{set_name}.jsonl", reg) if not it.history and it.gold]
        out += [(profile, it) for it in items]
    random.Random(seed).shuffle(out)
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="tune", choices=["tune", "check", "all"])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--llm", default="", help="variants also run with the LLM decision (comma list)")
    ap.add_argument("--session", type=int, default=60, help="standalone requests behind unrelated turns (0: off)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="the first N dialogues of the split only")
    ap.add_argument("--no-tool", action="store_true", help="also run the LLM variants on followups_no_tool.jsonl")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "followups"))
    args = ap.parse_args()
    dialogues = load_dialogues(SHARED / "eval" / "followups.jsonl", None if args.split == "all" else args.split)
    items = [d.item | {"turns": [t.model_dump() for t in d.line.turns]} for d in dialogues][: args.limit]
    reg = load_registry(SHARED / "mcp-registry")
    tools = reg.profile(PROFILE)
    emb = create_embedder(defaults.EMBEDDER)
    llm_variants = [v for v in args.llm.split(",") if v]
    decision = None
    rewriter = None
    if llm_variants or "rewrite+prior" in args.variants.split(","):
        backend = LocalBackend.open(defaults.CHAT_MODEL)
        decision = create_decision(RouterOptions(), backend)
        rewriter = QueryRewriter(backend.engine)
    assert decision is None or isinstance(decision, LLMChoiceReranker)
    rows: list[dict[str, Any]] = []
    for name in args.variants.split(","):
        for with_llm in (False, True) if name in llm_variants else (False,):
            if name == "rewrite+prior" and rewriter is None:
                continue
            cfg = flat_config(VARIANTS[name])
            options = RouterOptions(reranker="llm-choice" if with_llm else "none")
            router = build_router(tools, options, embedder=emb, reranker=decision, tuning=cfg)
            if name == "rewrite+prior" and rewriter is not None:
                router.context_text = lambda q, prev, hist, rw=rewriter: rw(q, hist)  # type: ignore[method-assign]
            router.calibrate()
            row = {"variant": name, "llm": with_llm, "split": args.split, **run_variant(router, name, items)}
            rows.append(row)
            print(
                f"{name:14} llm={with_llm!s:5} n={row['n']} acc={row['accuracy']:.3f} top1={row['retrieval_top1']:.3f} "
                f"pool={row['pool_recall']:.3f} p50={row['latency_ms_p50']:.0f} ms",
                flush=True,
            )
    if args.no_tool:
        no_tool = load_dialogues(SHARED / "eval" / "followups_no_tool.jsonl")
        nt_items = [d.item | {"turns": [t.model_dump() for t in d.line.turns]} for d in no_tool]
        for name in llm_variants:
            cfg = flat_config(VARIANTS[name])
            router = build_router(tools, RouterOptions(), embedder=emb, reranker=decision, tuning=cfg)
            row = {"variant": name, "llm": True, "split": "no-tool", **run_variant(router, name, nt_items)}
            rows.append(row)
            print(f"{name:14} no-tool n={row['n']} right (no tool)={row['accuracy']:.3f}", flush=True)
    if args.session:
        rows += session_rows(args, dialogues, emb, decision, llm_variants)
    out = Path(args.out)
    write_json(out.with_suffix(".json"), {"args": vars(args), "rows": rows}, indent=1)
    write_md(out.with_suffix(".md"), rows, args)


def session_rows(
    args: argparse.Namespace, dialogues: list[Any], emb: Any, decision: Any, llm_variants: list[str]
) -> list[dict[str, Any]]:
    """Standalone dev requests: alone (no history, the default router), and behind an unrelated dialogue's earlier
    turns with follow-up handling off (``today``) and on (``default``); the same pairs for both."""
    reg = load_registry(SHARED / "mcp-registry")
    picked = session_items(args.seed, args.session)
    rng = random.Random(args.seed + 1)
    behind = [rng.choice(dialogues) for _ in picked]
    rows = []
    for name, config in (("alone", "default"), ("today", "today"), ("default", "default")):
        for with_llm in (False, True) if config in llm_variants else (False,):
            hits, lat, cued = 0, [], 0
            routers: dict[str, Router] = {}
            for (profile, it), d in zip(picked, behind, strict=True):
                if profile not in routers:
                    cfg = flat_config(VARIANTS[config])
                    options = RouterOptions(reranker="llm-choice" if with_llm else "none")
                    routers[profile] = build_router(
                        reg.profile(profile), options, embedder=emb, reranker=decision, tuning=cfg
                    )
                    routers[profile].calibrate()
                window = [] if name == "alone" else d.conversation.window(4)
                previous = None if name == "alone" else d.conversation.previous_tool_turn(4)
                if previous is not None and previous.tool not in routers[profile].tools:
                    previous = None  # the profile does not hold that server: the router infers or ignores it
                t0 = time.perf_counter()
                res = routers[profile].route(it.query, window, previous=previous)
                lat.append((time.perf_counter() - t0) * 1e3)
                hits += res.tool in it.gold
                cued += routers[profile].follow_up(it.query, window, previous)
            n = len(picked)
            row = {
                "variant": f"session/{name}",
                "llm": with_llm,
                "split": "dev standalone",
                "n": n,
                "accuracy": hits / n,
                "follow_up_share": cued / n,
                "latency_ms_p50": statistics.median(lat),
            }
            rows.append(row)
            print(
                f"session/{name:14} llm={with_llm!s:5} n={n} acc={row['accuracy']:.3f} "
                f"follow-up={row['follow_up_share']:.2f} p50={row['latency_ms_p50']:.0f} ms",
                flush=True,
            )
    return rows


def write_md(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    llm = args.llm or '""'
    lines = [
        "# Follow-up routing",
        "",
        f"`python bench/followups.py --split {args.split} --llm {llm}` · profile {PROFILE} · "
        f"embedder {defaults.EMBEDDER}; decision llm-choice on {defaults.CHAT_MODEL} where llm = yes",
        "",
        "| variant | llm | split | n | accuracy | retrieval top-1 | in pool | p50 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {'yes' if r['llm'] else 'no'} | {r['split']} | {r['n']} | {r['accuracy']:.3f} | "
            f"{r.get('retrieval_top1', float('nan')):.3f} | {r.get('pool_recall', float('nan')):.3f} | "
            f"{r['latency_ms_p50']:.0f} |"
        )
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
