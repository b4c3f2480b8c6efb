"""The engine: prefix reuse is invisible in the output, and one coarse lock per turn keeps outputs
bit-identical under concurrency. The radix arena's own behaviour (donors, eviction, lanes) is in test_arena.py."""

from __future__ import annotations

import pytest
from threads import run_threads

from nexus_agent.engine import MAIN, SIDECAR, Engine, EngineConfig


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(EngineConfig(model="tiny", n_ctx=2048, n_batch=64, n_threads=1))
    yield eng
    eng.close()


def _turn(eng: Engine, user: int, turn: int) -> tuple[list[int], bytes]:
    """One turn: a sidecar look-up then a generation in the main sequence, from a clean state."""
    with eng.turn():
        eng.truncate(MAIN, 0)
        side = eng.model.tokenize(f"sidecar window for user {user}, turn {turn}")
        logits = eng.next_logits(side, seq=SIDECAR)
        prompt = eng.model.tokenize(f"User {user} asks question number {turn} about repositories")
        gen = eng.generate(prompt, seq=MAIN, max_tokens=12, keep=False)
        return gen.tokens, logits.tobytes()


def test_prefix_reuse_gives_the_same_greedy_output(engine: Engine) -> None:
    base = engine.model.tokenize("The agent lists the open issues of acme/api and then")
    with engine.turn():
        engine.truncate(MAIN, 0)
        fresh = engine.generate(base, max_tokens=10, keep=False)
        # same prompt again: everything but the last token comes from the cache
        again = engine.generate(base, max_tokens=10, keep=False)
    assert again.n_reused == len(base) - 1
    assert fresh.n_reused == 0
    assert again.tokens == fresh.tokens


def test_four_threads_are_bit_identical_to_serial(engine: Engine) -> None:
    users, turns = 4, 3
    serial = {(u, t): _turn(engine, u, t) for u in range(users) for t in range(turns)}
    concurrent: dict[tuple[int, int], tuple[list[int], bytes]] = {}

    def worker(u: int) -> None:
        for t in range(turns):
            concurrent[(u, t)] = _turn(engine, u, t)

    assert run_threads(worker, users) == []
    assert concurrent.keys() == serial.keys()
    for key, (toks, logits) in serial.items():
        assert concurrent[key][0] == toks, key
        assert concurrent[key][1] == logits, key


def test_prompt_larger_than_the_context_is_refused_cleanly(engine: Engine) -> None:
    with pytest.raises(ValueError, match="fills the"):
        engine.generate([1] * 2048, max_tokens=4)
    # the engine is still usable
    assert engine.generate(engine.model.tokenize("hello"), max_tokens=2, keep=False).n_prompt > 0


def test_the_llm_decision_keeps_its_system_prompt_warm_across_turns(engine: Engine) -> None:
    from nexus_agent.backend import LocalBackend
    from nexus_agent.registry import Tool
    from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker

    schema = {"type": "object", "properties": {}}
    cands = [
        Tool("time", "get_current_time", "Get the current time in a time zone.", schema),
        Tool("slack", "slack_post_message", "Post a message to a Slack channel.", schema),
    ]
    with engine.turn():
        decider = LocalBackend(engine).decider()
        rr = LLMChoiceReranker(decider)
        rr.rerank("what time is it in Tokyo?", cands)
    # another turn uses the main lane in between; the sidecar's slot keeps the decision's head
    engine.generate(engine.model.tokenize("An unrelated answer in the main lane"), max_tokens=4, keep=False)
    with engine.turn():
        assert rr.head_tokens > 100  # the instructions and worked examples
        assert engine.lane(SIDECAR).exact >= rr.head_tokens  # still held, exactly as a prefill computes it
        before = decider.n_decoded
        res = rr.rerank("post 'build is green' to #ci", cands)
        # only the request's own part (and the few name tokens picked) is decoded
        assert decider.n_decoded - before <= res.n_prompt_tokens - rr.head_tokens + 8


def test_prompt_lookup_gives_greedy_decodings_tokens(engine: Engine) -> None:
    """Drafted tokens are kept only while greedy selection would pick them: the output does not change."""
    prompt = engine.model.tokenize("acme/api issue 12: rate limiting. acme/api issue 12: rate limiting. acme/api")
    with engine.turn():
        engine.truncate(MAIN, 0)
        plain = engine.generate(prompt, max_tokens=40, keep=False, lookup=0)
        assert engine.drafts.checked == 0
        drafted = engine.generate(prompt, max_tokens=40, keep=False, lookup=4)
        checked = engine.drafts.checked
        kept = engine.generate(prompt, max_tokens=40, keep=True, lookup=4)
        tail = engine.generate(prompt + kept.tokens, max_tokens=1, keep=False, lookup=0)
        ref = engine.generate(prompt, max_tokens=41, keep=False, lookup=0)
    assert drafted.tokens == plain.tokens
    assert checked > 0  # drafts were made and checked, not skipped
    # with keep=True the lane holds the prompt and exactly the kept tokens (no cell of a rejected draft)
    assert kept.tokens + tail.tokens == ref.tokens
