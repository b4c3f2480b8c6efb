from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nexus_agent.routing.slb import SLB, quantize, scan_reference


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _reference_scores(store: dict[str, np.ndarray], order: list[str], q: np.ndarray) -> np.ndarray:
    """Numpy model of the SLB: quantise each row and the query, max over a tool's rows."""
    qq, qs = quantize(q[None])
    out = []
    for k in order:
        m, s = quantize(store[k])
        out.append(scan_reference(m, s, qq[0], float(qs[0])).max())
    return np.array(out, dtype=np.float32)


def test_quantize_roundtrip_error_small() -> None:
    v = _unit(np.random.default_rng(0), 50, 384)
    q, s = quantize(v)
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


def test_errors() -> None:
    slb = SLB(dim=4)
    slb.add("a", np.ones((1, 4), dtype=np.float32))
    with pytest.raises(KeyError):
        slb.add("a", np.ones((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        slb.add("b", np.ones((1, 5), dtype=np.float32))
    with pytest.raises(KeyError):
        slb.remove("zzz")
