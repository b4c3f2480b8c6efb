"""nexus_agent.native: quantization, the typed scan wrapper and Int8RowStore (rows in a buddy block)."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_agent import native


def test_quantize_round_trip_and_zero_rows() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 96)).astype(np.float32)
    x[3] = 0.0
    q, s = native.quantize_i8(x)
    assert q.dtype == np.int8 and s.dtype == np.float32 and s.shape == (20,)
    assert np.abs(q).max() == 127 and q.min() >= -127
    assert s[3] == 1.0 and not q[3].any()
    err = np.abs(q * s[:, None] - x).max(axis=1)
    assert np.all(err <= s * 0.5 + 1e-6)  # rounding error is at most half a step
    qv, sv = native.quantize_i8(x[0])
    assert qv.shape == (96,) and sv.shape == ()
    with pytest.raises(ValueError):
        native.quantize_i8(np.zeros((2, 2, 2)))


def test_row_store_search_matches_float_ranking_and_grows() -> None:
    rng = np.random.default_rng(1)
    d = 64
    x = rng.normal(size=(300, d)).astype(np.float32)
    alloc = native.BuddyAllocator(2 << 20)
    with native.Int8RowStore(alloc, d, initial_rows=8) as store:
        assert store.append(x[:5]) == range(0, 5)
        assert store.append(x[5]) == range(5, 6)
        store.append(x[6:])  # several doublings: 8 -> ... -> 512 rows
        assert len(store) == 300
        assert alloc.stats()["n_allocated_blocks"] == 1  # old blocks were returned on growth
        q, s = native.quantize_i8(x)
        assert np.array_equal(store.rows, q) and np.array_equal(store.scales, s)
        for i in (0, 150, 299):
            hit = store.search(x[i], k=3)
            assert hit.indices[0] == i  # a stored row is its own best match
            assert hit.margin == float(hit.values[0] - hit.values[1]) > 0
            qq, qs = native.quantize_i8(x[i])
            want = native.scan_topk(q, s, qq, float(qs), 3, isa="serial")
            assert np.array_equal(hit.indices, want.indices) and np.array_equal(hit.values, want.values)
        with pytest.raises(ValueError, match="width"):
            store.append(np.zeros((1, d + 1)))
    stats = alloc.stats()
    assert stats["n_allocated_blocks"] == 0 and stats["n_free_blocks"] == 1
