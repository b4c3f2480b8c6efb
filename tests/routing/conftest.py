from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("NEXUS_SHARED", Path(__file__).resolve().parents[3] / "shared"))
REGISTRY = SHARED / "mcp-registry"


@pytest.fixture(scope="session")
def registry_dir() -> Path:
    assert REGISTRY.is_dir(), f"shared registry not found at {REGISTRY} (set NEXUS_SHARED)"
    return REGISTRY


@pytest.fixture(scope="session")
def summary_keys() -> frozenset[str]:
    """The keys the routing issue requires in an eval-routing summary (the acceptance checks read them)."""
    return frozenset(
        {
            "n",
            "accuracy",
            "accuracy_ci95",
            "slb_top1",
            "slb_top3",
            "candidate_recall",
            "escalation_rate",
            "no_tool_false_positive_rate",
            "latency_ms_p50",
            "latency_ms_p95",
        }
    )


@pytest.fixture(scope="session")
def eval_queries(registry_dir: Path) -> frozenset[str]:
    """Every query of ../shared/eval/*.jsonl, stripped and lower-cased: what generated data must not copy."""
    return frozenset(
        json.loads(line)["query"].strip().lower()
        for f in (registry_dir.parent / "eval").glob("*.jsonl")
        for line in f.read_text().splitlines()
        if line.strip()
    )
