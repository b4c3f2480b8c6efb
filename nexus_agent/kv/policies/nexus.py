"""Nexus Sampling (paper 000): Nexus scoring, then weighted-reservoir selection.

* Eq. 1: per observed query row, the block distribution Ŝ (mass per 32-token block, row-normalised).
* Eq. 3: direct score a = the mean row. Eq. 4: the walk C ← C + γ_q a(q), γ_q = 1 + ⟨a(q), C⟩ over the last H rows,
  c̃ = C / ‖C‖₁. Eq. 2: s = a + λ c̃. Eq. 5: w = s + ε · r, r a ramp from 0 (oldest block) to 1 (newest).
* Eq. 6: the n-averaged reservoir priority π_j = (1/n) Σᵢ uᵢ^(1/w_j), computed in log space (log-mean-exp of
  log uᵢ / w_j): with w ≈ 1/Nk the powers underflow float64 past a few hundred blocks, and ties at 0 would hand
  the choice to the index. A block with w = 0 gets −∞ (never sampled); every w > 0 keeps a positive chance.

Defaults of §5.1: W = 16, H = 3, λ = 0.5, ε = 1e-6, n = 5. Seeded: one generator per policy instance.
"""

from __future__ import annotations

import numpy as np

from nexus_agent.kv.policies.base import F64, Observation, Policy


def walk_state(rows: F64, steps: int) -> F64:
    """Eq. 4 over the last ``steps`` rows of ``rows`` [W, Nk], oldest first → the accumulator C [Nk]."""
    c = np.zeros(rows.shape[1], np.float64)
    for a_q in rows[-steps:] if steps > 0 else rows[:0]:
        c += (1.0 + float(a_q @ c)) * a_q
    return c


def walk(rows: F64, steps: int) -> F64:
    """c̃ = C / ‖C‖₁ [Nk] (zeros when no row has mass)."""
    c = walk_state(rows, steps)
    total = c.sum()
    return c / total if total > 0 else c


def reservoir_priority(w: F64, n: int, rng: np.random.Generator) -> F64:
    """Eq. 6 in log space: log((1/n) Σᵢ uᵢ^(1/w)) per block; −∞ where w ≤ 0."""
    u = rng.random((n, w.shape[0]))
    u = np.maximum(u, np.finfo(np.float64).tiny)  # log(0) would be -inf for a positive weight
    out = np.full(w.shape[0], -np.inf)
    pos = w > 0
    x = np.log(u[:, pos]) / w[pos]  # [n, k], all ≤ 0
    m = x.max(axis=0)
    out[pos] = m + np.log(np.exp(x - m).sum(axis=0)) - np.log(n)
    return out


class Nexus(Policy):
    name = "nexus"
    window = 16
    walk_steps = 3
    lam = 0.5
    eps_tie = 1e-6
    n_avg = 5

    def weights(self, obs: Observation) -> F64:
        """Eq. 5: w [Nk] ≥ 0."""
        rows = obs.block_rows(self.window)
        nk = obs.n_blocks
        if rows.shape[0] == 0:
            a = np.zeros(nk)
            c = np.zeros(nk)
        else:
            a = rows.mean(axis=0)
            c = walk(rows, self.walk_steps)
        ramp = np.arange(nk, dtype=np.float64) / max(nk - 1, 1)
        return a + self.lam * c + self.eps_tie * ramp

    def priority(self, obs: Observation) -> F64:
        p = reservoir_priority(self.weights(obs), self.n_avg, self.rng)
        # select_blocks wants finite priorities: a zero-weight block ranks below every sampled one
        finite = p[np.isfinite(p)]
        floor = (finite.min() if finite.size else 0.0) - 1.0
        return np.where(np.isfinite(p), p, floor)
