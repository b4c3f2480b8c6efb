"""The semantic lookaside buffer (SLB): tool vectors as symmetric per-vector INT8, scanned by the native kernel.

Layout: one row per *text* of a tool (its document, plus optional synthetic example queries), so a tool owns
one or more rows. Rows live in a :class:`nexus_agent.native.Int8RowStore` (``int8[capacity, dim]`` in buddy
memory, with float32 per-row scales), kept dense: removing a tool moves the last rows into the holes, so a
scan always reads the contiguous prefix ``[:n_rows]``. A tool's score is the maximum over its rows.

Quantisation is :func:`nexus_agent.native.quantize_i8`: ``scale = max|v| / 127``, ``q = round(v / scale)``
(symmetric, per vector); the dot product of two quantised vectors times both scales approximates the float
cosine (vectors are L2-normalised).

Scanning always runs the native kernels (``nexus_agent._native`` is part of every build; there is no numpy
fallback): :meth:`SLB.scores` is a full scan, :meth:`SLB.topk` the fused scan + top-k over rows, reduced per
tool. :func:`scan_reference` is the numpy oracle for tests. :attr:`SLB.backend` names the ISA in use.

Persistence: :meth:`SLB.save` / :meth:`SLB.load` write an ``.npz`` file; :func:`cache_path` keys it by embedder
fingerprint and registry hash under ``$NEXUS_HOME/slb/``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nexus_agent import native
from nexus_agent.paths import cache_dir

I8 = npt.NDArray[np.int8]
F32 = npt.NDArray[np.float32]

# Rows per wanted tool in topk's first, cheaper kernel call: a query tends to match a tool's texts together,
# so the best rows bunch by tool and a few per tool usually decide the top k (docs/measurements.md#slb-top-k).
_FIRST_ROWS_PER_TOOL = 3


def scan_reference(matrix: I8, scales: F32, query: I8, query_scale: float) -> F32:
    """The numpy oracle of ``_native.scan_i8``: float32 of shape ``[N]``."""
    dots = matrix.astype(np.int32) @ query.astype(np.int32)
    return (dots.astype(np.float32) * scales) * np.float32(query_scale)


@dataclass(frozen=True)
class _Derived:
    """Facts about the rows that queries need, computed once per state of the store.

    owners: int64 ``[n_rows]``, the index in :attr:`SLB.keys` of each row's tool.
    scales_finite: every row scale is finite (so no score is NaN).
    """

    owners: npt.NDArray[np.int64]
    scales_finite: bool


class SLB:
    """INT8 vector store keyed by tool (qualified name); see module docstring."""

    def __init__(self, dim: int, capacity_rows: int = 256) -> None:
        self.dim = dim
        self._store = native.Int8RowStore(None, dim, initial_rows=max(1, capacity_rows))
        self._row_owner: list[str] = []  # row index → tool key
        self._rows_of: dict[str, list[int]] = {}  # tool key → its row indices
        self._tool_order: list[str] = []  # stable tool index for score arrays
        self._rows_per_tool: Counter[int] = Counter()  # row count → tools with that many rows
        self._derived: _Derived | None = None  # per-row facts for queries; None after a mutation

    @property
    def backend(self) -> str:
        return f"native:{native.isa()}"

    @property
    def n_rows(self) -> int:
        return len(self._store)

    def __len__(self) -> int:
        return len(self._rows_of)

    def __contains__(self, key: object) -> bool:
        return key in self._rows_of

    @property
    def keys(self) -> list[str]:
        """Tool keys in score-array order (the order of :meth:`scores`)."""
        return list(self._tool_order)

    # --- mutation: every change of the rows goes through _append_rows / _remove_rows ------------------------

    def _append_rows(self, key: str, q: I8, scales: F32) -> None:
        rows = self._store.append_quantized(q, scales)
        self._row_owner.extend([key] * len(rows))
        self._rows_of[key] = list(rows)
        self._tool_order.append(key)
        self._rows_per_tool[len(rows)] += 1
        self._derived = None

    def _remove_rows(self, key: str) -> None:
        rows = self._rows_of.pop(key)
        for src, dst in self._store.remove(rows):
            mover = self._row_owner[src]
            self._row_owner[dst] = mover
            moved = self._rows_of[mover]
            moved[moved.index(src)] = dst
        del self._row_owner[self.n_rows :]
        self._tool_order.remove(key)
        self._rows_per_tool[len(rows)] -= 1
        if not self._rows_per_tool[len(rows)]:
            del self._rows_per_tool[len(rows)]
        self._derived = None

    def add(self, key: str, vectors: F32) -> None:
        """Add a tool with ``vectors`` (float32 ``[m, dim]``, m ≥ 1 texts). Raises if ``key`` exists."""
        v = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if v.shape[1] != self.dim or len(v) == 0:
            raise ValueError(f"SLB.add({key!r}): expected vectors of shape [m>=1, {self.dim}], got {v.shape}")
        if key in self._rows_of:
            raise KeyError(f"SLB.add: {key!r} already present (use replace)")
        self._append_rows(key, *native.quantize_i8(v))

    def remove(self, key: str) -> None:
        if key not in self._rows_of:
            raise KeyError(f"SLB.remove: {key!r} not present")
        self._remove_rows(key)

    def replace(self, key: str, vectors: F32) -> None:
        """Swap a tool's vectors (e.g. its description changed); adds it when absent."""
        if key in self._rows_of:
            self._remove_rows(key)
        self.add(key, vectors)

    # --- queries -------------------------------------------------------------------------------------------

    def _quantize_query(self, query: F32) -> tuple[I8, float]:
        q, s = native.quantize_i8(np.asarray(query, dtype=np.float32).reshape(-1))
        return q, float(s)

    def _facts(self) -> _Derived:
        if self._derived is None:
            index = {k: i for i, k in enumerate(self._tool_order)}
            owners = np.fromiter((index[o] for o in self._row_owner), dtype=np.int64, count=self.n_rows)
            self._derived = _Derived(owners, bool(np.isfinite(self._store.scales).all()))
        return self._derived

    def row_scores(self, query: F32) -> F32:
        """Approximate cosine of ``query`` (float32 ``[dim]``, unit norm) with every row: float32 ``[n_rows]``."""
        q, s = self._quantize_query(query)
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        return native.scan(self._store.rows, self._store.scales, q, s)

    def scores(self, query: F32) -> F32:
        """Per-tool score (max over the tool's rows), float32 ``[len(self)]`` in :attr:`keys` order."""
        rs = self.row_scores(query)
        out = np.full(len(self._tool_order), -np.inf, dtype=np.float32)
        np.maximum.at(out, self._facts().owners, rs)
        return out

    def _topk_sorted(self, query: F32, k: int) -> tuple[list[str], F32]:
        """:meth:`topk` by a full scan and a stable sort of every tool's score (the exact path)."""
        sc = self.scores(query)
        order = np.argsort(-sc, kind="stable")[:k]
        return [self._tool_order[i] for i in order], sc[order]

    def topk(self, query: F32, k: int) -> tuple[list[str], F32]:
        """The ``k`` best tools (k ≥ 0), descending: (keys, float32 scores); ties keep :attr:`keys` order.

        The same answer as a stable sort of :meth:`scores`, from the native fused scan + top-k over rows: a
        tool in the top k has its best row among the top ``k * max_rows_per_tool`` rows, and those rows,
        reduced per tool, decide the top k unless a tie sits at the cut (:func:`_tools_from_rows`). A first
        kernel call asks for fewer rows, which usually decide already. The sort runs instead when the bound
        covers every row, when ties leave the answer open, or when a scale is not finite (NaN scores would
        break the max-per-tool reduction).
        """
        if k < 0:
            raise ValueError(f"SLB.topk: k must be >= 0, got {k}")
        want = k * max(self._rows_per_tool, default=0)
        if k == 0 or want >= self.n_rows:
            return self._topk_sorted(query, k)
        q, qs = self._quantize_query(query)
        facts = self._facts()
        if not (facts.scales_finite and math.isfinite(qs)):
            return self._topk_sorted(query, k)
        for m in sorted({min(want, _FIRST_ROWS_PER_TOOL * k), want}):
            hit = native.scan_topk(self._store.rows, self._store.scales, q, qs, m + 1)
            top = _tools_from_rows(hit, m, k, facts.owners)
            if top is not None:
                keys, slots = top
                return [self._tool_order[t] for t in keys], hit.values[slots]
        return self._topk_sorted(query, k)

    def row_ids(self, key: str) -> list[int]:
        """The rows of ``key`` in :meth:`row_scores` order, in the order its vectors were added."""
        return list(self._rows_of[key])

    def rows_of(self, key: str) -> tuple[I8, F32]:
        """Copies of the stored INT8 rows and scales of ``key`` (for tests and inspection)."""
        idx = self._rows_of[key]
        return self._store.rows[idx], self._store.scales[idx]

    def memory_stats(self) -> dict[str, Any]:
        return {
            "rows": self.n_rows,
            "capacity_rows": self._store.capacity,
            "dim": self.dim,
            **self._store.allocator.stats(),
        }

    # --- persistence -----------------------------------------------------------------------------------------

    def save(self, path: Path, meta: dict[str, Any] | None = None) -> None:
        """Write rows, scales and ownership (plus ``meta``, JSON-serialisable) atomically to ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(
                f,
                matrix=self._store.rows,
                scales=self._store.scales,
                owners=np.array(self._row_owner, dtype=object).astype(str),
                order=np.array(self._tool_order, dtype=object).astype(str),
                meta=np.array(json.dumps(meta or {})),
            )
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> tuple[SLB, dict[str, Any]]:
        """Inverse of :meth:`save`: (slb, meta)."""
        with np.load(path, allow_pickle=False) as z:
            matrix, scales = z["matrix"], z["scales"]
            owners, order = [str(x) for x in z["owners"]], [str(x) for x in z["order"]]
            meta = json.loads(str(z["meta"]))
        slb = cls(dim=int(matrix.shape[1]), capacity_rows=max(1, len(matrix)))
        slb._store.append_quantized(matrix, scales)
        slb._row_owner = owners
        slb._tool_order = order
        for i, o in enumerate(owners):
            slb._rows_of.setdefault(o, []).append(i)
        slb._rows_per_tool = Counter(len(rows) for rows in slb._rows_of.values())
        return slb, meta


def _tools_from_rows(
    hit: native.TopK, m: int, k: int, owners: npt.NDArray[np.int64]
) -> tuple[list[int], list[int]] | None:
    """The top ``k`` tools from the best ``m + 1`` rows (``hit``, best first): (tool positions, row slots).

    Rows come best first, so a tool's first row is its max. Once k tools are in, a row below the k-th tool's
    score cannot place its tool, while rows equal to it can (ties rank by position in keys). So the answer
    is decided when the first ``m`` rows hold k tools and row ``m`` scores below the k-th; None otherwise.
    """
    vals = hit.values.tolist()
    first: dict[int, int] = {}  # tool position → slot of its best row
    cutoff = math.inf
    for slot, tool in enumerate(owners[hit.indices[:m]].tolist()):
        if len(first) >= k and vals[slot] < cutoff:
            break
        if tool not in first:
            first[tool] = slot
            if len(first) == k:
                cutoff = vals[slot]
    if len(first) < k or not vals[m] < cutoff:
        return None
    top = sorted(first, key=lambda t: (-vals[first[t]], t))[:k]
    return top, [first[t] for t in top]


def cache_path(embedder_fingerprint: str, content_key: str, suffix: str = ".npz") -> Path:
    """``$NEXUS_HOME/slb/<sha(embedder)>-<content_key><suffix>``."""
    emb = hashlib.sha256(embedder_fingerprint.encode()).hexdigest()[:12]
    return cache_dir("slb") / f"{emb}-{content_key}{suffix}"
