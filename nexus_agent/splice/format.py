"""The ``.atb`` file format: one compiled tool block, the KV cache a model computed for one text rendering of a tool.

A block holds, for every layer, the F16 K rows (already rotated for positions ``m0 .. m0+n-1``) and the F16 V rows
(token-major) of ``n`` tokens that were decoded after a fixed header prompt. The runtime splices those rows into a
live llama.cpp context instead of prefilling the text. docs/atb-format.md describes the layout byte by byte; this
module holds its constants, the parsed and validated header (:class:`AtbHeader`), a loaded block (:class:`AtbBlock`),
the header hash and the errors. Writing, reading and the compatibility check are in :mod:`.atb_io`, what a block
must match in :mod:`.fingerprint`, the cache of loaded blocks in :mod:`.cache`.
"""

from __future__ import annotations

import hashlib
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from nexus_agent.splice.fingerprint import (
    GGML_TYPE_F16,
    ROPE_NAMES,
    ROPE_NEOX,
    ROPE_NORM,
    ROPE_PARAMS,
    U16,
    U32,
    U64,
    ModelFingerprint,
    RopeSet,
    fingerprint_digest,
)

MAGIC: Final = b"NXATB\r\n\x1a"
VERSION: Final = 1
HEADER_SIZE: Final = 128
TOKEN_ENTRY_SIZE: Final = 8  # i32 token id + f32 sensitivity
ALIGN_LOG2_MIN: Final = 12
ALIGN_LOG2_MAX: Final = 30
DEFAULT_ALIGN_LOG2: Final = 21  # 2 MiB: a huge page

FLAG_V_TRANS: Final = 1 << 0
FLAG_FLASH_ATTN: Final = 1 << 1
FLAG_ISWA: Final = 1 << 2
_KNOWN_FLAGS: Final = FLAG_V_TRANS | FLAG_FLASH_ATTN | FLAG_ISWA

MAX_POS: Final = (1 << 31) - 1  # llama_pos is int32

_GGML_TYPE_NAMES: Final = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 30: "BF16"}

# The 128-byte header, little-endian, no padding (docs/atb-format.md has the same table).
_HEADER: Final = struct.Struct("<8sHHBBBBIHHHHIIQI6f6fIQIIIII")

#: (field, byte offset, size in bytes) of every header field, in file order.
HEADER_LAYOUT: Final[tuple[tuple[str, int, int], ...]] = (
    ("magic", 0, 8),
    ("version", 8, 2),
    ("flags", 10, 2),
    ("k_type", 12, 1),
    ("v_type", 13, 1),
    ("rope_type", 14, 1),
    ("align_log2", 15, 1),
    ("arch_hash", 16, 4),
    ("n_layer", 20, 2),
    ("head_dim", 22, 2),
    ("n_rot", 24, 2),
    ("n_head_kv", 26, 2),
    ("n_embd_k", 28, 4),
    ("n_embd_v", 32, 4),
    ("tokenizer_hash", 36, 8),
    ("n_ctx_orig", 44, 4),
    ("rope0", 48, 24),
    ("rope1", 72, 24),
    ("m0", 96, 4),
    ("header_hash", 100, 8),
    ("n_tokens", 108, 4),
    ("k_offset", 112, 4),
    ("v_offset", 116, 4),
    ("data_crc", 120, 4),
    ("header_crc", 124, 4),
)
assert _HEADER.size == HEADER_SIZE == sum(size for _, _, size in HEADER_LAYOUT)

TABLE_DTYPE: Final = np.dtype([("token", "<i4"), ("sensitivity", "<f4")])
F16_LE: Final = np.dtype("<u2")

# --------------------------------------------------------------------------------------------------- errors


class AtbError(Exception):
    """A malformed, unreadable or (as :class:`AtbMismatch`) incompatible ``.atb`` file.

    ``path`` is the file (None when the check had no file, e.g. :func:`check_compatible` on a bare header) and
    ``field`` the header field or section at fault (None when no single field is). ``str()`` gives
    ``"<path>: <field>: <message>"``, leaving out the parts that are None.
    """

    def __init__(self, message: str, path: Path | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.field = field

    def __str__(self) -> str:
        parts = [str(p) for p in (self.path, self.field) if p is not None]
        return ": ".join([*parts, self.message])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.path, self.field))


class AtbMismatch(AtbError):
    """A valid block compiled for another model, RoPE setup, attention mode, cache type, header or anchor."""


