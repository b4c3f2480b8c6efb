"""What the retrieval benchmarks share: where the data lives and their common command-line options.

Imported as ``common`` by scripts run as ``python bench/<name>.py`` (their folder is first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from nexus_agent.registry import Registry
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.router import Router, RouterConfig, RouterOptions, build_router

ROOT = Path(__file__).resolve().parents[1]
# the vendored registry and eval sets (data/README.md); NEXUS_SHARED points at another copy of the same layout
SHARED = Path(os.environ.get("NEXUS_SHARED", ROOT / "data"))
NO_TOOL = ROOT / "tests" / "routing" / "data" / "no_tool_queries.jsonl"


def fields_of(group: str) -> list[str]:
    """The field names of one RouterConfig group."""
    return [f.name for f in fields(getattr(RouterConfig(), group))]


def retrieval_args(name: str, sizes: str, sizes_help: str) -> argparse.Namespace:
    """``--embedder``, ``--sizes`` (default ``sizes``), ``--seed`` and ``--out`` (``bench/results/<name>``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="minilm-tools")
    ap.add_argument("--sizes", default=sizes, help=sizes_help)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / name))
    return ap.parse_args()


# The ablation tables' flat knob names -> (RouterConfig group, field). The tables were written before the config
# was cut into groups, and their rows are still read by these names.
_GROUPED: dict[str, tuple[str, str]] = {
    **{k: ("retrieval", k) for k in fields_of("retrieval")},
    "gate": ("gate", "enabled"),
    **{k: ("gate", k) for k in fields_of("gate") if k != "enabled"},
    **{k: ("no_tool", k) for k in fields_of("no_tool")},
    "judge": ("judge", "enabled"),
    "judge_threshold": ("judge", "threshold"),
    "judge_ask": ("judge", "ask"),
    "followups": ("followups", "enabled"),
    **{f"followup_{k}": ("followups", k) for k in fields_of("followups") if k != "enabled"},
}


def flat_config(knobs: dict[str, Any], base: RouterConfig | None = None) -> RouterConfig:
    """``base`` (default ``RouterConfig()``) with ``knobs`` set, by the tables' flat names (KeyError naming an
    unknown one)."""
    groups: dict[str, dict[str, Any]] = {}
    for k, v in knobs.items():
        group, name = _GROUPED[k]
        groups.setdefault(group, {})[name] = v
    return (base or RouterConfig()).tuned(**groups)


def split_knobs(knobs: dict[str, Any], **options: Any) -> tuple[RouterOptions, RouterConfig]:
    """``knobs`` (RouterOptions fields and the tables' flat RouterConfig names alike) plus ``options``, as
    ``build_router`` takes them: (options, tuning)."""
    own = {k: v for k, v in knobs.items() if k in RouterOptions.model_fields}
    rest = {k: v for k, v in knobs.items() if k not in own}
    return RouterOptions(**own, **options), flat_config(rest)


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
