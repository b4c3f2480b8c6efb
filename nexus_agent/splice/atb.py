"""The ``.atb`` file format: one compiled tool block, the KV cache a model computed for one text rendering of a tool.

A block holds, for every layer, the F16 K rows (already rotated for positions ``m0 .. m0+n-1``) and the F16 V rows
(token-major) of ``n`` tokens that were decoded after a fixed header prompt. The runtime splices those rows into a
live llama.cpp context instead of prefilling the text. docs/atb-format.md describes the layout byte by byte; this
module writes it (:func:`write_atb`), reads and validates it (:func:`read_atb`), decides whether a block fits a
running context (:func:`check_compatible`) and keeps loaded blocks in a buddy-allocated arena (:class:`BlockCache`).

Reading never trusts the file: every field is range-checked, every offset and size is checked against the file's
length before anything past the header is touched, and any malformed input raises :class:`AtbError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import mmap
import operator
import os
import stat
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from nexus_agent.native import Block, BuddyAllocator, block_array
from nexus_agent.paths import nexus_home

__all__ = [
    "DEFAULT_ALIGN_LOG2",
    "GGML_TYPE_F16",
    "HEADER_LAYOUT",
    "HEADER_SIZE",
    "MAGIC",
    "ROPE_NEOX",
    "ROPE_NORM",
    "VERSION",
    "AtbBlock",
    "AtbError",
    "AtbHeader",
    "AtbMismatch",
    "BlockCache",
    "ModelFingerprint",
    "RopeSet",
    "SpliceTarget",
    "atb_dir",
    "check_compatible",
    "header_hash",
    "read_atb",
    "write_atb",
]

GGML_TYPE_F16: Final = 1
ROPE_NORM: Final = 0
ROPE_NEOX: Final = 2

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

_MAX_POS: Final = (1 << 31) - 1  # llama_pos is int32
_U16: Final = (1 << 16) - 1
_U32: Final = (1 << 32) - 1
_U64: Final = (1 << 64) - 1

_ROPE_PARAMS: Final = ("freq_base", "freq_scale", "ext_factor", "attn_factor", "beta_fast", "beta_slow")
_ROPE_NAMES: Final = {ROPE_NORM: "NORM", ROPE_NEOX: "NEOX"}
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

_TABLE_DTYPE: Final = np.dtype([("token", "<i4"), ("sensitivity", "<f4")])
_F16_LE: Final = np.dtype("<u2")


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


# ------------------------------------------------------------------------------------------------ data types


def _f32(x: float) -> float:
    """``x`` rounded to float32 (how the file stores it); OverflowError when out of float32's range."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


@dataclass(frozen=True)
class RopeSet:
    """RoPE parameters of one KV-cache section, as llama.cpp applies them to K (all float32 in the gguf).

    ``freq_base`` is the rotation base θ, ``freq_scale`` the linear position scale (1/factor), ``ext_factor``,
    ``attn_factor``, ``beta_fast`` and ``beta_slow`` the YaRN extrapolation mix, attention scale and ramp bounds.
    """

    freq_base: float
    freq_scale: float = 1.0
    ext_factor: float = 0.0
    attn_factor: float = 1.0
    beta_fast: float = 32.0
    beta_slow: float = 1.0

    def values(self) -> tuple[float, float, float, float, float, float]:
        """The six parameters in file order."""
        return (self.freq_base, self.freq_scale, self.ext_factor, self.attn_factor, self.beta_fast, self.beta_slow)


class _FingerprintFields(Protocol):
    """What the digest reads: ``ModelFingerprint`` and ``AtbHeader`` both have these (read-only) fields."""

    @property
    def arch_hash(self) -> int: ...

    @property
    def n_layer(self) -> int: ...

    @property
    def n_head_kv(self) -> int: ...

    @property
    def head_dim(self) -> int: ...

    @property
    def n_rot(self) -> int: ...

    @property
    def n_embd_k(self) -> int: ...

    @property
    def n_embd_v(self) -> int: ...

    @property
    def tokenizer_hash(self) -> int: ...

    @property
    def rope_type(self) -> int: ...

    @property
    def n_ctx_orig(self) -> int: ...

    @property
    def rope(self) -> tuple[RopeSet, ...]: ...


