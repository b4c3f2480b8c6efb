from __future__ import annotations

import numpy as np
import pytest

from nexus_agent.evaluation.stats import wilson_ci
from nexus_agent.routing.gate import Gate, adversarial_pairs, calibrate_tau


def test_wilson_known_values() -> None:
    lo, hi = wilson_ci(89, 100)
    assert lo == pytest.approx(0.8137, abs=5e-4) and hi == pytest.approx(0.9375, abs=5e-4)  # paper: [81.4, 93.7]
    lo, hi = wilson_ci(74, 100)
    assert lo == pytest.approx(0.646, abs=1e-3) and hi == pytest.approx(0.816, abs=1e-3)
    assert wilson_ci(0, 10)[0] == 0.0 and wilson_ci(10, 10)[1] == 1.0
    assert wilson_ci(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_ci(11, 10)


def test_adversarial_pairs_pick_near_duplicates() -> None:
    rng = np.random.default_rng(0)
    base = rng.standard_normal((10, 16)).astype(np.float32)
    dup = base[0] + 0.01 * rng.standard_normal(16).astype(np.float32)  # near-duplicate of tool 0
    v = np.vstack([base, dup])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    pairs = adversarial_pairs(v, dup_fraction=0.2)
    assert (0, 10) in pairs and (10, 0) in pairs
    assert len(pairs) == 4  # ceil(0.2 * 11) tools at or above the cut, each with its nearest neighbour


def test_calibrate_tau_is_percentile_and_gate_splits() -> None:
    margins = np.linspace(0.0, 1.0, 101)
    tau, ms = calibrate_tau(lambda qs: [margins[int(q)] for q in qs], [str(i) for i in range(101)], 20.0)
    assert tau == pytest.approx(0.2)
    g = Gate(tau)
    escalated = sum(not g.decide(m) for m in ms)
    assert escalated == 20
    with pytest.raises(ValueError):
        calibrate_tau(lambda qs: [], [], 20.0)
