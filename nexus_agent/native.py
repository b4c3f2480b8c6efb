"""Typed layer over the C++ core ``nexus_agent._native``.

Layering: ``native/`` (C++) → ``nexus_agent._native`` (pybind11: checks, GIL, zero-copy numpy views) →
this module (typed helpers and classes that own native handles) → the rest of the package.

Scores are ``(float(dot_i32(row, query)) * row_scale) * query_scale`` in float32, bit-identical on every
ISA the dispatcher can pick (``available_isas()``, best first, ``"serial"`` last).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from nexus_agent import _native
from nexus_agent._native import Block, BuddyAllocator, available_isas, isa, set_isa

__all__ = [
    "Block",
    "BuddyAllocator",
    "Int8RowStore",
    "TopK",
    "available_isas",
    "block_array",
    "isa",
    "quantize_i8",
    "scan",
    "scan_topk",
    "set_isa",
]

_ScalarT = TypeVar("_ScalarT", bound=np.generic)

# Symmetric int8 range. -128 is left out so that negating a quantized vector stays representable.
_QMAX = 127.0
_MIN_ARENA = 2 << 20  # BuddyAllocator's smallest capacity (2 MiB)


@dataclass(frozen=True)
class TopK:
    """The best rows of one scan.

    indices: int64 (k',) row numbers, best first (ties: lower row first); k' = min(k, N).
    values: float32 (k',) their scores.
    margin: top1 - top2 as a float32 difference; +inf when N == 1; nan when N == 0.
    """

    indices: npt.NDArray[np.int64]
    values: npt.NDArray[np.float32]
    margin: float


def quantize_i8(x: npt.ArrayLike) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Symmetric per-row int8 quantization of a float array of shape (N, d) or (d,).

    Returns (q int8 of the same shape, scales float32 of shape (N,) or ()) with x ≈ q * scale, where
    scale = max|row| / 127. An all-zero row gets scale 1.0 (and q = 0) so that scales are never zero.
    """
    xf = np.asarray(x, dtype=np.float32)
    if xf.ndim not in (1, 2):
        raise ValueError(f"quantize_i8 expects shape (N, d) or (d,), got {xf.shape}")
    absmax = np.max(np.abs(xf), axis=-1, keepdims=True) if xf.shape[-1] else np.zeros((*xf.shape[:-1], 1))
    scales = np.where(absmax > 0, absmax / _QMAX, 1.0).astype(np.float32)
    q = np.clip(np.rint(xf / scales), -_QMAX, _QMAX).astype(np.int8)
    return q, scales[..., 0]


def block_array(block: Block, dtype: type[_ScalarT]) -> npt.NDArray[_ScalarT]:
    """A flat zero-copy numpy view of a block's bytes as `dtype` (length block.size // itemsize).

    Goes through memoryview because numpy's type stubs accept concrete buffer types only. The view keeps
    the block exported: `BuddyAllocator.free(block)` raises BufferError until the view is gone.
    """
    return np.frombuffer(memoryview(block), dtype=dtype)


def scan(
    matrix: npt.NDArray[np.int8],
    row_scales: npt.NDArray[np.float32],
    query: npt.NDArray[np.int8],
    query_scale: float,
    isa: str | None = None,
) -> npt.NDArray[np.float32]:
    """Scores of every row of an int8 matrix (N, d) with row scales (N,) for an int8 query (d,): float32 (N,)."""
    return _native.scan_i8(matrix, row_scales, query, query_scale, isa=isa)


def scan_topk(
    matrix: npt.NDArray[np.int8],
    row_scales: npt.NDArray[np.float32],
    query: npt.NDArray[np.int8],
    query_scale: float,
    k: int,
    isa: str | None = None,
) -> TopK:
    """Fused scan + top-k over an int8 matrix (N, d) with row scales (N,), for an int8 query (d,)."""
    indices, values, margin = _native.scan_topk_i8(matrix, row_scales, query, query_scale, k, isa=isa)
    return TopK(indices, values, margin)


def _arena_bytes(nbytes: int) -> int:
    """The smallest BuddyAllocator capacity with one free block of at least ``nbytes``."""
    return max(_MIN_ARENA, 1 << max(0, (nbytes - 1).bit_length()))


class Int8RowStore:
    """A dense int8 matrix (rows of width d) living in one BuddyAllocator block, with its row scales.

    Rows are quantized on `append` (or stored as given by `append_quantized`); `remove` fills the holes with
    the last rows so the rows stay a dense prefix; `search` quantizes the query and runs the fused native
    scan over the rows stored so far. When the block is full the store moves to a block twice as large
    (copying the rows) and returns the old one. The store owns its block; `close()` returns it.

    With ``allocator=None`` the store also owns its arena: one sized to its block, replaced by a larger one
    when a grown block no longer fits. With a shared allocator, growth that does not fit raises MemoryError.
    """

    def __init__(self, allocator: BuddyAllocator | None, d: int, initial_rows: int = 64) -> None:
        if d <= 0 or initial_rows <= 0:
            raise ValueError(f"d and initial_rows must be > 0, got d={d}, initial_rows={initial_rows}")
        self._owns_allocator = allocator is None
        self._allocator = allocator if allocator is not None else BuddyAllocator(_arena_bytes(initial_rows * d))
        self._d = d
        self._n = 0
        self._block: Block | None = self._allocator.alloc(initial_rows * d)
        # Viewing the whole block: the buffer length is the requested size, a whole number of rows.
        self._rows: npt.NDArray[np.int8] = block_array(self._block, np.int8).reshape(initial_rows, d)
        self._scales = np.empty(initial_rows, dtype=np.float32)

    @property
    def d(self) -> int:
        return self._d

    def __len__(self) -> int:
        return self._n

    @property
    def capacity(self) -> int:
        """Rows the current block holds before the next growth."""
        return int(self._rows.shape[0])

    @property
    def allocator(self) -> BuddyAllocator:
        """The allocator the block comes from (the store's own arena when it was built without one)."""
        return self._allocator

    @property
    def rows(self) -> npt.NDArray[np.int8]:
        """int8 (N, d) view of the stored rows (no copy); invalid after the next append, remove or close."""
        return self._rows[: self._n]

    @property
    def scales(self) -> npt.NDArray[np.float32]:
        """float32 (N,) row scales."""
        return self._scales[: self._n]

    def append(self, x: npt.ArrayLike) -> range:
        """Quantizes and stores float rows of shape (m, d) or (d,); returns the new rows' indices."""
        q, s = quantize_i8(np.atleast_2d(np.asarray(x, dtype=np.float32)))
        return self.append_quantized(q, s)

    def append_quantized(self, q: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]) -> range:
        """Stores already quantized rows: int8 (m, d) with float32 scales (m,); returns their indices."""
        if q.dtype != np.int8 or scales.dtype != np.float32:
            raise ValueError(f"expected int8 rows and float32 scales, got {q.dtype} and {scales.dtype}")
        if q.ndim != 2 or q.shape[1] != self._d:
            raise ValueError(f"rows have shape {q.shape}, store has width d={self._d}")
        m = q.shape[0]
        if scales.shape != (m,):
            raise ValueError(f"{m} rows need {m} scales, got shape {scales.shape}")
        if self._n + m > self._rows.shape[0]:
            self._grow(self._n + m)
        self._rows[self._n : self._n + m] = q
        self._scales[self._n : self._n + m] = scales
        self._n += m
        return range(self._n - m, self._n)

    def remove(self, rows: Iterable[int]) -> list[tuple[int, int]]:
        """Removes rows (indices < len) and keeps the rest dense; returns the moves ``(from, to)`` in order.

        Holes are filled highest first, each with the current last row, so a moved row never lands in a hole
        still to be filled (a row can move twice: apply the moves in order to track it).
        """
        holes = sorted(set(rows), reverse=True)
        if holes and (holes[0] >= self._n or holes[-1] < 0):
            raise IndexError(f"rows {holes[-1]}..{holes[0]} out of range for {self._n} rows")
        moves: list[tuple[int, int]] = []
        for r in holes:
            last = self._n - 1
            if r != last:
                self._rows[r] = self._rows[last]
                self._scales[r] = self._scales[last]
                moves.append((last, r))
            self._n = last
        return moves

    def search(self, query: npt.ArrayLike, k: int, isa: str | None = None) -> TopK:
        """Top-k rows for a float query of shape (d,)."""
        q, qs = quantize_i8(np.asarray(query, dtype=np.float32))
        if q.shape != (self._d,):
            raise ValueError(f"query must have shape ({self._d},), got {q.shape}")
        return scan_topk(self.rows, self.scales, q, float(qs), k, isa=isa)

    def close(self) -> None:
        """Returns the block to the allocator. Views from `rows` must be dropped first (BufferError otherwise)."""
        if self._block is None:
            return
        block, self._block = self._block, None
        self._rows = np.empty((0, self._d), dtype=np.int8)
        self._allocator.free(block)

    def _grow(self, min_rows: int) -> None:
        if self._block is None:
            raise ValueError("Int8RowStore is closed")
        capacity = max(min_rows, 2 * self._rows.shape[0])
        old_allocator = self._allocator
        try:
            new_block = old_allocator.alloc(capacity * self._d)
        except MemoryError:
            if not self._owns_allocator:
                raise
            self._allocator = BuddyAllocator(_arena_bytes(capacity * self._d))
            new_block = self._allocator.alloc(capacity * self._d)
        new_rows = block_array(new_block, np.int8).reshape(capacity, self._d)
        new_rows[: self._n] = self._rows[: self._n]
        old_block, self._block, self._rows = self._block, new_block, new_rows
        old_allocator.free(old_block)  # our only view of it was just replaced
        self._scales = np.concatenate([self._scales[: self._n], np.empty(capacity - self._n, np.float32)])

    def __enter__(self) -> Int8RowStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