def _fingerprint_digest(f: _FingerprintFields) -> str:
    # Canonical packing: fixed-width little-endian integers and float32 rope values, i.e. exactly what a header
    # holds, so a header and the fingerprint it was written from give the same digest.
    packed = b"nexus-atb-fingerprint/1" + struct.pack(
        "<IHHHHIIQBIB",
        f.arch_hash,
        f.n_layer,
        f.n_head_kv,
        f.head_dim,
        f.n_rot,
        f.n_embd_k,
        f.n_embd_v,
        f.tokenizer_hash,
        f.rope_type,
        f.n_ctx_orig,
        len(f.rope),
    )
    for rs in f.rope:
        packed += struct.pack("<6f", *rs.values())
    return hashlib.blake2b(packed, digest_size=8).hexdigest()


@dataclass(frozen=True)
class ModelFingerprint:
    """What a block's K/V depend on in the model: architecture, cache geometry, tokenizer and RoPE.

    ``arch`` is gguf ``general.architecture`` (e.g. ``"qwen2"``); ``n_layer`` layers with ``n_head_kv`` KV heads
    of ``head_dim`` elements, ``n_rot`` of which are rotated; ``n_embd_k`` / ``n_embd_v`` are the per-layer K / V
    row widths in elements (``n_head_kv * head_dim`` normally); ``tokenizer_hash`` is a u64 over the vocabulary;
    ``rope_type`` is :data:`ROPE_NORM` or :data:`ROPE_NEOX`; ``n_ctx_orig`` the training context (YaRN);
    ``rope`` one :class:`RopeSet` per cache section (two for iSWA models: global, then sliding-window).

    Construction checks that every field fits the header's field width, so ``digest()`` never fails.
    """

    arch: str
    n_layer: int
    n_head_kv: int
    head_dim: int
    n_rot: int
    n_embd_k: int
    n_embd_v: int
    tokenizer_hash: int
    rope_type: int
    n_ctx_orig: int
    rope: tuple[RopeSet, ...]

    def __post_init__(self) -> None:
        # gguf readers hand out numpy scalars and lists: store plain ints and a tuple (hashable, comparable).
        object.__setattr__(self, "rope", tuple(self.rope))
        if not 1 <= len(self.rope) <= 2:
            raise ValueError(f"rope must hold 1 or 2 RopeSets (2 for iSWA models), got {len(self.rope)}")
        if self.rope_type not in _ROPE_NAMES:
            raise ValueError(f"rope_type must be {ROPE_NORM} (NORM) or {ROPE_NEOX} (NEOX), got {self.rope_type}")
        for name, limit in (
            ("n_layer", _U16),
            ("n_head_kv", _U16),
            ("head_dim", _U16),
            ("n_rot", _U16),
            ("n_embd_k", _U32),
            ("n_embd_v", _U32),
            ("tokenizer_hash", _U64),
            ("n_ctx_orig", _U32),
        ):
            value = getattr(self, name)
            try:
                as_int = operator.index(value)
            except TypeError:
                as_int = -1
            if isinstance(value, bool) or not 0 <= as_int <= limit:
                raise ValueError(f"{name} must be an integer in 0..{limit}, got {value!r}")
            object.__setattr__(self, name, as_int)
        for i, rs in enumerate(self.rope):
            for pname, x in zip(_ROPE_PARAMS, rs.values(), strict=True):
                try:
                    ok = math.isfinite(_f32(x))
                except (OverflowError, TypeError, struct.error):
                    ok = False
                if not ok:
                    raise ValueError(f"rope[{i}].{pname} must be a finite float32 value, got {x!r}")

    @property
    def arch_hash(self) -> int:
        """zlib.crc32 of the architecture name (UTF-8): what a header stores instead of the name."""
        return zlib.crc32(self.arch.encode("utf-8"))

    def digest(self) -> str:
        """16 lowercase hex chars identifying the fingerprint, stable across processes and machines.

        blake2b (8 bytes) over a canonical packing of every field, the architecture as its crc32 and the rope
        values as float32 (as a header stores them, so :meth:`AtbHeader.fingerprint_digest` agrees). Blocks of
        this model live in ``$NEXUS_HOME/atb/<digest>/``.
        """
        return _fingerprint_digest(self)


