"""The semantic lookaside buffer (SLB): tool vectors as symmetric per-vector INT8, scanned by the native kernel.

Layout: one row per *text* of a tool (its document, plus optional synthetic example queries), so a tool owns
one or more rows. Rows live in two buddy-allocated arrays, ``int8[capacity, dim]`` and ``float32[capacity]``
(per-row scales), kept dense: removing a tool moves the last rows into the holes, so a scan always reads the
contiguous prefix ``[:n_rows]``. A tool's score is the maximum over its rows.

Quantisation: ``scale = max|v| / 127``, ``q = round(v / scale)`` (symmetric, per vector); the dot product of
two quantised vectors times both scales approximates the float cosine (vectors are L2-normalised).

Scanning uses ``nexus_agent._native.scan_i8`` when the extension is built; otherwise the numpy reference with the
same arithmetic (``float32(dot_i32) * row_scale * query_scale``) — :attr:`SLB.backend` says which one ran.

Persistence: :meth:`SLB.save` / :meth:`SLB.load` write an ``.npz`` file; :func:`cache_path` keys it by embedder
fingerprint and registry hash under ``$NEXUS_HOME/slb/``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nexus_agent.paths import cache_dir

_native: Any
try:  # the extension is optional at import time so pure-Python tools (registry, signatures) work without it
    from nexus_agent import _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None

I8 = npt.NDArray[np.int8]
F32 = npt.NDArray[np.float32]

_MIN_ARENA = 2 << 20  # BuddyAllocator's minimum capacity (2 MiB)


def quantize(v: F32) -> tuple[I8, F32]:
    """Symmetric per-vector INT8: ``v ≈ q * scale``. Shapes ``[n, d]`` → ``(int8[n, d], float32[n])``."""
    v = np.atleast_2d(np.asarray(v, dtype=np.float32))
    amax = np.abs(v).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(v / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def scan_reference(matrix: I8, scales: F32, query: I8, query_scale: float) -> F32:
    """The numpy oracle of ``_native.scan_i8``: float32 of shape ``[N]``."""
    dots = matrix.astype(np.int32) @ query.astype(np.int32)
    return (dots.astype(np.float32) * scales) * np.float32(query_scale)


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


class _Arena:
    """Row storage of fixed capacity: buddy-allocated when the native module exists, numpy otherwise."""

    def __init__(self, capacity_rows: int, dim: int) -> None:
        self.capacity, self.dim = capacity_rows, dim
        self._alloc: Any = None
        self._blocks: list[Any] = []
        if _native is not None:
            need = capacity_rows * dim + capacity_rows * 4
            self._alloc = _native.BuddyAllocator(max(_MIN_ARENA, _pow2_at_least(2 * need)))
            mblock = self._alloc.alloc(capacity_rows * dim)
            sblock = self._alloc.alloc(capacity_rows * 4)
            self._blocks = [mblock, sblock]
            self.matrix: I8 = np.frombuffer(mblock, dtype=np.int8).reshape(capacity_rows, dim)
            self.scales: F32 = np.frombuffer(sblock, dtype=np.float32)
        else:
            self.matrix = np.zeros((capacity_rows, dim), dtype=np.int8)
            self.scales = np.zeros(capacity_rows, dtype=np.float32)

    def release(self) -> None:
        """Free the native blocks (numpy views must be dropped first: the allocator refuses otherwise)."""
        if self._alloc is None:
            return
        del self.matrix, self.scales
        for b in self._blocks:
            self._alloc.free(b)
        self._blocks = []

    def stats(self) -> dict[str, Any]:
        return dict(self._alloc.stats()) if self._alloc is not None and hasattr(self._alloc, "stats") else {}


class SLB:
    """INT8 vector store keyed by tool (qualified name); see module docstring."""

    def __init__(self, dim: int, capacity_rows: int = 256) -> None:
        self.dim = dim
        self._arena = _Arena(max(1, capacity_rows), dim)
        self.n_rows = 0
        self._row_owner: list[str] = []  # row index → tool key
        self._rows_of: dict[str, list[int]] = {}  # tool key → its row indices
        self._tool_order: list[str] = []  # stable tool index for score arrays

    @property
    def backend(self) -> str:
        return f"native:{_native.isa()}" if _native is not None else "numpy"

    def __len__(self) -> int:
        return len(self._rows_of)

    def __contains__(self, key: object) -> bool:
        return key in self._rows_of

    @property
    def keys(self) -> list[str]:
        """Tool keys in score-array order (the order of :meth:`scores`)."""
        return list(self._tool_order)

    # --- mutation: every change of the row arrays goes through _append_rows / _remove_rows -----------------

    def _grow(self, need_rows: int) -> None:
        if need_rows <= self._arena.capacity:
            return
        new = _Arena(_pow2_at_least(need_rows), self.dim)
        new.matrix[: self.n_rows] = self._arena.matrix[: self.n_rows]
        new.scales[: self.n_rows] = self._arena.scales[: self.n_rows]
        self._arena.release()
        self._arena = new

    def _append_rows(self, key: str, vectors: F32) -> None:
        q, s = quantize(vectors)
        self._grow(self.n_rows + len(q))
        lo, hi = self.n_rows, self.n_rows + len(q)
        self._arena.matrix[lo:hi] = q
        self._arena.scales[lo:hi] = s
        self._row_owner.extend([key] * len(q))
        self._rows_of[key] = list(range(lo, hi))
        self._tool_order.append(key)
        self.n_rows = hi

    def _remove_rows(self, key: str) -> None:
        # Fill each hole with the current last row, highest holes first, so moved rows never land in a hole
        # that is still to be filled.
        for r in sorted(self._rows_of.pop(key), reverse=True):
            last = self.n_rows - 1
            if r != last:
                self._arena.matrix[r] = self._arena.matrix[last]
                self._arena.scales[r] = self._arena.scales[last]
                mover = self._row_owner[last]
                self._row_owner[r] = mover
                rows = self._rows_of[mover]
                rows[rows.index(last)] = r
            self._row_owner.pop()
            self.n_rows = last
        self._tool_order.remove(key)

    def add(self, key: str, vectors: F32) -> None:
        """Add a tool with ``vectors`` (float32 ``[m, dim]``, m ≥ 1 texts). Raises if ``key`` exists."""
        v = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if v.shape[1] != self.dim or len(v) == 0:
            raise ValueError(f"SLB.add({key!r}): expected vectors of shape [m>=1, {self.dim}], got {v.shape}")
        if key in self._rows_of:
            raise KeyError(f"SLB.add: {key!r} already present (use replace)")
        self._append_rows(key, v)

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

    def row_scores(self, query: F32) -> F32:
        """Approximate cosine of ``query`` (float32 ``[dim]``, unit norm) with every row: float32 ``[n_rows]``."""
        q, s = quantize(np.asarray(query, dtype=np.float32).reshape(1, -1))
        m, sc = self._arena.matrix[: self.n_rows], self._arena.scales[: self.n_rows]
        if self.n_rows == 0:
            return np.zeros(0, dtype=np.float32)
        if _native is not None:
            return np.asarray(_native.scan_i8(m, sc, q[0], float(s[0])), dtype=np.float32)
        return scan_reference(m, sc, q[0], float(s[0]))

    def scores(self, query: F32) -> F32:
        """Per-tool score (max over the tool's rows), float32 ``[len(self)]`` in :attr:`keys` order."""
        rs = self.row_scores(query)
        index = {k: i for i, k in enumerate(self._tool_order)}
        owners = np.fromiter((index[o] for o in self._row_owner), dtype=np.int64, count=self.n_rows)
        out = np.full(len(self._tool_order), -np.inf, dtype=np.float32)
        np.maximum.at(out, owners, rs)
        return out

    def topk(self, query: F32, k: int) -> tuple[list[str], F32]:
        """The ``k`` best tools, descending: (keys, scores)."""
        sc = self.scores(query)
        order = np.argsort(-sc, kind="stable")[:k]
        return [self._tool_order[i] for i in order], sc[order]

    def rows_of(self, key: str) -> tuple[I8, F32]:
        """Copies of the stored INT8 rows and scales of ``key`` (for tests and inspection)."""
        idx = self._rows_of[key]
        return self._arena.matrix[idx].copy(), self._arena.scales[idx].copy()

    def memory_stats(self) -> dict[str, Any]:
        return {"rows": self.n_rows, "capacity_rows": self._arena.capacity, "dim": self.dim, **self._arena.stats()}

    # --- persistence -----------------------------------------------------------------------------------------

    def save(self, path: Path, meta: dict[str, Any] | None = None) -> None:
        """Write rows, scales and ownership (plus ``meta``, JSON-serialisable) atomically to ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(
                f,
                matrix=self._arena.matrix[: self.n_rows],
                scales=self._arena.scales[: self.n_rows],
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
        slb._arena.matrix[: len(matrix)] = matrix
        slb._arena.scales[: len(matrix)] = scales
        slb.n_rows = len(matrix)
        slb._row_owner = owners
        slb._tool_order = order
        for i, o in enumerate(owners):
            slb._rows_of.setdefault(o, []).append(i)
        return slb, meta


def cache_path(embedder_fingerprint: str, content_key: str, suffix: str = ".npz") -> Path:
    """``$NEXUS_HOME/slb/<sha(embedder)>-<content_key><suffix>``."""
    emb = hashlib.sha256(embedder_fingerprint.encode()).hexdigest()[:12]
    return cache_dir("slb") / f"{emb}-{content_key}{suffix}"
