"""Stateful property test of the SLB against a plain dict (key → float vectors) and the numpy scan oracle.

Vectors are drawn from a few coarse values so that equal rows, equal scores and all-zero rows are common:
ties are where the native top-k path (top rows, reduced per tool) could differ from sorting every tool.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from nexus_agent.native import quantize_i8
from nexus_agent.routing.slb import SLB, scan_reference

KEYS = [f"srv__tool{i}" for i in range(12)]
COARSE = [-1.0, -0.5, 0.0, 0.25, 0.5, 1.0]


def vectors(dim: int, max_rows: int = 6) -> st.SearchStrategy[np.ndarray]:
    """Float32 ``[m, dim]``: rows from a small fixed pool (equal rows across tools), coarse values, or any."""
    pool = [[COARSE[(i * 7 + j * (i + 2)) % len(COARSE)] for j in range(dim)] for i in range(3)]
    coarse = st.lists(st.sampled_from(COARSE), min_size=dim, max_size=dim)
    # Subnormals left out: a row whose max |v| is below 127 * 2**-149 gets scale 0 (a degenerate vector).
    fine = st.lists(st.floats(-1, 1, width=32, allow_subnormal=False), min_size=dim, max_size=dim)
    rows = st.lists(st.one_of(st.sampled_from(pool), coarse, fine), min_size=1, max_size=max_rows)
    return rows.map(lambda r: np.array(r, dtype=np.float32))


def _sorted_rows(q: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((s, *q.T[::-1]))
    return q[order], s[order]


class SLBMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, np.ndarray] = {}  # insertion order = SLB.keys order (replace moves to the end)
        self.dim = 1
        self.slb = SLB(dim=1)
        self._tmp = tempfile.TemporaryDirectory()

    @initialize(dim=st.sampled_from([1, 3, 16]), capacity=st.sampled_from([1, 2, 64]))
    def start(self, dim: int, capacity: int) -> None:
        self.dim = dim
        self.slb = SLB(dim=dim, capacity_rows=capacity)

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def add(self, data: st.DataObject, key: str) -> None:
        v = data.draw(vectors(self.dim))
        if key in self.model:
            return
        self.slb.add(key, v)
        self.model[key] = v

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        self.slb.remove(key)
        del self.model[key]

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def replace(self, data: st.DataObject, key: str) -> None:
        v = data.draw(vectors(self.dim))
        self.slb.replace(key, v)
        self.model.pop(key, None)
        self.model[key] = v

    @rule()
    def save_and_load(self) -> None:
        path = Path(self._tmp.name) / "slb.npz"
        self.slb.save(path, {"n": len(self.model)})
        back, meta = SLB.load(path)
        assert meta == {"n": len(self.model)}
        self.slb = back  # later steps mutate the loaded copy

    @invariant()
    def same_keys_and_rows(self) -> None:
        assert self.slb.keys == list(self.model)
        assert len(self.slb) == len(self.model)
        assert self.slb.n_rows == sum(len(v) for v in self.model.values())
        for key, v in self.model.items():
            # Row order within a tool is not kept by a reload (the file stores row owners, not their order).
            q, s = _sorted_rows(*self.slb.rows_of(key))
            q0, s0 = _sorted_rows(*quantize_i8(v))
            assert np.array_equal(q, q0) and s.tobytes() == s0.tobytes()

    @rule(data=st.data())
    def query(self, data: st.DataObject) -> None:
        qv = data.draw(vectors(self.dim, max_rows=1))[0]
        qq, qs = quantize_i8(qv)
        oracle = np.array(
            [scan_reference(*quantize_i8(v), qq, float(qs)).max() for v in self.model.values()], dtype=np.float32
        )
        assert self.slb.scores(qv).tobytes() == oracle.tobytes()
        order = np.argsort(-oracle, kind="stable")
        keys = list(self.model)
        for k in (0, 1, 2, 3, len(keys) + 1):
            got_keys, got_vals = self.slb.topk(qv, k)
            assert got_keys == [keys[i] for i in order[:k]], k
            assert got_vals.tobytes() == oracle[order[:k]].tobytes(), k

    def teardown(self) -> None:
        self._tmp.cleanup()


SLBMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
TestSLBProperties = SLBMachine.TestCase
