"""LORE-KV (paper 002): lookahead output-perturbation with reliability-weighted ensembles.

* Eq. 1: M continuations of T tokens sampled from the model, in scratch sequences that share the lane's cells
  (``seq_cp``) and are dropped afterwards (the engine's :class:`~nexus_agent.kv.policies.base.Lookahead`).
* Eqs. 2–4 (LORE-KV /E): c_u = log q(y_u) + H(q_u); R_m = β c̄_m − γ H̄_m; ω = softmax(R).
* Eqs. 5–6: the leave-one-out deletion cost e_{q,i} = ‖W_Oₕ Δo‖², Δo = a/(1 − a + ε) (v_i − o_q), per layer and
  head (nexus_agent/kv/attention.py ``deletion_costs``), summed over layers and heads because llama.cpp drops a
  token from every layer at once.
* Eq. 7: S_i = mean over the prompt window + λ_L Σ_m ω_m mean over continuation m; a block's priority is the sum
  over its cells. Deterministic top-K.

Defaults of Table 4: w = 32, M = 4, T = 8, λ_L = 1, ε = 1e-6, (β, γ, λ_D) = (1, 1.3, 0).
"""

from __future__ import annotations

import numpy as np

from nexus_agent.kv.attention import block_sums
from nexus_agent.kv.policies.base import F64, Continuations, Observation, Policy


def reliability_weights(c: Continuations, beta: float = 1.0, gamma: float = 1.3) -> F64:
    """Eqs. 2–4: ω [M], summing to 1."""
    centred = c.logprob + c.entropy  # [T, M]
    r = beta * centred.mean(axis=0) - gamma * c.entropy.mean(axis=0)
    e = np.exp(r - r.max())
    return e / e.sum()


class Lore(Policy):
    name = "lore"
    window = 32
    needs_values = True
    needs_lookahead = True
    m = 4
    t = 8
    lam_lookahead = 1.0

    def priority(self, obs: Observation) -> F64:
        rows = min(self.window, obs.q.shape[0])
        score = np.zeros(obs.cache.n, np.float64)
        if rows:
            score += obs.deletion_costs(obs.q[-rows:], obs.qpos[-rows:]).mean(axis=0)
        if obs.lookahead is not None:
            cont = obs.lookahead.sample(self.m, self.t, self.rng)
            omega = reliability_weights(cont)
            e = obs.deletion_costs(cont.q, cont.qpos)  # [T·M, n], step-major
            per_m = e.reshape(cont.logprob.shape[0], cont.m, -1).mean(axis=0)  # [M, n]
            score += self.lam_lookahead * (omega @ per_m)
        return block_sums(score, obs.block)
