"""Stateful property test of the radix tree of sequence slots against a plain-dict reference: slot -> tokens,
slot -> lock count, slot -> last use on a logical clock.

The reference predicts every answer: the longest-prefix match (its length, and that the slot returned holds it),
which slot evict() and acquire() pick (least recently used among the unlocked ones), that a locked slot is never
evicted, and that the sizes and token counts add up. check() verifies the tree's own invariants after each step.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from nexus_agent.native import RadixTree

N_SLOTS = 6
CAPACITY = 48

# Short sequences over a 3-token alphabet, so prefixes are shared and edges split and fold all the time.
seqs = st.lists(st.integers(0, 2), max_size=CAPACITY)
slots = st.integers(0, N_SLOTS - 1)


def lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class RadixMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tree = RadixTree(N_SLOTS, CAPACITY)
        self.held: dict[int, list[int]] = {s: [] for s in range(N_SLOTS)}
        self.locks: dict[int, int] = dict.fromkeys(range(N_SLOTS), 0)
        self.used: dict[int, int] = dict.fromkeys(range(N_SLOTS), 0)
        self.clock = 0

    def _touch(self, slot: int) -> None:
        self.clock += 1
        self.used[slot] = self.clock

    def _lru(self, candidates: list[int]) -> int:
        return min(candidates, key=lambda s: self.used[s]) if candidates else -1

    @rule(slot=slots, tokens=seqs, base=slots, keep=st.integers(0, CAPACITY))
    def insert(self, slot: int, tokens: list[int], base: int, keep: int) -> None:
        # half the time extend a prefix of another slot's sequence: the case a radix tree is for
        seq = (self.held[base][:keep] + tokens)[:CAPACITY]
        self.tree.insert(slot, np.asarray(seq, np.int32))
        self.held[slot] = seq
        self._touch(slot)

    @rule(slot=slots)
    def erase(self, slot: int) -> None:
        self.tree.erase(slot)
        self.held[slot] = []

    @rule(slot=slots)
    def lock(self, slot: int) -> None:
        self.tree.lock(slot)
        self.locks[slot] += 1
        self._touch(slot)

    @precondition(lambda self: any(self.locks.values()))
    @rule(data=st.data())
    def unlock(self, data: st.DataObject) -> None:
        slot = data.draw(st.sampled_from([s for s, n in self.locks.items() if n]))
        self.tree.unlock(slot)
        self.locks[slot] -= 1

    @rule()
    def evict(self) -> None:
        expect = self._lru([s for s in range(N_SLOTS) if not self.locks[s] and self.held[s]])
        got = self.tree.evict()
        assert got == expect
        if got >= 0:
            assert self.locks[got] == 0
            self.held[got] = []

    @rule()
    def acquire(self) -> None:
        empty = [s for s in range(N_SLOTS) if not self.locks[s] and not self.held[s]]
        expect = self._lru(empty) if empty else self._lru([s for s in range(N_SLOTS) if not self.locks[s]])
        got = self.tree.acquire()
        assert got == expect
        if got >= 0:
            assert self.locks[got] == 0
            self.held[got] = []
            self._touch(got)

    @rule(query=seqs, base=slots, keep=st.integers(0, CAPACITY))
    def match(self, query: list[int], base: int, keep: int) -> None:
        q = self.held[base][:keep] + query
        slot, length = self.tree.match(q)
        best = max(lcp(h, q) for h in self.held.values())
        assert length == best
        if best == 0:
            assert slot == -1
        else:
            assert lcp(self.held[slot], q) == best
            # the most recently used of the slots holding it
            holders = [s for s, h in self.held.items() if lcp(h, q) == best]
            assert self.used[slot] == max(self.used[s] for s in holders)
            self._touch(slot)

    @invariant()
    def agrees(self) -> None:
        assert self.tree.check() == ""
        for s in range(N_SLOTS):
            assert self.tree.size(s) == len(self.held[s])
            assert self.tree.tokens(s).tolist() == self.held[s]
            assert self.tree.lock_count(s) == self.locks[s]
        st_ = self.tree.stats()
        assert st_["slot_tokens"] == sum(len(h) for h in self.held.values())
        assert st_["used_slots"] == sum(1 for h in self.held.values() if h)
        assert st_["locked_slots"] == sum(1 for n in self.locks.values() if n)
        assert st_["nodes"] <= 2 * N_SLOTS + 1
        # tokens stored once per distinct prefix: the size of the trie of all sequences
        prefixes = {tuple(h[:i]) for h in self.held.values() for i in range(1, len(h) + 1)}
        assert st_["unique_tokens"] == len(prefixes)


TestRadix = RadixMachine.TestCase
TestRadix.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)


def test_bad_arguments_are_clear_errors() -> None:
    t = RadixTree(2, 4)
    with pytest.raises(ValueError, match="1-D int32"):
        t.match(np.arange(3, dtype=np.int64))  # a silent cast could wrap a token id
    with pytest.raises(ValueError, match="do not fit"):
        t.insert(0, [1, 2, 3, 4, 5])
    assert t.size(0) == 0
    with pytest.raises(IndexError, match="out of range"):
        t.lock(2)
    with pytest.raises(RuntimeError, match="not locked"):
        t.unlock(0)
    with pytest.raises(ValueError, match="n_slots"):
        RadixTree(65, 4)
    t.insert(1, [7, 8])
    assert t.match([7, 8, 9]) == (1, 2)
    assert t.match([]) == (-1, 0)
