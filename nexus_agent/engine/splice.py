"""Compiled tool blocks on the engine: compile a rendering's KV once, splice it into a live sequence later.

How a splice enters the context (docs/architecture.md#compiled-tool-blocks): the blocks' K rows are re-rotated
natively from their compile anchor m0 to their target positions, their V is written in the context's layout
(transposed when flash attention is off), and the result is one sequence-state blob that llama.cpp loads into the
engine's ``splice_seq``; ``seq_cp`` then hands its cells to the target lane's slot (``kv_unified``: cells are shared,
not copied).
Tokens chosen for repair, and text between blocks, are then re-decoded in place; the text after the last block is
decoded as usual. The engine's token record of the target sequence holds the whole prompt afterwards, with
``exact`` marking where spliced KV begins, so exact-prefix reuse never serves spliced KV to a text prefill.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import llama_cpp.llama_cpp as L
import numpy as np
import numpy.typing as npt

from nexus_agent import native
from nexus_agent.engine.engine import COMPILE, PROBE, Engine, common_prefix_len
from nexus_agent.splice.blob import parse_blob, plan_blob, write_blob_frame
from nexus_agent.splice.fingerprint import GGML_TYPE_F16, SpliceTarget
from nexus_agent.splice.format import AtbBlock, header_hash


def splice_unsupported(engine: Engine) -> str | None:
    """Why this engine cannot splice (the runtime then prefills text and says so once), or None."""
    m = engine.model
    if engine.model.rope_type not in (0, 2):
        return f"RoPE type {m.rope_type} of {m.arch} is neither NORM nor NEOX"
    if int(L.llama_model_n_swa(m.handle)) > 0:
        return f"{m.arch} uses sliding-window attention (two cache sections); splicing handles one"
    if engine.n_gpu_layers > 0 and not engine.unified_memory:
        return "layers are offloaded to a discrete GPU: its KV is not host memory"
    return None


def splice_target(engine: Engine, header: Sequence[int] = (), m0: int | None = None) -> SpliceTarget:
    fa = engine.cfg.flash_attn
    return SpliceTarget(
        fingerprint=engine.fingerprint(),
        flash_attn=fa,
        v_trans=not fa,
        k_type=GGML_TYPE_F16,
        v_type=GGML_TYPE_F16,
        header_hash=header_hash(header),
        m0=m0,
    )


# -- compiling ----------------------------------------------------------------------------------------------------


@dataclass
class BlockKV:
    """One block's KV as llama.cpp computed it: ``k`` uint16 (n_layer, n, n_embd_k) and ``v`` uint16
    (n_layer, n, n_embd_v), F16 bit patterns, token-major, K rotated for positions m0..m0+n-1."""

    tokens: list[int]
    m0: int
    k: npt.NDArray[np.uint16]
    v: npt.NDArray[np.uint16]


def kv_after(engine: Engine, prefix: list[int], body: list[int], seq: int = COMPILE) -> BlockKV:
    """Decode ``body`` behind ``prefix`` in ``seq`` (reusing a cached prefix), export its cells, roll back."""
    with engine.turn():
        engine.prefill(prefix + body, seq=seq, n_logits=0)
        kv = lane_kv(engine, seq, len(prefix), body)
        engine.truncate(seq, len(prefix))
        return kv


def lane_kv(engine: Engine, seq: int, m0: int, body: list[int]) -> BlockKV:
    """The cells of lane ``seq`` at positions ``m0 .. m0+len(body)-1`` (which must hold ``body``), exported."""
    with engine.turn():
        sb = parse_blob(engine.ctx.seq_state(engine.slot(seq)))
        sec = sb.sections[0]
        idx = np.flatnonzero(sec.pos >= m0)
        idx = idx[np.argsort(sec.pos[idx], kind="stable")][: len(body)]
        if not np.array_equal(sec.pos[idx], np.arange(m0, m0 + len(body))):
            raise RuntimeError(f"sequence {seq} does not hold positions {m0}..{m0 + len(body) - 1} after decoding")
        k = np.stack([sec.k[layer][idx] for layer in range(len(sec.k))]).view(np.uint16)
        v = np.stack([sec.v_rows(layer)[idx] for layer in range(len(sec.v))]).view(np.uint16)
        return BlockKV(list(body), m0, np.ascontiguousarray(k), np.ascontiguousarray(v))


def load_blocks(engine: Engine, seq: int, placements: Sequence[Placement]) -> None:
    """Put ``placements`` (whole blocks) into lane ``seq``'s slot through ``splice_seq``, without decoding; the
    caller keeps the lane's record."""
    with engine.turn():
        slot = engine.slot(seq)
        blob, _ = build_splice_blob(engine, [(p, 0, p.n) for p in placements], engine.splice_seq)
        try:
            engine.ctx.seq_rm(engine.splice_seq)
            engine.ctx.set_seq_state(blob, engine.splice_seq)
            engine.ctx.seq_cp(engine.splice_seq, slot)
        finally:
            engine.ctx.seq_rm(engine.splice_seq)


