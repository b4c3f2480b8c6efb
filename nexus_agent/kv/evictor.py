"""The engine side of KV budgets: decode into a budgeted lane, and when it reaches its budget drop the blocks its
policy does not keep (``llama_memory_seq_rm``) and compact the survivors' positions (``llama_memory_seq_add``) so
that decoding goes on past ``n_ctx``. Prefill and decode are the same path: a long prompt is decoded in chunks
that fit the room left, with an eviction step between chunks.

Per step: K (and V) of the lane are read from its state blob, the lane's last query rows (captured by the
observer as they were decoded) give the attention a policy scores, and every step is logged (blocks kept and
dropped, time). After a step the query ring empties: its rows were rotated at positions that compaction moved.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nexus_agent.kv.attention import F32, read_cache
from nexus_agent.kv.budget import EvictionStep, LaneKV
from nexus_agent.kv.observe import AttentionObserver, AttnShape
from nexus_agent.kv.policies.base import Continuations, Observation
from nexus_agent.kv.select import select_blocks
from nexus_agent.llm.context import LlamaContext
from nexus_agent.llm.model import LlamaModel

log = logging.getLogger("nexus_agent.kv")

# (tokens, first position, logits rows wanted) → logits [rows, n_vocab] or None; decodes into the lane's slot
DecodeFn = Callable[[list[int], int, int], "npt.NDArray[np.float32] | None"]


def output_gram(model: LlamaModel, shape: AttnShape) -> list[F32]:
    """Per layer, W_Oₕᵀ W_Oₕ for every query head h: float32 [H, D, D], from the GGUF's ``attn_output`` weights
    (dequantised with the ``gguf`` package)."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(model.path))
    by_name = {t.name: t for t in reader.tensors}
    out: list[F32] = []
    h, d = shape.n_head, shape.head_dim
    for layer in range(shape.n_layer):
        t = by_name.get(f"blk.{layer}.attn_output.weight")
        if t is None:
            raise ValueError(f"{model.path.name}: no blk.{layer}.attn_output.weight (LORE-KV needs W_O)")
        w = np.asarray(dequantize(t.data, t.tensor_type), np.float32).reshape(-1, h * d)  # [n_embd, H·D]
        wh = w.reshape(w.shape[0], h, d).transpose(1, 0, 2)  # [H, n_embd, D]
        out.append(np.einsum("hed,hef->hdf", wh, wh).astype(np.float32))
    return out


@dataclass
class EngineLookahead:
    """LORE-KV's continuations, sampled from a lane's current state in scratch sequences that share its cells."""

    ctx: LlamaContext
    observer: AttentionObserver
    slot: int
    seqs: Sequence[int]
    last_token: int
    last_pos: int

    def sample(self, m: int, t: int, rng: np.random.Generator) -> Continuations:
        seqs = list(self.seqs[:m])
        if len(seqs) < m:
            raise ValueError(f"lookahead needs {m} scratch sequences, the engine has {len(self.seqs)}")
        ring = self.observer.shape.ring(m * t)
        logprob = np.zeros((t, m))
        entropy = np.zeros((t, m))
        try:
            for s in seqs:
                self.ctx.seq_rm(s, -1, -1)
                self.ctx.seq_cp(self.slot, s, -1, -1)
                self.ctx.seq_rm(s, self.last_pos, -1)  # re-decoded below: its logits are the first distribution
            logits = self.ctx.decode_batch([self.last_token] * m, [self.last_pos] * m, seqs, all_logits=True)
            for u in range(t):
                assert logits is not None
                z = logits.astype(np.float64)
                z -= z.max(axis=1, keepdims=True)
                p = np.exp(z)
                p /= p.sum(axis=1, keepdims=True)
                ys = [int(rng.choice(p.shape[1], p=p[i])) for i in range(m)]
                logprob[u] = np.log(np.maximum(p[np.arange(m), ys], 1e-300))
                entropy[u] = -(p * np.log(np.maximum(p, 1e-300))).sum(axis=1)
                pos = self.last_pos + 1 + u
                with self.observer.capture(ring):
                    try:
                        logits = self.ctx.decode_batch(ys, [pos] * m, seqs, all_logits=True)
                    except BaseException:
                        ring.abort()
                        raise
                ring.commit([pos] * m)
        finally:
            for s in seqs:
                self.ctx.seq_rm(s, -1, -1)
        q, qpos = ring.rows()
        return Continuations(q=q, qpos=qpos, logprob=logprob, entropy=entropy)


