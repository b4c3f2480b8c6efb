"""RoPE re-anchoring (``nexus_agent.native.rope_shift_f16``) against llama.cpp's own K-shift, byte for byte.

Each case exports a sequence, loads it back, lets llama.cpp shift it (``seq_add`` then one decode in another
sequence, which applies the pending K-shift), exports it again and compares its K rows with our rotation of
the original rows. Covered: NORM (llama) and NEOX (qwen2) tiny models, flash attention off (transposed V) and
on, positive and negative deltas, several deltas in one sequence, linear rope scaling, YaRN, and head_dim 128
(tiny models written here). Also: the transposed-V writer rebuilds an exported blob's V exactly, and bad
arguments raise ValueError.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import llama_cpp.llama_cpp as L
import numpy as np
import numpy.typing as npt
import pytest

from nexus_agent import native
from nexus_agent.llm import ContextConfig, LlamaContext, LlamaModel
from nexus_agent.models import resolve
from nexus_agent.native import RopeParams
from nexus_agent.splice.blob import SeqBlob, parse_blob

DELTAS = [1, 63, 255, 1023, 3000, -1, -63, -255, -1023, -3000]
HIGH_BASE = 3100  # where the negative-delta blobs start, so shifted positions stay >= 0
TEXT = (
    "Tools: get_weather(city, unit) returns the forecast; search_files(pattern, root) lists matching paths; "
    "send_email(to, subject, body) queues a message. The assistant picks one tool per request and fills every "
    "argument from the conversation, asking when a value is missing. 0123456789 {}[]()<>"
)


def _cfg(flash_attn: bool) -> ContextConfig:
    return ContextConfig(n_ctx=4096, n_batch=512, n_ubatch=512, n_seq_max=3, n_threads=1, flash_attn=flash_attn)


def rope_of(m: LlamaModel, **ctx: float | int) -> RopeParams:
    """The model's rope parameters from its GGUF metadata (llama.cpp's defaults where a key is absent)."""
    a = m.arch

    def meta(key: str) -> str | None:
        return m.meta(f"{a}.{key}")

    n_head = int(meta("attention.head_count") or 0)
    head_dim = int(meta("attention.key_length") or m.n_embd // n_head)
    return RopeParams(
        n_rot=int(meta("rope.dimension_count") or head_dim),
        head_dim=head_dim,
        n_head_kv=int(meta("attention.head_count_kv") or n_head),
        rope_type=m.rope_type,
        freq_base=float(meta("rope.freq_base") or 10000.0),
        **ctx,  # type: ignore[arg-type]
    )


def f16_ulps(a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8]) -> npt.NDArray[np.int32]:
    """Distance in f16 ulps between two arrays of f16 bits (sign-magnitude mapped to a monotonic scale)."""

    def mono(x: npt.NDArray[np.uint8]) -> npt.NDArray[np.int32]:
        v = x.view(np.int16).astype(np.int32)
        return np.where(v < 0, -32768 - v, v)

    return np.abs(mono(a) - mono(b))


@dataclass
class Compared:
    elems: int = 0
    exact: int = 0
    max_ulp: int = 0

    def add(self, got: npt.NDArray[np.uint8], want: npt.NDArray[np.uint8]) -> None:
        u = f16_ulps(got, want)
        self.elems += u.size
        self.exact += int((u == 0).sum())
        self.max_ulp = max(self.max_ulp, int(u.max()) if u.size else 0)

    def __str__(self) -> str:
        return f"{self.elems} K elements, {100.0 * self.exact / max(self.elems, 1):.3f}% exact, max {self.max_ulp} ulp"


def _export(ctx: LlamaContext, toks: list[int], pos0: int) -> bytes:
    ctx.clear()
    ctx.decode(toks, pos0, seq=1, n_logits=0)
    return ctx.seq_state(1)


def _llama_shift(ctx: LlamaContext, blob: bytes, shifts: list[tuple[int, int, int]], dummy: int) -> SeqBlob:
    """Load ``blob`` into seq 1, apply ``seq_add(1, p0, p1, delta)`` for each shift, make llama.cpp apply the
    pending K-shift with a one-token decode in seq 2, and return seq 1's export."""
    ctx.clear()
    ctx.set_seq_state(blob, 1)
    for p0, p1, delta in shifts:
        ctx.seq_add(1, p0, p1, delta)
    ctx.decode([dummy], 0, seq=2, n_logits=0)
    ctx.seq_rm(2)
    return parse_blob(ctx.seq_state(1))


