"""Relevance detection ("no tool") ablation: false tool calls on requests that need none, against the tool
requests each rule turns away, retrieval only (no reranker), so every variant runs in seconds.

Variants: the relevance floor alone (as before the exemplars), the floor plus the no-tool exemplars tested
against the tool documents alone or also against each tool's own example requests (routing/relevance.py), and
lower floor percentiles with the exemplars.
Each runs on the tool requests of both dev sets (accuracy; "turned away" = tool requests answered with no tool)
and on ``tests/routing/data/no_tool_queries.jsonl`` at three profiles, split into the first 34 requests
(written before the exemplars) and the 30 written after them. Sizes: the whole profile and N = 10 (seeded
subsets, where the floor is recomputed for the subset). Writes ``bench/results/relevance.{json,md}``.

    python bench/relevance.py [--embedder minilm-tools]
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

N_BEFORE = 34  # no-tool requests written before the exemplars; the rest were written after them
TOOL_SETS = {"github_dev": ("github_dev.jsonl", "github_all"), "mixed_dev": ("mixed_dev.jsonl", "desktop_all")}
NO_TOOL_PROFILES = ("github_all", "desktop_all", "desktop_all_plus_github")
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("floor only (60th pct)", {"exemplars": False, "floor_percentile": 60.0}),
    ("floor 60th + exemplars vs tool documents only", {"own_requests": 0, "floor_percentile": 60.0}),
    ("floor 60th + exemplars vs tool documents and requests", {"floor_percentile": 60.0}),
    ("floor 40th + exemplars vs documents and requests (default)", {}),
    ("no floor + exemplars", {"floor_percentile": 0.0}),
]


def main() -> None:
    args = retrieval_args("relevance", "all,10", "'all' (the whole profile) and/or subset sizes")
    reg = load_registry(SHARED / "mcp-registry")
    emb = create_embedder(args.embedder)
    no_tool = load_eval(NO_TOOL, reg)
    sizes = [None if s == "all" else int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    for label, kw in VARIANTS:
        knobs = {"gate": False, **kw}
        for n in sizes:
            row: dict[str, Any] = {"variant": label, "n_tools": n or "all"}
            t0 = time.monotonic()
            for set_name, (fname, prof) in TOOL_SETS.items():
                router, keys, _ = calibrated_router(reg, prof, emb, knobs)
                items = load_eval(SHARED / "eval" / fname, reg)
                s, res = evaluate(router, items, keys, n_tools=n, seed=args.seed)
                row[f"{set_name}_accuracy"] = s["accuracy"]
                row[f"{set_name}_turned_away"] = sum(r.result.tool is None for r in res) / len(res)
            for prof in NO_TOOL_PROFILES:
                router, keys, _ = calibrated_router(reg, prof, emb, knobs)
                _, res = evaluate(router, no_tool, keys, n_tools=n, seed=args.seed)
                fp = [r.result.tool is not None for r in res]
                row[f"fp_{prof}"] = sum(fp) / len(fp)
                row[f"fp_{prof}_before"] = sum(fp[:N_BEFORE]) / N_BEFORE
                row[f"fp_{prof}_after"] = sum(fp[N_BEFORE:]) / max(1, len(fp) - N_BEFORE)
            row["wall_s"] = round(time.monotonic() - t0, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    write_md(save_rows(args, rows), rows, args)


def write_md(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    lines = [
        "# Relevance detection: false tool calls vs tool requests turned away",
        "",
        f"Embedder `{args.embedder}`, retrieval only (gate off, no reranker), seed {args.seed}. "
        f"`python bench/relevance.py`. No-tool FP = share of the {N_BEFORE} + 30 no-tool requests that still got "
        "a tool (before / after: written before / after the exemplars); turned away = tool requests answered "
        "with no tool.",
        "",
        "| variant | N | github_dev acc | turned away | mixed_dev acc | turned away | no-tool FP github_all "
        "(before / after) | FP desktop_all (before / after) | FP desktop_all_plus_github (before / after) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fps = " | ".join(
            f"{r[f'fp_{p}']:.3f} ({r[f'fp_{p}_before']:.3f} / {r[f'fp_{p}_after']:.3f})" for p in NO_TOOL_PROFILES
        )
        lines.append(
            f"| {r['variant']} | {r['n_tools']} | {r['github_dev_accuracy']:.3f} | {r['github_dev_turned_away']:.3f} "
            f"| {r['mixed_dev_accuracy']:.3f} | {r['mixed_dev_turned_away']:.3f} | {fps} |"
        )
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
