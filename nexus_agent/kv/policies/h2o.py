"""H2O (Zhang et al., 2023): heavy hitters by attention accumulated over every observed query, across eviction
steps; deterministic top-K.

The accumulator is per cell and survives eviction steps (cells that stay keep their total). Each query row is
counted once: rows already added at an earlier step (the same positions) are skipped.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from nexus_agent.kv.attention import block_sums
from nexus_agent.kv.policies.base import F64, Observation, Policy


class H2O(Policy):
    name = "h2o"
    window = 32

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.acc = np.zeros(0, np.float64)  # [n] accumulated attention per cell
        self.counted_upto = -1  # the largest query position already added

    def priority(self, obs: Observation) -> F64:
        n = obs.cache.n
        if self.acc.shape[0] < n:  # cells decoded since the last step start at zero
            self.acc = np.concatenate([self.acc, np.zeros(n - self.acc.shape[0])])
        self.acc = self.acc[:n]
        new = obs.qpos > self.counted_upto
        if new.any():
            att = obs.attention()
            self.acc += att[new].sum(axis=0, dtype=np.float64)
            self.counted_upto = int(obs.qpos[new].max())
        return block_sums(self.acc, obs.block)

    def evicted(self, kept_cells: npt.NDArray[np.bool_]) -> None:
        n = kept_cells.shape[0]
        acc = np.concatenate([self.acc, np.zeros(max(0, n - self.acc.shape[0]))])[:n]
        self.acc = acc[kept_cells]