def _compare(orig: SeqBlob, shifted: SeqBlob, rope: RopeParams, stats: Compared) -> None:
    so, ss = orig.sections[0], shifted.sections[0]
    assert so.n_cells == ss.n_cells > 0
    deltas = (ss.pos - so.pos).astype(np.int32)  # same cells, same order: per-cell shifts
    for layer, (ko, ks) in enumerate(zip(so.k, ss.k, strict=True)):
        assert so.k_types[layer] == 1, "these tests use an f16 K cache"
        ours = ko.view(np.uint16).copy()
        native.rope_shift_f16(ours, deltas, rope)
        stats.add(ours.view(np.uint8), np.asarray(ks))
        assert np.array_equal(ours.view(np.uint8), ks), f"layer {layer}: K differs from llama.cpp's shift ({stats})"
    # V does not move with the position
    for vo, vs in zip(so.v, ss.v, strict=True):
        assert np.array_equal(vo, vs)


def _run_kshift(m: LlamaModel, cfg: ContextConfig, rope: RopeParams, label: str) -> Compared:
    stats = Compared()
    toks = m.tokenize(TEXT)
    with LlamaContext(m, cfg) as ctx:
        low, high = _export(ctx, toks, 0), _export(ctx, toks, HIGH_BASE)
        base_low, base_high = parse_blob(low), parse_blob(high)
        for delta in DELTAS:
            blob, base = (low, base_low) if delta > 0 else (high, base_high)
            shifted = _llama_shift(ctx, blob, [(-1, -1, delta)], toks[0])
            assert np.array_equal(shifted.sections[0].pos, base.sections[0].pos + delta)
            _compare(base, shifted, rope, stats)
        # several deltas in one sequence (blocks moved by different amounts): per-row deltas
        n = len(toks)
        shifts = [(0, n // 3, 2000), (n // 3, 2 * n // 3, 517), (2 * n // 3, n, 9)]
        shifted = _llama_shift(ctx, low, shifts, toks[0])
        assert len(set((shifted.sections[0].pos - base_low.sections[0].pos).tolist())) == 3
        _compare(base_low, shifted, rope, stats)
    print(f"\n{label}: {stats}")
    return stats


# ---------------------------------------------------------------- models


@pytest.fixture(scope="module", params=["tiny", "tiny-qwen2"])
def model(request: pytest.FixtureRequest) -> Iterator[LlamaModel]:
    m = LlamaModel(resolve(request.param))
    yield m
    m.close()


def _write_wide_tiny(path: Path, arch: str) -> Path:
    """A one-layer tiny model with head_dim 128 (64 rotated pairs), to cover the whole theta recurrence."""
    from nexus_agent.models.store import vocab_gguf
    from nexus_agent.models.tiny import TinyConfig, write_tiny_gguf

    cfg = TinyConfig(
        arch="qwen2" if arch == "qwen2" else "llama",
        layers=1,
        embd=128,
        heads=1,
        kv_heads=1,
        ff=64,
        rope_base=1_000_000.0 if arch == "qwen2" else 10_000.0,
    )
    # the small llama vocabulary for both: the tokenizer does not depend on the architecture, and qwen2's
    # 151k-token vocabulary would take seconds to copy
    return write_tiny_gguf(path, vocab_gguf("llama-spm"), cfg)


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def wide_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaModel]:
    path = _write_wide_tiny(tmp_path_factory.mktemp("wide") / f"wide-{request.param}.gguf", request.param)
    m = LlamaModel(path)
    yield m
    m.close()


# ---------------------------------------------------------------- bit-exactness vs llama.cpp


@pytest.mark.parametrize("flash_attn", [False, True], ids=["fa_off", "fa_on"])
def test_bit_exact_with_llama_kshift(model: LlamaModel, flash_attn: bool) -> None:
    rope = rope_of(model)
    assert rope.rope_type == (native.ROPE_NEOX if model.arch == "qwen2" else native.ROPE_NORM)
    stats = _run_kshift(model, _cfg(flash_attn), rope, f"{model.arch} fa={flash_attn}")
    assert stats.exact == stats.elems > 0


def test_bit_exact_with_llama_kshift_head_dim_128(wide_model: LlamaModel) -> None:
    rope = rope_of(wide_model)
    assert rope.n_rot == rope.head_dim == 128
    stats = _run_kshift(wide_model, _cfg(False), rope, f"{wide_model.arch} head_dim 128")
    assert stats.exact == stats.elems > 0


_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_libm.logf.restype = ctypes.c_float
_libm.logf.argtypes = [ctypes.c_float]


def _logf(x: np.float32) -> np.float32:
    return np.float32(_libm.logf(float(x)))


def _yarn_attn_factor(freq_scale: float) -> float:
    """cparams.yarn_attn_factor as llama_context computes it when ext_factor != 0 and the model has no
    rope_yarn_log_mul: get_mscale(1/freq_scale) / (1 + 0.1*logf(1/freq_scale)) in float32 (libllama has no FMA)."""
    f32 = np.float32
    factor = f32(1.0) / f32(freq_scale)
    m = f32(f32(f32(0.1) * f32(1.0)) * _logf(factor)) + f32(1.0) if factor > 1 else f32(1.0)
    return float(f32(m * (f32(1.0) / (f32(1.0) + f32(0.1) * _logf(factor)))))


@pytest.fixture
def scaled_context(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, float | int]]:
    """Makes the next contexts use the rope scaling in the yielded dict (ContextConfig has no such fields)."""
    settings: dict[str, float | int] = {}
    default = L.llama_context_default_params

    def patched() -> object:
        cp = default()
        for k, v in settings.items():
            setattr(cp, k, v)
        return cp

    monkeypatch.setattr(L, "llama_context_default_params", patched)
    yield settings


