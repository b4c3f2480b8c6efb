"""KeyDiff (Park et al., 2025): keep the keys least like the others, with no query at all.

Per layer and KV head, each cached key is compared with the anchor, the mean of the unit-normalised keys; a key's
score is minus its cosine to the anchor (distinct keys carry information the others do not). A cell's score is the
mean over layers and KV heads, since llama.cpp drops a cell from every layer at once. It reads K only, so it needs
neither the observed queries nor attention scores: the scorer that works with flash attention on.
"""

from __future__ import annotations

import numpy as np

from nexus_agent.kv.attention import block_sums
from nexus_agent.kv.policies.base import F64, Observation, Policy


def key_distinctness(k: list[np.ndarray]) -> F64:
    """Per cell, −cos(k, anchor) averaged over layers and KV heads: ``k`` is per layer [n, G, D] → [n]."""
    n = k[0].shape[0] if k else 0
    out = np.zeros(n, np.float64)
    for kl in k:
        unit = kl / np.maximum(np.linalg.norm(kl, axis=-1, keepdims=True), 1e-12)  # [n, G, D]
        anchor = unit.mean(axis=0)  # [G, D]
        anchor /= np.maximum(np.linalg.norm(anchor, axis=-1, keepdims=True), 1e-12)
        out -= np.einsum("ngd,gd->ng", unit, anchor).mean(axis=1)
    return out / max(len(k), 1)


class KeyDiff(Policy):
    name = "keydiff"
    window = 0
    needs_attention = False

    def priority(self, obs: Observation) -> F64:
        return block_sums(key_distinctness(obs.cache.k), obs.block)
