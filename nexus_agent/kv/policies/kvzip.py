"""KVzip-style reconstruction score (Kim et al., NeurIPS 2025): a cell matters as much as the context's own
reconstruction needs it, whatever is asked later.

The engine decodes a repeat prompt ("Repeat the previous text exactly:") and then the text to score, teacher-forced,
in a scratch sequence that shares the lane's cells (:class:`~nexus_agent.kv.policies.base.Reconstruction`). Each of
those query rows attends over the lane's cells and the pass's own earlier tokens (the causal softmax the model
computed); a cell's score per layer and KV head is the largest attention any reconstruction query of that head's
group gives it (KVzip Eq. 2), averaged over KV heads and layers because llama.cpp drops a cell from every layer.

What is reconstructed: inside the memory manager, the turn just completed (its results and answer), once; as a raw
policy, the tokens decoded since the last step. Its cost is a second prefill of that text, reported by the bench.
"""

from __future__ import annotations

import numpy as np

from nexus_agent.kv.attention import F32, block_sums, layer_probs
from nexus_agent.kv.policies.base import F64, Observation, Policy, Rebuilt

LIMIT = 512  # tokens reconstructed at most per scoring


def reconstruction_scores(rebuilt: Rebuilt, n: int) -> F64:
    """[n]: for the first ``n`` cells of ``rebuilt.cache`` (the lane's), the max attention over the pass's query
    rows and each KV head's grouped query heads, averaged over KV heads and layers."""
    out = np.zeros(n, np.float64)
    n_layer = rebuilt.q.shape[1]
    for layer in range(n_layer):
        p: F32 = layer_probs(rebuilt.q[:, layer], rebuilt.qpos, rebuilt.cache.k[layer], rebuilt.cache.pos)
        out += p[..., :n].max(axis=(1, 2)).mean(axis=0)  # [G, g, nq, n] → [G, n] → [n]
    return out / max(n_layer, 1)


class KVzip(Policy):
    name = "kvzip"
    window = 0
    needs_reconstruction = True

    def priority(self, obs: Observation) -> F64:
        n = obs.cache.n
        if obs.reconstruction is None or n == 0:
            return np.zeros(obs.n_blocks)
        return block_sums(reconstruction_scores(obs.reconstruction.run(LIMIT), n), obs.block)