@pytest.mark.parametrize("arch", ["tiny", "tiny-qwen2"])
@pytest.mark.parametrize("scaling", ["linear", "yarn"])
def test_bit_exact_with_scaled_rope(arch: str, scaling: str, scaled_context: dict[str, float | int]) -> None:
    # A model of its own: a YaRN context rewrites the model's n_ctx_train.
    m = LlamaModel(resolve(arch))
    try:
        if scaling == "linear":
            scaled_context.update(rope_scaling_type=1, rope_freq_scale=0.25)
            rope = rope_of(m, freq_scale=0.25)
        else:
            scaled_context.update(rope_scaling_type=2, rope_freq_scale=0.25, yarn_ext_factor=1.0, yarn_orig_ctx=512)
            rope = rope_of(
                m,
                freq_scale=0.25,
                ext_factor=1.0,
                attn_factor=_yarn_attn_factor(0.25),
                beta_fast=32.0,
                beta_slow=1.0,
                n_ctx_orig=512,
            )
        stats = _run_kshift(m, _cfg(False), rope, f"{m.arch} {scaling}")
        assert stats.exact == stats.elems > 0
    finally:
        m.close()


@pytest.mark.real_model
def test_bit_exact_with_llama_kshift_real_qwen() -> None:
    """Qwen2.5-0.5B (NEOX, head_dim 64, 24 layers, f16 K cache over a q4_k_m model)."""
    m = LlamaModel(resolve("qwen0.5b"))
    try:
        stats = _run_kshift(m, _cfg(False), rope_of(m), "qwen0.5b")
        assert stats.exact == stats.elems > 0
    finally:
        m.close()


# ---------------------------------------------------------------- transposed V