@dataclass(frozen=True)
class SpliceTarget:
    """What the running context needs a block to match.

    ``v_trans`` is the running context's V layout (True when flash attention is off); blocks store V token-major
    whatever it is, so it tells the splicer whether to transpose and is not a compatibility criterion.
    ``header_hash`` is :func:`header_hash` of the header tokens the block must have been compiled after;
    ``m0`` the expected anchor (position of the block's first token), None for any.
    """

    fingerprint: ModelFingerprint
    flash_attn: bool
    v_trans: bool
    k_type: int = GGML_TYPE_F16
    v_type: int = GGML_TYPE_F16
    header_hash: int = 0
    m0: int | None = None


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
        return _fingerprint_digest(self)

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
        problem = _header_problem(h)
        if problem is not None:
            raise AtbError(problem[1], path, problem[0])
        return h


def _header_problem(h: AtbHeader) -> tuple[str, str] | None:
    """The first invalid field of a header as (field, message), or None. Shared by the reader and the writer."""
    widths = (
        ("version", _U16),
        ("k_type", 0xFF),
        ("v_type", 0xFF),
        ("rope_type", 0xFF),
        ("align_log2", 0xFF),
        ("arch_hash", _U32),
        ("n_layer", _U16),
        ("head_dim", _U16),
        ("n_rot", _U16),
        ("n_head_kv", _U16),
        ("n_embd_k", _U32),
        ("n_embd_v", _U32),
        ("tokenizer_hash", _U64),
        ("n_ctx_orig", _U32),
        ("m0", _U32),
        ("header_hash", _U64),
        ("n_tokens", _U32),
        ("k_offset", _U32),
        ("v_offset", _U32),
        ("data_crc", _U32),
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
            return name, f"{name}={t} ({_type_name(t)}) is not supported: only {GGML_TYPE_F16} (F16)"
    if h.rope_type not in _ROPE_NAMES:
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
        for pname, x in zip(_ROPE_PARAMS, rs.values(), strict=True):
            if not isinstance(x, float | int) or not math.isfinite(x):
                return f"rope[{i}].{pname}", f"rope[{i}].{pname}={x!r} is not finite"
        if rs.freq_base <= 0 or rs.freq_scale <= 0:
            return f"rope[{i}]", f"rope[{i}] freq_base={rs.freq_base} and freq_scale={rs.freq_scale} must be > 0"
    if h.n_tokens > _MAX_POS:
        return "n_tokens", f"n_tokens={h.n_tokens} exceeds the int32 position range"
    if h.m0 + h.n_tokens - 1 > _MAX_POS:
        return "m0", f"positions m0={h.m0} .. m0+n_tokens-1 exceed int32 ({_MAX_POS})"
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


def _type_name(t: int) -> str:
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


# ---------------------------------------------------------------------------------------------- hashing


def header_hash(tokens: Sequence[int] | npt.NDArray[np.integer[Any]]) -> int:
    """u64 identifying a header token sequence: blake2b (8 bytes, read little-endian) over the tokens as int32 LE."""
    arr = np.asarray(tokens)
    if arr.size == 0:
        data = b""
    else:
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(f"tokens must be a 1-D sequence of integers, got dtype {arr.dtype} shape {arr.shape}")
        if int(arr.min()) < -(1 << 31) or int(arr.max()) > _MAX_POS:
            raise ValueError("tokens must fit in int32")
        data = arr.astype("<i4").tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def atb_dir(fingerprint: ModelFingerprint) -> Path:
    """The folder of a model's blocks: ``$NEXUS_HOME/atb/<fingerprint digest>/`` (not created here; write_atb
    creates missing parent folders). Each block in it is ``<rendering hash>.atb``, named by the compiler."""
    return nexus_home() / "atb" / fingerprint.digest()


# ---------------------------------------------------------------------------------------------- writing


def _as_f16_bits(name: str, x: npt.ArrayLike, shape: tuple[int, int, int], dims: str) -> npt.NDArray[np.uint16]:
    arr = np.asarray(x)
    if arr.dtype == np.float16:
        arr = arr.view(np.uint16)
    if arr.dtype != np.uint16:
        raise ValueError(f"{name} must hold F16 bit patterns as uint16 (or float16), got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape ({dims}) = {shape}, got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=_F16_LE)


def write_atb(
    path: str | os.PathLike[str],
    target: SpliceTarget,
    m0: int,
    tokens: Sequence[int] | npt.NDArray[np.integer[Any]],
    sensitivity: Sequence[float] | npt.NDArray[np.floating[Any]],
    k: npt.NDArray[Any],
    v: npt.NDArray[Any],
    align_log2: int = DEFAULT_ALIGN_LOG2,
) -> int:
    """Writes a block; returns the file's logical size in bytes.

    ``target`` gives the fingerprint, the attention mode (flash_attn, v_trans), the K/V types (F16 only) and the
    header hash the block was compiled after; ``m0`` is the position of the first token. ``tokens`` are n >= 1 ids
    in 0..2**31-1, ``sensitivity`` n finite values >= 0, ``k`` (n_layer, n, n_embd_k) and ``v`` (n_layer, n,
    n_embd_v) uint16 F16 bit patterns (float16 arrays are taken bitwise). The K and V sections start at
    multiples of ``2**align_log2`` bytes (12..30; default 2 MiB), written with seek so the gaps are sparse holes.

    Atomic: the file is written as ``<path>.tmp-<pid>-<thread>``, fsynced and renamed over ``path``. Invalid
    arguments raise ValueError before anything is written.
    """
    fp = target.fingerprint
    tok = np.asarray(tokens)
    if tok.ndim != 1 or tok.size == 0:
        raise ValueError(f"tokens must be a non-empty 1-D sequence, got shape {tok.shape}")
    if tok.dtype.kind not in "iu":
        raise ValueError(f"tokens must be integers, got dtype {tok.dtype}")
    if int(tok.min()) < 0 or int(tok.max()) > _MAX_POS:
        raise ValueError(f"token ids must be in 0..{_MAX_POS}, got {int(tok.min())}..{int(tok.max())}")
    n = int(tok.size)
    sens_in = np.asarray(sensitivity)
    if sens_in.shape != (n,):
        raise ValueError(f"sensitivity must have shape ({n},) like tokens, got {sens_in.shape}")
    if sens_in.dtype.kind not in "fiu":
        raise ValueError(f"sensitivity must be real numbers, got dtype {sens_in.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        sens = sens_in.astype(np.float32)
    if not np.all(np.isfinite(sens)) or np.any(sens < 0):
        raise ValueError("sensitivity must be finite float32 values >= 0")
    k_le = _as_f16_bits("k", k, (fp.n_layer, n, fp.n_embd_k), "n_layer, n_tokens, n_embd_k")
    v_le = _as_f16_bits("v", v, (fp.n_layer, n, fp.n_embd_v), "n_layer, n_tokens, n_embd_v")
    if not isinstance(m0, int | np.integer) or m0 < 0:
        raise ValueError(f"m0 must be an integer >= 0, got {m0!r}")
    if not isinstance(align_log2, int | np.integer) or not ALIGN_LOG2_MIN <= align_log2 <= ALIGN_LOG2_MAX:
        raise ValueError(f"align_log2 must be in {ALIGN_LOG2_MIN}..{ALIGN_LOG2_MAX}, got {align_log2!r}")

    table = np.empty(n, dtype=_TABLE_DTYPE)
    table["token"] = tok
    table["sensitivity"] = sens
    table_bytes = table.tobytes()
    align = 1 << int(align_log2)
    k_offset = _align_up(HEADER_SIZE + len(table_bytes), align)
    v_offset = _align_up(k_offset + k_le.nbytes, align)
    if v_offset > _U32:
        raise ValueError(f"block too large: the V section would start at byte {v_offset}, past the u32 offset limit")
    k_mv = k_le.data.cast("B")
    v_mv = v_le.data.cast("B")
    data_crc = zlib.crc32(v_mv, zlib.crc32(k_mv, zlib.crc32(table_bytes)))
    header = AtbHeader(
        version=VERSION,
        v_trans=bool(target.v_trans),
        flash_attn=bool(target.flash_attn),
        k_type=target.k_type,
        v_type=target.v_type,
        rope_type=fp.rope_type,
        align_log2=int(align_log2),
        arch_hash=fp.arch_hash,
        n_layer=fp.n_layer,
        head_dim=fp.head_dim,
        n_rot=fp.n_rot,
        n_head_kv=fp.n_head_kv,
        n_embd_k=fp.n_embd_k,
        n_embd_v=fp.n_embd_v,
        tokenizer_hash=fp.tokenizer_hash,
        n_ctx_orig=fp.n_ctx_orig,
        rope=tuple(RopeSet(*(_f32(x) for x in rs.values())) for rs in fp.rope),
        m0=int(m0),
        header_hash=target.header_hash,
        n_tokens=n,
        k_offset=k_offset,
        v_offset=v_offset,
        data_crc=data_crc,
    )
    problem = _header_problem(header)
    if problem is not None:
        raise ValueError(f"cannot write {path}: {problem[0]}: {problem[1]}")
    head = header.to_bytes()

    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}-{threading.get_native_id()}")
    try:
        with open(tmp, "wb") as f:
            f.write(head)
            f.write(table_bytes)
            f.seek(k_offset)  # the gap stays a sparse hole
            f.write(k_mv)
            f.seek(v_offset)
            f.write(v_mv)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return header.file_size


def _align_up(x: int, align: int) -> int:
    return (x + align - 1) // align * align


# ---------------------------------------------------------------------------------------------- reading


def check_compatible(header: AtbHeader, target: SpliceTarget, path: Path | None = None) -> None:
    """Raises AtbMismatch unless the block can be spliced into ``target``'s context.

    Compared: architecture (its crc32), n_layer, n_head_kv, head_dim, n_rot, n_embd_k, n_embd_v, tokenizer_hash,
    rope_type, n_ctx_orig, the RoPE sets (count, then each value exactly after rounding the runtime's to float32),
    flash attention, K and V types, header hash, and m0 when the target names one. ``v_trans`` is not compared:
    V is stored token-major whatever layout the compiling context used. The message names the field, the file's
    value and the runtime's, e.g. ``compiled for n_layer=24, the running model has 28``.
    """
    fp = target.fingerprint

    def fail(field: str, message: str) -> AtbMismatch:
        return AtbMismatch(message, path, field)

    if header.arch_hash != fp.arch_hash:
        raise fail(
            "arch",
            f"compiled for another architecture (arch hash {header.arch_hash:#010x}), "
            f"the running model is {fp.arch} ({fp.arch_hash:#010x})",
        )
    for name in ("n_layer", "n_head_kv", "head_dim", "n_rot", "n_embd_k", "n_embd_v", "n_ctx_orig"):
        mine, theirs = getattr(header, name), getattr(fp, name)
        if mine != theirs:
            raise fail(name, f"compiled for {name}={mine}, the running model has {theirs}")
    if header.tokenizer_hash != fp.tokenizer_hash:
        raise fail(
            "tokenizer_hash",
            f"compiled for tokenizer_hash={header.tokenizer_hash:#018x}, "
            f"the running model has {fp.tokenizer_hash:#018x}",
        )
    if header.rope_type != fp.rope_type:
        raise fail(
            "rope_type",
            f"compiled for rope_type={header.rope_type} ({_ROPE_NAMES.get(header.rope_type, '?')}), "
            f"the running model has {fp.rope_type} ({_ROPE_NAMES.get(fp.rope_type, '?')})",
        )
    if len(header.rope) != len(fp.rope):
        raise fail("rope", f"compiled with {len(header.rope)} RoPE set(s), the running model has {len(fp.rope)}")
    for i, (mine_rs, theirs_rs) in enumerate(zip(header.rope, fp.rope, strict=True)):
        for pname, mine_x, theirs_x in zip(_ROPE_PARAMS, mine_rs.values(), theirs_rs.values(), strict=True):
            try:
                same = _f32(theirs_x) == mine_x
            except (OverflowError, TypeError, struct.error):
                same = False
            if not same:
                raise fail(
                    f"rope[{i}].{pname}",
                    f"compiled for rope[{i}].{pname}={mine_x!r}, the running model has {theirs_x!r}",
                )
    if header.flash_attn != target.flash_attn:
        on_off = {True: "on", False: "off"}
        raise fail(
            "flash_attn",
            f"compiled with flash attention {on_off[header.flash_attn]}, "
            f"this context has it {on_off[bool(target.flash_attn)]}",
        )
    for name in ("k_type", "v_type"):
        mine, theirs = getattr(header, name), getattr(target, name)
        if mine != theirs:
            raise fail(
                name,
                f"compiled with {name}={mine} ({_type_name(mine)}), this context has {theirs} ({_type_name(theirs)})",
            )
    if header.header_hash != target.header_hash:
        raise fail(
            "header_hash",
            f"compiled after other header tokens (hash {header.header_hash:#018x}), "
            f"this context's header hash is {target.header_hash:#018x}",
        )
    if target.m0 is not None and header.m0 != target.m0:
        raise fail("m0", f"compiled at m0={header.m0}, this context expects m0={target.m0}")


_FileSig = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


def _sig(st: os.stat_result) -> _FileSig:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class _Mapped:
    """A validated file, mapped read-only for the duration of a ``with _mapped(...)`` block."""

    header: AtbHeader
    mm: mmap.mmap
    sig: _FileSig
    tokens: npt.NDArray[np.int32]
    sensitivity: npt.NDArray[np.float32]


def _read_head(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            break
        out += chunk
    return out


@contextlib.contextmanager
def _mapped(path: Path, target: SpliceTarget | None, verify_data: bool) -> Iterator[_Mapped]:
    """Opens, maps and validates ``path``: header, sizes vs the file length, compatibility (when ``target`` is
    given), data checksum (when ``verify_data``) and the token table's values. Every failure is an AtbError."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO must not hang
    except OSError as e:
        raise AtbError(f"cannot open: {e.strerror or e}", path, "file") from e
    try:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise AtbError("not a regular file", path, "file")
            size = st.st_size
            head = _read_head(fd, min(size, HEADER_SIZE))
        except OSError as e:
            raise AtbError(f"cannot read: {e.strerror or e}", path, "file") from e
        header = AtbHeader.from_bytes(head, path)
        if size < header.file_size:
            raise AtbError(f"truncated: needs {header.file_size} bytes, file has {size}", path, "file")
        if target is not None:
            check_compatible(header, target, path)
        try:
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except (OSError, ValueError, OverflowError) as e:
            raise AtbError(f"cannot map: {e}", path, "file") from e
    finally:
        os.close(fd)  # the mapping keeps its own reference to the file
    try:
        if verify_data and _data_crc(mm, header) != header.data_crc:
            raise AtbError("data checksum mismatch: corrupt token table, K or V", path, "data_crc")
        tokens, sensitivity = _read_table(mm, header)
        if np.any(tokens < 0):
            raise AtbError(f"negative token id {int(tokens.min())}", path, "tokens")
        if not np.all(np.isfinite(sensitivity)) or np.any(sensitivity < 0):
            raise AtbError("sensitivity values must be finite and >= 0", path, "sensitivity")
        yield _Mapped(header, mm, _sig(st), tokens, sensitivity)
    finally:
        with contextlib.suppress(BufferError):  # a leaked view only delays the unmap to garbage collection
            mm.close()


def _data_crc(mm: mmap.mmap, h: AtbHeader) -> int:
    with memoryview(mm) as mv:
        crc = zlib.crc32(mv[HEADER_SIZE : HEADER_SIZE + h.tokens_nbytes])
        crc = zlib.crc32(mv[h.k_offset : h.k_offset + h.k_nbytes], crc)
        return zlib.crc32(mv[h.v_offset : h.v_offset + h.v_nbytes], crc)


def _read_table(mm: mmap.mmap, h: AtbHeader) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    table = np.frombuffer(mm, dtype=_TABLE_DTYPE, count=h.n_tokens, offset=HEADER_SIZE)
    return table["token"].astype(np.int32), table["sensitivity"].astype(np.float32)


def _section(mm: mmap.mmap, offset: int, count: int) -> npt.NDArray[Any]:
    return np.frombuffer(mm, dtype=_F16_LE, count=count, offset=offset)


def _copy_kv(mm: mmap.mmap, h: AtbHeader) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint16]]:
    n_k, n_v = h.k_nbytes // 2, h.v_nbytes // 2
    k = _section(mm, h.k_offset, n_k).astype(np.uint16).reshape(h.n_layer, h.n_tokens, h.n_embd_k)
    v = _section(mm, h.v_offset, n_v).astype(np.uint16).reshape(h.n_layer, h.n_tokens, h.n_embd_v)
    return k, v


def read_atb(path: str | os.PathLike[str], target: SpliceTarget | None = None, verify_data: bool = True) -> AtbBlock:
    """Reads and validates a block; with ``target``, also checks it can be spliced there (:func:`check_compatible`).

    The file is memory-mapped read-only and validated in this order: magic, version, header checksum, every
    header field, section offsets and sizes against the file's length, compatibility with ``target``, the data
    checksum (when ``verify_data``) and the token table's values. The returned arrays are private, writeable
    copies; the mapping is closed before returning. Any malformed, unreadable or incompatible file raises
    AtbError (AtbMismatch for incompatibility); nothing is read outside the file.

    A file truncated by another process *while* it is being read can still fault (SIGBUS) on the mapping; blocks
    are written atomically (:func:`write_atb`), so that takes a writer that does not follow the format's rules.
    """
    p = Path(path)
    with _mapped(p, target, verify_data) as m:
        k, v = _copy_kv(m.mm, m.header)
        return AtbBlock(m.header, m.tokens, m.sensitivity, k, v, p)


# ---------------------------------------------------------------------------------------------- cache


@dataclass
class _Entry:
    sig: _FileSig
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
                sig = _sig(os.stat(key))
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
            with _mapped(p, target, self._verify_data) as m:
                h = m.header
                block = self._alloc(h.k_nbytes + h.v_nbytes)
                if block is None:
                    self._bypassed += 1
                    k, v = _copy_kv(m.mm, h)
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
    dst[:n_k] = _section(mm, h.k_offset, n_k)
    dst[n_k : n_k + n_v] = _section(mm, h.v_offset, n_v)
