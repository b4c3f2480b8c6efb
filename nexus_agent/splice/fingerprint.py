"""What a compiled block's K and V depend on, and so what it must match to be spliced: the model's
:class:`ModelFingerprint` (architecture, cache geometry, tokenizer, RoPE) and the running context's
:class:`SpliceTarget` (attention mode, cache types, the header it was compiled after, its anchor).

A fingerprint's :meth:`~ModelFingerprint.digest` names the folder a model's blocks live in; a header's fields give
the same digest (:meth:`nexus_agent.splice.format.AtbHeader.fingerprint_digest`), so a block can be checked
against the folder it sits in. docs/atb-format.md describes both.
"""

from __future__ import annotations

import hashlib
import math
import operator
import struct
import zlib
from dataclasses import dataclass
from typing import Final, Protocol

GGML_TYPE_F16: Final = 1
ROPE_NORM: Final = 0
ROPE_NEOX: Final = 2
ROPE_NAMES: Final = {ROPE_NORM: "NORM", ROPE_NEOX: "NEOX"}

# The widths the digest packs (and the header stores) the fields in.
U16: Final = (1 << 16) - 1
U32: Final = (1 << 32) - 1
U64: Final = (1 << 64) - 1

ROPE_PARAMS: Final = ("freq_base", "freq_scale", "ext_factor", "attn_factor", "beta_fast", "beta_slow")


def f32(x: float) -> float:
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


class FingerprintFields(Protocol):
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


def fingerprint_digest(f: FingerprintFields) -> str:
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
        if self.rope_type not in ROPE_NAMES:
            raise ValueError(f"rope_type must be {ROPE_NORM} (NORM) or {ROPE_NEOX} (NEOX), got {self.rope_type}")
        for name, limit in (
            ("n_layer", U16),
            ("n_head_kv", U16),
            ("head_dim", U16),
            ("n_rot", U16),
            ("n_embd_k", U32),
            ("n_embd_v", U32),
            ("tokenizer_hash", U64),
            ("n_ctx_orig", U32),
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
            for pname, x in zip(ROPE_PARAMS, rs.values(), strict=True):
                try:
                    ok = math.isfinite(f32(x))
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
        return fingerprint_digest(self)


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
