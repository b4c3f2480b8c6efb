"""Contract tests over every registered eviction policy, and the two properties Nexus Sampling rests on: the
reservoir's inclusion frequency rises with weight and stays positive (paper 000 Lemma 4.1), and the walk amplifies
a hub block over its plain average (Theorem 4.2)."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_agent.kv.attention import CacheView
from nexus_agent.kv.policies import POLICIES, Observation, make_policy
from nexus_agent.kv.policies.base import Continuations
from nexus_agent.kv.policies.nexus import reservoir_priority, walk, walk_state
from nexus_agent.kv.select import select_blocks

L, G, H, D, BLOCK = 2, 1, 2, 8, 4


class RandomLookahead:
    """Continuations with random query rows (the engine samples real ones; tests/kv/test_evictor.py runs them)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def sample(self, m: int, t: int, rng: np.random.Generator) -> Continuations:
        q = rng.standard_normal((m * t, L, H, D)).astype(np.float32)
        return Continuations(
            q=q,
            qpos=np.full(m * t, self.n + 1, np.int32),
            logprob=-rng.random((t, m)) * 3,
            entropy=rng.random((t, m)) * 2,
        )


def _observation(n_blocks: int, seed: int) -> Observation:
    rng = np.random.default_rng(seed)
    n = n_blocks * BLOCK - int(rng.integers(0, BLOCK))  # a partial last block now and then
    n = max(n, 1)
    nk = -(-n // BLOCK)
    cache = CacheView(
        pos=np.arange(n, dtype=np.int32) * 2,  # gaps, as after an eviction without compaction
        k=[rng.standard_normal((n, G, D)).astype(np.float32) for _ in range(L)],
        v=[rng.standard_normal((n, G, D)).astype(np.float32) for _ in range(L)],
    )
    forced = rng.random(nk) < 0.2
    forced[0] = forced[-1] = True
    w = rng.standard_normal((H, 3 * D, D)).astype(np.float32)
    gram = np.einsum("hed,hef->hdf", w, w)
    return Observation(
        cache=cache,
        q=rng.standard_normal((16, L, H, D)).astype(np.float32),
        qpos=np.full(16, 2 * n, np.int32),
        forced=forced,
        block=BLOCK,
        lookahead=RandomLookahead(2 * n),
        gram=lambda layer: gram,
    )


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("n_blocks", [1, 2, 9])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_policy_keeps_sorted_unique_blocks_with_the_forced_ones_at_every_budget(
    name: str, n_blocks: int, seed: int
) -> None:
    obs = _observation(n_blocks, seed)
    nk = obs.n_blocks
    policy = make_policy(name, seed=seed)
    pri = policy.priority(obs)
    assert pri.shape == (nk,) and np.all(np.isfinite(pri))
    n_forced = int(obs.forced.sum())
    for budget in (0, 1, nk - 1, nk, nk + 3):
        kept = select_blocks(pri, obs.forced, budget)
        assert list(kept) == sorted(set(kept.tolist())), "kept blocks must be sorted and unique"
        assert kept.min() >= 0 and kept.max() < nk
        assert set(np.flatnonzero(obs.forced)) <= set(kept.tolist()), "a forced block was dropped"
        assert len(kept) == max(n_forced, min(max(budget, 0), nk))


def test_selection_prefers_higher_priority_and_breaks_ties_toward_newer_blocks() -> None:
    forced = np.array([True, False, False, False, False, True])
    kept = select_blocks(np.array([0.0, 5.0, 1.0, 1.0, 9.0, 0.0]), forced, 4)
    assert list(kept) == [0, 1, 4, 5]
    kept = select_blocks(np.array([0.0, 1.0, 1.0, 1.0, 0.0, 0.0]), forced, 3)
    assert list(kept) == [0, 3, 5]
    with pytest.raises(ValueError, match="finite"):
        select_blocks(np.array([np.nan, 1.0]), np.array([False, False]), 1)


def test_a_seeded_policy_repeats_and_another_seed_can_differ() -> None:
    obs = _observation(40, 0)
    a = make_policy("nexus", seed=7).priority(obs)
    b = make_policy("nexus", seed=7).priority(obs)
    c = make_policy("nexus", seed=8).priority(obs)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("n_avg", [1, 5])
def test_reservoir_inclusion_rises_with_weight_and_is_positive_for_every_positive_weight(n_avg: int) -> None:
    w = np.linspace(0.5, 1.5, 8)
    rng = np.random.default_rng(0)
    keep, trials = 3, 4000
    hits = np.zeros(w.shape[0])
    none = np.zeros(w.shape[0], bool)
    for _ in range(trials):
        hits[select_blocks(reservoir_priority(w, n_avg, rng), none, keep)] += 1
    freq = hits / trials
    assert np.all(freq > 0), f"every positive weight must be sampled sometimes: {freq}"
    assert np.all(np.diff(freq) > -0.02), f"inclusion frequency must rise with weight: {freq}"
    assert freq[-1] > freq[0] + 0.2
    # a zero weight is never sampled ahead of a positive one
    p = reservoir_priority(np.array([0.0, 1e-3]), n_avg, rng)
    assert p[0] == -np.inf and np.isfinite(p[1])


def test_reservoir_priorities_do_not_underflow_with_thousands_of_blocks() -> None:
    w = np.full(5000, 1.0 / 5000)
    w[123] *= 50
    p = reservoir_priority(w, 5, np.random.default_rng(1))
    assert np.all(np.isfinite(p)) and len(set(p.tolist())) == 5000  # no ties at zero to hand to the index


def test_the_walk_amplifies_a_hub_block_over_its_plain_average() -> None:
    # Rows of kind A (3 in 4) attend the frequent blocks 0-1 and the hub 2; rows of kind B attend block 3 and 4-5.
    # Block 2 co-varies with the frequently attended blocks (h > 0), block 3 against them (h < 0). Theorem 4.2 is a
    # statement about E[C] = B_H a* + D_H h: normalised, the hub's share rises above a*, the peripheral's falls.
    kind_a = np.array([0.5, 0.3, 0.2, 0.0, 0.0, 0.0])
    kind_b = np.array([0.0, 0.0, 0.0, 0.2, 0.3, 0.5])
    rng = np.random.default_rng(0)
    direct, walked = np.zeros(6), np.zeros(6)
    for _ in range(3000):
        rows = np.where(rng.random((16, 1)) < 0.75, kind_a, kind_b)
        direct += rows.mean(axis=0)
        walked += walk_state(rows, steps=3)
    direct /= 3000
    walked /= walked.sum()
    assert walked[2] > direct[2] * 1.015, (walked, direct)  # about 1.03-1.05 over seeds; noise is under 0.5%
    assert walked[3] < direct[3] * 0.95, (walked, direct)
    # and the walk of rows with no mass is zero, not NaN
    assert np.all(walk(np.zeros((4, 6)), 3) == 0)


def test_unknown_policy_names_the_choices() -> None:
    with pytest.raises(ValueError, match="nexus"):
        make_policy("lru")


def test_h2o_keeps_accumulating_after_a_step_moved_positions_back_down() -> None:
    # after a step the engine compacts positions, so the next rows sit at positions no higher than the last step's
    obs = _observation(9, 0)
    h2o = make_policy("h2o")
    h2o.priority(obs)
    before = h2o.acc.copy()  # type: ignore[attr-defined]
    h2o.evicted(np.ones(obs.cache.n, bool))
    later = Observation(
        cache=obs.cache,
        q=np.random.default_rng(5).standard_normal(obs.q.shape).astype(np.float32),
        qpos=obs.qpos - 1,
        forced=obs.forced,
        block=BLOCK,
    )
    h2o.priority(later)
    np.testing.assert_allclose(h2o.acc, before + later.attention().sum(axis=0), rtol=1e-6)  # type: ignore[attr-defined]