@dataclass(frozen=True)
class AtbHeader:
    """The parsed 128-byte header, every field (docs/atb-format.md).

    The architecture name is not stored, only ``arch_hash`` (its crc32); :meth:`fingerprint` rebuilds the
    :class:`ModelFingerprint` given the name. ``rope`` holds one set, or two when the iSWA flag is set.
    ``k_offset`` / ``v_offset`` are byte offsets in the file, multiples of ``2**align_log2``; the token table
    always starts at byte 128 (``tokens_offset``). ``header_crc`` is the value read from the file (0 for a header
    built in memory); :meth:`to_bytes` computes a fresh one.
    """

    version: int
    v_trans: bool
    flash_attn: bool
    k_type: int
    v_type: int
    rope_type: int
    align_log2: int
    arch_hash: int
    n_layer: int
    head_dim: int
    n_rot: int
    n_head_kv: int
    n_embd_k: int
    n_embd_v: int
    tokenizer_hash: int
    n_ctx_orig: int
    rope: tuple[RopeSet, ...]
    m0: int
    header_hash: int
    n_tokens: int
    k_offset: int
    v_offset: int
    data_crc: int
    header_crc: int = 0

    @property
    def tokens_offset(self) -> int:
        """Byte offset of the token table: always 128, right after the header (not stored)."""
        return HEADER_SIZE

    @property
    def flags(self) -> int:
        return (
            (FLAG_V_TRANS if self.v_trans else 0)
            | (FLAG_FLASH_ATTN if self.flash_attn else 0)
            | (FLAG_ISWA if len(self.rope) == 2 else 0)
        )

    @property
    def alignment(self) -> int:
        """Section alignment in bytes: ``2**align_log2``."""
        return 1 << self.align_log2

    @property
    def tokens_nbytes(self) -> int:
        """Bytes of the token table: ``n_tokens * 8``."""
        return self.n_tokens * TOKEN_ENTRY_SIZE

    @property
    def k_nbytes(self) -> int:
        """Bytes of the K section: ``n_layer * n_tokens * n_embd_k * 2``."""
        return self.n_layer * self.n_tokens * self.n_embd_k * 2

    @property
    def v_nbytes(self) -> int:
        """Bytes of the V section: ``n_layer * n_tokens * n_embd_v * 2``."""
        return self.n_layer * self.n_tokens * self.n_embd_v * 2

    @property
    def file_size(self) -> int:
        """The smallest valid file length: the end of the V section."""
        return self.v_offset + self.v_nbytes

    def fingerprint(self, arch: str) -> ModelFingerprint:
        """The model fingerprint this block was compiled for, given the architecture name.

        Raises AtbMismatch (field ``arch``) when ``arch`` does not hash to the stored ``arch_hash``.
        """
        if zlib.crc32(arch.encode("utf-8")) != self.arch_hash:
            raise AtbMismatch(
                f"compiled for another architecture (arch hash {self.arch_hash:#010x}), not {arch}", field="arch"
            )
        return ModelFingerprint(
            arch=arch,
            n_layer=self.n_layer,
            n_head_kv=self.n_head_kv,
            head_dim=self.head_dim,
            n_rot=self.n_rot,
            n_embd_k=self.n_embd_k,
            n_embd_v=self.n_embd_v,
            tokenizer_hash=self.tokenizer_hash,
            rope_type=self.rope_type,
            n_ctx_orig=self.n_ctx_orig,
            rope=self.rope,
        )

    def fingerprint_digest(self) -> str:
        """:meth:`ModelFingerprint.digest` of the model this block was compiled for (its folder name)."""
        return fingerprint_digest(self)

    def to_bytes(self) -> bytes:
        """The 128 header bytes with a freshly computed header_crc. Packs without validating semantics (tools and
        tests build hostile headers with it); raises ValueError when a value does not fit its field's width."""
        rope1 = self.rope[1].values() if len(self.rope) > 1 else (0.0,) * 6
        try:
            head = _HEADER.pack(
                MAGIC,
                self.version,
                self.flags,
                self.k_type,
                self.v_type,
                self.rope_type,
                self.align_log2,
                self.arch_hash,
                self.n_layer,
                self.head_dim,
                self.n_rot,
                self.n_head_kv,
                self.n_embd_k,
                self.n_embd_v,
                self.tokenizer_hash,
                self.n_ctx_orig,
                *self.rope[0].values(),
                *rope1,
                self.m0,
                self.header_hash,
                self.n_tokens,
                self.k_offset,
                self.v_offset,
                self.data_crc,
                0,
            )
        except (struct.error, OverflowError) as e:
            raise ValueError(f"header field out of range: {e}") from e
        return head[:-4] + struct.pack("<I", zlib.crc32(head[:-4]))

    @classmethod
    def from_bytes(cls, data: bytes, path: Path | None = None) -> AtbHeader:
        """Parses and validates a header (the first bytes of a file; at least 128 are needed).

        Checks, in order: magic, version, header_crc, then every field's range and the section offsets' alignment
        and ordering. It cannot check offsets against the file's length; :func:`read_atb` does. Raises AtbError.
        """
        head = bytes(data[:HEADER_SIZE])
        if head[: len(MAGIC)] != MAGIC[: len(head)]:
            raise AtbError("not an .atb file (bad magic)", path, "magic")
        if len(head) < HEADER_SIZE:
            raise AtbError(f"truncated: needs {HEADER_SIZE} bytes, file has {len(head)}", path, "header")
        f = _HEADER.unpack(head)
        version, flags = f[1], f[2]
        if version != VERSION:
            raise AtbError(f"version {version}, this build reads {VERSION}", path, "version")
        if zlib.crc32(head[:-4]) != f[-1]:
            raise AtbError("header checksum mismatch: corrupt", path, "header_crc")
        if flags & ~_KNOWN_FLAGS:
            raise AtbError(f"unknown flag bits {flags & ~_KNOWN_FLAGS:#06x}", path, "flags")
        rope0, rope1 = f[16:22], f[22:28]
        iswa = bool(flags & FLAG_ISWA)
        if not iswa and any(x != 0.0 for x in rope1):
            raise AtbError("rope set 1 is not zero but the iSWA flag (bit 2) is clear", path, "rope1")
        rope = (RopeSet(*rope0), RopeSet(*rope1)) if iswa else (RopeSet(*rope0),)
        h = cls(
            version=version,
            v_trans=bool(flags & FLAG_V_TRANS),
            flash_attn=bool(flags & FLAG_FLASH_ATTN),
            k_type=f[3],
            v_type=f[4],
            rope_type=f[5],
            align_log2=f[6],
            arch_hash=f[7],
            n_layer=f[8],
            head_dim=f[9],
            n_rot=f[10],
            n_head_kv=f[11],
            n_embd_k=f[12],
            n_embd_v=f[13],
            tokenizer_hash=f[14],
            n_ctx_orig=f[15],
            rope=rope,
            m0=f[28],
            header_hash=f[29],
            n_tokens=f[30],
            k_offset=f[31],
            v_offset=f[32],
            data_crc=f[33],
            header_crc=f[34],
        )
        problem = header_problem(h)
        if problem is not None:
            raise AtbError(problem[1], path, problem[0])
        return h


