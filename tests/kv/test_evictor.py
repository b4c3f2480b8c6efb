"""KV budgets in the engine, on the tiny generated model: a budgeted lane never holds more than its budget, decodes
past n_ctx, keeps what must stay (the sink, the recent window, cells other slots share), logs every step, and
equals an unbudgeted lane bit for bit until its first eviction."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.engine.engine import MAIN, SIDECAR
from nexus_agent.kv.budget import KVBudget
from nexus_agent.kv.policies import POLICIES

BUDGET = 192


def _tokens(n: int, seed: int = 0) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(100, 5000, n)]


def _engine(policy: str = "nexus", budget: int | None = BUDGET, n_ctx: int = 512) -> Engine:
    return Engine(EngineConfig(model="tiny", n_ctx=n_ctx, n_slots=4, n_batch=64, kv_budget=budget, evict=policy))


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_budgeted_lane_stays_under_its_budget_through_prefill_and_decode_past_n_ctx(policy: str) -> None:
    eng = _engine(policy)
    try:
        prompt = _tokens(900)  # longer than the 512-token context
        g = eng.generate(prompt, MAIN, max_tokens=60)
        assert len(g.tokens) == 60
        lane = eng.lane(MAIN)
        kv = lane.kv
        assert kv is not None and kv.steps, "no eviction step ran"
        assert lane.slot is not None
        # what the sequence really holds: compacted positions 0..cells-1, never more cells than the budget
        assert eng.ctx.seq_pos_max(lane.slot) == kv.cells - 1 <= BUDGET - 1
        assert eng.ctx.seq_pos_min(lane.slot) == 0
        for step in kv.steps:
            assert step.cells_before <= BUDGET and step.cells_after <= BUDGET - 32
            assert 0 in step.kept, "the attention sink block was dropped"
            assert step.cells_before - 1 >= 0 and (step.cells_before - 1) // 32 in step.kept, "recent block dropped"
            assert sorted(set(step.kept + step.dropped)) == list(range(-(-step.cells_before // 32)))
        # the radix tree is offered only the KV before the first evicted token
        assert kv.evicted_from is not None and lane.exact <= kv.evicted_from
        assert all(p >= 0 for p in kv.pos[:32]) and len(kv.pos) == len(lane.tokens)
    finally:
        eng.close()


def test_until_its_first_eviction_a_budgeted_lane_gives_the_unbudgeted_logits_bit_for_bit() -> None:
    prompt = _tokens(150)
    logits = []
    for budget in (None, BUDGET):
        eng = _engine(budget=budget)
        try:
            eng.prefill(prompt, MAIN)
            logits.append(eng.ctx.logits_ith(-1))
            assert eng.lane(MAIN).kv is None or not eng.lane(MAIN).kv.steps
        finally:
            eng.close()
    np.testing.assert_array_equal(logits[0], logits[1])


def test_eviction_keeps_the_prefix_another_slot_shares() -> None:
    eng = _engine()
    try:
        shared = _tokens(96, seed=1)
        eng.prefill(shared + _tokens(5, seed=2), SIDECAR)  # another lane holds the same 96-token prefix
        before = eng.next_logits(shared + _tokens(5, seed=2), SIDECAR)
        eng.prefill(shared + _tokens(700, seed=3), MAIN)
        kv = eng.lane(MAIN).kv
        assert kv is not None and kv.steps
        assert all(p >= 0 for p in kv.pos[:96]), "a block that another slot shares was evicted"
        after = eng.next_logits(shared + _tokens(5, seed=2), SIDECAR)
        np.testing.assert_array_equal(before, after)
    finally:
        eng.close()


def test_a_lane_appending_to_its_compacted_trace_reuses_it() -> None:
    eng = _engine()
    try:
        trace = _tokens(600)
        eng.prefill(trace, MAIN)
        steps = len(eng.lane(MAIN).kv.steps)  # type: ignore[union-attr]
        reused = eng.prefill(trace + _tokens(20, seed=5), MAIN)
        assert reused == len(trace)  # only the new turn is decoded, into the evicted, compacted lane
        assert len(eng.lane(MAIN).kv.steps) >= steps  # type: ignore[union-attr]
        # a prompt that leaves the trace early goes back to the exact prefix and decodes the rest
        eng.prefill(trace[:10] + _tokens(50, seed=6), MAIN)
        kv = eng.lane(MAIN).kv
        assert kv is not None and kv.evicted_from is None and kv.cells == 60
    finally:
        eng.close()


def test_every_step_is_logged_with_what_it_kept_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    eng = _engine("snapkv")
    try:
        with caplog.at_level(logging.INFO, logger="nexus_agent.kv"):
            eng.prefill(_tokens(400), MAIN)
        lines = [r.getMessage() for r in caplog.records if "kv evict" in r.getMessage()]
        assert lines and all("[snapkv]" in s and "kept" in s and "dropped" in s and " ms" in s for s in lines)
    finally:
        eng.close()


def test_bad_budgets_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="too small"):
        KVBudget(40)
    with pytest.raises(ValueError, match="choose one of"):
        KVBudget(512, policy="lru")
    with pytest.raises(ValueError, match="flash"):
        Engine(EngineConfig(model="tiny", n_ctx=512, n_slots=4, n_batch=64, kv_budget=256, flash_attn=True))
    eng = _engine(budget=None)
    try:
        with pytest.raises(ValueError, match="observer"):
            eng.set_budget(MAIN, KVBudget(256))
    finally:
        eng.close()


def test_a_budget_filled_by_what_must_stay_goes_over_it_rather_than_fail(caplog: pytest.LogCaptureFixture) -> None:
    eng = _engine(budget=128)
    try:
        shared = _tokens(200, seed=1)
        eng.prefill([*shared, 7], SIDECAR)  # another slot holds a 200-token prefix: it cannot be evicted
        with caplog.at_level(logging.WARNING, logger="nexus_agent.kv"):
            eng.prefill(shared + _tokens(100, seed=2), MAIN)
        kv = eng.lane(MAIN).kv
        assert kv is not None and all(p >= 0 for p in kv.pos[:200])
        assert any("fill the 128-token budget" in r.getMessage() for r in caplog.records)
    finally:
        eng.close()
