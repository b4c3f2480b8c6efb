"""Splicing compiled blocks through the engine, differential against a text prefill of the same prompt.

Exact settings: flash attention off, f16 K, one thread, a fixed ubatch (each of them otherwise moves outputs by about
1e-2 nats: ``ContextConfig`` in nexus_agent/llm/context.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nexus_agent.engine import SCRATCH, Engine, EngineConfig
from nexus_agent.engine.blocks import BlockStore, Segment, SpliceConfig, Splicer
from nexus_agent.engine.splice import Placement, splice_prefill
from nexus_agent.splice.repair import PlacedBlock, RepairSchedule, plan_repair, repair_policy

SEQ = 1
HEADER = "<|im_start|>system\nYou pick the single tool for the request.<|im_end|>\n<|im_start|>user\nTools:\n"
LINES = [
    "- list_issues(…) — List issues in a GitHub repository. [github]\n",
    "- create_branch(…) — Create a new branch in a GitHub repository. [github]\n",
    "- get_file_contents(…) — Get the contents of a file or directory. [github]\n",
]
TAIL = "- none — no tool needed\n\nRequest: show me the open bugs in acme/api\nWhich tool?<|im_end|>\n"


def kl(p_logits: np.ndarray, q_logits: np.ndarray) -> float:
    def logp(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        m = x.max(axis=-1, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))

    lp, lq = logp(p_logits), logp(q_logits)
    return float((np.exp(lp) * (lp - lq)).sum(axis=-1).mean())


@pytest.fixture(scope="module", params=["tiny", "tiny-qwen2"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    eng = Engine(EngineConfig(model=request.param, n_ctx=2048, n_batch=256, n_threads=1))
    yield eng
    eng.close()


def segments(engine: Engine) -> list[Segment]:
    tok = engine.model.tokenize
    return (
        [Segment(tuple(tok(HEADER)))]
        + [Segment(tuple(tok(x)), splice=True) for x in LINES]
        + [Segment(tuple(tok(TAIL)))]
    )


def reference(engine: Engine, tokens: list[int], n_logits: int = 4) -> np.ndarray:
    engine.truncate(SCRATCH, 0)
    slot = engine.slot(SCRATCH)  # decoded from position 0 by hand: no prefix borrowed from another lane
    out = engine.ctx.decode(tokens, 0, seq=slot, n_logits=n_logits)
    engine.ctx.seq_rm(slot)
    assert out is not None
    return out


def placed(engine: Engine, store: BlockStore, segs: list[Segment]) -> tuple[list[int], list[Placement]]:
    header = list(segs[0].tokens)
    store.compile(header, [s.tokens for s in segs if s.splice])
    out, pos = [], 0
    for s in segs:
        if s.splice:
            block = store.get(header, s.tokens)
            assert block is not None
            out.append(Placement(pos, block))
        pos += len(s.tokens)
    return [t for s in segs for t in s.tokens], out


def test_full_repair_is_identical_to_a_text_prefill(engine: Engine, tmp_path: Path) -> None:
    segs = segments(engine)
    tokens, places = placed(engine, BlockStore(engine, tmp_path), segs)
    sched = RepairSchedule(ratio=1.0)
    blocks = [PlacedBlock(p.start, p.n, p.delta, p.block.sensitivity) for p in places]
    for name in ("suffix", "epic", "cacheblend"):
        engine.truncate(SEQ, 0)
        rep = plan_repair(blocks, sched, repair_policy(name))
        st = splice_prefill(engine, tokens, places, rep, SEQ, n_logits=4)
        assert st.logits is not None
        assert np.array_equal(st.logits, reference(engine, tokens)), name


def test_anchored_block_is_exact_and_later_blocks_only_approximate(engine: Engine, tmp_path: Path) -> None:
    segs = segments(engine)
    tokens, places = placed(engine, BlockStore(engine, tmp_path), segs)
    ref = reference(engine, tokens)
    # the first line sits at its own anchor, behind the header it was compiled after: bit-exact
    first_only = [Segment(segs[0].tokens), segs[1], Segment(tuple(t for s in segs[2:] for t in s.tokens))]
    engine.truncate(SEQ, 0)
    st = splice_prefill(engine, tokens, places[:1], [], SEQ, n_logits=4)
    assert places[0].delta == 0 and st.n_blocks == 1 and st.n_spliced == len(first_only[1].tokens)
    assert st.logits is not None and np.array_equal(st.logits, ref)
    assert engine.lane(SEQ).exact == len(tokens)  # nothing approximate in it
    # all three, no repair: the later two never saw the lines before them, so the output moves, a little
    engine.truncate(SEQ, 0)
    st = splice_prefill(engine, tokens, places, [], SEQ, n_logits=4)
    assert st.n_blocks == 3 and st.n_decoded == len(tokens) - st.n_spliced
    assert st.logits is not None and not np.array_equal(st.logits, ref)
    drift = kl(ref, st.logits)
    # control: the same blocks with K left at its compile positions (no re-rotation) drift much further
    stale = [Placement(p.start, replace(p.block, header=replace(p.block.header, m0=p.start))) for p in places]
    engine.truncate(SEQ, 0)
    unrotated = splice_prefill(engine, tokens, stale, [], SEQ, n_logits=4).logits
    assert unrotated is not None and 0 < drift < kl(ref, unrotated)
    engine.truncate(SEQ, 0)
    splice_prefill(engine, tokens, places, [], SEQ, n_logits=4)
    # the record holds the prompt; exact prefix reuse stops where spliced KV begins, so a text prefill of the same
    # prompt re-decodes from there and gets the reference (to float noise: other batch split and cell slots)
    cache = engine.lane(SEQ)
    assert cache.tokens == tokens and cache.exact == places[1].start
    reused = engine.prefill(tokens, seq=SEQ, n_logits=1)
    assert reused == places[1].start
    assert kl(ref[-1:], engine.ctx.logits_ith(-1)[None]) < 1e-9


def test_mid_block_repair_runs_in_temporary_sequences(engine: Engine, tmp_path: Path) -> None:
    segs = segments(engine)
    tokens, places = placed(engine, BlockStore(engine, tmp_path), segs)
    ref = reference(engine, tokens)
    blocks = [PlacedBlock(p.start, p.n, p.delta, p.block.sensitivity) for p in places]
    rep = plan_repair(blocks, RepairSchedule(ratio=0.5), repair_policy("epic"))
    engine.truncate(SEQ, 0)
    st = splice_prefill(engine, tokens, places, rep, SEQ, n_logits=4)
    assert st.runs == 3 and st.n_repaired == len(rep)  # each block's first half: a run per block
    assert st.logits is not None and np.isfinite(kl(ref, st.logits))
    # the temporary sequences are gone again and the target holds every position once
    assert engine.ctx.seq_pos_max(engine.slot(SEQ)) == len(tokens) - 1
    assert all(engine.ctx.seq_pos_max(s) == -1 for s in (engine.splice_seq, *engine.temp_seqs))


def test_splicer_falls_back_to_text_for_a_block_of_another_header(
    engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    segs = segments(engine)
    tokens = [t for s in segs for t in s.tokens]
    sp = Splicer(engine, SpliceConfig(mode="on", root=tmp_path))
    engine.truncate(SEQ, 0)
    st = sp.prefill_segments(segs, SEQ)
    assert sp.compiled == 3 and st.n_blocks == 3
    # a block file whose header says it followed other tokens is rejected and the prompt is prefilled as text
    assert sp.store is not None
    header = list(segs[0].tokens)
    good = sp.store.path(header, segs[2].tokens)
    other = BlockStore(engine, tmp_path / "other")
    other.compile(header[:-1], [segs[2].tokens])
    good.write_bytes(other.path(header[:-1], segs[2].tokens).read_bytes())
    sp.store.cache = type(sp.store.cache)(8 << 20)
    off = Splicer(engine, SpliceConfig(mode="off"))
    engine.truncate(SEQ, 0)
    assert off.prefill_segments(segs, SEQ).n_blocks == 0
    caplog.clear()
    engine.truncate(SEQ, 0)
    with caplog.at_level("WARNING", logger="nexus_agent.engine"):
        st = sp.prefill_segments(segs, SEQ)
    assert st.n_blocks == 2  # the rejected line was decoded as text
    assert engine.lane(SEQ).tokens == tokens
    err = caplog.text
    assert "compiled block rejected" in err and "header" in err and "prefilling text instead" in err


def test_auto_splices_only_the_anchored_block_and_compiles_it_after_the_turn(engine: Engine, tmp_path: Path) -> None:
    segs = segments(engine)
    tokens = [t for s in segs for t in s.tokens]
    sp = Splicer(engine, SpliceConfig(mode="auto", root=tmp_path))
    engine.truncate(SEQ, 0)
    assert sp.prefill_segments(segs, SEQ).n_blocks == 0 and sp.compiled == 0  # nothing waits on a compile
    ref = reference(engine, tokens, n_logits=1)
    # only the first line sits at its own anchor behind the header it was compiled after: the one auto splices
    assert sp.compile_pending() == 1 and sp.compile_pending() == 0
    Splicer(engine, SpliceConfig(mode="on", root=tmp_path)).prefill_segments(segs, SEQ)  # all three on disk now
    engine.truncate(SEQ, 0)
    st = sp.prefill_segments(segs, SEQ)
    assert st.n_blocks == 1 and st.n_spliced == len(segs[1].tokens) and st.n_repaired == 0
    assert np.array_equal(engine.ctx.logits_ith(-1), ref[-1])  # exact: the never-regress default
    assert engine.lane(SEQ).exact == len(tokens)


def test_auto_does_not_splice_when_repair_would_eat_the_saving(engine: Engine, tmp_path: Path) -> None:
    segs = segments(engine)
    Splicer(engine, SpliceConfig(mode="on", root=tmp_path)).prefill_segments(segs, SEQ)  # compile
    full = Splicer(engine, SpliceConfig(mode="auto", root=tmp_path, schedule=RepairSchedule(ratio=1.0)))
    engine.truncate(SEQ, 0)
    assert full.prefill_segments(segs, SEQ).n_blocks == 0


def test_a_discrete_gpu_engine_declines_once_and_prefills_text(
    engine: Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine.n_gpu_layers, engine.unified_memory = 8, False
    caplog.set_level("WARNING", logger="nexus_agent.engine")
    try:
        sp = Splicer(engine, SpliceConfig(mode="on", root=tmp_path))
        assert not sp.active
        for _ in range(2):
            engine.truncate(SEQ, 0)
            assert sp.prefill_segments(segments(engine), SEQ).n_blocks == 0
    finally:
        engine.n_gpu_layers, engine.unified_memory = 0, True
    err = caplog.text
    assert err.count("splicing is off") == 1 and "discrete GPU" in err
