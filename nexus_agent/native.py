"""Typed layer over the C++ core ``nexus_agent._native``.

Layering: ``native/`` (C++) → ``nexus_agent._native`` (pybind11: checks, GIL, zero-copy numpy views) →
this module (typed helpers and classes that own native handles) → the rest of the package.

Scores are ``(float(dot_i32(row, query)) * row_scale) * query_scale`` in float32, bit-identical on every
ISA the dispatcher can pick (``available_isas()``, best first, ``"serial"`` last).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from nexus_agent import _native
from nexus_agent._native import Block, BuddyAllocator, Observer, QRing, RadixTree, available_isas, isa, set_isa

__all__ = [
    "ROPE_NEOX",
    "ROPE_NORM",
    "Block",
    "BuddyAllocator",
    "Int8RowStore",
    "Observer",
    "QRing",
    "RadixTree",
    "RopeParams",
    "TopK",
    "available_isas",
    "block_array",
    "isa",
    "quantize_i8",
    "read_v_trans",
    "rope_shift_f16",
    "scan",
    "scan_topk",
    "set_isa",
    "write_v_trans",
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


# ---------------------------------------------------------------- KV splice kernels

ROPE_NORM = 0  # llama.cpp LLAMA_ROPE_TYPE_NORM: adjacent pairs (2i, 2i+1) rotate (llama, mistral, ...)
ROPE_NEOX = 2  # llama.cpp LLAMA_ROPE_TYPE_NEOX: halves (i, i + n_rot/2) rotate (qwen2, gemma, phi3, ...)


@dataclass(frozen=True)
class RopeParams:
    """The RoPE parameters of one KV-cache section, as llama.cpp's K-shift uses them.

    n_rot: rotated dims per head (even, <= head_dim); head_dim: elements per head; n_head_kv: heads per K row;
    rope_type: ROPE_NORM or ROPE_NEOX (``llama_model_rope_type``); freq_base / freq_scale: the section's rope
    base and scale (context values: the sliding-window layers of iSWA models have their own); ext_factor,
    attn_factor, beta_fast, beta_slow, n_ctx_orig: the context's YaRN settings (``cparams.yarn_*``,
    ``n_ctx_orig_yarn``), which only matter when ext_factor != 0; freq_factors: the model's ``rope_freqs``
    (n_rot/2 values) or None. Float values are used as float32, as llama.cpp holds them.
    """

    n_rot: int
    head_dim: int
    n_head_kv: int
    rope_type: int
    freq_base: float
    freq_scale: float = 1.0
    ext_factor: float = 0.0
    attn_factor: float = 1.0
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    n_ctx_orig: int = 0
    freq_factors: tuple[float, ...] | None = None

    @property
    def row_elems(self) -> int:
        """Elements of one K row (a cell of one layer): n_head_kv * head_dim."""
        return self.n_head_kv * self.head_dim


def rope_shift_f16(k: npt.NDArray[np.uint16], deltas: int | npt.ArrayLike, rope: RopeParams) -> None:
    """Re-anchor F16 K rows in place: rotate each row by its position delta, bit-exact with llama.cpp's K-shift.

    k: writable uint16 array (n_cells, width) holding f16 bits (``blob_k_rows.view(np.uint16)``), width >=
    ``rope.row_elems``; rows may be strided, the inner dimension must be contiguous. Elements past
    ``row_elems`` and the last head_dim - n_rot dims of every head are left as they are.
    deltas: one int for every row, or int32-convertible (n_cells,) per-row deltas in positions (new - old).
    Raises ValueError on a bad argument. Releases the GIL while rotating.
    """
    n_rows = int(k.shape[0]) if k.ndim >= 1 else 0
    if isinstance(deltas, int | np.integer):
        d = np.full(n_rows, int(deltas), dtype=np.int32)
    else:
        d = np.ascontiguousarray(deltas, dtype=np.int32)
    ff = None if rope.freq_factors is None else np.asarray(rope.freq_factors, dtype=np.float32)
    _native.rope_shift_f16(
        k,
        d,
        rope.n_rot,
        rope.head_dim,
        rope.n_head_kv,
        rope.rope_type,
        rope.freq_base,
        freq_scale=rope.freq_scale,
        ext_factor=rope.ext_factor,
        attn_factor=rope.attn_factor,
        beta_fast=rope.beta_fast,
        beta_slow=rope.beta_slow,
        n_ctx_orig=rope.n_ctx_orig,
        freq_factors=ff,
    )


def write_v_trans(
    dst: bytearray | memoryview | npt.NDArray[Any],
    dst_offset: int,
    n_embd_v: int,
    total_cells: int,
    cell_offset: int,
    src: npt.NDArray[np.uint16],
) -> None:
    """Write token-major F16 V rows into llama.cpp's transposed V layout (flash attention off).

    The region starts at byte ``dst_offset`` of the writable C-contiguous buffer ``dst`` and is ``n_embd_v`` runs
    of ``total_cells`` f16 elements (element (d, c) at byte dst_offset + 2*(d*total_cells + c)). ``src``: uint16
    (n_cells, n_embd_v), inner dimension contiguous; row c lands in column cell_offset + c. Raises ValueError,
    writing nothing, on a bad argument (region past the buffer, columns past total_cells, src overlapping it).
    """
    _native.write_v_trans(dst, dst_offset, n_embd_v, total_cells, cell_offset, src)


def read_v_trans(
    src_buffer: bytes | bytearray | memoryview | npt.NDArray[Any], src_offset: int, n_embd_v: int, total_cells: int
) -> npt.NDArray[np.uint16]:
    """Read llama.cpp's transposed F16 V region (``n_embd_v`` runs of ``total_cells`` elements at byte
    ``src_offset`` of a C-contiguous buffer) as a new token-major uint16 array (total_cells, n_embd_v)."""
    return _native.read_v_trans(src_buffer, src_offset, n_embd_v, total_cells)
