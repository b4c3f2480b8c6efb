"""Loaded ``.atb`` blocks kept in memory: :class:`BlockCache`, their K and V in one buddy-allocated arena."""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from nexus_agent.native import Block, BuddyAllocator, block_array
from nexus_agent.splice.atb_io import FileSig, check_compatible, copy_kv, f16_section, file_sig, map_atb
from nexus_agent.splice.fingerprint import SpliceTarget
from nexus_agent.splice.format import AtbBlock, AtbError, AtbHeader


@dataclass
class _Entry:
    sig: FileSig
    header: AtbHeader
    tokens: npt.NDArray[np.int32]
    sensitivity: npt.NDArray[np.float32]
    block: Block

    @property
    def nbytes(self) -> int:
        return self.header.k_nbytes + self.header.v_nbytes


class BlockCache:
    """Loaded blocks, their K and V held in one :class:`~nexus_agent.native.BuddyAllocator` arena, LRU-evicted.

    ``load(path, target)`` returns an :class:`AtbBlock` whose ``k`` and ``v`` are read-only zero-copy views into
    the arena. A cached block is reused while the file's (device, inode, size, mtime_ns) are unchanged; a
    changed file is read again. Every load checks ``target`` (:func:`check_compatible`).

    Safety: a handed-out block stays valid for as long as its arrays live. The cache evicts only blocks none of
    whose views are alive (``Block.n_views == 0``), so eviction never pulls memory from under a caller; drop the
    AtbBlock (and any slices of its arrays) to make its memory evictable. A block dropped from the cache while
    still viewed (file changed, ``discard``, ``clear``) is simply forgotten: its memory returns to the arena when
    the last view dies. When no space can be freed (every cached block in use, or the block is larger than the
    arena) ``load`` does not fail: it returns a private copy outside the arena (counted as ``bypassed``).

    Thread-safe (one lock around every operation).
    """

    def __init__(self, capacity_bytes: int = 256 << 20, *, verify_data: bool = True) -> None:
        """``capacity_bytes``: the arena size, a power of two >= 2 MiB (ValueError otherwise)."""
        self._arena = BuddyAllocator(capacity_bytes)
        self._verify_data = verify_data
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._bypassed = 0

    @property
    def capacity(self) -> int:
        return self._arena.capacity

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str | os.PathLike):
            return False
        return os.path.abspath(path) in self._entries

    def load(self, path: str | os.PathLike[str], target: SpliceTarget) -> AtbBlock:
        """The block at ``path``, checked against ``target``; from the cache when the file is unchanged.

        Raises AtbError for a missing or malformed file, AtbMismatch when it does not fit ``target``.
        """
        p = Path(path)
        key = os.path.abspath(p)
        with self._lock:
            try:
                sig = file_sig(os.stat(key))
            except OSError as e:
                self._drop(key)
                raise AtbError(f"cannot open: {e.strerror or e}", p, "file") from e
            entry = self._entries.get(key)
            if entry is not None:
                if entry.sig == sig:
                    check_compatible(entry.header, target, p)
                    self._hits += 1
                    self._entries.move_to_end(key)
                    return self._hand_out(entry, p)
                self._drop(key)  # changed on disk
            self._misses += 1
            with map_atb(p, target, self._verify_data) as m:
                h = m.header
                block = self._alloc(h.k_nbytes + h.v_nbytes)
                if block is None:
                    self._bypassed += 1
                    k, v = copy_kv(m.mm, h)
                    return AtbBlock(h, m.tokens, m.sensitivity, k, v, p)
                _fill(block, m.mm, h)
                m.tokens.flags.writeable = False
                m.sensitivity.flags.writeable = False
                entry = _Entry(m.sig, h, m.tokens, m.sensitivity, block)
            self._entries[key] = entry
            return self._hand_out(entry, p)

    def discard(self, path: str | os.PathLike[str]) -> bool:
        """Forgets the block at ``path``; True when it was cached. Views already handed out stay valid."""
        with self._lock:
            return self._drop(os.path.abspath(path))

    def clear(self) -> None:
        """Forgets every block. Views already handed out stay valid."""
        with self._lock:
            for key in list(self._entries):
                self._drop(key)

    def stats(self) -> dict[str, int]:
        """blocks and bytes (K+V) cached, hits, misses, evictions, bypassed (loads returned as private copies),
        capacity and arena_used (bytes of the arena reserved, including forgotten blocks still viewed)."""
        with self._lock:
            return {
                "blocks": len(self._entries),
                "bytes": sum(e.nbytes for e in self._entries.values()),
                "hits": self._hits,
                "misses": self._misses,
                "evictions": self._evictions,
                "bypassed": self._bypassed,
                "capacity": self._arena.capacity,
                "arena_used": int(self._arena.stats()["used"]),
            }

    # Everything below runs with the lock held.

    def _hand_out(self, entry: _Entry, path: Path) -> AtbBlock:
        h = entry.header
        n_k, n_v = h.k_nbytes // 2, h.v_nbytes // 2
        flat = block_array(entry.block, np.uint16)
        k = flat[:n_k].reshape(h.n_layer, h.n_tokens, h.n_embd_k)
        v = flat[n_k : n_k + n_v].reshape(h.n_layer, h.n_tokens, h.n_embd_v)
        k.flags.writeable = False
        v.flags.writeable = False
        return AtbBlock(h, entry.tokens, entry.sensitivity, k, v, path)

    def _drop(self, key: str) -> bool:
        entry = self._entries.pop(key, None)
        if entry is None:
            return False
        if entry.block.n_views == 0:
            with contextlib.suppress(BufferError):
                self._arena.free(entry.block)
        # Otherwise the Block frees itself when its last view (which references it) is garbage-collected.
        return True

    def _alloc(self, nbytes: int) -> Block | None:
        if nbytes > self._arena.capacity:
            return None
        while True:
            try:
                return self._arena.alloc(nbytes)
            except MemoryError:
                pass
            victim = next((key for key, e in self._entries.items() if e.block.n_views == 0), None)
            if victim is None:
                return None
            self._drop(victim)
            self._evictions += 1


def _fill(block: Block, mm: mmap.mmap, h: AtbHeader) -> None:
    n_k, n_v = h.k_nbytes // 2, h.v_nbytes // 2
    dst = block_array(block, np.uint16)
    dst[:n_k] = f16_section(mm, h.k_offset, n_k)
    dst[n_k : n_k + n_v] = f16_section(mm, h.v_offset, n_v)
