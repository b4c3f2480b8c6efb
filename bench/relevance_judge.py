"""The relevance judge (routing/judge.py), tuned and checked by split: for every request of the no-tool and tool
sets, retrieval's own answer (no decision) and the judge's log-odds of "yes, a tool" over "no", then a sweep of
the threshold.

At a threshold θ and an asking rule (every request, or only those naming no object of their own), a request
retrieval gives a tool keeps it when the judge is not asked or says ≥ θ. Reported per set and split:
* no-tool sets: false tool calls (the share still given a tool);
* tool sets: turned away (the share left with no tool, by retrieval or by the judge) and top-1 accuracy.
This is retrieval plus the judge, the cheap half of the pipeline; the escalated decision may still answer "none"
(the full pipeline: ``nexus-agent eval-routing … --split check``).

Sets: ``data/eval/no_tool.jsonl`` (tune / check), ``tests/routing/data/no_tool_queries.jsonl`` (the older set,
"all"), ``data/eval/tool_questions.jsonl`` (tool requests phrased as questions; tune / check), and the dev sets
(tune / check) at their own profiles. No-tool sets run at ``github_all`` and ``desktop_realistic``.

    python bench/relevance_judge.py [--model qwen1.5b] [--splits tune] [--limit N]

Writes ``bench/results/relevance_judge.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from common import NO_TOOL, ROOT, SHARED

from nexus_agent.backend import LocalBackend
from nexus_agent.evaluation.routing import load_eval
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.judge import RelevanceJudge, names_concrete_object
from nexus_agent.routing.router import RouterOptions, build_router

EVAL = ROOT / "data" / "eval"
# (set, file, profiles, has a split)
SETS: list[tuple[str, Path, tuple[str, ...], bool]] = [
    ("no_tool", EVAL / "no_tool.jsonl", ("github_all", "desktop_realistic"), True),
    ("no_tool_old", NO_TOOL, ("github_all", "desktop_realistic"), False),
    ("tool_questions", EVAL / "tool_questions.jsonl", ("desktop_realistic",), True),
    ("github_dev", SHARED / "eval" / "github_dev.jsonl", ("github_all",), True),
    ("mixed_dev", SHARED / "eval" / "mixed_dev.jsonl", ("desktop_all",), True),
]
THRESHOLDS = [-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
ASK = ("always", "no_object")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen1.5b")
    ap.add_argument("--splits", default="tune", help="comma-separated: tune, check")
    ap.add_argument("--limit", type=int, default=None, help="only the first N requests of each set and split")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "relevance_judge"))
    args = ap.parse_args()
    reg = load_registry(SHARED / "mcp-registry")
    emb = create_embedder("minilm-tools")
    judge = RelevanceJudge(LocalBackend.open(args.model).decider())
    rows: list[dict[str, Any]] = []
    for set_name, path, profiles, has_split in SETS:
        for profile in profiles:
            tools = reg.profile(profile)
            # retrieval's own answer: no decision, no judge (the judge is asked below, for every request)
            router = build_router(tools, RouterOptions(reranker="none", relevance="exemplars"), embedder=emb)
            router.calibrate()
            for split in args.splits.split(",") if has_split else ["all"]:
                items = load_eval(path, reg, split if has_split else None)[: args.limit]
                t0 = time.monotonic()
                for it in items:
                    res = router.route(it.query, it.history)
                    j = judge.judge(it.query, tools)
                    rows.append(
                        {
                            "set": set_name,
                            "split": split,
                            "profile": profile,
                            "id": it.id,
                            "query": it.query,
                            "needs_tool": bool(it.gold),
                            "retrieval_tool": res.tool,
                            "correct": res.tool in it.gold if it.gold else res.tool is None,
                            "names_object": names_concrete_object(it.query),
                            "log_odds": j.log_odds,
                            "judge_ms": j.ms,
                        }
                    )
                print(
                    f"{set_name} {split} {profile}: {len(items)} requests in {time.monotonic() - t0:.0f} s", flush=True
                )
    table = sweep(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"args": vars(args), "rows": rows, "sweep": table}, indent=1))
    out.with_suffix(".md").write_text(markdown(rows, table, args))
    print(out.with_suffix(".md").read_text())


def keeps_tool(row: dict[str, Any], theta: float | None, ask: str) -> bool:
    """Whether the request still gets retrieval's tool with the judge at ``theta`` (None: no judge)."""
    if row["retrieval_tool"] is None:
        return False
    if theta is None or (ask == "no_object" and row["names_object"]):
        return True
    return bool(row["log_odds"] >= theta)


def sweep(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], r["split"], r["profile"]), []).append(r)
    out = []
    for (set_name, split, profile), rs in sorted(groups.items()):
        for ask in ASK:
            for theta in [None, *THRESHOLDS]:
                kept = [keeps_tool(r, theta, ask) for r in rs]
                row: dict[str, Any] = {"set": set_name, "split": split, "profile": profile, "ask": ask}
                row["theta"] = theta
                row["n"] = len(rs)
                if rs[0]["needs_tool"]:
                    row["turned_away"] = sum(not k for k in kept) / len(rs)
                    row["accuracy"] = sum(k and r["correct"] for k, r in zip(kept, rs, strict=True)) / len(rs)
                    row["asked"] = sum(ask == "always" or not r["names_object"] for r in rs) / len(rs)
                else:
                    row["false_tool_calls"] = sum(kept) / len(rs)
                out.append(row)
    return out


def markdown(rows: list[dict[str, Any]], table: list[dict[str, Any]], args: argparse.Namespace) -> str:
    ms = [r["judge_ms"] for r in rows]
    lines = [
        f"# Relevance judge ({args.model}; splits {args.splits})",
        "",
        f"Judge wall time per request: p50 {statistics.median(ms):.0f} ms over {len(ms)} calls.",
        "`theta` none: retrieval's own relevance tests only. False tool calls on the no-tool sets; turned away and",
        "accuracy (retrieval top-1 kept) on the tool sets.",
        "",
        "| set | split | profile | ask | theta | n | false tool calls | turned away | accuracy | asked |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def f(v: Any) -> str:
        return "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    for r in table:
        lines.append(
            f"| {r['set']} | {r['split']} | {r['profile']} | {r['ask']} | {f(r['theta']) or 'none'} | {r['n']} | "
            f"{f(r.get('false_tool_calls'))} | {f(r.get('turned_away'))} | {f(r.get('accuracy'))} | "
            f"{f(r.get('asked'))} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
