"""INT8 scan: every ISA this machine runs is bit-identical to the serial oracle, which matches an int64 numpy
reference; top-k order and margin semantics; argument errors are ValueErrors, never crashes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from nexus_agent import _native

ISAS = _native.available_isas()
# Lane boundaries of every kernel (16/32/64 int8 lanes, 4-row and 2-row blocking) plus a real width.
SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97, 768]

Case = tuple[npt.NDArray[np.int8], npt.NDArray[np.float32], npt.NDArray[np.int8], float]


def make_case(n: int, d: int, seed: int, fill: str = "random") -> Case:
    rng = np.random.default_rng(seed)
    if fill == "random":
        m = rng.integers(-128, 128, size=(n, d), dtype=np.int8)
        q = rng.integers(-128, 128, size=d, dtype=np.int8)
    elif fill == "extremes":
        m = rng.choice(np.array([-128, 127], dtype=np.int8), size=(n, d))
        q = rng.choice(np.array([-128, 127], dtype=np.int8), size=d)
    else:  # saturation: everything -128
        m = np.full((n, d), -128, dtype=np.int8)
        q = np.full(d, -128, dtype=np.int8)
    scales = rng.uniform(1e-4, 2.0, size=n).astype(np.float32)
    return m, scales, q, float(np.float32(rng.uniform(1e-4, 2.0)))


def reference(
    m: npt.NDArray[np.int8], s: npt.NDArray[np.float32], q: npt.NDArray[np.int8], qs: float
) -> npt.NDArray[np.float32]:
    """int64 dot products, then the kernels' float order: (float32(dot) * row_scale) * query_scale."""
    dot = m.astype(np.int64) @ q.astype(np.int64)
    return (dot.astype(np.float32) * s) * np.float32(qs)


@pytest.fixture
def restore_isa() -> Iterator[None]:
    before = _native.isa()
    yield
    _native.set_isa(before)


def test_serial_is_last_and_isa_is_first() -> None:
    assert ISAS[-1] == "serial"
    assert _native.isa() == ISAS[0]
    assert set(ISAS) <= {"avx512vnni", "avxvnni", "avx2", "neon", "serial"}


@pytest.mark.parametrize("d", SIZES)
@pytest.mark.parametrize("isa", ISAS)
def test_every_isa_matches_serial_and_int64_reference(isa: str, d: int) -> None:
    for n in SIZES:
        for fill, seed in (("random", 1000 * d + n), ("extremes", 7 + 1000 * d + n)):
            m, s, q, qs = make_case(n, d, seed, fill)
            oracle = _native.scan_i8(m, s, q, qs, isa="serial")
            np.testing.assert_array_equal(oracle, reference(m, s, q, qs))
            got = _native.scan_i8(m, s, q, qs, isa=isa)
            assert got.dtype == np.float32 and got.shape == (n,)
            assert np.array_equal(got, oracle), f"{isa} differs from serial at n={n} d={d} fill={fill}"


@pytest.mark.parametrize("isa", ISAS)
def test_all_minus_128_saturation(isa: str) -> None:
    for d in [*SIZES, 4096, 65536]:
        m, s, q, qs = make_case(5, d, seed=d, fill="min")
        got = _native.scan_i8(m, s, q, qs, isa=isa)
        # 16384 * d is exact in float32 for every d here (a power of two times a small integer).
        want = (np.float32(16384 * d) * s) * np.float32(qs)
        assert np.array_equal(got, want), f"{isa} d={d}"


@pytest.mark.parametrize("isa", ISAS)
def test_scan_topk_identical_across_isas(isa: str) -> None:
    m, s, q, qs = make_case(1000, 384, seed=3)
    idx, val, margin = _native.scan_topk_i8(m, s, q, qs, 10, isa=isa)
    ref_idx, ref_val, ref_margin = _native.scan_topk_i8(m, s, q, qs, 10, isa="serial")
    assert np.array_equal(idx, ref_idx) and np.array_equal(val, ref_val) and margin == ref_margin
    scores = reference(m, s, q, qs)
    want = np.lexsort((np.arange(scores.size), -scores))[:10]  # descending, ties by lower index
    assert np.array_equal(idx, want)
    assert idx.dtype == np.int64 and val.dtype == np.float32
    assert margin == float(scores[want[0]] - scores[want[1]])


def test_topk_ties_nan_and_k_bounds() -> None:
    scores = np.array([1.0, 3.0, 3.0, np.nan, 2.0, 3.0], dtype=np.float32)
    for k in (2, 6, 100):  # the small-k insertion path and the partial-sort path (k > 64 is clipped to N)
        idx, val = _native.topk_f32(scores, k)
        assert idx.tolist() == [1, 2, 5, 4, 0, 3][: min(k, 6)]
        assert np.array_equal(val, scores[idx], equal_nan=True)
    big = np.random.default_rng(5).integers(0, 50, 500).astype(np.float32)  # many ties
    for k in (0, 1, 64, 65, 499, 500, 501):
        idx, val = _native.topk_f32(big, k)
        want = np.lexsort((np.arange(big.size), -big))[: min(k, big.size)]
        assert np.array_equal(idx, want), k
    idx, val = _native.topk_f32(np.empty(0, np.float32), 5)
    assert idx.shape == (0,) and val.shape == (0,)


