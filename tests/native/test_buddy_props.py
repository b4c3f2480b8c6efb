"""Stateful property test of the buddy allocator against a reference model: a set of free blocks.

The model predicts whether each alloc succeeds (some free block is at least the rounded-up size), follows
the allocator's split of the smallest fitting free block and the coalescing of buddies on free, and checks
every stats() field, alignment, non-overlap and the bytes written to each live block.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from nexus_agent._native import Block, BuddyAllocator

MIB = 1 << 20
MIN_BLOCK = 128
CAPACITY = 2 * MIB

# Request sizes: a power of two (1 B .. 4 MiB, so some exceed the arena) plus or minus a little.
sizes = st.builds(lambda e, delta: max(1, (1 << e) + delta), st.integers(0, 22), st.integers(-3, 3))


def block_size_for(nbytes: int) -> int:
    return max(MIN_BLOCK, 1 << (nbytes - 1).bit_length())


class BuddyMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.alloc = BuddyAllocator(CAPACITY)
        self.free_blocks: set[tuple[int, int]] = {(0, CAPACITY)}  # (offset, size) of the model's free blocks
        self.live: dict[int, tuple[Block, int]] = {}  # offset -> (block, tag byte written to it)
        self.tag = 0

    @rule(nbytes=sizes)
    def allocate(self, nbytes: int) -> None:
        size = block_size_for(nbytes)
        fitting = [b for b in self.free_blocks if b[1] >= size]
        try:
            block = self.alloc.alloc(nbytes)
        except MemoryError:
            assert not fitting, f"alloc({nbytes}) failed with free blocks {sorted(fitting)}"
            return
        assert fitting, f"alloc({nbytes}) succeeded although no model block holds {size} bytes"
        assert block.size == nbytes and block.block_size == size
        assert block.offset % size == 0 and block.address % MIN_BLOCK == 0
        assert block.address == self.alloc.address + block.offset
        # It comes from the smallest fitting free block, split down with the upper halves kept free.
        parent = next(b for b in fitting if b[0] <= block.offset < b[0] + b[1])
        assert parent[1] == min(b[1] for b in fitting)
        self.free_blocks.remove(parent)
        off, sz = parent
        while sz > size:
            sz //= 2
            lower, upper = (off, sz), (off + sz, sz)
            keep, spare = (lower, upper) if block.offset < off + sz else (upper, lower)
            self.free_blocks.add(spare)
            off = keep[0]
        assert (off, sz) == (block.offset, size)
        self.tag = (self.tag + 1) % 251
        view = memoryview(block)
        view[0], view[-1] = self.tag, self.tag
        del view
        self.live[block.offset] = (block, self.tag)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        offset = data.draw(st.sampled_from(sorted(self.live)))
        block, tag = self.live.pop(offset)
        view = memoryview(block)
        assert view[0] == tag and view[-1] == tag, "another block wrote into this one"
        del view
        self.alloc.free(block)
        off, sz = offset, block.block_size
        while sz < CAPACITY and (off ^ sz, sz) in self.free_blocks:  # coalesce with a free buddy
            self.free_blocks.remove((off ^ sz, sz))
            off, sz = min(off, off ^ sz), sz * 2
        self.free_blocks.add((off, sz))

    @invariant()
    def stats_match_the_model(self) -> None:
        used = sum(b.block_size for b, _ in self.live.values())
        s = self.alloc.stats()
        assert s["used"] == used and s["free"] == CAPACITY - used
        assert s["n_allocated_blocks"] == len(self.live)
        assert s["n_free_blocks"] == len(self.free_blocks)
        assert s["largest_free_block"] == max((b[1] for b in self.free_blocks), default=0)

    @invariant()
    def blocks_tile_the_arena(self) -> None:
        spans = sorted([*self.free_blocks, *((o, b.block_size) for o, (b, _) in self.live.items())])
        end = 0
        for off, sz in spans:
            assert off == end, f"gap or overlap at {off} (expected {end})"
            end = off + sz
        assert end == CAPACITY

    def teardown(self) -> None:
        for block, _ in self.live.values():
            self.alloc.free(block)
        self.live.clear()
        s = self.alloc.stats()
        assert s["used"] == 0 and s["n_free_blocks"] == 1 and s["largest_free_block"] == CAPACITY
        whole = self.alloc.alloc(CAPACITY)  # fully coalesced: the whole arena is one block again
        assert whole.offset == 0 and whole.block_size == CAPACITY
        self.alloc.free(whole)


BuddyMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestBuddyProperties = BuddyMachine.TestCase