def test_v_trans_rebuilds_an_exported_blob(model: LlamaModel) -> None:
    toks = model.tokenize(TEXT)
    with LlamaContext(model, _cfg(False)) as ctx:
        blob = _export(ctx, toks, 0)
    sec = parse_blob(blob).sections[0]
    assert sec.v_trans and sec.v_elem == 2
    n, ne = sec.n_cells, sec.n_embd_v
    base = np.frombuffer(blob, np.uint8).ctypes.data
    fresh = bytearray(blob)
    split = n // 3
    for layer, v in enumerate(sec.v):
        off = v.ctypes.data - base
        rows = native.read_v_trans(blob, off, ne, n)
        assert rows.shape == (n, ne) and rows.dtype == np.uint16
        assert np.array_equal(rows.view(np.uint8), sec.v_rows(layer))  # blob.py's numpy transpose agrees
        fresh[off : off + v.nbytes] = bytes(v.nbytes)
        # in two pieces, the second from a strided view
        native.write_v_trans(fresh, off, ne, n, 0, rows[:split])
        strided = np.zeros((n - split, ne + 7), np.uint16)
        strided[:, :ne] = rows[split:]
        native.write_v_trans(fresh, off, ne, n, split, strided[:, :ne])
    assert bytes(fresh) == blob
    # a numpy buffer and a memoryview work as destinations too
    arr = np.zeros(len(blob), np.uint8)
    v0 = sec.v[0]
    off0 = v0.ctypes.data - base
    native.write_v_trans(arr.data, off0, ne, n, 0, native.read_v_trans(memoryview(blob), off0, ne, n))
    assert np.array_equal(arr[off0 : off0 + v0.nbytes], v0.reshape(-1))


# ---------------------------------------------------------------- bad arguments

ROPE = RopeParams(n_rot=16, head_dim=16, n_head_kv=2, rope_type=native.ROPE_NORM, freq_base=10000.0)


def _k(n: int = 4, width: int = 32) -> npt.NDArray[np.uint16]:
    return np.full((n, width), 0x3C00, np.uint16)


def _raw(k: object, deltas: object = None, **over: object) -> None:
    args: dict[str, object] = dict(n_rot=16, head_dim=16, n_head_kv=2, rope_type=0, freq_base=10000.0)
    args.update(over)
    d = np.zeros(4, np.int32) if deltas is None else deltas
    native._native.rope_shift_f16(k, d, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(lambda: _raw(_k().astype(np.int16)), id="int16 k"),
        pytest.param(lambda: _raw(_k().astype(np.float16)), id="float16 k"),
        pytest.param(lambda: _raw(_k().astype(">u2")), id="byte-swapped k"),
        pytest.param(lambda: _raw(_k().reshape(-1)), id="1-D k"),
        pytest.param(lambda: _raw([[0] * 32] * 4), id="list k"),
        pytest.param(lambda: _raw(_k(4, 64)[:, ::2]), id="strided inner dim"),
        pytest.param(lambda: _raw(_k()[::-1]), id="negative row stride"),
        pytest.param(lambda: _raw(np.frombuffer(bytes(256), np.uint16).reshape(4, 32)), id="read-only k"),
        pytest.param(lambda: _raw(_k(4, 31)), id="rows too short"),
        pytest.param(lambda: _raw(_k(), np.zeros(3, np.int32)), id="deltas length"),
        pytest.param(lambda: _raw(_k(), np.zeros(4, np.int64)), id="int64 deltas"),
        pytest.param(lambda: _raw(_k(), np.zeros(8, np.int32)[::2]), id="strided deltas"),
        pytest.param(lambda: _raw(_k(), n_rot=15), id="odd n_rot"),
        pytest.param(lambda: _raw(_k(), n_rot=0), id="n_rot 0"),
        pytest.param(lambda: _raw(_k(), n_rot=18), id="n_rot > head_dim"),
        pytest.param(lambda: _raw(_k(), n_rot=2.5), id="float n_rot"),
        pytest.param(lambda: _raw(_k(), n_rot=1 << 70), id="huge n_rot"),
        pytest.param(lambda: _raw(_k(), head_dim=0), id="head_dim 0"),
        pytest.param(lambda: _raw(_k(), n_head_kv=-1), id="negative n_head_kv"),
        pytest.param(lambda: _raw(_k(), rope_type=1), id="rope type 1"),
        pytest.param(lambda: _raw(_k(), rope_type=8), id="rope type 8 (mrope)"),
        pytest.param(lambda: _raw(_k(), freq_base=0.0), id="freq_base 0"),
        pytest.param(lambda: _raw(_k(), freq_base=float("nan")), id="freq_base nan"),
        pytest.param(lambda: _raw(_k(), freq_scale=-1.0), id="negative freq_scale"),
        pytest.param(lambda: _raw(_k(), ext_factor=1e40), id="ext_factor overflows float32"),
        pytest.param(lambda: _raw(_k(), n_ctx_orig=-1), id="negative n_ctx_orig"),
        pytest.param(lambda: _raw(_k(), freq_factors=np.ones(7, np.float32)), id="short freq_factors"),
        pytest.param(lambda: _raw(_k(), freq_factors=np.ones(8, np.float64)), id="float64 freq_factors"),
    ],
)
def test_rope_shift_bad_arguments_raise_value_error(case: object) -> None:
    with pytest.raises(ValueError):
        case()  # type: ignore[operator]


