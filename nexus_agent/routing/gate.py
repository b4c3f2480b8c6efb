"""Margin gate and its calibration on adversarial pairs built from the registry itself.

Gate: if ``top1 - top2 >= tau`` the retrieval decision is final (``auto``); otherwise it escalates to the
reranker over the candidate pool.

Calibration (never touches evaluation data): for every tool A, its nearest neighbour B by document embedding
is a near-duplicate candidate; the pairs whose similarity is in the top ``dup_fraction`` are the adversarial
pairs. The queries that separate them are A's *held-out* synthetic queries (generated from A's definition but
not indexed) or, when a tool has none, its description's first sentence. τ is the ``percentile``-th percentile
of the router's top-2 margin over those queries, so the reranker fires on the lowest-confidence ~20%.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Gate:
    tau: float

    def decide(self, margin: float) -> bool:
        """True → auto (no escalation)."""
        return bool(margin >= self.tau)


def adversarial_pairs(doc_vectors: npt.NDArray[np.float32], dup_fraction: float = 0.3) -> list[tuple[int, int]]:
    """(A, B) index pairs: B is A's nearest neighbour and the pair is among the most similar ``dup_fraction``.

    ``doc_vectors``: float32 ``[n_tools, dim]`` unit rows.
    """
    n = len(doc_vectors)
    if n < 2:
        return []
    sims = doc_vectors @ doc_vectors.T
    np.fill_diagonal(sims, -np.inf)
    nn = np.argmax(sims, axis=1)
    nn_sim = sims[np.arange(n), nn]
    cut = np.quantile(nn_sim, 1.0 - dup_fraction)
    return [(i, int(nn[i])) for i in range(n) if nn_sim[i] >= cut]


def calibrate_tau(
    margins_of: Callable[[Sequence[str]], Sequence[float]],
    queries: Sequence[str],
    percentile: float = 20.0,
) -> tuple[float, list[float]]:
    """τ = ``percentile`` of ``margins_of(queries)``; returns (τ, margins)."""
    if not queries:
        raise ValueError("calibrate_tau: no adversarial queries (registry too small?)")
    margins = [float(m) for m in margins_of(queries)]
    return float(np.percentile(margins, percentile)), margins
