"""The engine: prefix reuse is invisible in the output, and one coarse lock per turn keeps outputs
bit-identical under concurrency."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from nexus_agent.engine import MAIN, SIDECAR, Engine, EngineConfig


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(EngineConfig(model="tiny", n_ctx=2048, n_batch=64, n_threads=1))
    yield eng
    eng.close()


def _turn(eng: Engine, user: int, turn: int) -> tuple[list[int], bytes]:
    """One turn: a sidecar look-up then a generation in the main sequence, from a clean state."""
    with eng.turn():
        eng.free(MAIN)
        side = eng.model.tokenize(f"sidecar window for user {user}, turn {turn}")
        logits = eng.next_logits(side, seq=SIDECAR)
        eng.free(SIDECAR)
        prompt = eng.model.tokenize(f"User {user} asks question number {turn} about repositories")
        gen = eng.generate(prompt, seq=MAIN, max_tokens=12, keep=False)
        return gen.tokens, logits.tobytes()


def test_prefix_reuse_gives_the_same_greedy_output(engine: Engine) -> None:
    base = engine.model.tokenize("The agent lists the open issues of acme/api and then")
    with engine.turn():
        engine.free(MAIN)
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
    errors: list[BaseException] = []

    def worker(u: int) -> None:
        try:
            for t in range(turns):
                concurrent[(u, t)] = _turn(engine, u, t)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(u,)) for u in range(users)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert concurrent.keys() == serial.keys()
    for key, (toks, logits) in serial.items():
        assert concurrent[key][0] == toks, key
        assert concurrent[key][1] == logits, key


def test_prompt_larger_than_the_context_is_refused_cleanly(engine: Engine) -> None:
    with pytest.raises(ValueError, match="fills the"):
        engine.generate([1] * 2048, max_tokens=4)
    # the engine is still usable
    assert engine.generate(engine.model.tokenize("hello"), max_tokens=2, keep=False).n_prompt > 0


def test_a_pinned_head_survives_free_until_a_prompt_differs_within_it(engine: Engine) -> None:
    head = engine.model.tokenize("You pick the single tool that fulfils the user's request. Examples follow.")
    a = head + engine.model.tokenize(" Request: list the open issues")
    b = head + engine.model.tokenize(" Request: star the repository")
    with engine.turn():
        engine.free(SIDECAR)
        engine.pin(SIDECAR, 0)
        engine.next_logits(a, seq=SIDECAR)
        engine.pin(SIDECAR, len(head))
        engine.free(SIDECAR)
        assert engine._seqs[SIDECAR].tokens == head
        fresh = engine.next_logits(b, seq=SIDECAR).copy()
        assert engine.prefill(b, seq=SIDECAR) == len(b) - 1  # (the same prompt again: all but the last token)
        engine.free(SIDECAR)
        assert engine.prefill(b, seq=SIDECAR) == len(head)  # the head was kept, the rest decoded
        np.testing.assert_allclose(engine.ctx.logits_ith(-1), fresh, atol=0.6)
        # a prompt that differs inside the head shrinks the pin to what it shares
        other = engine.model.tokenize("Something else entirely, then the rest.")
        engine.prefill(other, seq=SIDECAR)
        engine.free(SIDECAR)
        shared = next((i for i, (x, y) in enumerate(zip(head, other, strict=False)) if x != y), 0)
        assert engine._seqs[SIDECAR].tokens == other[:shared]
        engine.pin(SIDECAR, 0)
        engine.free(SIDECAR)
        assert engine._seqs[SIDECAR].tokens == []


def test_the_llm_decision_keeps_its_system_prompt_in_the_sidecar_across_turns(engine: Engine) -> None:
    from nexus_agent.registry import Tool
    from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker
    from nexus_agent.routing.rerank.session import PrefixCachedLLM

    schema = {"type": "object", "properties": {}}
    cands = [
        Tool("time", "get_current_time", "Get the current time in a time zone.", schema),
        Tool("slack", "slack_post_message", "Post a message to a Slack channel.", schema),
    ]
    with engine.turn():
        engine.free(SIDECAR)
        rr = LLMChoiceReranker(llm=PrefixCachedLLM(engine=engine, seq=SIDECAR))
        rr.rerank("what time is it in Tokyo?", cands)
        engine.free(SIDECAR)  # what the agent does after routing each turn
        assert rr.head_tokens > 100  # the instructions and worked examples
        assert len(engine._seqs[SIDECAR].tokens) == rr.head_tokens
        before = rr.llm.n_decoded
        res = rr.rerank("post 'build is green' to #ci", cands)
        # only the request's own part (and the few name tokens picked) is decoded
        assert rr.llm.n_decoded - before <= res.n_prompt_tokens - rr.head_tokens + 8
        engine.pin(SIDECAR, 0)
        engine.free(SIDECAR)
