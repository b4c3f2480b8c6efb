"""llama.cpp's per-sequence state blob (``llama_state_seq_get_data_ext``): parse it, and build one from parts.

Layout (little-endian, as llama.cpp's ``llama-kv-cache.cpp`` ``state_write`` writes it in the pinned version)::

    u32 magic 0xAF143CD8 | i32 seq_id
    per cache section (1; iSWA models: global then sliding-window):
      u32 n_stream | per stream: u32 cell_count (0: nothing follows)
        cells: i32 pos | u32 n_seq_id | n_seq_id × i32 seq_id
        u32 v_trans | u32 n_layer
        per layer: i32 k_type | u64 k_row_bytes | cell_count × k_row_bytes
        v_trans=0: per layer: i32 v_type | u64 v_row_bytes | cell_count × v_row_bytes
        v_trans=1: per layer: i32 v_type | u32 elem_size | u32 n_embd_v | n_embd_v × cell_count × elem_size

Only single-stream sections (``kv_unified=True`` or one sequence) and models without M-RoPE position extensions
are handled; anything else raises :class:`BlobError` so callers fall back to text prefill.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

BLOB_MAGIC = 0xAF143CD8


class BlobError(ValueError):
    """A state blob this module cannot read or build (unexpected layout, truncated)."""


@dataclass
class Section:
    """One cache section of one sequence.

    ``pos``: int32 (n_cells,) cell positions in blob (cell) order, not necessarily sorted.
    ``k``: per layer uint8 (n_cells, k_row_bytes). ``v``: per layer uint8, (n_cells, v_row_bytes) when not
    ``v_trans``, else (n_embd_v, n_cells × elem_size) (transposed: one run of cells per V dimension).
    """

    pos: npt.NDArray[np.int32]
    v_trans: bool
    k_types: list[int] = field(default_factory=list)
    k: list[npt.NDArray[np.uint8]] = field(default_factory=list)
    v_types: list[int] = field(default_factory=list)
    v: list[npt.NDArray[np.uint8]] = field(default_factory=list)
    v_elem: int = 2
    n_embd_v: int = 0

    @property
    def n_cells(self) -> int:
        return int(self.pos.shape[0])

    def v_rows(self, layer: int) -> npt.NDArray[np.uint8]:
        """V of ``layer`` token-major, uint8 (n_cells, n_embd_v × elem_size), whatever the stored layout."""
        v = self.v[layer]
        if not self.v_trans:
            return v
        n = self.n_cells
        return np.ascontiguousarray(
            v.reshape(self.n_embd_v, n, self.v_elem).transpose(1, 0, 2).reshape(n, self.n_embd_v * self.v_elem)
        )


@dataclass
class SeqBlob:
    seq_id: int
    sections: list[Section]


class _Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.b = memoryview(data).cast("B")
        self.o = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        n = struct.calcsize("<" + fmt)
        if self.o + n > len(self.b):
            raise BlobError(f"state blob truncated at byte {self.o} (needs {n} more)")
        v = struct.unpack_from("<" + fmt, self.b, self.o)
        self.o += n
        return v

    def one(self, fmt: str) -> int:
        return int(self.take(fmt)[0])

    def array(self, nbytes: int, shape: tuple[int, int]) -> npt.NDArray[np.uint8]:
        if self.o + nbytes > len(self.b):
            raise BlobError(f"state blob truncated at byte {self.o} (needs {nbytes} more)")
        a = np.frombuffer(self.b, np.uint8, nbytes, self.o).reshape(shape)
        self.o += nbytes
        return a


def parse_blob(data: bytes | memoryview, n_sections: int = 1) -> SeqBlob:
    """Parse a single-sequence blob; arrays are read-only views into ``data``."""
    r = _Reader(data)
    if r.one("I") != BLOB_MAGIC:
        raise BlobError("not a llama.cpp sequence-state blob (magic)")
    seq_id = r.one("i")
    sections: list[Section] = []
    for _ in range(n_sections):
        n_stream = r.one("I")
        sec: Section | None = None
        for _s in range(n_stream):
            cc = r.one("I")
            if cc == 0:
                continue
            if sec is not None:
                raise BlobError("a sequence spread over several KV streams (kv_unified=False) is not supported")
            # cells: (pos, n_seq_id, seq ids...); one seq id per cell in a single-sequence export
            pos = np.empty(cc, np.int32)
            for i in range(cc):
                p, nsid = r.take("iI")
                if nsid != 1:
                    raise BlobError(f"cell {i} belongs to {nsid} sequences; expected 1")
                r.one("i")
                pos[i] = p
            v_trans, n_layer = r.take("II")
            sec = Section(pos=pos, v_trans=bool(v_trans))
            for _l in range(n_layer):
                kt, krow = r.take("iQ")
                sec.k_types.append(kt)
                sec.k.append(r.array(cc * krow, (cc, krow)))
            for _l in range(n_layer):
                sec.v_types.append(r.one("i"))
                if not v_trans:
                    vrow = r.one("Q")
                    sec.v.append(r.array(cc * vrow, (cc, vrow)))
                else:
                    el, ne = r.take("II")
                    sec.v_elem, sec.n_embd_v = el, ne
                    sec.v.append(r.array(ne * cc * el, (ne, cc * el)))
        sections.append(sec if sec is not None else Section(pos=np.empty(0, np.int32), v_trans=False))
    if r.o != len(r.b):
        raise BlobError(f"state blob has {len(r.b) - r.o} unexpected trailing bytes (M-RoPE or another layout?)")
    return SeqBlob(seq_id, sections)


@dataclass(frozen=True)
class BlobPlan:
    """Byte offsets of a single-section, single-stream blob with ``n_cells`` cells, for writing in place.

    ``k_off[l]`` / ``v_off[l]``: where layer ``l``'s K rows / V data start (after their small headers).
    """

    size: int
    k_off: tuple[int, ...]
    v_off: tuple[int, ...]


def plan_blob(n_cells: int, n_layer: int, k_row_bytes: int, v_row_bytes: int, v_trans: bool, elem: int = 2) -> BlobPlan:
    o = 8 + 4 + 4 + n_cells * 12 + 8  # magic, seq, n_stream, cell_count, cells, v_trans + n_layer
    k_off, v_off = [], []
    for _ in range(n_layer):
        o += 12
        k_off.append(o)
        o += n_cells * k_row_bytes
    for _ in range(n_layer):
        o += 12  # i32 type + u64 row bytes, or i32 type + u32 elem + u32 n_embd_v
        v_off.append(o)
        o += n_cells * v_row_bytes
    return BlobPlan(o, tuple(k_off), tuple(v_off))


def write_blob_frame(
    buf: bytearray | memoryview,
    plan: BlobPlan,
    seq_id: int,
    pos: npt.NDArray[np.int32],
    v_trans: bool,
    k_type: int,
    v_type: int,
    k_row_bytes: int,
    v_row_bytes: int,
    elem: int = 2,
) -> None:
    """Write everything but the K/V payloads of a blob planned by :func:`plan_blob` into ``buf``.

    The caller then fills ``buf[plan.k_off[l] : …]`` and ``buf[plan.v_off[l] : …]`` (rotated K, transposed V).
    """
    n = int(pos.shape[0])
    n_layer = len(plan.k_off)
    struct.pack_into("<IiII", buf, 0, BLOB_MAGIC, seq_id, 1, n)
    cells = np.empty((n, 3), np.int32)
    cells[:, 0] = pos
    cells[:, 1] = 1
    cells[:, 2] = seq_id
    mv = memoryview(buf).cast("B")
    mv[16 : 16 + n * 12] = cells.tobytes()
    struct.pack_into("<II", buf, 16 + n * 12, int(v_trans), n_layer)
    for l_ in range(n_layer):
        struct.pack_into("<iQ", buf, plan.k_off[l_] - 12, k_type, k_row_bytes)
        if v_trans:
            struct.pack_into("<iII", buf, plan.v_off[l_] - 12, v_type, elem, v_row_bytes // elem)
        else:
            struct.pack_into("<iQ", buf, plan.v_off[l_] - 12, v_type, v_row_bytes)
