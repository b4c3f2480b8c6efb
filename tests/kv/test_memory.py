"""The memory manager's bookkeeping (nexus_agent/kv/memory.py), without llama.cpp: units stop at pins and message
boundaries, pins go only when nothing else may, and then the oldest turn's first (said once), each turn is ranked
once, and a property test against a plain model over random traces."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus_agent.kv.memory import UNIT, MemoryState, Unit, units
from nexus_agent.kv.segments import SegKind, Segment, SegmentMap


def _trace(turns: int, result: int = 40, pin_at: int = 10, pin_len: int = 4) -> SegmentMap:
    """A head of 8 tokens, then per turn: a request (5), a call (6), a result (``result``, one pin), an answer (7)."""
    segs = [Segment(SegKind.HEAD, 0, 0, 8)]
    at = 8
    for t in range(1, turns + 1):
        for kind, n in ((SegKind.REQUEST, 5), (SegKind.CALL, 6), (SegKind.RESULT, result), (SegKind.ANSWER, 7)):
            pins = ((at + pin_at, at + pin_at + pin_len),) if kind is SegKind.RESULT else ()
            segs.append(Segment(kind, t, at, at + n, f"{t}.{kind.value}", pins))
            at += n
    return SegmentMap(segs)


def test_units_stop_at_pins_and_segment_ends_and_never_exceed_the_unit() -> None:
    m = _trace(2)
    us = units(m, m.end + 3)  # three tokens past the map: the transient prompt
    assert [u.start for u in us] == sorted(u.start for u in us)
    covered = sorted(i for u in us for i in range(u.start, u.end))
    assert covered == list(range(m.end + 3)), "units tile every token once"
    for u in us:
        assert u.end - u.start <= UNIT
        seg = next(s for s in m.segments if s.start <= u.start < s.end) if u.start < m.end else None
        if seg is None:
            assert u.kind is SegKind.PROMPT and u.turn == -1
            continue
        assert u.end <= seg.end, "a unit crosses a message boundary"
        in_pin = any(a <= u.start < b for a, b in seg.pins)
        assert u.pin == (seg.kind.pinned or in_pin)


def test_scored_units_go_first_by_rank_then_unscored_then_the_oldest_pins_once() -> None:
    m = _trace(3)
    mem = MemoryState()
    n = m.end
    mem.set_segments(m, 0)
    mem.grow(n)
    assert mem.due(n) == [1, 2], "turn 3 is not known complete"
    for t in (1, 2):
        us = mem.scored_units(t, n)
        mem.assign(t, {i: float(i % 7) for u in us for i in range(u.start, u.end)}, n, 1.0)
    pos = list(range(n))
    forced = np.zeros(n, bool)
    forced[-4:] = True
    # a little: only scored units, the lowest ranks first
    keep, dropped = mem.plan(pos, forced, 20)
    assert all(not u.pin and u.turn in (1, 2) for u in dropped)
    assert (~keep).sum() >= 20
    ranks = [mem.rank[u.start] for u in dropped]
    left = [mem.rank[u.start] for u in mem.scored_units(1, n) + mem.scored_units(2, n) if u not in dropped]
    assert max(ranks) <= min(left)
    # everything: scored and unscored units go, then turn 1's and 2's pins (never the head, never turn 3's), told once
    keep, dropped = mem.plan(pos, forced, n)
    gone = {i for i in range(n) if not keep[i]}
    assert not gone & set(range(8)), "the head was evicted"
    assert {u.turn for u in dropped if u.pin} == {1, 2}
    assert not any(u.pin and u.turn == 3 for u in dropped)
    assert len(mem.notices) == 1 and "pins" in mem.notices[0]
    assert mem.unpinned_through == 2
    mem.plan(pos, forced, n)
    assert len(mem.notices) == 1, "the user is told once"


def test_a_turn_is_ranked_once_and_a_changed_turn_is_ranked_again() -> None:
    m = _trace(3)
    mem = MemoryState()
    mem.set_segments(m, 0)
    mem.grow(m.end)
    for t in mem.due(m.end):
        mem.assign(t, {i: 1.0 for u in mem.scored_units(t, m.end) for i in range(u.start, u.end)}, m.end, 2.0)
    assert mem.scored == {1, 2} and mem.due(m.end) == []
    ranks = [r for r in mem.rank if not math.isnan(r)]
    assert ranks and all(0 < r <= 1 for r in ranks)
    # the same map again: nothing to do; a map whose turn 2 changed: turn 2 again, turn 1 kept
    mem.set_segments(m, m.end)
    assert mem.scored == {1, 2}
    segs = [
        Segment(s.kind, 2, s.start, s.end, "x") if s.turn == 2 and s.kind is SegKind.ANSWER else s for s in m.segments
    ]
    mem.set_segments(SegmentMap(segs), m.end)
    assert mem.scored == {1}


@st.composite
def _cases(draw: st.DrawFn) -> tuple[SegmentMap, int, list[int], int]:
    turns = draw(st.integers(1, 6))
    segs = [Segment(SegKind.HEAD, 0, 0, draw(st.integers(1, 20)))]
    at = segs[0].end
    for t in range(1, turns + 1):
        for kind in (SegKind.REQUEST, SegKind.CALL, SegKind.RESULT, SegKind.ANSWER):
            n = draw(st.integers(0, 60))
            pins: tuple[tuple[int, int], ...] = ()
            if kind is SegKind.RESULT and n > 3:
                a = draw(st.integers(0, n - 2))
                pins = ((at + a, at + draw(st.integers(a + 1, n))),)
            segs.append(Segment(kind, t, at, at + n, "", pins))
            at += n
    extra = draw(st.integers(0, 30))
    evicted = draw(st.lists(st.integers(0, at + extra - 1), max_size=40))
    need = draw(st.integers(0, at + extra))
    return SegmentMap(segs), extra, evicted, need


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_plans_match_a_plain_model(case: tuple[SegmentMap, int, list[int], int]) -> None:
    """Against the plain rules: the head never goes; a pin goes only once no unpinned span but the transient
    prompt's is left to take; the transient prompt goes only once no older pin is left; cells that go were held and
    not forced; the plan drops at least ``need`` cells when the model says that many may go."""
    m, extra, evicted, need = case
    n = m.end + extra
    held = sorted(set(range(n)) - set(evicted))
    pos = [-1] * n
    for c, i in enumerate(held):
        pos[i] = c
    forced = np.zeros(len(held), bool)
    forced[-min(4, len(held)) :] = True
    mem = MemoryState()
    mem.set_segments(m, 0)
    keep, _ = mem.plan(pos, forced, need)
    gone = {held[c] for c in np.flatnonzero(~keep)}
    assert len(gone) == int((~keep).sum())
    forced_tokens = {held[c] for c in np.flatnonzero(forced)}
    assert not gone & forced_tokens
    head = m.segments[0]
    assert not gone & set(range(head.start, head.end))
    current = max(m.turns(), default=0)
    pinned = {i for u in units(m, n) if u.pin for i in range(u.start, u.end)}

    def movable(u: Unit) -> set[int]:
        cells = {i for i in range(u.start, u.end) if pos[i] >= 0}
        return cells if cells and not cells & forced_tokens else set()

    if gone & pinned:  # then every unpinned span outside the transient prompt that could go did
        for u in units(m, n):
            if not u.pin and u.turn >= 1:
                assert movable(u) <= gone, "a pin went while an unpinned span could still go"
    live_tail = [u for u in units(m, n) if not u.pin and u.turn == -1]
    if any(movable(u) & gone for u in live_tail):  # then no older pin that could go is left
        for u in units(m, n):
            if u.pin and 1 <= u.turn < current:
                assert movable(u) <= gone, "the turn in progress went while an older pin could still go"
    # the plain model's count of what may go
    may = sum(
        len([i for i in range(u.start, u.end) if pos[i] >= 0])
        for u in units(m, n)
        if u.turn != 0
        and not (u.pin and u.turn >= max(m.turns(), default=0))
        and not {i for i in range(u.start, u.end)} & forced_tokens
        and any(pos[i] >= 0 for i in range(u.start, u.end))
    )
    assert len(gone) >= min(need, may)
