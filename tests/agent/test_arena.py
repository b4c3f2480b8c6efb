"""The radix arena in the engine (engine/arena.py over native/radix): a prompt reuses the longest cached prefix
of any lane, bit-identically to a cold prefill; a full cache evicts the least recently used slot no turn holds;
conversations on one engine are bit-identical to the same conversations run alone."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from threads import run_threads

from nexus_agent.engine import MAIN, SIDECAR, Engine, EngineConfig, KVCacheFull
from nexus_agent.engine.arena import ArenaFull

HEAD = "You are a careful assistant for a developer's GitHub work. Answer briefly. " * 6


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    eng = Engine(EngineConfig(model="tiny", n_ctx=2048, n_batch=64, n_threads=1))
    yield eng
    eng.close()


def _cold_logits(tokens: list[int], model: str = "tiny") -> np.ndarray:
    """Logits after ``tokens`` prefilled from nothing, in an engine of its own (no slot to borrow from)."""
    eng = Engine(EngineConfig(model=model, n_ctx=2048, n_batch=64, n_threads=1))
    try:
        eng.prefill(tokens, seq=MAIN)
        return eng.ctx.logits_ith(-1).copy()
    finally:
        eng.close()


def test_a_lane_borrows_the_longest_prefix_from_another_lanes_slot(engine: Engine) -> None:
    head = engine.model.tokenize(HEAD)
    a = head + engine.model.tokenize(" User: list the open issues of acme/api.")
    b = head + engine.model.tokenize(" User: star the repository acme/web please.")
    lane = engine.open_lane()
    try:
        engine.prefill(a, seq=MAIN)
        before = engine.arena.stats.donor_copies
        reused = engine.prefill(b, seq=lane)
        shared = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
        assert reused == shared >= len(head) - 1
        assert engine.arena.stats.donor_copies == before + 1
        assert engine.lane(lane).slot != engine.lane(MAIN).slot
        # the warm turn's logits are the cold prefill's, bit for bit (FA off, f16 K)
        assert np.array_equal(engine.ctx.logits_ith(-1), _cold_logits(b))
        # the donor still holds its own prompt: switching back decodes only the last token
        assert engine.prefill(a, seq=MAIN) == len(a) - 1
    finally:
        engine.close_lane(lane)


def test_the_greedy_continuation_of_a_warm_lane_equals_a_cold_one(engine: Engine) -> None:
    head = engine.model.tokenize(HEAD)
    prompt = head + engine.model.tokenize(" User: what changed in the last release?")
    engine.prefill(head + engine.model.tokenize(" something else"), seq=SIDECAR)
    lane = engine.open_lane()
    try:
        warm = engine.generate(prompt, seq=lane, max_tokens=12, keep=False)
        assert warm.n_reused >= len(head) - 1
    finally:
        engine.close_lane(lane)
    cold_engine = Engine(EngineConfig(model="tiny", n_ctx=2048, n_batch=64, n_threads=1))
    try:
        cold = cold_engine.generate(prompt, max_tokens=12, keep=False)
    finally:
        cold_engine.close()
    assert cold.n_reused == 0
    assert warm.tokens == cold.tokens


def test_spliced_kv_is_never_offered_to_another_lane(engine: Engine) -> None:
    toks = engine.model.tokenize(HEAD + " spliced tail of a decision prompt")
    with engine.turn():
        engine.prefill(toks, seq=SIDECAR)
        engine.set_record(SIDECAR, toks, exact=10)  # as the splicer does: exact KV ends at the first off-anchor block
        assert engine.arena.tree.size(engine.lane(SIDECAR).slot) == 10
        lane = engine.open_lane()
        # another lane may take the exact part only (MAIN may hold a longer exact prefix of the same head)
        donor, shared = engine.arena.match(toks)
        assert donor != engine.lane(SIDECAR).slot or shared <= 10
        engine.close_lane(lane)
    engine.truncate(SIDECAR, 0)


def test_a_full_cache_evicts_the_least_recently_used_unlocked_slot_and_retries() -> None:
    eng = Engine(EngineConfig(model="tiny", n_ctx=256, n_batch=64, n_threads=1, n_slots=4))
    try:
        words = ["alpha", "bravo", "charlie", "delta", "echo"]
        prompts = [eng.model.tokenize(" ".join(f"{w}{i}" for i in range(60)))[:90] for w in words]
        assert all(len(p) == 90 for p in prompts)
        lanes = [eng.open_lane() for _ in prompts]
        for lane, p in zip(lanes[:2], prompts[:2], strict=True):
            eng.prefill(p, seq=lane)
        # 180 of 256 cells are taken: the third prompt needs the first lane's cells, the least recently used
        eng.prefill(prompts[2], seq=lanes[2])
        assert eng.arena.stats.evictions >= 1
        assert eng.lane(lanes[0]).tokens == []
        assert eng.lane(lanes[1]).tokens == prompts[1]
        # the evicted lane comes back by decoding again, and is the same as before
        assert eng.prefill(prompts[0], seq=lanes[0]) == 0
        assert np.array_equal(eng.ctx.logits_ith(-1), _cold_logits(prompts[0]))
        # inside one turn, a slot the turn used is locked: when every other slot is locked too, the turn fails
        # cleanly with KVCacheFull and the lanes keep what they held
        with eng.turn():
            assert eng.prefill(prompts[0], seq=lanes[0]) == 89  # the turn holds lane 0 now
            eng.prefill(prompts[3], seq=lanes[3])  # evicts lane 2, the only slot no turn holds
            assert eng.lane(lanes[2]).tokens == []
            with pytest.raises(KVCacheFull, match="context is full"):
                eng.prefill(prompts[4], seq=lanes[4])
            assert eng.lane(lanes[0]).tokens == prompts[0]
            assert eng.lane(lanes[3]).tokens == prompts[3]
        assert eng.lane(lanes[4]).tokens == []
        eng.prefill(prompts[4], seq=lanes[4])  # after the turn the others may be evicted again
        assert eng.lane(lanes[4]).tokens == prompts[4]
    finally:
        eng.close()


def test_every_slot_locked_by_one_turn_is_a_clear_error() -> None:
    eng = Engine(EngineConfig(model="tiny", n_ctx=512, n_batch=64, n_threads=1, n_slots=2))
    try:
        with eng.turn():
            eng.prefill(eng.model.tokenize("one"), seq=eng.open_lane())
            eng.prefill(eng.model.tokenize("two"), seq=eng.open_lane())
            with pytest.raises(ArenaFull, match="all 2 arena slots"):
                eng.prefill(eng.model.tokenize("three"), seq=eng.open_lane())
        assert eng.arena.tree.stats()["locked_slots"] == 0
    finally:
        eng.close()


def _turn(eng: Engine, lane: int, user: int, t: int, history: list[int]) -> tuple[list[int], list[int], bytes]:
    """One turn of a conversation: its request, a short greedy reply; (new history, reply tokens, last logits)."""
    history = history + eng.model.tokenize(f" User {user} asks question {t} about repository {user * 7}.")
    gen = eng.generate(history, seq=lane, max_tokens=6)
    return history + gen.tokens, gen.tokens, eng.ctx.logits_ith(-1).tobytes()


def test_four_conversations_on_four_threads_are_bit_identical_to_the_same_turns_run_serially() -> None:
    """Turns of different conversations serialise on the engine's lock, so threads change nothing but the order
    in which turns take it: replaying that order on one thread gives the same bytes. (Against each conversation run
    on an engine of its own, the logits can differ in the last bits: llama.cpp sums attention over the cache in
    cell order, and other conversations' cells change where a conversation's cells land.)"""
    users, turns = 4, 3
    shared = Engine(EngineConfig(model="tiny", n_ctx=4096, n_batch=64, n_threads=1))
    head = shared.model.tokenize(HEAD)
    together: dict[tuple[int, int], tuple[list[int], bytes]] = {}
    order: list[tuple[int, int]] = []

    def worker(user: int) -> None:
        lane, history = shared.open_lane(), head
        for t in range(turns):
            with shared.turn():
                history, toks, logits = _turn(shared, lane, user, t, history)
                order.append((user, t))
            together[(user, t)] = (toks, logits)

    try:
        assert run_threads(worker, users) == []
        assert shared.arena.stats.donor_copies >= users - 1  # each later conversation borrowed the head
    finally:
        shared.close()

    serial = Engine(EngineConfig(model="tiny", n_ctx=4096, n_batch=64, n_threads=1))
    try:
        lanes: dict[int, int] = {}
        histories: dict[int, list[int]] = {}
        for user, t in order:
            lane = lanes.setdefault(user, serial.open_lane())
            histories[user], toks, logits = _turn(serial, lane, user, t, histories.get(user, head))
            assert (toks, logits) == together[(user, t)], (user, t)
    finally:
        serial.close()

    # each conversation's first turn, against the same turn on an engine of its own: the same reply, and logits
    # equal up to the summation order of attention over differently placed cells
    for user in range(users):
        alone = Engine(EngineConfig(model="tiny", n_ctx=4096, n_batch=64, n_threads=1))
        try:
            _, toks, logits = _turn(alone, MAIN, user, 0, head)
        finally:
            alone.close()
        assert toks == together[(user, 0)][0]
        np.testing.assert_allclose(
            np.frombuffer(logits, np.float32), np.frombuffer(together[(user, 0)][1], np.float32), atol=0.05
        )


@pytest.mark.real_model
def test_a_warm_prompt_on_a_real_model_gives_the_cold_logits_bit_for_bit() -> None:
    eng = Engine(EngineConfig(model="qwen0.5b", n_ctx=2048, n_threads=2))
    try:
        head = eng.model.tokenize(HEAD)
        a = head + eng.model.tokenize(" User: list the open issues of acme/api.")
        b = head + eng.model.tokenize(" User: who reviewed the last pull request on acme/web?")
        eng.prefill(a, seq=MAIN)
        lane = eng.open_lane()
        assert eng.prefill(b, seq=lane) >= len(head) - 1
        warm = eng.ctx.logits_ith(-1).copy()
    finally:
        eng.close()
    cold = Engine(EngineConfig(model="qwen0.5b", n_ctx=2048, n_threads=2))
    try:
        assert cold.prefill(b, seq=MAIN) == 0
        assert np.array_equal(warm, cold.ctx.logits_ith(-1))
    finally:
        cold.close()
