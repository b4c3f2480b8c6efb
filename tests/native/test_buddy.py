"""Buddy allocator through Python: alignment, zero-copy buffers, lifetime and misuse errors, and a 4-thread
random alloc/free stress (the GIL is released inside alloc/free) that must coalesce back to one block."""

from __future__ import annotations

import gc
import itertools
import random
import threading

import numpy as np
import pytest

from nexus_agent._native import Block, BuddyAllocator

MIB = 1 << 20


def test_capacity_must_be_power_of_two_of_at_least_2mib() -> None:
    for bad in (0, MIB, 3 * MIB, 6 * MIB):
        with pytest.raises(ValueError, match="power of two"):
            BuddyAllocator(bad)
    a = BuddyAllocator(4 * MIB)
    assert a.capacity == 4 * MIB
    assert a.address % (2 * MIB) == 0
    assert a.stats() == {
        "capacity": 4 * MIB,
        "used": 0,
        "free": 4 * MIB,
        "largest_free_block": 4 * MIB,
        "n_free_blocks": 1,
        "n_allocated_blocks": 0,
        "min_block": 128,
    }


def test_split_sizes_and_alignment() -> None:
    a = BuddyAllocator(2 * MIB)
    blocks = [a.alloc(n) for n in (1, 128, 129, 1000, 4096, 70_000)]
    assert [b.block_size for b in blocks] == [128, 128, 256, 1024, 4096, 131072]
    assert [b.size for b in blocks] == [1, 128, 129, 1000, 4096, 70_000]
    for b in blocks:
        assert b.address % 128 == 0 and b.address == a.address + b.offset
        assert b.offset % b.block_size == 0  # buddy blocks are aligned to their own size
    spans = sorted((b.offset, b.offset + b.block_size) for b in blocks)
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))
    assert a.stats()["used"] == sum(b.block_size for b in blocks)
    for b in blocks:
        a.free(b)
    assert a.stats()["n_free_blocks"] == 1 and a.stats()["largest_free_block"] == 2 * MIB


def test_numpy_views_share_memory() -> None:
    a = BuddyAllocator(2 * MIB)
    b = a.alloc(4096)
    # numpy's stubs list concrete buffer types rather than the Buffer protocol, hence the ignores on
    # direct np.frombuffer(block) calls; the typed route is memoryview(block) / native.block_array.
    f = np.frombuffer(b, dtype=np.float32)  # type: ignore[call-overload]
    assert f.shape == (1024,)
    f[:] = np.arange(1024, dtype=np.float32)
    u = np.asarray(b)
    assert u.dtype == np.uint8 and u.shape == (4096,)
    assert np.shares_memory(f, u)
    assert u.__array_interface__["data"][0] == b.address
    assert np.array_equal(np.frombuffer(memoryview(b), dtype=np.float32), np.arange(1024, dtype=np.float32))
    assert b.n_views == 2
    del f, u
    assert b.n_views == 0
    a.free(b)


def test_misuse_raises_clear_errors() -> None:
    a = BuddyAllocator(2 * MIB)
    other = BuddyAllocator(2 * MIB)
    with pytest.raises(ValueError, match="nbytes"):
        a.alloc(0)
    with pytest.raises(MemoryError, match="no free block"):
        a.alloc(2 * MIB + 1)
    b = a.alloc(100)
    with pytest.raises(ValueError, match="another allocator"):
        other.free(b)
    view = np.frombuffer(b, dtype=np.uint8)  # type: ignore[call-overload]
    with pytest.raises(BufferError, match="live buffer view"):
        a.free(b)  # a later alloc could hand this memory to someone else while `view` still points at it
    del view
    a.free(b)
    assert b.freed
    with pytest.raises(ValueError, match="already freed"):
        a.free(b)
    with pytest.raises(BufferError, match="freed"):
        memoryview(b)
    with pytest.raises(BufferError, match="freed"):
        np.frombuffer(b, dtype=np.uint8)  # type: ignore[call-overload]


def test_blocks_keep_allocator_alive_and_free_on_collection() -> None:
    a = BuddyAllocator(2 * MIB)
    b = a.alloc(256)
    np.frombuffer(memoryview(b), dtype=np.uint8)[:] = 7
    del a
    gc.collect()
    assert np.all(np.frombuffer(memoryview(b), dtype=np.uint8) == 7)  # the arena is still alive through the block

    a = BuddyAllocator(2 * MIB)
    c = a.alloc(5000)
    assert a.stats()["n_allocated_blocks"] == 1
    del c  # never freed explicitly: returned when the Block object dies
    assert a.stats()["n_allocated_blocks"] == 0 and a.stats()["n_free_blocks"] == 1


def test_four_thread_stress_no_overlap_and_full_coalescing() -> None:
    cap = 8 * MIB
    a = BuddyAllocator(cap)
    lock = threading.Lock()
    live_spans: dict[int, int] = {}  # offset -> end, across all threads
    errors: list[str] = []

    def claim(offset: int, end: int) -> None:
        with lock:
            for o, e in live_spans.items():
                if o < end and offset < e:
                    errors.append(f"overlap [{offset},{end}) with [{o},{e})")
            live_spans[offset] = end

    def worker(tid: int) -> None:
        rng = random.Random(1234 + tid)
        live: list[tuple[Block, int]] = []
        for step in range(1500):
            if rng.random() < 0.55 or not live:
                n = (1 << rng.randint(0, 15)) + rng.randint(0, 99)
                try:
                    b = a.alloc(n)
                except MemoryError:
                    continue  # the arena is full right now; frees will follow
                claim(b.offset, b.offset + b.block_size)
                tag = (tid * 61 + step) % 251
                np.frombuffer(memoryview(b), dtype=np.uint8)[:] = tag
                live.append((b, tag))
            else:
                b, tag = live.pop(rng.randrange(len(live)))
                if not np.all(np.frombuffer(memoryview(b), dtype=np.uint8) == tag):
                    errors.append(f"thread {tid}: block at {b.offset} overwritten")
                with lock:
                    del live_spans[b.offset]
                a.free(b)
        for b, _ in live:
            with lock:
                del live_spans[b.offset]
            a.free(b)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = a.stats()
    assert s["used"] == 0 and s["n_allocated_blocks"] == 0
    assert s["largest_free_block"] == cap and s["n_free_blocks"] == 1