# A stand-in for "some other candidate line" in front of a block: how much each token's V moves when it is there
# is the block's per-token context sensitivity (the CacheBlend repair policy spends its budget on the largest).
PROBE_LINE = "- example_tool(…) — An example tool that lists, reads or changes something. [example]\n"


def sensitivity(engine: Engine, header: list[int], probe: list[int], kv: BlockKV) -> npt.NDArray[np.float32]:
    """float32 (n,): per token, the mean over layers of |V_probe − V| / |V| (V carries no position)."""
    other = kv_after(engine, header + probe, kv.tokens, seq=PROBE)
    a = kv.v.view(np.float16).astype(np.float32)
    b = other.v.view(np.float16).astype(np.float32)
    num = np.linalg.norm(a - b, axis=2)
    den = np.linalg.norm(a, axis=2) + 1e-6
    return np.asarray((num / den).mean(axis=0), dtype=np.float32)


# -- splicing -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """``block`` spliced with its first token at position ``start``."""

    start: int
    block: AtbBlock

    @property
    def n(self) -> int:
        return int(self.block.tokens.shape[0])

    @property
    def delta(self) -> int:
        return self.start - int(self.block.header.m0)


@dataclass
class SpliceStats:
    """What one spliced prefill did. ``n_spliced``: tokens whose KV came from blocks (after repair); ``n_decoded``:
    tokens decoded (text, repair, tail); ``n_repaired``: of those, block tokens re-decoded; times in ms."""

    n_tokens: int = 0
    n_reused: int = 0
    n_spliced: int = 0
    n_repaired: int = 0
    n_decoded: int = 0
    n_blocks: int = 0
    build_ms: float = 0.0
    load_ms: float = 0.0
    decode_ms: float = 0.0
    runs: int = 0
    logits: npt.NDArray[np.float32] | None = None  # float32 [n_logits, n_vocab] of the prompt's last tokens


def _runs(positions: Sequence[int]) -> list[tuple[int, int]]:
    """Maximal [a, b) ranges of sorted unique positions."""
    out: list[tuple[int, int]] = []
    for p in positions:
        if out and out[-1][1] == p:
            out[-1] = (out[-1][0], p + 1)
        else:
            out.append((p, p + 1))
    return out


def build_splice_blob(
    engine: Engine, parts: Sequence[tuple[Placement, int, int]], seq_id: int
) -> tuple[npt.NDArray[np.uint8], int]:
    """One sequence blob holding cells ``[lo, hi)`` (block offsets) of each placement at their target positions:
    K copied then re-rotated by each placement's delta (native, bit-exact with llama.cpp's K-shift), V written in
    the context's layout. Returns (blob bytes as uint8, cell count)."""
    fp = engine.fingerprint()
    v_trans = not engine.cfg.flash_attn
    total = sum(hi - lo for _, lo, hi in parts)
    krow, vrow = fp.n_embd_k * 2, fp.n_embd_v * 2
    plan = plan_blob(total, fp.n_layer, krow, vrow, v_trans)
    buf = np.empty(plan.size, np.uint8)
    pos = np.concatenate([np.arange(p.start + lo, p.start + hi, dtype=np.int32) for p, lo, hi in parts])
    write_blob_frame(buf.data, plan, seq_id, pos, v_trans, GGML_TYPE_F16, GGML_TYPE_F16, krow, vrow)
    deltas = np.concatenate([np.full(hi - lo, p.delta, np.int32) for p, lo, hi in parts])
    rope = fp.rope[0]
    rp = native.RopeParams(
        n_rot=fp.n_rot,
        head_dim=fp.head_dim,
        n_head_kv=fp.n_head_kv,
        rope_type=fp.rope_type,
        freq_base=rope.freq_base,
        freq_scale=rope.freq_scale,
        ext_factor=rope.ext_factor,
        attn_factor=rope.attn_factor,
        beta_fast=rope.beta_fast,
        beta_slow=rope.beta_slow,
        n_ctx_orig=fp.n_ctx_orig,
    )
    for layer in range(fp.n_layer):
        k_dst = buf[plan.k_off[layer] : plan.k_off[layer] + total * krow].view(np.uint16).reshape(total, fp.n_embd_k)
        c = 0
        for p, lo, hi in parts:
            k_dst[c : c + hi - lo] = p.block.k[layer, lo:hi]
            c += hi - lo
        if np.any(deltas):
            native.rope_shift_f16(k_dst, deltas, rp)
        c = 0
        for p, lo, hi in parts:
            src = p.block.v[layer, lo:hi]
            if v_trans:
                native.write_v_trans(buf, plan.v_off[layer], fp.n_embd_v, total, c, src)
            else:
                off = plan.v_off[layer] + c * vrow
                buf[off : off + (hi - lo) * vrow] = src.reshape(-1).view(np.uint8)
            c += hi - lo
    return buf, total


