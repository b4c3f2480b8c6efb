"""The attention observer: the post-RoPE Q rows it captures, scored against K from the sequence state, give the
attention llama.cpp itself computes (its ``kq_soft_max`` rows, captured by the same callback's other mode, on a
single-sequence context where cell i holds position i)."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_agent.kv.attention import layer_probs, read_cache
from nexus_agent.kv.observe import AttentionObserver, AttnShape
from nexus_agent.llm import ContextConfig, LlamaContext, LlamaModel
from nexus_agent.models import resolve


def _check_q_path_matches_llama_softmax(model: LlamaModel, n_prompt: int) -> None:
    shape = AttnShape.of(model)
    obs = AttentionObserver(shape)
    ctx = LlamaContext(
        model, ContextConfig(n_ctx=1024, n_batch=256, n_ubatch=256, n_seq_max=1, eval_callback=obs.callback)
    )
    try:
        rng = np.random.default_rng(0)
        tokens = [int(t) for t in rng.integers(100, min(model.n_vocab, 5000), n_prompt + 1)]
        ctx.decode(tokens[:n_prompt], 0, seq=0, n_logits=0)  # no capture: the callback says "not needed"
        ring = shape.ring(4)
        with obs.capture(ring):
            logits_q = ctx.decode(tokens[n_prompt:], n_prompt, seq=0)
        assert ring.staged_layers == shape.n_layer
        assert ring.commit([n_prompt])
        q, qpos = ring.rows()
        assert q.shape == (1, shape.n_layer, shape.n_head, shape.head_dim) and list(qpos) == [n_prompt]
        cache = read_cache(ctx, 0, shape)
        assert list(cache.pos) == list(range(n_prompt + 1))
        ctx.seq_rm(0, n_prompt, -1)
        with obs.capture_kq() as native:
            logits_kq = ctx.decode(tokens[n_prompt:], n_prompt, seq=0)
        last, window = native.kq_rows()
        assert logits_q is not None and logits_kq is not None
        np.testing.assert_array_equal(logits_q, logits_kq)  # capturing changes nothing the model computes
        for layer in range(shape.n_layer):
            ours = layer_probs(q[:, layer], qpos, cache.k[layer], cache.pos).mean(axis=(0, 1))[0]
            theirs = last[layer, : n_prompt + 1]
            assert abs(float(last[layer, n_prompt + 1 :].sum())) < 1e-6  # cells past the query: masked
            np.testing.assert_allclose(ours, theirs, atol=2e-3, rtol=0)
            assert float(window[layer].sum()) == pytest.approx(shape.n_head, rel=1e-4)  # one row per head sums to 1
        assert obs.native.stats()["rejected"] == 0
    finally:
        ctx.close()


def test_the_captured_queries_give_llama_cpps_own_attention(tiny_model: LlamaModel) -> None:
    _check_q_path_matches_llama_softmax(tiny_model, n_prompt=300)


@pytest.mark.real_model
def test_the_captured_queries_give_llama_cpps_own_attention_on_a_real_model() -> None:
    model = LlamaModel(resolve("qwen0.5b"))
    try:
        _check_q_path_matches_llama_softmax(model, n_prompt=200)
    finally:
        model.close()


def test_a_ring_keeps_the_last_rows_of_every_batch_in_order() -> None:
    shape = AttnShape(n_layer=2, n_head=2, n_head_kv=1, head_dim=4)
    ring = shape.ring(3)
    rng = np.random.default_rng(1)
    rows = []
    for start, n in ((0, 2), (2, 5), (7, 1)):
        batch = rng.standard_normal((shape.n_layer, n, shape.n_head, shape.head_dim)).astype(np.float32)
        for layer in range(shape.n_layer):
            assert ring.stage(layer, batch[layer])
        assert ring.commit(list(range(start, start + n)))
        rows += [batch[:, i] for i in range(n)]
    q, pos = ring.rows()
    assert list(pos) == [5, 6, 7]
    np.testing.assert_array_equal(q, np.stack(rows[-3:]))
    assert not ring.stage(0, np.zeros((1, 3, 4), np.float32))  # wrong head count
    ring.stage(0, np.zeros((1, 2, 4), np.float32))
    assert not ring.commit([8])  # layer 1 never staged: refused, and the ring empties
    assert ring.count == 0
