"""The memory manager in the engine, on the tiny generated qwen2 model (its byte-level vocabulary spells the chat
template, so segments are known): a conversation's lane stays under its budget, pins stay while anything else may
go, whole spans go, every turn is scored exactly once by every registered scorer, and with flash attention on the
scorers that read attention decline and keydiff scores instead."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import numpy as np
import pytest

from nexus_agent.agent.history import Call, Conversation, Turn
from nexus_agent.agent.prompts import SYSTEM_MAIN
from nexus_agent.agent.turn import mark_trace, next_heads
from nexus_agent.backend.local import LocalBackend
from nexus_agent.backend.segmenting import segment
from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.engine.engine import MAIN
from nexus_agent.kv import evictor as evictor_mod
from nexus_agent.kv.memory import units
from nexus_agent.kv.policies import POLICIES, make_policy
from nexus_agent.kv.segments import SegKind

BUDGET = 1024


def _engine(policy: str = "keydiff", budget: int | None = BUDGET, flash: bool = False) -> Engine:
    return Engine(
        EngineConfig(
            model="tiny-qwen2",
            n_ctx=4096,
            n_slots=4,
            n_batch=64,
            kv_budget=budget,
            evict=policy,
            kv_manager=budget is not None,
            flash_attn=flash,
        )
    )


def _turn(t: int, rng: np.random.Generator) -> Turn:
    rows = [
        {"number": int(100 * t + i), "title": f"Issue {t}-{i}", "state": "open", "body": "lorem ipsum dolor " * 30}
        for i in range(3)
    ]
    out = json.dumps({"total_count": 3, "items": rows})
    call = Call("github__search_issues", {"query": f"topic {t}"}, f"3 items ({t})", out)
    first = Call("github__get_me", {}, "me", json.dumps({"login": f"user-{t}", "bio": "x " * int(rng.integers(5, 20))}))
    turn = Turn(user=f"Request number {t}: find the issues about topic {t}.", answer=f"Found #{100 * t} and more.")
    turn.earlier = [first]
    turn.tool, turn.arguments, turn.tool_result, turn.tool_output = call.tool, call.arguments, call.result, call.output
    return turn


def _converse(eng: Engine, backend: LocalBackend, turns: int) -> Conversation:
    rng = np.random.default_rng(0)
    convo = Conversation()
    for t in range(1, turns + 1):
        convo.turns.append(_turn(t, rng))
        msgs, _ = mark_trace(backend, convo, MAIN)
        backend.chat([*msgs, {"role": "user", "content": "and now?"}], lane=MAIN, max_tokens=3)
        kv = eng.lane(MAIN).kv
        assert kv is not None and kv.cells <= BUDGET
    return convo


def test_segments_tile_the_chat_and_pin_what_the_parts_pin() -> None:
    eng = _engine(budget=None)
    try:
        convo = Conversation([_turn(1, np.random.default_rng(0)), _turn(2, np.random.default_rng(1))])
        msgs, parts = convo.trace_parts(SYSTEM_MAIN)
        tokens, segs = segment(eng.model, [*msgs, {"role": "user", "content": "q"}], parts)
        assert segs is not None
        assert tokens == eng.tokenize_chat([*msgs, {"role": "user", "content": "q"}])
        assert segs.segments[0].start == 0 and segs.segments[-1].end == len(tokens)
        assert segs.segments[-1].kind is SegKind.PROMPT  # the request being answered is transient
        text_of = {p.text for ps in parts for p in ps}
        for s in segs.segments:
            if s.kind in (SegKind.REQUEST, SegKind.HEAD):
                assert eng.model.detokenize(tokens[s.start : s.end], special=True) in text_of
        # every token that spells a pinned character is a pin (the tokens' bytes are the rendered text's)
        pinned = {i for u in units(segs, len(tokens)) if u.pin for i in range(u.start, u.end)}
        text = eng.model.apply_chat_template([*msgs, {"role": "user", "content": "q"}]).encode()
        ends = np.cumsum([len(eng.model.token_bytes(t, special=True)) for t in tokens])
        starts = np.concatenate([[0], ends[:-1]])
        at = 0
        checked = 0
        for m, ps in zip(msgs, parts, strict=True):
            at = text.index(m["content"].encode(), at)
            b = at
            for p in ps:
                for x, y in p.pins:
                    lo, hi = b + len(p.text[:x].encode()), b + len(p.text[:y].encode())
                    over = np.flatnonzero((starts < hi) & (ends > lo))
                    assert set(over.tolist()) <= pinned, f"{p.text[x:y]!r} is not pinned"
                    checked += 1
                b += len(p.text.encode())
        assert checked > 5
    finally:
        eng.close()


def test_the_lane_stays_under_its_budget_pins_stay_and_whole_spans_go() -> None:
    eng = _engine()
    try:
        backend = LocalBackend(eng, heads=False)
        _converse(eng, backend, 6)
        kv = eng.lane(MAIN).kv
        assert kv is not None and kv.memory is not None
        mem = kv.memory
        assert kv.steps, "no eviction step ran"
        assert all(s.cells_before <= BUDGET for s in kv.steps)
        assert mem.unpinned_through == 0, "the pins should fit this budget"
        held = [p >= 0 for p in kv.pos]
        for u in units(mem.segments, len(kv.pos)):
            cells = held[u.start : u.end]
            if u.pin:
                assert all(cells), f"a pin of turn {u.turn} ({u.kind}) was evicted"
            elif u.turn >= 0:
                assert all(cells) or not any(cells), "a span was cut, not evicted whole"
        # what went was results and answers
        gone = {u.kind for u in units(mem.segments, len(kv.pos)) if not any(held[u.start : u.end])}
        assert gone and gone <= {SegKind.RESULT, SegKind.ANSWER, SegKind.PROMPT}
        # the positions the lane holds are compact
        assert eng.ctx.seq_pos_max(eng.lane(MAIN).slot) == kv.cells - 1  # type: ignore[arg-type]
    finally:
        eng.close()


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_scorer_scores_each_turn_once(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = make_policy

    def counting(name: str, seed: int = 0):  # type: ignore[no-untyped-def]
        p = real(name, seed)
        inner = p.priority

        def priority(obs):  # type: ignore[no-untyped-def]
            calls.append(seed)
            out = inner(obs)
            assert out.shape == (obs.cache.n,) and np.all(np.isfinite(out))
            return out

        p.priority = priority  # type: ignore[method-assign]
        return p

    monkeypatch.setattr(evictor_mod, "make_policy", counting)
    eng = _engine(policy)
    try:
        backend = LocalBackend(eng, heads=False)
        _converse(eng, backend, 4)
        mem = eng.memory(MAIN)
        assert mem is not None
        assert mem.scored == {1, 2, 3, 4}
        assert sorted(calls) == [1, 2, 3, 4], "a turn was scored twice, or a later turn re-scored an older one"
        assert set(mem.scoring_ms) == {1, 2, 3, 4}
    finally:
        eng.close()


def test_with_flash_attention_attention_scorers_decline_and_keydiff_scores(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        eng = _engine("nexus", flash=True)
    try:
        assert eng.budget is not None and eng.budget.policy == "keydiff"
        assert eng.observer is None
        assert any("nexus scorer needs attention scores" in n for n in eng.notices)
        assert any("flash attention" in r.message for r in caplog.records)
        backend = LocalBackend(eng, heads=False)
        _converse(eng, backend, 5)
        mem = eng.memory(MAIN)
        assert mem is not None and mem.scored and eng.lane(MAIN).kv.steps  # type: ignore[union-attr]
    finally:
        eng.close()
    with pytest.raises(ValueError, match="flash attention"):
        Engine(EngineConfig(model="tiny-qwen2", n_batch=64, kv_budget=BUDGET, evict="nexus", flash_attn=True))


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_with_flash_attention_every_scorer_that_reads_attention_declines_and_the_others_stay(policy: str) -> None:
    eng = _engine(policy, flash=True)
    try:
        assert eng.budget is not None and eng.observer is None
        declined = [n for n in eng.notices if "flash attention" in n]
        if POLICIES[policy].needs_attention:
            assert eng.budget.policy == "keydiff"
            assert declined == [
                f"the {policy} scorer needs attention scores, which flash attention does not expose; the KV memory "
                "scores with keydiff (keys only) instead"
            ]
        else:
            assert eng.budget.policy == policy and declined == []
    finally:
        eng.close()


def test_without_a_budget_the_prompt_reads_nothing_the_trace_keeps() -> None:
    """The window (the prompt history with no budget) and the heads prefilled between turns are the same whether or
    not the history holds each call's whole output and a recalled note, which only the trace reads."""
    rng = np.random.default_rng(0)
    kept = Conversation([_turn(t, rng) for t in range(1, 7)])
    kept.turns[-1].recalled = "(Recalled from earlier in this conversation; it had left memory:) #100"
    bare = Conversation(
        [
            replace(t, tool_output="", recalled="", earlier=[replace(c, output="") for c in t.earlier])
            for t in kept.turns
        ]
    )
    assert kept.window(4) == bare.window(4)
    assert next_heads(kept, MAIN, 4, full_trace=False) == next_heads(bare, MAIN, 4, full_trace=False)
    assert kept.trace() != bare.trace(), "the trace should read the outputs, or this test checks nothing"


def test_without_a_budget_segments_change_nothing_bit_for_bit() -> None:
    """The same conversation through a backend told its parts and through the plain path: the same tokens, the same
    logits, the same reply, when the lane has no budget."""
    out = []
    for marked in (False, True):
        eng = _engine(budget=None)
        try:
            backend = LocalBackend(eng, heads=False)
            convo = Conversation()
            replies = []
            for t in range(1, 4):
                convo.turns.append(_turn(t, np.random.default_rng(t)))
                msgs, _ = mark_trace(backend, convo, MAIN) if marked else convo.trace_parts(SYSTEM_MAIN)
                g = backend.chat([*msgs, {"role": "user", "content": "and?"}], lane=MAIN, max_tokens=4)
                replies.append((g.tokens, eng.ctx.logits_ith(-1).copy()))
            assert eng.memory(MAIN) is None
            out.append(replies)
        finally:
            eng.close()
    for (ta, la), (tb, lb) in zip(out[0], out[1], strict=True):
        assert ta == tb
        np.testing.assert_array_equal(la, lb)
