"""The engine side of KV budgets: decode into a budgeted lane, and when it reaches its budget drop the blocks its
policy does not keep (``llama_memory_seq_rm``) and compact the survivors' positions (``llama_memory_seq_add``) so
that decoding goes on past ``n_ctx``. Prefill and decode are the same path: a long prompt is decoded in chunks
that fit the room left, with an eviction step between chunks.

Per step: K (and V) of the lane are read from its state blob, the lane's last query rows (captured by the
observer as they were decoded) give the attention a policy scores, and every step is logged (blocks kept and
dropped, time). After a step the query ring empties: its rows were rotated at positions that compaction moved.

With the memory manager (``KVBudget.manager``, :mod:`nexus_agent.kv.memory`) a step reads no attention: the units
to drop were ranked when their turn completed. Decoding stops at the end of every turn the segments show complete,
and the policy scores that turn there, once, over the lane's cells (cell by cell, ``block`` 1), with the rows the
turn ended on, its lookahead (LORE) or a reconstruction pass (KVzip) in a scratch sequence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nexus_agent.kv.attention import F32, CacheView, read_cache
from nexus_agent.kv.budget import EvictionStep, LaneKV
from nexus_agent.kv.memory import MemoryState
from nexus_agent.kv.observe import AttentionObserver, AttnShape
from nexus_agent.kv.policies import make_policy
from nexus_agent.kv.policies.base import Continuations, Observation, Policy, Rebuilt
from nexus_agent.kv.select import select_blocks
from nexus_agent.llm.context import LlamaContext
from nexus_agent.llm.model import LlamaModel

log = logging.getLogger("nexus_agent.kv")

REPEAT = "\n\nRepeat the previous text exactly:\n"  # the reconstruction pass's prompt (KVzip)

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


@dataclass
class EngineReconstruction:
    """KVzip's pass: ``prompt`` then ``target`` decoded teacher-forced after the lane's cells in scratch sequence
    ``seq`` (which shares them), every query row captured; the sequence is emptied afterwards."""

    ctx: LlamaContext
    observer: AttentionObserver
    slot: int
    seq: int
    prompt: list[int]
    target: list[int]
    next_pos: int

    def run(self, limit: int) -> Rebuilt:
        toks = self.prompt + self.target[:limit]
        ring = self.observer.shape.ring(max(len(toks), 1))
        step = self.ctx.cfg.n_batch
        self.ctx.seq_rm(self.seq, -1, -1)
        self.ctx.seq_cp(self.slot, self.seq, -1, -1)
        try:
            for i in range(0, len(toks), step):
                chunk = toks[i : i + step]
                p0 = self.next_pos + i
                with self.observer.capture(ring):
                    try:
                        self.ctx.decode(chunk, p0, seq=self.seq, n_logits=0)
                    except BaseException:
                        ring.abort()
                        raise
                ring.commit(list(range(p0, p0 + len(chunk))))
            cache = read_cache(self.ctx, self.seq, self.observer.shape)
        finally:
            self.ctx.seq_rm(self.seq, -1, -1)
        q, qpos = ring.rows()
        skip = len(self.prompt)  # the rows that repeat the text, not the ones reading the instruction
        return Rebuilt(q=q[skip:], qpos=qpos[skip:], cache=cache)


class Evictor:
    """KV budgets on one context. ``temp_seqs``: scratch sequence ids (LORE-KV's continuations, KVzip's pass).
    ``observer``: None when attention is not observable (flash attention on): only scorers that read no attention
    (the engine checks) run then."""

    def __init__(
        self,
        ctx: LlamaContext,
        model: LlamaModel,
        observer: AttentionObserver | None,
        temp_seqs: Sequence[int],
        shape: AttnShape | None = None,
    ) -> None:
        self.ctx = ctx
        self.model = model
        self.observer = observer
        if shape is None:
            if observer is None:
                raise ValueError("an Evictor needs the attention shape: pass it, or an observer")
            shape = observer.shape
        self.shape = shape
        self.temp_seqs = temp_seqs
        self._gram: list[F32] | None = None
        self._repeat: list[int] | None = None

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
        mem = kv.memory
        outs: list[npt.NDArray[np.float32]] = []
        i = 0
        while i < len(tokens):
            rest = len(tokens) - i
            if mem is not None:
                self.score_due(kv, slot, lane)
                cut = mem.next_turn_end(len(kv.tokens))
                if cut is not None:
                    rest = min(rest, cut - len(kv.tokens))  # the chunk ends where a turn does: score it there
            if kv.cells >= b.tokens:
                if mem is not None:
                    room = max(b.block, min(rest, b.tokens // 8, self.ctx.cfg.n_ubatch))
                    self.evict_managed(kv, slot, lane, b.tokens - room, protected())
                else:
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
            want = max(0, min(n, n_logits - (len(tokens) - i - n)))
            pos0 = kv.next_pos
            if self.observer is None:
                out = decode_fn(tokens[i : i + n], pos0, want)
            else:
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
        if mem is not None:
            self.score_due(kv, slot, lane)
        return np.concatenate(outs) if outs else None

    # -- the memory manager: scoring once per turn, and its steps
    def score_due(self, kv: LaneKV, slot: int, lane: int) -> None:
        """Score every turn the lane holds complete and has not scored, once (module docstring)."""
        mem = kv.memory
        assert mem is not None
        for turn in mem.due(len(kv.tokens)):
            self.score_turn(kv, mem, slot, lane, turn)

    def score_turn(
        self, kv: LaneKV, mem: MemoryState, slot: int, lane: int, turn: int, policy_name: str | None = None
    ) -> None:
        """Score ``turn``'s units once into ``mem`` with the lane's policy (or ``policy_name``: a benchmark scores
        one lane's turns with several scorers at the same moment, before their arms diverge)."""
        t0 = time.perf_counter()
        n_tok = len(kv.tokens)
        us = [u for u in mem.scored_units(turn, n_tok) if any(kv.pos[i] >= 0 for i in range(u.start, u.end))]
        if not us:
            mem.assign(turn, {}, n_tok, 0.0)
            return
        policy = make_policy(policy_name or kv.budget.policy, kv.budget.seed + turn)
        cache = self._read(kv, slot, lane, policy)
        target = [kv.tokens[i] for u in us for i in range(u.start, u.end) if kv.pos[i] >= 0]
        obs = self._observation(kv, slot, policy, cache, np.zeros(cache.n, bool), 1, target)
        pri = policy.priority(obs)
        live = [i for i, p in enumerate(kv.pos) if p >= 0]
        wanted = {i for u in us for i in range(u.start, u.end)}
        score = {i: float(pri[c]) for c, i in enumerate(live) if i in wanted}
        ms = (time.perf_counter() - t0) * 1000
        mem.assign(turn, score, n_tok, ms)
        log.info("kv score lane %d [memory/%s]: turn %d, %d spans, %.1f ms", lane, policy.name, turn, len(us), ms)

    def repeat_prompt(self) -> list[int]:
        if self._repeat is None:
            self._repeat = self.model.tokenize(REPEAT)
        return self._repeat

    def _read(self, kv: LaneKV, slot: int, lane: int, policy: Policy) -> CacheView:
        """The lane's cells (K, and V when ``policy`` reads them), checked against the lane's record."""
        cache = read_cache(self.ctx, slot, self.shape, values=policy.needs_values)
        if cache.n != kv.cells:
            raise RuntimeError(f"lane {lane}: the lane's record says {kv.cells} cells, its sequence holds {cache.n}")
        return cache

    def _observation(
        self,
        kv: LaneKV,
        slot: int,
        policy: Policy,
        cache: CacheView,
        forced: npt.NDArray[np.bool_],
        block: int,
        rebuilt: list[int],
    ) -> Observation:
        """What ``policy`` scores: the lane's cells and last query rows, and what else it asks for (LORE's lookahead
        from the lane's last token, KVzip's reconstruction of the tokens ``rebuilt``, W_O)."""
        q, qpos = kv.ring.rows()
        lookahead = rebuild = None
        if cache.n and self.observer is not None:
            if policy.needs_lookahead:
                last = kv.tokens[-1]
                lookahead = EngineLookahead(self.ctx, self.observer, slot, self.temp_seqs, last, kv.next_pos - 1)
            if policy.needs_reconstruction:
                prompt = self.repeat_prompt()
                rebuild = EngineReconstruction(
                    self.ctx, self.observer, slot, self.temp_seqs[0], prompt, rebuilt, kv.next_pos
                )
        return Observation(
            cache=cache,
            q=q,
            qpos=qpos,
            forced=forced,
            block=block,
            lookahead=lookahead,
            gram=self.gram if policy.needs_values else None,
            reconstruction=rebuild,
        )

    def evict_managed(
        self,
        kv: LaneKV,
        slot: int,
        lane: int,
        target: int,
        protected: Sequence[tuple[int, int]] = (),
    ) -> EvictionStep:
        """The manager's step: drop whole units (by rank, then the unscored oldest first, then the oldest turns'
        pins) until the lane holds at most ``target`` cells or nothing else may go, then compact positions. The
        sink block and the last ``recent`` cells always stay."""
        t0 = time.perf_counter()
        mem = kv.memory
        assert mem is not None
        b = kv.budget
        live = [i for i, p in enumerate(kv.pos) if p >= 0]
        pos = np.asarray([kv.pos[i] for i in live], np.int32)
        n = pos.shape[0]
        forced = np.zeros(n, bool)
        forced[: b.block] = True
        forced[max(0, n - b.recent) :] = True
        for p0, p1 in protected:
            forced[(pos >= p0) & (pos < p1)] = True
        keep, dropped = mem.plan(kv.pos, forced, n - target)
        t1 = time.perf_counter()
        self._drop(kv, slot, pos, keep)
        t2 = time.perf_counter()
        step = EvictionStep(
            lane=lane,
            policy=f"memory/{b.policy}",
            cells_before=n,
            cells_after=int(keep.sum()),
            kept=[],
            dropped=[u.turn for u in dropped],
            forced=mem.pinned_cells(kv.pos),
            observed_rows=0,
            observe_ms=0.0,
            policy_ms=(t1 - t0) * 1000,
            total_ms=(t2 - t0) * 1000,
        )
        kv.steps.append(step)
        log.info(step.line())
        return step

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
        cache = self._read(kv, slot, lane, policy)
        n = cache.n
        nk = -(-n // b.block)
        cell_block = np.arange(n) // b.block
        forced = np.zeros(nk, bool)
        forced[0] = True
        forced[cell_block[max(0, n - b.recent) :]] = True
        for p0, p1 in protected:
            forced[cell_block[(cache.pos >= p0) & (cache.pos < p1)]] = True
        if policy.needs_attention and self.observer is None:
            raise ValueError(f"the raw {policy.name} policy reads attention, which this engine does not observe")
        # KVzip's pass reconstructs what was decoded since the last step
        since = [t for t, p in zip(kv.tokens[kv.mark :], kv.pos[kv.mark :], strict=True) if p >= 0]
        obs = self._observation(kv, slot, policy, cache, forced, b.block, since if policy.needs_reconstruction else [])
        if not policy.needs_values:
            obs.attention(policy.window)  # computed here so that observe_ms holds it
        t2 = time.perf_counter()
        kept = select_blocks(policy.priority(obs), forced, target // b.block)
        t3 = time.perf_counter()
        keep_block = np.zeros(nk, bool)
        keep_block[kept] = True
        kept_cells = keep_block[cell_block]
        self._drop(kv, slot, cache.pos, kept_cells)
        policy.evicted(kept_cells)
        t4 = time.perf_counter()
        step = EvictionStep(
            lane=lane,
            policy=b.policy,
            cells_before=n,
            cells_after=int(kept_cells.sum()),
            kept=[int(j) for j in kept],
            dropped=[int(j) for j in np.flatnonzero(~keep_block)],
            forced=int(forced.sum()),
            observed_rows=int(obs.q.shape[0]),
            observe_ms=(t2 - t0) * 1000,
            policy_ms=(t3 - t2) * 1000,
            total_ms=(t4 - t0) * 1000,
        )
        kv.steps.append(step)
        log.info(step.line())
        return step

    def _drop(self, kv: LaneKV, slot: int, pos: npt.NDArray[np.int32], kept: npt.NDArray[np.bool_]) -> None:
        """Remove the lane's cells not kept (``pos``: the held cells' positions; one seq_rm per run), shift each run
        of survivors down so positions are 0..m-1 again (one seq_add per run; llama.cpp re-rotates K at the next
        decode), then give the lane's record its new positions and empty its query ring (its rows were rotated at
        positions that moved)."""
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
        new_pos = {int(p): i for i, p in enumerate(survivors)}
        kv.remap([new_pos.get(p, -1) if p >= 0 else -1 for p in kv.pos])
        kv.ring.clear()
