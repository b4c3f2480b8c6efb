"""H2O (Zhang et al., 2023): heavy hitters by attention accumulated over every observed query, across eviction
steps; deterministic top-K.

The accumulator is per cell and survives eviction steps (cells that stay keep their total). Each query row is
counted once: the engine empties a lane's query ring after every step (kv/evictor.py), so the rows a step sees were
all decoded since the last one. (Positions cannot tell old rows from new: compaction moves them back down.)
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

    def _aligned(self, n: int) -> F64:
        """The accumulator over ``n`` cells: cells decoded since the last step start at zero."""
        return np.concatenate([self.acc, np.zeros(max(0, n - self.acc.shape[0]))])[:n]

    def priority(self, obs: Observation) -> F64:
        self.acc = self._aligned(obs.cache.n)
        if obs.q.shape[0]:
            self.acc += obs.attention().sum(axis=0, dtype=np.float64)
        return block_sums(self.acc, obs.block)

    def evicted(self, kept_cells: npt.NDArray[np.bool_]) -> None:
        self.acc = self._aligned(kept_cells.shape[0])[kept_cells]
