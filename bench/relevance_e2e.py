"""Relevance end to end: the whole routing pipeline (retrieval, gate, the LLM decision) with and without the
relevance judge (routing/judge.py), on both parts of every set, in one run with one loaded model.

For each arm (``exemplars``: the embedding tests alone, the previous default; ``llm``: plus the judge) and each
(set, split, profile): accuracy, false tool calls (no-tool sets), tool requests turned away and tool accuracy (tool
sets), the judge's share of tool requests asked and its p50, and the p50 of the whole route per request.

    python bench/relevance_e2e.py [--splits tune,check] [--arms exemplars,llm] [--limit N]

Writes ``bench/results/relevance_e2e.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from common import ROOT, SHARED
from relevance_judge import SETS  # the same sets, parts and profiles as the tuning sweep

from nexus_agent.evaluation.routing import evaluate, load_eval
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.router import RouterOptions, build_router, create_decision

KEYS = (
    "n",
    "accuracy",
    "no_tool_false_positive_rate",
    "tool_turned_away_rate",
    "tool_accuracy",
    "escalation_rate",
    "n_decisions",
    "n_judged",
    "judge_rate_tool",
    "judge_ms_p50",
    "latency_ms_p50",
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", default="tune,check")
    ap.add_argument("--arms", default="exemplars,llm")
    ap.add_argument("--sets", default=",".join(s[0] for s in SETS))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "relevance_e2e"))
    args = ap.parse_args()
    reg = load_registry(SHARED / "mcp-registry")
    emb = create_embedder("minilm-tools")
    decision = create_decision(RouterOptions())  # one LLM for every router and arm
    rows: list[dict[str, Any]] = []
    wanted = set(args.sets.split(","))
    for set_name, path, profiles, has_split in SETS:
        if set_name not in wanted:
            continue
        for profile in profiles:
            tools = reg.profile(profile)
            keys = [t.qualified_name for t in tools]
            for arm in args.arms.split(","):
                options = RouterOptions.model_validate({"relevance": arm})
                router = build_router(tools, options, embedder=emb, reranker=decision)
                router.calibrate()
                for split in args.splits.split(",") if has_split else ["all"]:
                    items = load_eval(path, reg, split if has_split else None)[: args.limit]
                    t0 = time.monotonic()
                    s, results = evaluate(router, items, keys, None, 0)
                    row = {"set": set_name, "split": split, "profile": profile, "arm": arm}
                    row.update({k: s.get(k) for k in KEYS})
                    # what relevance adds to a tool request the judge does not ask (the concrete-object test),
                    # over the requests retrieval keeps final: compare this between the arms
                    quick = [
                        r.result.latency_ms
                        for r in results
                        if r.item.gold and not r.result.escalated and r.result.judge_ms is None
                    ]
                    row["route_ms_p50_tool_unjudged_auto"] = statistics.median(quick) if quick else None
                    # per request, to tell what the judge changed from what the decision's noise did
                    row["items"] = [
                        {"id": r.item.id, "tool": r.result.tool, "judge": r.result.judge_log_odds} for r in results
                    ]
                    rows.append(row)
                    brief = {k: v for k, v in row.items() if k != "items"}
                    print(json.dumps(brief), f"{time.monotonic() - t0:.0f} s", flush=True)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(rows))
    print(out.with_suffix(".md").read_text())


def markdown(rows: list[dict[str, Any]]) -> str:
    def f(v: Any, digits: int = 3) -> str:
        return "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)

    lines = [
        "# Relevance end to end (minilm-tools, llm-choice on qwen1.5b; arm `llm` adds the relevance judge)",
        "",
        "| set | split | profile | arm | n | accuracy | false tool calls | turned away | tool accuracy | escalated "
        "| judge asked (tool requests) | judge p50 ms | route p50 ms | tool requests not judged, auto: route p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['split']} | {r['profile']} | {r['arm']} | {r['n']} | {f(r['accuracy'])} | "
            f"{f(r['no_tool_false_positive_rate'])} | {f(r['tool_turned_away_rate'])} | {f(r['tool_accuracy'])} | "
            f"{f(r['escalation_rate'])} | {f(r['judge_rate_tool'])} | {f(r['judge_ms_p50'], 0)} | "
            f"{f(r['latency_ms_p50'], 0)} | {f(r.get('route_ms_p50_tool_unjudged_auto'), 1)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