def splice_prefill(
    engine: Engine,
    tokens: list[int],
    placements: Sequence[Placement],
    repair: Sequence[int],
    seq: int,
    n_logits: int = 1,
) -> SpliceStats:
    """Make ``seq`` hold ``tokens`` with ``placements`` spliced in and the positions ``repair`` re-decoded.

    Placements must not overlap and must hold exactly the prompt's tokens at their place. A placement inside the
    reusable exact prefix is skipped (its KV is there already); one that would hold the last token is decoded as
    text, and so is every block token among the last ``n_logits`` (their logits are returned in the stats).
    """
    st = SpliceStats(n_tokens=len(tokens))
    with engine.turn():
        lane = engine.lane(seq)
        slot = engine.slot(seq)
        n = max(0, min(common_prefix_len(lane.tokens, tokens), lane.exact, len(tokens) - 1))
        st.n_reused = n
        end = len(tokens) - max(1, n_logits)
        placed = sorted((p for p in placements if p.start >= n and p.start + p.n <= end), key=lambda p: p.start)
        for p0, p1 in itertools.pairwise(placed):
            if p0.start + p0.n > p1.start:
                raise ValueError(f"placements at {p0.start} and {p1.start} overlap")
        for p in placed:
            if list(p.block.tokens) != tokens[p.start : p.start + p.n]:
                raise ValueError(f"the block placed at {p.start} does not hold the prompt's tokens there")
        covered = np.zeros(len(tokens), bool)
        for p in placed:
            covered[p.start : p.start + p.n] = True
        decode = ~covered
        decode[:n] = False
        rep = np.asarray(list(repair), np.int64)
        if rep.size:
            decode[rep[(rep >= n) & (rep < len(tokens))]] = True
        st.n_repaired = int((decode & covered).sum())
        if not placed:
            engine.truncate(seq, n)
            st.logits = engine.decode(tokens[n:], n, seq, n_logits=n_logits)
            engine.set_record(seq, tokens, exact=len(tokens))
            st.n_decoded = len(tokens) - n
            return st
        first = placed[0].start
        positions = np.flatnonzero(decode).tolist()
        # the tail run: the decoded positions that end the prompt; it is decoded in ``seq`` itself, last
        tail0 = len(tokens)
        while tail0 - 1 >= first and decode[tail0 - 1]:
            tail0 -= 1
        middle = [p for p in positions if first <= p < tail0]
        try:
            t0 = time.perf_counter()
            engine.truncate(seq, n)
            engine.decode(tokens[n:first], n, seq, n_logits=0)  # text between the reused prefix and the 1st block
            # cells at or after tail0 are decoded as text with the tail
            parts = [(p, 0, min(p.n, tail0 - p.start)) for p in placed if p.start < tail0]
            t1 = time.perf_counter()
            n_cells = 0
            t2 = t1
            if parts:
                blob, n_cells = build_splice_blob(engine, parts, engine.splice_seq)
                t2 = time.perf_counter()
                engine.ctx.seq_rm(engine.splice_seq)
                engine.ctx.set_seq_state(blob, engine.splice_seq)
                engine.ctx.seq_cp(engine.splice_seq, slot)
                engine.ctx.seq_rm(engine.splice_seq)
            t3 = time.perf_counter()
            # runs inside the spliced region: each gets a temporary sequence holding the prefix before it (taken before
            # any run's old cells are removed, so a later run still sees an earlier run's spliced KV)
            runs = _runs(middle)
            st.runs = len(runs)
            temps = engine.temp_seqs
            for i in range(0, len(runs), len(temps)):
                chunk = runs[i : i + len(temps)]
                for (a, _b), tmp in zip(chunk, temps, strict=False):
                    engine.ctx.seq_rm(tmp)
                    engine.ctx.seq_cp(slot, tmp, 0, a)
                for a, b in chunk:
                    engine.ctx.seq_rm(slot, a, b)
                toks, poss, seqs = [], [], []
                for (a, b), tmp in zip(chunk, temps, strict=False):
                    toks += tokens[a:b]
                    poss += list(range(a, b))
                    seqs += [tmp] * (b - a)
                engine.ctx.decode_batch(toks, poss, seqs, logits_last=False)
                for (a, b), tmp in zip(chunk, temps, strict=False):
                    engine.ctx.seq_cp(tmp, slot, a, b)
                    engine.ctx.seq_rm(tmp)
            engine.ctx.seq_rm(slot, tail0, -1)
            st.logits = engine.decode(tokens[tail0:], tail0, seq, n_logits=n_logits)
        except BaseException:
            # leave nothing behind: no half-spliced sequence, no cells held by the helper sequences
            for tmp in (engine.splice_seq, *engine.temp_seqs):
                engine.ctx.seq_rm(tmp)
            engine.truncate(seq, n)
            raise
        t4 = time.perf_counter()
        # an anchored block (its own m0, behind the header it was compiled after) holds exactly a prefill's KV
        engine.set_record(seq, tokens, exact=min((p.start for p in placed if p.delta != 0), default=len(tokens)))
        st.n_blocks = len(parts)  # blocks whose KV entered the context
        st.n_spliced = n_cells - len(middle)
        st.n_decoded = (first - n) + len(middle) + (len(tokens) - tail0)
        st.build_ms = (t2 - t1) * 1000
        st.load_ms = (t3 - t2) * 1000
        st.decode_ms = (t1 - t0 + t4 - t3) * 1000
        return st
