"""Depth-adaptive repair of spliced blocks: the schedule (how many tokens) and the policies (which tokens).

Policies, one file each, compared at equal budget in ``bench/splice_fidelity.py``: ``suffix`` (paper 003),
``epic`` (first tokens), ``cacheblend`` (most context-sensitive tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

from nexus_agent.splice.repair import cacheblend, epic, suffix  # noqa: F401  (they register themselves)
from nexus_agent.splice.repair.base import PlacedBlock, RepairPolicy, RepairSchedule
from nexus_agent.splice.repair.registry import register_repair, repair_names, repair_policy

DEFAULT_POLICY = "epic"

__all__ = [
    "DEFAULT_POLICY",
    "PlacedBlock",
    "RepairPolicy",
    "RepairSchedule",
    "plan_repair",
    "register_repair",
    "repair_names",
    "repair_policy",
]


def plan_repair(blocks: Sequence[PlacedBlock], schedule: RepairSchedule, policy: RepairPolicy) -> list[int]:
    """Absolute positions to re-decode, sorted: each block's budget, spent where ``policy`` says."""
    out: list[int] = []
    for b in blocks:
        budget = schedule.budget(b.n, b.delta)
        if budget:
            out.extend(int(b.start + o) for o in policy.select(b, budget))
    return sorted(out)
