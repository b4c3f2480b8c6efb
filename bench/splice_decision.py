#!/usr/bin/env python3
"""The escalated routing decision with and without compiled candidate lines, on both dev sets, in one run.

Every request is routed twice by the same router and the same LLM decision (``llm-choice``), once with splicing off
and once on (the order alternates per request, so drift in machine load falls on both arms alike). Only requests
the gate escalates reach the decision, so only they carry a decision time. Blocks for every tool of the two
profiles are compiled first (``atb-compile``'s code; unchanged ones are skipped), so the decision times are
those of a warm install; the compile time is reported apart.

usage: python bench/splice_decision.py [--model qwen1.5b] [--limit N] [--out bench/results/splice_decision]
Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import SHARED  # noqa: E402

from atb_compiler.compile import compile_tools  # noqa: E402
from nexus_agent import defaults  # noqa: E402
from nexus_agent.backend import SIDECAR, LocalBackend, LocalDecider  # noqa: E402
from nexus_agent.backend.session import PrefixCachedLLM  # noqa: E402
from nexus_agent.engine.blocks import SpliceConfig, Splicer  # noqa: E402
from nexus_agent.evaluation.routing import load_eval  # noqa: E402
from nexus_agent.evaluation.stats import percentile  # noqa: E402
from nexus_agent.paths import cache_dir  # noqa: E402
from nexus_agent.registry import load_registry  # noqa: E402
from nexus_agent.routing.embedders import create_embedder  # noqa: E402
from nexus_agent.routing.options import RouterOptions  # noqa: E402
from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker  # noqa: E402
from nexus_agent.routing.router import build_router  # noqa: E402

SETS = {"github_dev": ("github_dev.jsonl", "github_all"), "mixed_dev": ("mixed_dev.jsonl", "desktop_all")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=defaults.CHAT_MODEL)
    ap.add_argument("--limit", type=int, default=None, help="first N requests of each set")
    ap.add_argument("--policy", default=None, help="repair policy (default: the shipped one)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--arms", default="on,auto", help="splice modes compared with off")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "splice_decision"))
    args = ap.parse_args()
    reg = load_registry(SHARED / "mcp-registry")
    # its own block folder: blocks compiled here skip the sensitivity probe unless the policy reads it
    probe = args.policy == "cacheblend"
    root = cache_dir("atb-bench", "probed" if probe else "plain")
    cfg = SpliceConfig(mode="on", root=root, **({} if args.policy is None else {"policy": args.policy}))
    engine = LocalBackend.open(args.model, args.threads).engine
    splicer = Splicer(engine, cfg)
    assert splicer.active, "this model cannot splice"
    llm = PrefixCachedLLM(engine, SIDECAR, splicer)
    splicers = {"off": None, "on": splicer, "auto": Splicer(engine, replace(cfg, mode="auto"))}
    arms = ["off", *args.arms.split(",")]
    decision = LLMChoiceReranker(LocalDecider(lambda lane: llm))
    emb = create_embedder(defaults.EMBEDDER)
    t0 = time.perf_counter()
    compiled = {
        name: compile_tools(llm, reg.profile(profile), root, probe=probe) for name, (_, profile) in SETS.items()
    }
    compile_s = time.perf_counter() - t0
    print(
        "compiled: "
        + ", ".join(f"{k} {r.compiled} new / {r.skipped} unchanged ({r.seconds:.0f} s)" for k, r in compiled.items()),
        flush=True,
    )
    per_item: list[dict[str, Any]] = []
    for name, (fname, profile) in SETS.items():
        items = load_eval(SHARED / "eval" / fname, reg)[: args.limit]
        router = build_router(reg.profile(profile), RouterOptions(), embedder=emb, reranker=decision)
        router.calibrate()
        for i, it in enumerate(items):
            res: dict[str, Any] = {}
            for arm in arms[i % len(arms) :] + arms[: i % len(arms)]:  # the order rotates per request
                sp = splicers[arm]
                llm.splicer = sp
                llm.engine.truncate(llm.seq, decision.head_tokens)  # the arena keeps the head warm across turns
                r = router.route(it.query, it.history)
                st = sp.last if sp is not None and r.decision_ms is not None else None
                res[arm] = {
                    "tool": r.tool,
                    "correct": (r.tool in it.gold) if it.gold else r.tool is None,
                    "decision_ms": r.decision_ms,
                    "spliced": st.n_spliced if st else 0,
                    "decoded": st.n_decoded if st else None,
                }
                if sp is not None:
                    sp.last = None
            row = {"set": name, "query": it.query, **{f"{k}_{a}": v for a, d in res.items() for k, v in d.items()}}
            per_item.append(row)
            if res["off"]["decision_ms"] is not None:
                print(
                    f"{name} {i:3d} off={res['off']['decision_ms']:.0f}ms "
                    + " ".join(
                        f"{a}={res[a]['decision_ms']:.0f}ms/{res[a]['spliced']}tok"
                        f"{'' if res[a]['tool'] == res['off']['tool'] else '/DIFF'}"
                        for a in arms[1:]
                    ),
                    flush=True,
                )
    summary = {
        f"{name}/{arm}": summarize([r for r in per_item if name == "both" or r["set"] == name], arm)
        for arm in arms[1:]
        for name in [*SETS, "both"]
    }
    out = Path(args.out)
    meta = {"model": args.model, "policy": splicer.cfg.policy, "compile_s": compile_s, "limit": args.limit}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "summary": summary, "items": per_item}, indent=1))
    lines = [
        f"# The routing decision with compiled candidate lines ({args.model}, repair {splicer.cfg.policy})",
        "",
        "| set / mode | n | escalated | decision p50 off | with splicing | ratio | same pick | accuracy off | with |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, s in summary.items():
        if k.startswith("both"):
            k = f"**{k}**"
        lines.append(
            f"| {k} | {s['n']} | {s['escalated']} | {s['decision_ms_p50_off']:.0f} ms "
            f"| {s['decision_ms_p50_on']:.0f} ms | {s['ratio']:.2f} | {s['same_pick']:.3f} "
            f"| {s['accuracy_off']:.3f} | {s['accuracy_on']:.3f} |"
        )
    lines += ["", f"Blocks compiled first in {compile_s:.0f} s (skipped when already on disk)."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def summarize(rows: list[dict[str, Any]], arm: str) -> dict[str, Any]:
    rows = [{**r, **{k[: -len(arm)] + "on": v for k, v in r.items() if k.endswith("_" + arm)}} for r in rows]
    esc = [r for r in rows if r["decision_ms_on"] is not None and r["decision_ms_off"] is not None]
    off = [r["decision_ms_off"] for r in esc]
    on = [r["decision_ms_on"] for r in esc]
    n = len(rows)
    return {
        "n": n,
        "escalated": len(esc),
        "decision_ms_p50_off": percentile(off, 50),
        "decision_ms_p50_on": percentile(on, 50),
        "ratio": percentile(on, 50) / percentile(off, 50) if esc else float("nan"),
        "paired_ratio_median": statistics.median(a / b for a, b in zip(on, off, strict=True)) if esc else None,
        "same_pick": sum(r["tool_on"] == r["tool_off"] for r in esc) / len(esc) if esc else float("nan"),
        "accuracy_off": sum(r["correct_off"] for r in rows) / n if n else float("nan"),
        "accuracy_on": sum(r["correct_on"] for r in rows) / n if n else float("nan"),
        "spliced_tokens_mean": statistics.mean(r["spliced_on"] for r in esc) if esc else 0,
    }


if __name__ == "__main__":
    main()