def test_margin_edge_cases() -> None:
    m, s, q, qs = make_case(1, 16, seed=1)
    idx, val, margin = _native.scan_topk_i8(m, s, q, qs, 5)
    assert idx.tolist() == [0] and margin == float("inf")
    idx, val, margin = _native.scan_topk_i8(m[:0], s[:0], q, qs, 5)
    assert idx.shape == (0,) and val.shape == (0,) and np.isnan(margin)
    m, s, q, qs = make_case(50, 16, seed=2)
    scores = reference(m, s, q, qs)
    top2 = np.sort(scores)[::-1][:2]
    for k in (0, 1):  # the margin still comes from the top two
        idx, val, margin = _native.scan_topk_i8(m, s, q, qs, k)
        assert idx.shape == (k,) and margin == float(top2[0] - top2[1])


def test_out_argument_is_written_in_place() -> None:
    m, s, q, qs = make_case(33, 65, seed=4)
    out = np.full(33, -1.0, dtype=np.float32)
    got = _native.scan_i8(m, s, q, qs, out=out)
    assert got is out
    assert np.array_equal(out, reference(m, s, q, qs))


def test_inputs_are_read_in_place_not_copied() -> None:
    # A view into a bigger buffer (rows 10..20) works without a copy, and results track the buffer.
    m, s, q, qs = make_case(40, 64, seed=6)
    view = m[10:20]
    before = _native.scan_i8(view, s[10:20], q, qs)
    m[10:20] = 0
    assert np.array_equal(_native.scan_i8(view, s[10:20], q, qs), np.zeros(10, np.float32))
    assert not np.array_equal(before, np.zeros(10, np.float32))


def test_set_isa_and_errors(restore_isa: None) -> None:
    for name in ISAS:
        _native.set_isa(name)
        assert _native.isa() == name
    with pytest.raises(ValueError, match="not available"):
        _native.set_isa("sse9")
    m, s, q, qs = make_case(4, 8, seed=0)
    with pytest.raises(ValueError, match="not available"):
        _native.scan_i8(m, s, q, qs, isa="sse9")
    if "neon" not in ISAS:
        with pytest.raises(ValueError, match="not available"):
            _native.scan_topk_i8(m, s, q, qs, 1, isa="neon")


def _bad_calls() -> list[tuple[str, dict[str, object]]]:
    m, s, q, _ = make_case(6, 32, seed=9)
    big_endian = s.astype(">f4")
    readonly = np.zeros(6, np.float32)
    readonly.flags.writeable = False
    return [
        ("int8 array of shape", {"matrix": m.astype(np.int16)}),
        ("int8 array of shape", {"matrix": m.view(np.uint8)}),
        ("int8 array of shape", {"matrix": m[None]}),
        ("numpy.ndarray", {"matrix": m.tolist()}),
        ("C-contiguous", {"matrix": np.asfortranarray(m)}),
        ("C-contiguous", {"matrix": m[:, ::2], "query": q[:16].copy()}),
        ("must be in", {"matrix": m[:, :0].copy(), "query": q[:0].copy()}),
        ("entries", {"row_scales": s[:5].copy()}),
        ("float32", {"row_scales": s.astype(np.float64)}),
        ("float32", {"row_scales": big_endian}),
        ("query has length", {"query": q[:31].copy()}),
        ("int8 array", {"query": q.astype(np.float32)}),
        ("C-contiguous", {"query": np.repeat(q, 2)[::2]}),
        ("out", {"out": np.zeros(6, np.float64)}),
        ("out has length", {"out": np.zeros(5, np.float32)}),
        ("writeable", {"out": readonly}),
    ]


@pytest.mark.parametrize(("match", "override"), _bad_calls())
def test_bad_arguments_raise_value_error(match: str, override: dict[str, object]) -> None:
    m, s, q, qs = make_case(6, 32, seed=9)
    kw: dict[str, object] = {"matrix": m, "row_scales": s, "query": q, "query_scale": qs, **override}
    with pytest.raises(ValueError, match=match):
        _native.scan_i8(**kw)  # type: ignore[arg-type]
    if "out" not in override:
        kw.pop("out", None)
        with pytest.raises(ValueError, match=match):
            _native.scan_topk_i8(k=3, **kw)  # type: ignore[arg-type]


def test_bad_k_and_scores() -> None:
    m, s, q, qs = make_case(6, 32, seed=9)
    with pytest.raises(ValueError, match="k must be"):
        _native.scan_topk_i8(m, s, q, qs, -1)
    with pytest.raises(ValueError, match="k must be"):
        _native.topk_f32(np.zeros(3, np.float32), -2)
    with pytest.raises(ValueError, match="float32"):
        _native.topk_f32(np.zeros(3, np.float64), 1)
    with pytest.raises(ValueError, match="iters"):
        _native.bench_scan(m, s, q, qs, 0)
