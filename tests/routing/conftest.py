from __future__ import annotations

import pytest


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