def header_problem(h: AtbHeader) -> tuple[str, str] | None:
    """The first invalid field of a header as (field, message), or None. Shared by the reader and the writer."""
    widths = (
        ("version", U16),
        ("k_type", 0xFF),
        ("v_type", 0xFF),
        ("rope_type", 0xFF),
        ("align_log2", 0xFF),
        ("arch_hash", U32),
        ("n_layer", U16),
        ("head_dim", U16),
        ("n_rot", U16),
        ("n_head_kv", U16),
        ("n_embd_k", U32),
        ("n_embd_v", U32),
        ("tokenizer_hash", U64),
        ("n_ctx_orig", U32),
        ("m0", U32),
        ("header_hash", U64),
        ("n_tokens", U32),
        ("k_offset", U32),
        ("v_offset", U32),
        ("data_crc", U32),
    )
    for name, limit in widths:
        value = getattr(h, name)
        if not isinstance(value, int) or not 0 <= value <= limit:
            return name, f"{value!r} does not fit the field (0..{limit})"
    if h.version != VERSION:
        return "version", f"version {h.version}, this build reads {VERSION}"
    for name in ("k_type", "v_type"):
        t = getattr(h, name)
        if t != GGML_TYPE_F16:
            return name, f"{name}={t} ({type_name(t)}) is not supported: only {GGML_TYPE_F16} (F16)"
    if h.rope_type not in ROPE_NAMES:
        return "rope_type", f"rope_type={h.rope_type}: expected {ROPE_NORM} (NORM) or {ROPE_NEOX} (NEOX)"
    if not ALIGN_LOG2_MIN <= h.align_log2 <= ALIGN_LOG2_MAX:
        return "align_log2", f"align_log2={h.align_log2} out of range {ALIGN_LOG2_MIN}..{ALIGN_LOG2_MAX}"
    for name in ("n_layer", "head_dim", "n_head_kv", "n_embd_k", "n_embd_v", "n_ctx_orig", "n_tokens"):
        if getattr(h, name) < 1:
            return name, f"{name}=0 must be >= 1"
    if h.n_rot < 2 or h.n_rot % 2 or h.n_rot > h.head_dim:
        return "n_rot", f"n_rot={h.n_rot} must be even and in 2..head_dim={h.head_dim}"
    if not 1 <= len(h.rope) <= 2:
        return "rope", f"{len(h.rope)} rope sets: expected 1, or 2 for iSWA models"
    for i, rs in enumerate(h.rope):
        for pname, x in zip(ROPE_PARAMS, rs.values(), strict=True):
            if not isinstance(x, float | int) or not math.isfinite(x):
                return f"rope[{i}].{pname}", f"rope[{i}].{pname}={x!r} is not finite"
        if rs.freq_base <= 0 or rs.freq_scale <= 0:
            return f"rope[{i}]", f"rope[{i}] freq_base={rs.freq_base} and freq_scale={rs.freq_scale} must be > 0"
    if h.n_tokens > MAX_POS:
        return "n_tokens", f"n_tokens={h.n_tokens} exceeds the int32 position range"
    if h.m0 + h.n_tokens - 1 > MAX_POS:
        return "m0", f"positions m0={h.m0} .. m0+n_tokens-1 exceed int32 ({MAX_POS})"
    align = h.alignment
    table_end = HEADER_SIZE + h.tokens_nbytes
    if h.k_offset % align:
        return "k_offset", f"k_offset={h.k_offset} is not a multiple of 2**align_log2={align}"
    if h.k_offset < table_end:
        return "k_offset", f"k_offset={h.k_offset} overlaps the token table (which ends at {table_end})"
    if h.v_offset % align:
        return "v_offset", f"v_offset={h.v_offset} is not a multiple of 2**align_log2={align}"
    if h.v_offset < h.k_offset + h.k_nbytes:
        return "v_offset", f"v_offset={h.v_offset} overlaps the K section ({h.k_offset}..{h.k_offset + h.k_nbytes})"
    return None


