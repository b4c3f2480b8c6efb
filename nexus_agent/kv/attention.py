"""Attention of observed queries over one sequence's cached cells, computed from K and V read out of its state.

Shapes: ``L`` layers, ``H`` query heads, ``G`` KV heads (``H = G × g``, grouped-query attention), ``D`` head
dimension, ``n`` cached cells of the sequence (sorted by position), ``nq`` query rows. Everything is float32; K
and V are F16 in the cache. Per layer and head the softmax runs over the sequence's cells at positions ≤ the
query's own (the causal mask llama.cpp applies), so a query from before an eviction sees only what survives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nexus_agent.kv.observe import AttnShape
from nexus_agent.llm.context import LlamaContext
from nexus_agent.splice.blob import parse_blob

F32 = npt.NDArray[np.float32]
GGML_TYPE_F16 = 1


@dataclass
class CacheView:
    """K (and V) of one sequence, cells in position order. ``pos``: int32 [n]; ``k`` / ``v``: per layer float32
    [n, G, D] (``v`` empty unless asked for)."""

    pos: npt.NDArray[np.int32]
    k: list[F32]
    v: list[F32]

    @property
    def n(self) -> int:
        return int(self.pos.shape[0])


def read_cache(ctx: LlamaContext, seq: int, shape: AttnShape, values: bool = False) -> CacheView:
    """K (and V with ``values``) of sequence ``seq`` from its state blob. Raises ValueError for a cache whose K/V
    are not F16 (a quantised KV cache is not observed)."""
    sec = parse_blob(ctx.seq_state(seq)).sections[0]
    n, g, d = sec.n_cells, shape.n_head_kv, shape.head_dim
    order = np.argsort(sec.pos, kind="stable")
    if any(t != GGML_TYPE_F16 for t in sec.k_types) or (values and any(t != GGML_TYPE_F16 for t in sec.v_types)):
        raise ValueError(f"KV observation needs an F16 cache, got K types {set(sec.k_types)}")
    k = [sec.k[layer].view(np.float16).reshape(n, g, d)[order].astype(np.float32) for layer in range(shape.n_layer)]
    v: list[F32] = []
    if values:
        v = [
            sec.v_rows(layer).view(np.float16).reshape(n, g, d)[order].astype(np.float32)
            for layer in range(shape.n_layer)
        ]
    return CacheView(pos=sec.pos[order].astype(np.int32), k=k, v=v)


def layer_probs(q: F32, qpos: npt.NDArray[np.int32], k: F32, kpos: npt.NDArray[np.int32]) -> F32:
    """One layer: q [nq, H, D], k [n, G, D] → softmax attention [G, g, nq, n] (causal by position)."""
    nq, h, d = q.shape
    g = k.shape[1]
    qh = q.reshape(nq, g, h // g, d).transpose(1, 2, 0, 3)  # [G, g, nq, D]
    logits = np.matmul(qh, k.transpose(1, 2, 0)[:, None]) * np.float32(1.0 / np.sqrt(d))  # [G, g, nq, n]
    masked = kpos[None, :] > qpos[:, None]  # [nq, n]
    logits = np.where(masked[None, None], np.float32(-np.inf), logits)
    logits -= logits.max(axis=-1, keepdims=True)
    np.nan_to_num(logits, copy=False, nan=-np.inf)  # a query that sees no cell: all -inf rows
    p = np.exp(logits)
    s = p.sum(axis=-1, keepdims=True)
    return np.divide(p, s, out=np.zeros_like(p), where=s > 0)


def mean_attention(q: F32, qpos: npt.NDArray[np.int32], cache: CacheView) -> F32:
    """q [nq, L, H, D] → attention [nq, n] averaged over layers and heads (each row sums to 1 when the query sees
    any cell)."""
    n_layer = q.shape[1]
    out = np.zeros((q.shape[0], cache.n), np.float32)
    for layer in range(n_layer):
        p = layer_probs(q[:, layer], qpos, cache.k[layer], cache.pos)
        out += p.sum(axis=(0, 1))
    return out / np.float32(n_layer * q.shape[2])


GramFn = Callable[[int], F32]  # layer → [H, D, D]: W_Oₕᵀ W_Oₕ per query head


def deletion_costs(q: F32, qpos: npt.NDArray[np.int32], cache: CacheView, gram: GramFn, eps: float = 1e-6) -> F32:
    """LORE-KV Eqs. 5–6 summed over layers and heads: [nq, n], the residual-stream change ‖W_O Δo‖² that deleting
    each cell alone would cause to each query's attention output. Needs ``cache.v``."""
    nq, n_layer = q.shape[:2]
    out = np.zeros((nq, cache.n), np.float32)
    for layer in range(n_layer):
        a = layer_probs(q[:, layer], qpos, cache.k[layer], cache.pos)  # [G, g, nq, n]
        gkv, g = a.shape[0], a.shape[1]
        v = cache.v[layer]  # [n, G, D]
        gr = gram(layer)  # [H, D, D]
        for kv in range(gkv):
            vk = v[:, kv]  # [n, D]
            for j in range(g):
                hd = kv * g + j
                aq = a[kv, j]  # [nq, n]
                o = aq @ vk  # [nq, D]
                vg = vk @ gr[hd]  # [n, D]
                vgv = np.einsum("nd,nd->n", vg, vk)
                ogo = np.einsum("qd,de,qe->q", o, gr[hd], o)
                quad = vgv[None, :] - 2.0 * (o @ vg.T) + ogo[:, None]  # ‖W_O (v_i − o_q)‖²
                coef = aq / (1.0 - aq + np.float32(eps))
                out += coef * coef * np.maximum(quad, 0.0)
    return out


def block_sums(x: npt.NDArray[np.floating], block: int) -> npt.NDArray[np.float64]:
    """Sum the last axis of ``x`` [..., n] over consecutive groups of ``block`` cells → [..., ceil(n / block)]."""
    n = x.shape[-1]
    nb = -(-n // block)
    pad = nb * block - n
    xp = np.concatenate([x, np.zeros((*x.shape[:-1], pad), x.dtype)], axis=-1) if pad else x
    return xp.reshape(*x.shape[:-1], nb, block).sum(axis=-1, dtype=np.float64)
