"""What every eviction policy sees and implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from nexus_agent.kv.attention import CacheView, GramFn, block_sums, deletion_costs, mean_attention

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


@dataclass
class Continuations:
    """M sampled continuations of T tokens (LORE-KV Eq. 1): their query rows [M·T, L, H, D] (step-major: row
    ``u·M + m`` is step u of continuation m) at positions [M·T], and per step the sampled token's log-probability
    and the sampling distribution's entropy, both [T, M] in nats."""

    q: F32
    qpos: npt.NDArray[np.int32]
    logprob: F64
    entropy: F64

    @property
    def m(self) -> int:
        return int(self.logprob.shape[1])


class Lookahead(Protocol):
    """Samples continuations from the lane's current state in scratch sequences that are discarded afterwards."""

    def sample(self, m: int, t: int, rng: np.random.Generator) -> Continuations: ...


@dataclass
class Rebuilt:
    """A reconstruction pass (KVzip): the query rows [nq, L, H, D] at positions [nq] of a repeat prompt and the
    text it repeats, decoded after the lane's cells, and the cache they saw (the lane's cells first, then the pass's
    own tokens, in position order)."""

    q: F32
    qpos: npt.NDArray[np.int32]
    cache: CacheView


class Reconstruction(Protocol):
    """Decodes "repeat the text" and the text, teacher-forced, in a scratch sequence that shares the lane's cells."""

    def run(self, limit: int) -> Rebuilt: ...


@dataclass
class Observation:
    """One eviction step of one lane.

    ``cache``: the lane's cells in position order; block j is cells ``[j·block, (j+1)·block)``. ``q`` / ``qpos``:
    the observed query rows, oldest first, [nq, L, H, D] / [nq]. ``forced`` [Nk]: blocks that must stay.
    ``lookahead``, ``gram`` (W_Oₕᵀ W_Oₕ per layer) and ``reconstruction`` are there for policies that ask for them.
    """

    cache: CacheView
    q: F32
    qpos: npt.NDArray[np.int32]
    forced: npt.NDArray[np.bool_]
    block: int = 32
    lookahead: Lookahead | None = None
    gram: GramFn | None = None
    reconstruction: Reconstruction | None = None
    _attention: dict[int, F32] = field(default_factory=dict, repr=False)  # rows → attention(rows)

    @property
    def n_blocks(self) -> int:
        return -(-self.cache.n // self.block)

    def attention(self, last: int | None = None) -> F32:
        """Mean attention over layers and heads of the last ``last`` query rows (all when None): [rows, n]."""
        rows = self.q.shape[0] if last is None else min(last, self.q.shape[0])
        if rows not in self._attention:
            self._attention[rows] = (
                mean_attention(self.q[-rows:], self.qpos[-rows:], self.cache)
                if rows
                else np.zeros((0, self.cache.n), np.float32)
            )
        return self._attention[rows]

    def block_rows(self, last: int | None = None) -> F64:
        """Nexus Eq. 1: per query row, the attention mass of each block, row-normalised: [rows, Nk]."""
        m = block_sums(self.attention(last), self.block)
        s = m.sum(axis=1, keepdims=True)
        return np.divide(m, s, out=np.zeros_like(m), where=s > 0)

    def deletion_costs(self, q: F32, qpos: npt.NDArray[np.int32]) -> F32:
        if self.gram is None or not self.cache.v:
            raise ValueError("deletion costs need the cache's V and the output projection (gram)")
        return deletion_costs(q, qpos, self.cache, self.gram)


class Policy(ABC):
    """One eviction policy. ``window``: query rows it reads (the engine keeps at least that many). Flags say what
    else the engine must gather for it: ``needs_attention`` (observed queries against the cached keys; not
    available with flash attention on), ``needs_values`` (V and W_O), ``needs_lookahead`` (sampled continuations),
    ``needs_reconstruction`` (a KVzip repeat pass)."""

    name: ClassVar[str]
    window: ClassVar[int] = 16
    needs_attention: ClassVar[bool] = True
    needs_values: ClassVar[bool] = False
    needs_lookahead: ClassVar[bool] = False
    needs_reconstruction: ClassVar[bool] = False

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    @abstractmethod
    def priority(self, obs: Observation) -> F64:
        """[Nk] finite priorities; higher is kept first."""

    def evicted(self, kept_cells: npt.NDArray[np.bool_]) -> None:  # noqa: B027 - most policies keep no state
        """The engine dropped the cells where ``kept_cells`` [n] is False (state aligned to cells follows)."""
