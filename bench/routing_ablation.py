"""Ablation of the retrieval stage (and, optionally, the escalation decision) on the dev sets.

Each row switches one idea on top of the previous (document style, BM25 fusion and its normalisation, synthetic
rows, query expansion, the question penalty); the last row is the shipped ``RouterConfig()``. Measures SLB
top-1/top-3 (dense only), fused top-1 and candidate recall at pool sizes 5-20; with ``--reranker`` it also runs the
gated pipeline for the shipped configuration. Writes ``bench/results/routing_ablation.{json,md}`` (``--out``).

    python bench/routing_ablation.py [--embedders minilm,nomic] [--reranker llm-choice] [--every 4]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from common import NO_TOOL, ROOT, SHARED, split_knobs

from nexus_agent.evaluation.routing import evaluate, load_eval
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.router import RouterConfig, RouterOptions, build_router, create_decision

SETS = {"github_dev": ("github_dev.jsonl", "github_all"), "mixed_dev": ("mixed_dev.jsonl", "desktop_all")}

# Each step switches one idea on top of the previous row; the last row is the shipped RouterConfig() (with the
# embedder's own choice of synthetic rows). The question penalty and the BM25 normalisation are off until their rows.
_OFF = {"question_write_penalty": 0.0}
STEPS: list[tuple[str, dict[str, Any]]] = [
    (
        "basic doc (name: description), dense only",
        {"doc_style": "basic", "synthetic": False, "hybrid": False, "expand": False, **_OFF},
    ),
    ("+ rich doc (params, enums)", {"synthetic": False, "hybrid": False, "expand": False, **_OFF}),
    ("+ BM25 fusion (÷ best score)", {"synthetic": False, "expand": False, "bm25_norm": "max", **_OFF}),
    ("+ synthetic queries (dense rows)", {"synthetic": True, "expand": False, "bm25_norm": "max", **_OFF}),
    ("synthetic, no BM25", {"synthetic": True, "hybrid": False, "expand": False, **_OFF}),
    ("+ abbreviation / entity expansion", {"synthetic": True, "bm25_norm": "max", **_OFF}),
    ("BM25 ÷ idf sum", {"synthetic": True, "bm25_norm": "idf", **_OFF}),
    ("BM25 ÷ max(best, ½ known idf)", {"synthetic": True, **_OFF}),
    # a fine-tuned embedder was trained on the synthetic queries, so indexing them again may not help
    ("embedder's choice of synthetic rows", {"synthetic": None, **_OFF}),
    ("+ question penalty (shipped default)", {}),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedders", default="minilm-tools,minilm,nomic")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--reranker", default="none")
    ap.add_argument("--llm", default="qwen1.5b")
    ap.add_argument("--every", type=int, default=4, help="reranker run: every k-th item (+ every 2k-th no-tool item)")
    ap.add_argument("--reranker-only", action="store_true", help="skip the retrieval steps")
    ap.add_argument("--modes", default="gated,always", help="reranker run: gated and/or always (escalate)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="result name under bench/results (default: routing_ablation)")
    args = ap.parse_args()
    reg = load_registry(SHARED / "mcp-registry")
    rows: list[dict[str, Any]] = []
    for emb_name in args.embedders.split(","):
        emb = create_embedder(emb_name)
        for set_name in args.sets.split(","):
            fname, prof = SETS[set_name]
            tools = reg.profile(prof)
            items = load_eval(SHARED / "eval" / fname, reg)
            keys = [t.qualified_name for t in tools]
            for label, kw in [] if args.reranker_only else STEPS:
                options, tuning = split_knobs(kw, embedder=emb_name, reranker="none", gate=False)
                router = build_router(tools, options, embedder=emb, tuning=tuning)
                router.calibrate()
                s, res = evaluate(router, items, keys)
                # recall at several pool sizes from the same ranking
                rec = {}
                for p in (5, 10, 15, 20):
                    rec[p] = sum(
                        any(c.key in r.item.gold for c in router.retrieve(r.item.query)[:p]) for r in res
                    ) / len(res)
                row = {
                    "embedder": emb_name,
                    "set": set_name,
                    "step": label,
                    "top1_fused": s["accuracy"],
                    "slb_top1": s["slb_top1"],
                    "slb_top3": s["slb_top3"],
                    **{f"recall@{p}": v for p, v in rec.items()},
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
            if args.reranker != "none":
                decision = RouterOptions(
                    embedder=emb_name, reranker=args.reranker, reranker_model=args.llm, threads=args.threads
                )
                rr = create_decision(decision)
                nt = load_eval(NO_TOOL, reg)
                sub = items[:: args.every] + nt[:: 2 * args.every]
                modes = {
                    "gated": ("gated (tau, 20th pct)", RouterConfig()),
                    "always": ("always escalate", RouterConfig().tuned(gate={"always_escalate": True})),
                }
                for label, cfg in [modes[m] for m in args.modes.split(",")]:
                    router = build_router(tools, decision, embedder=emb, reranker=rr, tuning=cfg)
                    cal = router.calibrate()
                    s, _ = evaluate(router, sub, keys)
                    row = {
                        "embedder": emb_name,
                        "set": set_name,
                        "step": f"{args.llm} {args.reranker}: {label} (every {args.every})",
                        "tau": cal["tau"],
                        **s,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    name = f"routing_ablation_llm_{args.llm}_{args.reranker}" if args.reranker_only else "routing_ablation"
    name = args.out or name
    out = ROOT / "bench" / "results" / name
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# Routing ablation (retrieval stage; eval sets used for measurement only)",
        "",
        "| embedder | set | step | fused top-1 | SLB top-1 | SLB top-3 | R@5 | R@10 | R@15 | R@20 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "recall@15" in r:
            lines.append(
                f"| {r['embedder']} | {r['set']} | {r['step']} | {r['top1_fused']:.3f} | {r['slb_top1']:.3f} | "
                f"{r['slb_top3']:.3f} | {r['recall@5']:.3f} | {r['recall@10']:.3f} | {r['recall@15']:.3f} | "
                f"{r['recall@20']:.3f} |"
            )
    llm_rows = [r for r in rows if "accuracy" in r]
    if llm_rows:
        lines += [
            "",
            "| embedder | set | pipeline | n | accuracy [95% CI] | escalation | acc. escalated | "
            "escalated if top-1 | no-tool FP | p50 ms | p50 auto ms |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in llm_rows:
            lo, hi = r["accuracy_ci95"]
            lines.append(
                f"| {r['embedder']} | {r['set']} | {r['step']} | {r['n']} | {r['accuracy']:.3f} [{lo:.3f}, "
                f"{hi:.3f}] | {r['escalation_rate']:.2f} | {r.get('accuracy_escalated', float('nan')):.3f} | "
                f"{r.get('accuracy_escalated_if_top1', float('nan')):.3f} | "
                f"{r.get('no_tool_false_positive_rate', float('nan')):.3f} | {r['latency_ms_p50']:.0f} | "
                f"{r['latency_ms_p50_auto']:.0f} |"
            )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