def test_rope_shift_accepts_strided_rows_and_leaves_the_rest() -> None:
    rng = np.random.default_rng(0)
    full = rng.standard_normal((6, 40)).astype(np.float16).view(np.uint16)
    orig = full.copy()
    ref = full[:, :32].copy()
    view = full[:, :32]  # strided rows (stride 40 elements), width 32
    native.rope_shift_f16(view, 77, ROPE)
    native.rope_shift_f16(ref, np.full(6, 77, np.int32), ROPE)
    assert np.array_equal(view, ref) and not np.array_equal(ref, orig[:, :32])
    assert np.array_equal(full[:, 32:], orig[:, 32:])  # past n_head_kv*head_dim: untouched
    native.rope_shift_f16(np.empty((0, 32), np.uint16), 5, ROPE)  # no rows: nothing to do


def test_v_trans_bad_arguments_raise_value_error() -> None:
    ne, n = 4, 10
    buf = bytearray(ne * n * 2 + 6)
    src = np.ones((3, ne), np.uint16)
    bad: list[tuple[str, object]] = [
        ("read-only dst", lambda: native.write_v_trans(bytes(buf), 0, ne, n, 0, src)),  # type: ignore[arg-type]
        ("dst not a buffer", lambda: native.write_v_trans([0] * 100, 0, ne, n, 0, src)),  # type: ignore[arg-type]
        ("offset past the end", lambda: native.write_v_trans(buf, len(buf) + 1, ne, n, 0, src)),
        ("negative offset", lambda: native.write_v_trans(buf, -1, ne, n, 0, src)),
        ("region past the end", lambda: native.write_v_trans(buf, 7, ne, n, 0, src)),
        ("columns past total", lambda: native.write_v_trans(buf, 0, ne, n, 8, src)),
        ("src width", lambda: native.write_v_trans(buf, 0, ne + 1, n, 0, src)),
        ("src dtype", lambda: native.write_v_trans(buf, 0, ne, n, 0, src.astype(np.float32))),
        ("src strided inner", lambda: native.write_v_trans(buf, 0, ne, n, 0, np.ones((3, 8), np.uint16)[:, ::2])),
        ("huge total_cells", lambda: native.write_v_trans(buf, 0, ne, 1 << 62, 0, src)),
        ("read: too short", lambda: native.read_v_trans(bytes(10), 0, ne, n)),
        ("read: offset past the end", lambda: native.read_v_trans(bytes(100), 101, ne, n)),
        ("read: overflow", lambda: native.read_v_trans(bytes(100), 0, 1 << 40, 1 << 40)),
        ("read: not a buffer", lambda: native.read_v_trans("abc", 0, 1, 1)),  # type: ignore[arg-type]
        ("read: non-contiguous", lambda: native.read_v_trans(np.zeros(200, np.uint8)[::2], 0, ne, n)),
    ]
    for what, call in bad:
        with pytest.raises(ValueError):
            call()  # type: ignore[operator]
        assert bytes(buf) == bytes(len(buf)), f"{what}: wrote before failing"
    # src rows inside the destination region
    arr = np.zeros(ne * n * 2, np.uint8)
    with pytest.raises(ValueError, match="overlap"):
        native.write_v_trans(arr, 0, ne, n, 0, arr[:16].view(np.uint16).reshape(2, ne))