def type_name(t: int) -> str:
    return _GGML_TYPE_NAMES.get(t, "unknown ggml type")


@dataclass
class AtbBlock:
    """A loaded block.

    tokens: int32 (n,) the block's token ids.
    sensitivity: float32 (n,) per-token context sensitivity (finite, >= 0; read by the repair policy).
    k: uint16 (n_layer, n, n_embd_k) F16 bit patterns, rotated for positions m0 .. m0+n-1.
    v: uint16 (n_layer, n, n_embd_v) F16 bit patterns, token-major.
    path: the file it came from (None for a block built in memory).

    From :func:`read_atb` all four arrays are private, writeable copies (the file is unmapped before it returns).
    From :class:`BlockCache` they are read-only: ``k`` and ``v`` are zero-copy views into the cache's arena,
    ``tokens`` and ``sensitivity`` shared with the cache entry.
    """

    header: AtbHeader
    tokens: npt.NDArray[np.int32]
    sensitivity: npt.NDArray[np.float32]
    k: npt.NDArray[np.uint16]
    v: npt.NDArray[np.uint16]
    path: Path | None = None

    @property
    def n_tokens(self) -> int:
        return self.header.n_tokens

    @property
    def m0(self) -> int:
        return self.header.m0


def header_hash(tokens: Sequence[int] | npt.NDArray[np.integer[Any]]) -> int:
    """u64 identifying a header token sequence: blake2b (8 bytes, read little-endian) over the tokens as int32 LE."""
    arr = np.asarray(tokens)
    if arr.size == 0:
        data = b""
    else:
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(f"tokens must be a 1-D sequence of integers, got dtype {arr.dtype} shape {arr.shape}")
        if int(arr.min()) < -(1 << 31) or int(arr.max()) > MAX_POS:
            raise ValueError("tokens must fit in int32")
        data = arr.astype("<i4").tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
