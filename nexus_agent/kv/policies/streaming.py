"""StreamingLLM (Xiao et al., 2024): keep the attention sink and the most recent blocks; attention is not read."""

from __future__ import annotations

import numpy as np

from nexus_agent.kv.policies.base import F64, Observation, Policy


class Streaming(Policy):
    name = "streaming"
    window = 0
    needs_attention = False

    def priority(self, obs: Observation) -> F64:
        return np.arange(obs.n_blocks, dtype=np.float64)  # newer first; the sink is forced by the engine
