"""What the retrieval benchmarks share: where the data lives and their common command-line options.

Imported as ``common`` by scripts run as ``python bench/<name>.py`` (their folder is first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from nexus_agent.registry import Registry
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.router import Router, RouterConfig, RouterOptions, build_router

ROOT = Path(__file__).resolve().parents[1]
# the vendored registry and eval sets (data/README.md); NEXUS_SHARED points at another copy of the same layout
SHARED = Path(os.environ.get("NEXUS_SHARED", ROOT / "data"))
NO_TOOL = ROOT / "tests" / "routing" / "data" / "no_tool_queries.jsonl"


def retrieval_args(name: str, sizes: str, sizes_help: str) -> argparse.Namespace:
    """``--embedder``, ``--sizes`` (default ``sizes``), ``--seed`` and ``--out`` (``bench/results/<name>``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="minilm-tools")
    ap.add_argument("--sizes", default=sizes, help=sizes_help)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / name))
    return ap.parse_args()


def split_knobs(knobs: dict[str, Any], **options: Any) -> tuple[RouterOptions, RouterConfig]:
    """``knobs`` (RouterOptions and RouterConfig fields alike, as the ablation tables list them) plus ``options``,
    as ``build_router`` takes them: (options, tuning)."""
    own = {k: v for k, v in knobs.items() if k in RouterOptions.model_fields}
    rest = {k: v for k, v in knobs.items() if k not in own}
    return RouterOptions(**own, **options), replace(RouterConfig(), **rest)


def calibrated_router(
    reg: Registry, profile: str, emb: Embedder, knobs: dict[str, Any]
) -> tuple[Router, list[str], dict[str, float]]:
    """A retrieval-only router over ``profile`` with ``knobs`` (:func:`split_knobs`), τ and the relevance floor
    calibrated: (router, qualified names, calibration)."""
    tools = reg.profile(profile)
    options, tuning = split_knobs(knobs, reranker="none")
    router = build_router(tools, options, embedder=emb, tuning=tuning)
    calib = router.calibrate()
    return router, [t.qualified_name for t in tools], calib


def save_rows(args: argparse.Namespace, rows: list[dict[str, Any]]) -> Path:
    """Write ``<out>.json`` (the options and the rows); returns the ``<out>.md`` path for the table."""
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1) + "\n")
    return out.with_suffix(".md")
