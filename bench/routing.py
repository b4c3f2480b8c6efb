"""Routing accuracy vs registry size, per embedder, with and without the gate (+ ablations).

For each embedder and each dev set, the router is built once over the profile that holds *all* sizes'
tools (``desktop_all_plus_github``, 317 tools); each item then sees a seeded subset of N tools that always
contains its expected tool and alternatives. "gate" = low-margin decisions escalate to the reranker;
"no-gate" = retrieval top-1 is final (the baseline measured in the same run). Writes
``bench/results/routing.{json,md}`` and ``routing.png`` (accuracy vs N, Wilson 95% bands).

    python bench/routing.py [--embedders minilm,nomic] [--sizes 10,50,100,250,317] [--limit 40]
                            [--reranker llm-choice|llm-pointwise|none] [--llm qwen0.5b]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from common import ROOT, SHARED

from nexus_agent.evaluation.routing import evaluate, load_eval
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.router import RouterOptions, build_router, create_decision

SETS = {"github_dev": "github_dev.jsonl", "mixed_dev": "mixed_dev.jsonl"}
FULL_PROFILE = "desktop_all_plus_github"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedders", default="minilm-tools,minilm,nomic")
    ap.add_argument("--sizes", default="10,50,100,250,317")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--limit", type=int, default=None, help="first N items of each set")
    ap.add_argument("--reranker", default="llm-choice")
    ap.add_argument("--llm", default="qwen1.5b")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--registry", default=str(SHARED / "mcp-registry"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "routing"))
    args = ap.parse_args()
    reg = load_registry(args.registry)
    tools = reg.profile(FULL_PROFILE)
    profile = [t.qualified_name for t in tools]
    sizes = [int(s) for s in args.sizes.split(",")]
    decision = RouterOptions(reranker=args.reranker, reranker_model=args.llm, threads=args.threads)
    rr = create_decision(decision)  # one LLM for every gated router
    rows: list[dict[str, Any]] = []
    for emb_name in args.embedders.split(","):
        emb = create_embedder(emb_name)
        for gate in (False, True):
            options = decision.model_copy(
                update={"embedder": emb_name, "gate": gate, "reranker": args.reranker if gate else "none"}
            )
            router = build_router(tools, options, embedder=emb, reranker=rr)
            calib = router.calibrate()
            for set_name in args.sets.split(","):
                items = load_eval(SHARED / "eval" / SETS[set_name], reg)[: args.limit]
                for n in sizes:
                    t0 = time.monotonic()
                    s, _ = evaluate(router, items, profile, n_tools=n, seed=args.seed)
                    s.update(
                        {
                            "embedder": emb_name,
                            "gate": gate,
                            "set": set_name,
                            "n_tools": n,
                            "tau": calib["tau"],
                            "reranker": args.reranker if gate else "none",
                            "wall_s": time.monotonic() - t0,
                        }
                    )
                    rows.append(s)
                    print(
                        f"{emb_name:6} gate={gate!s:5} {set_name:10} N={n:3} acc={s['accuracy']:.3f} "
                        f"top1={s['slb_top1']:.3f} top3={s['slb_top3']:.3f} rec={s['candidate_recall']:.3f} "
                        f"esc={s['escalation_rate']:.2f} p50={s['latency_ms_p50']:.0f}ms",
                        flush=True,
                    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1) + "\n")
    write_md(out.with_suffix(".md"), rows, args)
    plot(out.with_suffix(".png"), rows)


def write_md(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    lines = [
        "# Routing accuracy vs registry size",
        "",
        f"Profile {FULL_PROFILE}; seed {args.seed}; limit {args.limit}; reranker {args.reranker} ({args.llm}).",
        "Baseline = the same embedder without the gate (retrieval top-1 final), measured in the same run.",
        "",
        "| embedder | set | N | gate | accuracy [95% CI] | vs no-gate | SLB top-1 | top-3 | recall@pool | "
        "escalation | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = {(r["embedder"], r["set"], r["n_tools"]): r["accuracy"] for r in rows if not r["gate"]}
    for r in rows:
        lo, hi = r["accuracy_ci95"]
        b = base.get((r["embedder"], r["set"], r["n_tools"]))
        ratio = f"{r['accuracy'] / b:.2f}x" if b else "-"
        lines.append(
            f"| {r['embedder']} | {r['set']} | {r['n_tools']} | {'on' if r['gate'] else 'off'} | "
            f"{r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] | {ratio} | {r['slb_top1']:.3f} | {r['slb_top3']:.3f} | "
            f"{r['candidate_recall']:.3f} | {r['escalation_rate']:.2f} | {r['latency_ms_p50']:.0f} | "
            f"{r['latency_ms_p95']:.0f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def plot(path: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = sorted({r["set"] for r in rows})
    fig, axes = plt.subplots(1, len(sets), figsize=(6 * len(sets), 4), squeeze=False)
    for ax, set_name in zip(axes[0], sets, strict=True):
        for key in sorted({(r["embedder"], r["gate"]) for r in rows if r["set"] == set_name}):
            rs = sorted(
                (r for r in rows if r["set"] == set_name and (r["embedder"], r["gate"]) == key),
                key=lambda r: r["n_tools"],
            )
            xs = [r["n_tools"] for r in rs]
            ax.plot(xs, [r["accuracy"] for r in rs], marker="o", label=f"{key[0]} {'gate' if key[1] else 'top-1'}")
            ax.fill_between(xs, [r["accuracy_ci95"][0] for r in rs], [r["accuracy_ci95"][1] for r in rs], alpha=0.2)
        ax.set_xscale("log")
        ax.set_xlabel("tools in registry (N)")
        ax.set_ylabel("routing accuracy")
        ax.set_ylim(0, 1)
        ax.set_title(set_name)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
