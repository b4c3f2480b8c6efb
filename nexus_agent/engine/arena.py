"""The radix arena: which llama.cpp sequence slot holds which lane, and which cached prefix any slot can give.

Owns the native :class:`~nexus_agent.native.RadixTree` (``native/radix/``): ``n_slots`` sequence ids, each holding
the exact-KV prefix of one lane's prompt. A lane is a logical user (a conversation, the sidecar, the relevance
judge…); it keeps its slot between turns until the slot is evicted or handed to another lane.

* Only the *exact* part of a lane's tokens enters the tree (KV that equals a text prefill's), so a donor never
  gives another lane spliced, approximate KV.
* Slots used while the engine's turn lock is held are locked in the tree and released when the outermost hold ends:
  a slot in use by a turn is never evicted.
* Evicting a slot calls ``on_evict(slot)`` (the engine drops its KV cells) and empties its lane's record.

Not thread-safe on its own: the engine calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from nexus_agent.kv.budget import LaneKV
from nexus_agent.native import RadixTree


class ArenaFull(RuntimeError):
    """Every slot of the arena is locked by the current turn: a lane that has none cannot get one."""


@dataclass
class Lane:
    """One lane's record. ``slot``: its llama.cpp sequence id, None before it has one (or after losing it).
    ``tokens``: what the slot's KV holds, in position order. ``exact``: leading tokens whose KV is what a text
    prefill computes (past it the KV came from a splice or an eviction step); only those are in the radix tree.
    ``kv``: the lane's KV budget state, None for a lane without a budget (nexus_agent/kv/budget.py)."""

    id: int
    slot: int | None = None
    tokens: list[int] = field(default_factory=list)
    exact: int = 0
    kv: LaneKV | None = None

    def forget(self) -> None:
        """Its slot's KV is gone (evicted, cleared, or the slot handed on)."""
        self.tokens, self.exact = [], 0
        if self.kv is not None:
            self.kv.reset()


@dataclass
class ArenaStats:
    """Counters since the engine started (tokens, not cells)."""

    lookups: int = 0
    hits: int = 0  # lookups that reused at least one cached token
    reused_tokens: int = 0
    donor_copies: int = 0  # prefixes copied from another lane's slot with seq_cp
    evictions: int = 0


class SlotArena:
    def __init__(self, n_slots: int, slot_capacity: int, on_evict: Callable[[int], None]) -> None:
        self.tree = RadixTree(n_slots, slot_capacity)
        self.n_slots = n_slots
        self._lanes: dict[int, Lane] = {}
        self._owner: list[int | None] = [None] * n_slots
        self._held: set[int] = set()
        self._on_evict = on_evict
        self.stats = ArenaStats()

    def lane(self, lane_id: int) -> Lane:
        lane = self._lanes.get(lane_id)
        if lane is None:
            lane = self._lanes[lane_id] = Lane(lane_id)
        return lane

    def slot_for(self, lane_id: int) -> int:
        """Lane ``lane_id``'s slot, locked until the current hold ends; a lane without one acquires one (an empty
        slot, else the least recently used unlocked one, evicted). Raises :class:`ArenaFull` when all are locked."""
        lane = self.lane(lane_id)
        if lane.slot is None:
            slot = self.tree.acquire()
            if slot < 0:
                raise ArenaFull(f"all {self.n_slots} arena slots are in use by this turn")
            prev = self._owner[slot]
            if prev is not None and prev in self._lanes:
                self._lanes[prev].forget()
                self._lanes[prev].slot = None
            self._on_evict(slot)  # whatever KV the slot still holds (an approximate tail) is not this lane's
            self._owner[slot] = lane_id
            lane.forget()
            lane.slot = slot
        if lane.slot not in self._held:
            self.tree.lock(lane.slot)
            self._held.add(lane.slot)
        return lane.slot

    def match(self, tokens: Sequence[int]) -> tuple[int, int]:
        """(slot, length): a slot whose exact KV holds the longest prefix of ``tokens``; (-1, 0) when none."""
        slot, length = self.tree.match(np.asarray(tokens, dtype=np.int32))
        return slot, length

    def set_record(self, lane_id: int, tokens: list[int], exact: int) -> None:
        """Lane ``lane_id`` now holds ``tokens`` (its slot's KV was made so by the caller), exact up to ``exact``."""
        lane = self.lane(lane_id)
        lane.tokens, lane.exact = tokens, max(0, min(exact, len(tokens)))
        if lane.slot is not None:
            self.tree.insert(lane.slot, np.asarray(tokens[: lane.exact], dtype=np.int32))

    def shared_prefix(self, lane_id: int, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` (what lane ``lane_id`` holds or is about to) another slot holds as exact KV:
        cells the two may share through ``seq_cp``, which eviction leaves alone."""
        lane = self.lane(lane_id)
        toks = np.asarray(tokens, dtype=np.int32)
        return max(
            (self.tree.lcp(slot, toks) for slot in range(self.n_slots) if slot != lane.slot and self.tree.size(slot)),
            default=0,
        )

    def note_lookup(self, reused: int, donor: bool) -> None:
        self.stats.lookups += 1
        self.stats.hits += reused > 0
        self.stats.reused_tokens += reused
        self.stats.donor_copies += donor

    def evict(self) -> int:
        """Evict the least recently used slot that no turn holds; returns it, or -1 when there is none."""
        slot = self.tree.evict()
        if slot < 0:
            # a lane holding only spliced KV has nothing in the tree, but its cells still count
            slot = next(
                (
                    lane.slot
                    for lane in self._lanes.values()
                    if lane.slot is not None and lane.slot not in self._held and lane.tokens
                ),
                -1,
            )
            if slot < 0:
                return -1
        self._on_evict(slot)
        owner = self._owner[slot]
        if owner is not None and owner in self._lanes:
            self._lanes[owner].forget()  # it keeps the (now empty) slot until another lane acquires it
        self.stats.evictions += 1
        return slot

    def release_held(self) -> None:
        """The outermost hold of the turn lock ended: every slot it locked may be evicted again."""
        for slot in self._held:
            self.tree.unlock(slot)
        self._held.clear()

    def drop_lane(self, lane_id: int) -> None:
        lane = self._lanes.pop(lane_id, None)
        if lane is None or lane.slot is None:
            return
        if lane.slot in self._held:
            self.tree.unlock(lane.slot)
            self._held.discard(lane.slot)
        self.tree.erase(lane.slot)
        self._on_evict(lane.slot)
        self._owner[lane.slot] = None

    def clear(self) -> None:
        """Every slot empty, every lane without KV (its slot binding stays; locks of the current hold too)."""
        for slot in range(self.n_slots):
            self.tree.erase(slot)
            self._on_evict(slot)
        for lane in self._lanes.values():
            lane.forget()
