"""The memory manager: which cells of a conversation lane go when it reaches its KV budget, read from the trace's
structure (:mod:`nexus_agent.kv.segments`) rather than from one query's attention.

* **Pins** never go: the system head, every user request, every call's arguments, the chat template's frames, and
  the identifiers and values each tool result returned. They count against the budget; when pins alone exceed it,
  the oldest turns' pins go first (and :attr:`MemoryState.notices` says so once).
* **Units**: the rest of a result, an answer or a recalled note is cut at its pins into spans of at most
  :data:`UNIT` tokens. Eviction removes whole units (``llama_memory_seq_rm`` per run), never scattered cells.
* **Scores**, once per turn: when a turn completes, its units are scored by the lane's policy (any registered one,
  cell by cell) and ranked *within the turn* (rank / units, in (0, 1]). Later turns never re-score it. Ranks make
  turns comparable: the lowest-ranked units of every turn go first, old or new, so a question about the first turn
  keeps pace with one about the last.
* **Order of eviction**: scored units by rank (older first on ties); then units not scored yet (the turn in
  progress, the transient prompt), oldest first; then the oldest turn's pins.

This module is pure bookkeeping over token indices (no llama.cpp): :class:`~nexus_agent.kv.evictor.Evictor` runs
the steps and the scoring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from nexus_agent.kv.segments import SegKind, Segment, SegmentMap

UNIT = 16  # tokens per evictable unit at most


@dataclass(frozen=True)
class Unit:
    """Lane tokens ``[start, end)`` that are evicted together. ``turn``: -1 for the transient prompt. ``pin``: the
    unit is a pin (evicted only when its turn's pins are dropped)."""

    start: int
    end: int
    turn: int
    kind: SegKind
    pin: bool = False


def _runs(seg: Segment) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(unpinned, pinned) token runs of one segment."""
    if seg.kind.pinned:
        return [], [(seg.start, seg.end)] if seg.n else []
    mask = np.zeros(seg.n, bool)
    for a, b in seg.pins:
        mask[a - seg.start : b - seg.start] = True
    free: list[tuple[int, int]] = []
    pins: list[tuple[int, int]] = []
    i = 0
    while i < seg.n:
        j = i
        while j < seg.n and mask[j] == mask[i]:
            j += 1
        (pins if mask[i] else free).append((seg.start + i, seg.start + j))
        i = j
    return free, pins


def _split(a: int, b: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(s + size, b)) for s in range(a, b, size)]


def units(segments: SegmentMap, n_tokens: int, unit: int = UNIT) -> list[Unit]:
    """Every unit of a lane of ``n_tokens`` tokens, in token order (pins included, as ``pin`` units)."""
    out: list[Unit] = []
    for seg in segments.segments:
        if seg.start >= n_tokens:
            break
        free, pins = _runs(seg)
        for a, b in free:
            out += [Unit(s, e, seg.turn, seg.kind) for s, e in _split(a, min(b, n_tokens), unit) if s < e]
        for a, b in pins:
            out += [Unit(s, e, seg.turn, seg.kind, pin=True) for s, e in _split(a, min(b, n_tokens), unit) if s < e]
    if n_tokens > segments.end:  # tokens of no known kind: the transient prompt or a generation
        out += [Unit(s, e, -1, SegKind.PROMPT) for s, e in _split(segments.end, n_tokens, unit)]
    return sorted(out, key=lambda u: u.start)


@dataclass
class MemoryState:
    """The manager's state for one lane, aligned to the lane's tokens.

    ``segments``: the latest map the backend gave. ``rank``: per token, its unit's rank in its turn (NaN: not
    scored). ``scored``: turns scored. ``unpinned_through``: turns ≤ this lost their pins to the budget (0: none).
    ``scoring_ms``: per scored turn, what scoring it cost. ``notices``: what the user should be told (each once).
    """

    segments: SegmentMap = field(default_factory=SegmentMap)
    rank: list[float] = field(default_factory=list)
    scored: set[int] = field(default_factory=set)
    unpinned_through: int = 0
    scoring_ms: dict[int, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.segments = SegmentMap()
        self.rank.clear()
        self.scored.clear()
        self.unpinned_through = 0
        self.scoring_ms.clear()

    def set_segments(self, segments: SegmentMap, n_held: int) -> None:
        """The backend's map of the prompt about to be held (its first ``n_held`` tokens are held already). A turn
        whose segments changed is scored again when it completes; one that did not keeps its ranks."""
        old = self.segments
        self.segments = segments

        def content(m: SegmentMap, t: int) -> list[Segment]:  # frames move with what follows the turn
            return [s for s in m.of_turn(t) if s.kind is not SegKind.FRAME]

        keep = {
            t for t in self.scored if content(old, t) == content(segments, t) and (segments.turn_end(t) or 0) <= n_held
        }
        for t in self.scored - keep:
            self.scoring_ms.pop(t, None)
        self.scored = keep

    def truncate(self, n: int) -> None:
        """The lane keeps its first ``n`` tokens."""
        del self.rank[n:]
        self.scored = {t for t in self.scored if (self.segments.turn_end(t) or math.inf) <= n}

    def grow(self, n: int) -> None:
        """The lane now holds ``n`` tokens (new ones not scored)."""
        if len(self.rank) < n:
            self.rank.extend([math.nan] * (n - len(self.rank)))

    # -- scoring
    def due(self, n_held: int) -> list[int]:
        """Turns complete within the first ``n_held`` tokens that are not scored yet, oldest first."""
        out = []
        for t in self.segments.turns():
            end = self.segments.turn_end(t)
            if t not in self.scored and end is not None and end <= n_held:
                out.append(t)
        return out

    def next_turn_end(self, n_held: int) -> int | None:
        """The first token index past ``n_held`` where a turn not scored yet ends (None: none does)."""
        ends = [
            e
            for t in self.segments.turns()
            if t not in self.scored and (e := self.segments.turn_end(t)) is not None and e > n_held
        ]
        return min(ends, default=None)

    def scored_units(self, turn: int, n_tokens: int) -> list[Unit]:
        return [u for u in units(self.segments, n_tokens) if u.turn == turn and not u.pin and u.kind.scored]

    def assign(self, turn: int, token_score: dict[int, float], n_tokens: int, ms: float) -> None:
        """Rank ``turn``'s units by the mean score of their live tokens (``token_score``: token index → score)."""
        self.grow(n_tokens)
        us = [u for u in self.scored_units(turn, n_tokens) if any(i in token_score for i in range(u.start, u.end))]
        means = [float(np.mean([token_score[i] for i in range(u.start, u.end) if i in token_score])) for u in us]
        order = sorted(range(len(us)), key=lambda j: (means[j], us[j].start))  # ties: the earlier unit ranks lower
        for r, j in enumerate(order, 1):
            for i in range(us[j].start, us[j].end):
                self.rank[i] = r / len(us)
        self.scored.add(turn)
        self.scoring_ms[turn] = ms

    # -- selection
    def plan(
        self, pos: list[int], forced: npt.NDArray[np.bool_], need: int
    ) -> tuple[npt.NDArray[np.bool_], list[Unit]]:
        """Which held cells go so that at least ``need`` do (fewer when not enough may go).

        ``pos``: each lane token's KV position (-1: evicted); ``forced`` [cells]: cells that must stay (the recent
        window, cells other slots share), in position order. Returns the kept mask over the held cells and the
        units dropped. Drops the oldest turns' pins only when every unpinned span but the transient prompt's is gone,
        and the transient prompt (with a note recalled for it) last.
        """
        n_tokens = len(pos)
        live = [i for i, p in enumerate(pos) if p >= 0]
        cell_of = {i: c for c, i in enumerate(live)}
        keep = np.ones(len(live), bool)
        self.grow(n_tokens)
        dropped: list[Unit] = []
        got = 0

        def cells(u: Unit) -> list[int] | None:
            cs = [cell_of[i] for i in range(u.start, u.end) if i in cell_of]
            return cs if cs and not forced[cs].any() else None

        def take(order: list[Unit], whole: bool = False) -> None:
            """Drop units in order until enough went (``whole``: all of them, a turn's pins go together)."""
            nonlocal got
            for u in order:
                if got >= need and not whole:
                    return
                cs = cells(u)
                if cs is None or not keep[cs].all():
                    continue
                keep[cs] = False
                got += len(cs)
                dropped.append(u)

        all_units = units(self.segments, n_tokens)
        current = max(self.segments.turns(), default=0)

        def tail(u: Unit) -> bool:  # what the request being answered reads: the prompt and a note recalled for it
            return u.turn == -1 or (u.kind is SegKind.NOTE and u.turn == current)

        free = [u for u in all_units if not u.pin and u.turn != 0]
        scored = [u for u in free if not math.isnan(self.rank[u.start])]
        take(sorted(scored, key=lambda u: (self.rank[u.start], u.turn, u.start)))
        # not scored yet (the turn being prefilled), oldest first
        take([u for u in free if math.isnan(self.rank[u.start]) and not tail(u)])
        for t in [t for t in self.segments.turns() if 1 <= t < current]:
            if got >= need:
                break
            if t > self.unpinned_through:
                if self.unpinned_through == 0:  # told once per lane
                    self.notices.append(
                        "the KV budget no longer holds every pinned fact (requests, calls, identifiers): from turn "
                        f"{t} on, the oldest turns' pins leave memory first; their text can still be recalled"
                    )
                self.unpinned_through = t
            take([u for u in all_units if u.pin and u.turn == t], whole=True)
        # last: the transient prompt and the note recalled for it, oldest first
        take([u for u in free if math.isnan(self.rank[u.start]) and tail(u)])
        return keep, dropped

    def pinned_cells(self, pos: list[int]) -> int:
        """How many held cells are pins now (those of turns whose pins were dropped do not count)."""
        n = 0
        for u in units(self.segments, len(pos)):
            if u.pin and not (1 <= u.turn <= self.unpinned_through):
                n += sum(1 for i in range(u.start, u.end) if pos[i] >= 0)
        return n

    def evicted_share(self, pos: list[int]) -> dict[str, float]:
        """Per span id (results, answers, notes): the share of its tokens no longer held."""
        out: dict[str, float] = {}
        for seg in self.segments.segments:
            if not seg.span or seg.start >= len(pos):
                continue
            end = min(seg.end, len(pos))
            gone = sum(1 for i in range(seg.start, end) if pos[i] < 0)
            out[seg.span] = gone / max(end - seg.start, 1)
        return out