class Evictor:
    """KV budgets on one context. ``temp_seqs``: scratch sequence ids (LORE-KV's continuations)."""

    def __init__(
        self, ctx: LlamaContext, model: LlamaModel, observer: AttentionObserver, temp_seqs: Sequence[int]
    ) -> None:
        self.ctx = ctx
        self.model = model
        self.observer = observer
        self.shape = observer.shape
        self.temp_seqs = temp_seqs
        self._gram: list[F32] | None = None

    def gram(self, layer: int) -> F32:
        if self._gram is None:
            self._gram = output_gram(self.model, self.shape)
        return self._gram[layer]

    # -- decoding
    def decode(
        self,
        kv: LaneKV,
        slot: int,
        lane: int,
        tokens: list[int],
        idx0: int,
        n_logits: int,
        decode_fn: DecodeFn,
        protected: Callable[[], Sequence[tuple[int, int]]] = tuple,
    ) -> npt.NDArray[np.float32] | None:
        """Decode ``tokens`` as the lane's tokens ``idx0..``, evicting whenever the next chunk would not fit.

        ``protected()``: KV position ranges [p0, p1) no step may drop (other slots share them, or a splice placed
        them), asked at each step. Returns the logits of the last ``n_logits`` tokens, as ``LlamaContext.decode``
        does.
        """
        if idx0 > len(kv.pos):
            raise ValueError(f"lane {lane}: decoding at token {idx0}, but the lane holds only {len(kv.pos)}")
        if idx0 < len(kv.pos):
            self.ctx.seq_rm(slot, kv.pos_from(idx0), -1)
            kv.truncate(idx0)
        b = kv.budget
        outs: list[npt.NDArray[np.float32]] = []
        i = 0
        while i < len(tokens):
            rest = len(tokens) - i
            if kv.cells >= b.tokens:
                room = max(b.block, min(rest, b.tokens // 2, self.ctx.cfg.n_ubatch))
                self.evict(kv, slot, lane, b.tokens - room, protected())
            n = min(rest, b.tokens - kv.cells, self.ctx.cfg.n_ubatch)
            if n <= 0:
                # what must stay (sink, recent window, cells other slots share) fills the budget: go over it by a
                # block rather than fail the turn; the next step tries again
                log.warning(
                    "kv lane %d: the kept blocks fill the %d-token budget (%d cells); decoding over it",
                    lane,
                    b.tokens,
                    kv.cells,
                )
                n = min(rest, b.block)
            want = max(0, min(n, n_logits - (rest - n)))
            pos0 = kv.next_pos
            with self.observer.capture(kv.ring):
                try:
                    out = decode_fn(tokens[i : i + n], pos0, want)
                except BaseException:
                    kv.ring.abort()
                    raise
            kv.ring.commit(list(range(pos0, pos0 + n)))
            kv.append(tokens[i : i + n])
            if want and out is not None:
                outs.append(out)
            i += n
        return np.concatenate(outs) if outs else None

    # -- one eviction step
    def evict(
        self,
        kv: LaneKV,
        slot: int,
        lane: int,
        target: int,
        protected: Sequence[tuple[int, int]] = (),
    ) -> EvictionStep:
        """Drop blocks until the lane holds at most ``target`` cells (fewer blocks cannot go: the sink, the recent
        window and ``protected`` stay), then compact positions. Returns the logged step."""
        t0 = time.perf_counter()
        b = kv.budget
        policy = kv.policy
        cache = read_cache(self.ctx, slot, self.shape, values=policy.needs_values)
        n = cache.n
        if n != kv.cells:
            raise RuntimeError(f"lane {lane}: the lane's record says {kv.cells} cells, its sequence holds {n}")
        nk = -(-n // b.block)
        cell_block = np.arange(n) // b.block
        forced = np.zeros(nk, bool)
        forced[0] = True
        forced[cell_block[max(0, n - b.recent) :]] = True
        for p0, p1 in protected:
            forced[cell_block[(cache.pos >= p0) & (cache.pos < p1)]] = True
        q, qpos = kv.ring.rows()
        lookahead = None
        if policy.needs_lookahead and n:
            lookahead = EngineLookahead(self.ctx, self.observer, slot, self.temp_seqs, kv.tokens[-1], kv.next_pos - 1)
        obs = Observation(
            cache=cache,
            q=q,
            qpos=qpos,
            forced=forced,
            block=b.block,
            lookahead=lookahead,
            gram=self.gram if policy.needs_values else None,
        )
        if not policy.needs_values:
            obs.attention(policy.window)  # computed here so that observe_ms holds it
        t2 = time.perf_counter()
        kept = select_blocks(policy.priority(obs), forced, target // b.block)
        t3 = time.perf_counter()
        keep_block = np.zeros(nk, bool)
        keep_block[kept] = True
        kept_cells = keep_block[cell_block]
        self._drop_and_compact(slot, cache.pos, kept_cells)
        policy.evicted(kept_cells)
        new_pos = {int(p): i for i, p in enumerate(cache.pos[kept_cells])}
        kv.remap([new_pos.get(p, -1) if p >= 0 else -1 for p in kv.pos])
        kv.ring.clear()
        t4 = time.perf_counter()
        step = EvictionStep(
            lane=lane,
            policy=b.policy,
            cells_before=n,
            cells_after=int(kept_cells.sum()),
            kept=[int(j) for j in kept],
            dropped=[int(j) for j in np.flatnonzero(~keep_block)],
            forced=int(forced.sum()),
            observed_rows=int(q.shape[0]),
            observe_ms=(t2 - t0) * 1000,
            policy_ms=(t3 - t2) * 1000,
            total_ms=(t4 - t0) * 1000,
        )
        kv.steps.append(step)
        log.info(step.line())
        return step

    def _drop_and_compact(self, slot: int, pos: npt.NDArray[np.int32], kept: npt.NDArray[np.bool_]) -> None:
        """Remove the cells not kept (one seq_rm per run), then shift each run of survivors down so positions are
        0..m-1 again (one seq_add per run; llama.cpp re-rotates K at the next decode)."""
        n = pos.shape[0]
        i = 0
        while i < n:
            if kept[i]:
                i += 1
                continue
            j = i
            while j + 1 < n and not kept[j + 1]:
                j += 1
            self.ctx.seq_rm(slot, int(pos[i]), int(pos[j]) + 1)
            i = j + 1
        survivors = pos[kept]
        delta = np.arange(survivors.shape[0]) - survivors  # ≤ 0, non-increasing
        i = 0
        while i < survivors.shape[0]:
            j = i
            while j + 1 < survivors.shape[0] and delta[j + 1] == delta[i]:
                j += 1
            if delta[i] != 0:
                self.ctx.seq_add(slot, int(survivors[i]), int(survivors[j]) + 1, int(delta[i]))
            i = j + 1
