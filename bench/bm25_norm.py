"""How BM25 scores are normalised before the fusion ``(1-w)·dense + w·bm25``, retrieval only (no reranker).

Variants (``RouterConfig.bm25_norm`` / ``bm25_known_share``):

* ``max``: divide by the query's best BM25 score among the eligible tools. One weak match is stretched to 1.
* ``known`` (share s): divide by the larger of that best score and s × the summed idf of the query's terms
  that some tool has (s = 0.5 is about the BM25 of a tool having each of them once: bm25s gives one occurrence
  at average length idf / (1 + k1)).
* ``idf``: divide by the summed idf of all the query's terms, names and repositories included.

Each variant runs on both dev sets at their own profiles (github_all, desktop_all) and at seeded subsets of N
tools of the 317-tool profile (as ``bench/routing.py``), plus the no-tool requests at the two own profiles.
Reports accuracy (retrieval top-1 with the relevance rules), candidate recall at the pool and the gate's
escalation rate (τ calibrated per variant). Writes ``bench/results/bm25_norm.{json,md}``.

    python bench/bm25_norm.py [--embedder minilm-tools] [--sizes own,10,86,250,317]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from common import NO_TOOL, SHARED, calibrated_router, retrieval_args, save_rows

from nexus_agent.evaluation.routing import evaluate, load_eval
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder

SETS = {"github_dev": ("github_dev.jsonl", "github_all"), "mixed_dev": ("mixed_dev.jsonl", "desktop_all")}
FULL_PROFILE = "desktop_all_plus_github"
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("max", {"bm25_norm": "max"}),
    ("known, share 0.5 (default)", {"bm25_norm": "known", "bm25_known_share": 0.5}),
    ("known, share 1.0", {"bm25_norm": "known", "bm25_known_share": 1.0}),
    ("idf (all terms)", {"bm25_norm": "idf"}),
]


def main() -> None:
    args = retrieval_args("bm25_norm", "own,10,86,250,317", "'own' (the set's own profile) and/or subset sizes")
    reg = load_registry(SHARED / "mcp-registry")
    emb = create_embedder(args.embedder)
    rows: list[dict[str, Any]] = []
    for label, kw in VARIANTS:
        t0 = time.monotonic()
        for set_name, (fname, own) in SETS.items():
            items = load_eval(SHARED / "eval" / fname, reg)
            for size in args.sizes.split(","):
                prof, n = (own, None) if size == "own" else (FULL_PROFILE, int(size))
                router, keys, calib = calibrated_router(reg, prof, emb, kw)
                s, _ = evaluate(router, items, keys, n_tools=n, seed=args.seed)
                row = {
                    "variant": label,
                    "set": set_name,
                    "n_tools": size if n is None else n,
                    "accuracy": s["accuracy"],
                    "accuracy_ci95": s["accuracy_ci95"],
                    "candidate_recall": s["candidate_recall"],
                    "escalation_rate": s["escalation_rate"],
                    "tau": calib["tau"],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        for prof in (p for _, p in SETS.values()):
            router, keys, _ = calibrated_router(reg, prof, emb, kw)
            s, _ = evaluate(router, load_eval(NO_TOOL, reg), keys)
            row = {
                "variant": label,
                "set": f"no_tool@{prof}",
                "no_tool_false_positive_rate": s["no_tool_false_positive_rate"],
                "wall_s": round(time.monotonic() - t0, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    write_md(save_rows(args, rows), rows, args)


def write_md(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    sizes = args.sizes.split(",")
    variants = [v for v, _ in VARIANTS]
    lines = [
        "# BM25 normalisation before the dense + BM25 fusion (retrieval only)",
        "",
        f"Embedder `{args.embedder}`, no reranker (accuracy = retrieval top-1 with the relevance rules), seed "
        f"{args.seed}; `python bench/bm25_norm.py`. N = own: the set's own profile (github_all 86 tools, "
        f"desktop_all 231); other N: seeded subsets of {FULL_PROFILE}. Cells: accuracy (escalation rate with the "
        "gate, τ calibrated per variant); ratio = accuracy / `max` in the same run.",
        "",
        "| set | N | " + " | ".join(variants) + " |",
        "|---|---|" + "---|" * len(variants),
    ]
    by = {(r["variant"], r["set"], str(r.get("n_tools"))): r for r in rows}
    for set_name in SETS:
        for size in sizes:
            cells = []
            base = by[("max", set_name, size)]["accuracy"]
            for v in variants:
                r = by[(v, set_name, size)]
                cells.append(f"{r['accuracy']:.3f} ({r['escalation_rate']:.2f}) ×{r['accuracy'] / base:.2f}")
            lines.append(f"| {set_name} | {size} | " + " | ".join(cells) + " |")
    for _, prof in SETS.values():
        cells = [f"{by[(v, f'no_tool@{prof}', 'None')]['no_tool_false_positive_rate']:.3f}" for v in variants]
        lines.append(f"| no-tool false tool calls | {prof} | " + " | ".join(cells) + " |")
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
