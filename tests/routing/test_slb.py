from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nexus_agent import native
from nexus_agent.native import quantize_i8
from nexus_agent.routing.slb import SLB, scan_reference


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _legacy_quantize(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The SLB's own quantisation before it moved to ``native.quantize_i8`` (kept as a fixed reference)."""
    v = np.atleast_2d(np.asarray(v, dtype=np.float32))
    amax = np.abs(v).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(v / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def _reference_scores(store: dict[str, np.ndarray], order: list[str], q: np.ndarray) -> np.ndarray:
    """Numpy model of the SLB: quantise each row and the query, max over a tool's rows."""
    qq, qs = quantize_i8(q)
    out = []
    for k in order:
        m, s = quantize_i8(store[k])
        out.append(scan_reference(m, s, qq, float(qs)).max())
    return np.array(out, dtype=np.float32)


def test_quantize_i8_is_bit_identical_to_the_former_slb_quantize() -> None:
    rng = np.random.default_rng(0)
    cases = [
        _unit(rng, 200, 384),
        _unit(rng, 50, 768) * np.float32(3.7),
        rng.standard_normal((20, 33)).astype(np.float32) * np.float32(1e-3),
        np.zeros((2, 16), np.float32),  # scale 1.0, q = 0
        np.array([[0.5, -0.25, 127.5 / 127, -1.0]], np.float32),  # exact .5 steps: rint rounds half to even
    ]
    for v in cases:
        q, s = quantize_i8(v)
        q0, s0 = _legacy_quantize(v)
        assert q.dtype == q0.dtype == np.int8 and s.dtype == s0.dtype == np.float32
        assert np.array_equal(q, q0) and s.tobytes() == s0.tobytes()
        # the query path quantises a single vector: same bits as row 0 of the batch
        qv, sv = quantize_i8(v[0])
        assert np.array_equal(qv, q0[0]) and np.float32(sv).tobytes() == s0[:1].tobytes()


def test_quantize_roundtrip_error_small() -> None:
    v = _unit(np.random.default_rng(0), 50, 384)
    q, s = quantize_i8(v)
    assert q.dtype == np.int8 and s.dtype == np.float32
    assert np.abs(q).max() == 127
    assert np.abs(q * s[:, None] - v).max() <= s.max() / 2 + 1e-6


def test_add_remove_replace_persist_matches_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    d = 48
    slb = SLB(dim=d, capacity_rows=2)  # tiny capacity forces several grow steps
    store: dict[str, np.ndarray] = {}
    for step in range(120):
        op = rng.random()
        keys = list(store)
        if op < 0.55 or not keys:
            k = f"tool{step}"
            store[k] = _unit(rng, int(rng.integers(1, 5)), d)
            slb.add(k, store[k])
        elif op < 0.8:
            k = keys[int(rng.integers(len(keys)))]
            slb.remove(k)
            del store[k]
        else:
            k = keys[int(rng.integers(len(keys)))]
            store[k] = _unit(rng, int(rng.integers(1, 5)), d)
            slb.replace(k, store[k])
        assert len(slb) == len(store)
        assert slb.n_rows == sum(len(v) for v in store.values())
        q = _unit(rng, 1, d)[0]
        if store:
            np.testing.assert_array_equal(slb.scores(q), _reference_scores(store, slb.keys, q))
    # scores approximate float cosines
    q = _unit(rng, 1, d)[0]
    exact = np.array([float((store[k] @ q).max()) for k in slb.keys])
    assert np.abs(slb.scores(q) - exact).max() < 0.05
    path = tmp_path / "slb.npz"
    slb.save(path, {"embedder": "x"})
    back, meta = SLB.load(path)
    assert meta == {"embedder": "x"}
    assert back.keys == slb.keys
    np.testing.assert_array_equal(back.scores(q), slb.scores(q))
    top, vals = back.topk(q, 3)
    assert top == [slb.keys[i] for i in np.argsort(-slb.scores(q), kind="stable")[:3]]
    assert list(vals) == sorted(vals, reverse=True)


def _sorted_topk(slb: SLB, q: np.ndarray, k: int) -> tuple[list[str], np.ndarray]:
    sc = slb.scores(q)
    order = np.argsort(-sc, kind="stable")[:k]
    return [slb.keys[i] for i in order], sc[order]


def test_topk_takes_the_native_row_path_and_matches_the_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    d = 64
    slb = SLB(dim=d)
    for i in range(300):
        slb.add(f"t{i}", _unit(rng, int(rng.integers(1, 8)), d))
    for i in range(0, 300, 7):
        slb.remove(f"t{i}")  # rows no longer in key order
    queries = _unit(rng, 40, d)
    want = {(i, k): _sorted_topk(slb, q, k) for i, q in enumerate(queries) for k in (1, 5, 10)}

    def no_fallback(query: np.ndarray, k: int) -> tuple[list[str], np.ndarray]:
        raise AssertionError("random unit vectors have no ties: the native path must answer")

    monkeypatch.setattr(slb, "_topk_sorted", no_fallback)
    for (i, k), (keys, vals) in want.items():
        got_keys, got_vals = slb.topk(queries[i], k)
        assert got_keys == keys and got_vals.dtype == np.float32
        assert got_vals.tobytes() == vals.tobytes()


def test_topk_ties_keep_key_order_across_the_row_cut() -> None:
    # Rows are reordered by removal (c moves into a's hole), so among tools of equal score the lowest row is
    # not the earliest key; the answer must still follow keys order, as the sort does.
    d = 8
    v = np.eye(d, dtype=np.float32)
    slb = SLB(dim=d)
    for name, vec in (("a", v[0]), ("b", v[1]), ("c", v[1]), ("d", v[2]), ("e", v[3])):
        slb.add(name, vec[None])
    slb.remove("a")
    assert slb.keys == ["b", "c", "d", "e"]
    for k in (0, 1, 2, 3, 4, 9):
        keys, vals = slb.topk(v[1], k)
        want_keys, want_vals = _sorted_topk(slb, v[1], k)
        assert keys == want_keys and vals.tobytes() == want_vals.tobytes()
    assert slb.topk(v[1], 1)[0] == ["b"]


def test_topk_widens_to_the_row_bound_when_the_first_rows_do_not_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    d = 8
    e = np.eye(d, dtype=np.float32)
    slb = SLB(dim=d)
    slb.add("a", np.repeat(e[:1], 7, axis=0))  # 7 equal rows: the first 3 * k = 6 rows hold only a
    slb.add("b", np.repeat((0.9 * e[0] + e[1])[None], 7, axis=0))  # and b's next row ties its best: undecided
    slb.add("c", (0.5 * e[0] + e[2])[None])
    for i in range(3, 8):
        slb.add(f"x{i}", e[i][None])
    asked: list[int] = []
    real = native.scan_topk

    def counting(m: np.ndarray, s: np.ndarray, q: np.ndarray, qs: float, k: int, isa: str | None = None) -> native.TopK:
        asked.append(k)
        return real(m, s, q, qs, k, isa=isa)

    monkeypatch.setattr(native, "scan_topk", counting)
    keys, vals = slb.topk(e[0], 2)
    assert asked == [7, 15]  # 3 * k rows first, then k * max rows per tool (7)
    want_keys, want_vals = _sorted_topk(slb, e[0], 2)
    assert keys == want_keys == ["a", "b"] and vals.tobytes() == want_vals.tobytes()


def test_topk_edges() -> None:
    slb = SLB(dim=4)
    keys, vals = slb.topk(np.ones(4, np.float32), 3)
    assert keys == [] and vals.shape == (0,) and vals.dtype == np.float32
    slb.add("a", np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="k must be"):
        slb.topk(np.ones(4, np.float32), -1)
    assert slb.topk(np.zeros(4, np.float32), 5)[0] == ["a"]


def test_growth_moves_to_a_larger_arena_and_keeps_rows() -> None:
    rng = np.random.default_rng(3)
    d = 1024
    slb = SLB(dim=d, capacity_rows=1)
    vecs = {f"t{i}": _unit(rng, 7, d) for i in range(400)}  # 2800 rows * 1 KiB > one 2 MiB arena
    for k, v in vecs.items():
        slb.add(k, v)
    stats = slb.memory_stats()
    assert stats["rows"] == 2800 and stats["capacity_rows"] >= 2800 and stats["capacity"] > 2 << 20
    assert stats["n_allocated_blocks"] == 1  # old blocks were returned
    for k in ("t0", "t199", "t399"):
        q, s = slb.rows_of(k)
        q0, s0 = quantize_i8(vecs[k])
        assert np.array_equal(q, q0) and np.array_equal(s, s0)


def test_loads_the_npz_layout_written_before_the_native_store(tmp_path: Path) -> None:
    # The keys and dtypes SLB.save has always written; caches on disk must stay readable.
    rng = np.random.default_rng(4)
    m, s = quantize_i8(_unit(rng, 3, 16))
    path = tmp_path / "old.npz"
    np.savez(
        path,
        matrix=m,
        scales=s,
        owners=np.array(["x", "y", "x"]),
        order=np.array(["x", "y"]),
        meta=np.array('{"tools": 2}'),
    )
    slb, meta = SLB.load(path)
    assert meta == {"tools": 2} and slb.keys == ["x", "y"] and slb.n_rows == 3
    assert np.array_equal(slb.rows_of("x")[0], m[[0, 2]])
    q = _unit(rng, 1, 16)[0]
    qq, qs = quantize_i8(q)
    rs = scan_reference(m, s, qq, float(qs))
    np.testing.assert_array_equal(slb.scores(q), np.array([max(rs[0], rs[2]), rs[1]], np.float32))
    assert slb.backend.startswith("native:")


def test_errors() -> None:
    slb = SLB(dim=4)
    slb.add("a", np.ones((1, 4), dtype=np.float32))
    with pytest.raises(KeyError):
        slb.add("a", np.ones((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        slb.add("b", np.ones((1, 5), dtype=np.float32))
    with pytest.raises(KeyError):
        slb.remove("zzz")
