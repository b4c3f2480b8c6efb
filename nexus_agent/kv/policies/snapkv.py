"""SnapKV (Li et al., 2024): the observation window's attention, summed over its rows and average-pooled over
neighbouring tokens (kernel 7) so that a hit keeps its context; deterministic top-K."""

from __future__ import annotations

import numpy as np

from nexus_agent.kv.attention import block_sums
from nexus_agent.kv.policies.base import F64, Observation, Policy

POOL = 7


class SnapKV(Policy):
    name = "snapkv"
    window = 32

    def priority(self, obs: Observation) -> F64:
        votes = obs.attention(self.window).sum(axis=0, dtype=np.float64)  # [n]
        if votes.shape[0] >= POOL:
            votes = np.convolve(votes, np.full(POOL, 1.0 / POOL), mode="same")
        return block_sums(votes, obs.block)
