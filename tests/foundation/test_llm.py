"""The llama.cpp layer: determinism, sequence edits and state blobs (differential against a fresh
prefill), grammar-constrained sampling, and clear errors for bad calls."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from llama_cpp.llama_grammar import json_schema_to_gbnf

from nexus_agent.llm import ContextConfig, DecodeError, GrammarError, LlamaContext, LlamaModel, Sampler
from nexus_agent.models import resolve

EXACT = ContextConfig(n_ctx=512, n_batch=64, n_ubatch=64, n_seq_max=4, n_threads=1, flash_attn=False)


def _prompt(m: LlamaModel) -> list[int]:
    return m.tokenize("The quick brown fox jumps over the lazy dog. " * 3)


def test_same_tokens_give_bit_identical_logits(tiny_model: LlamaModel) -> None:
    toks = _prompt(tiny_model)
    with LlamaContext(tiny_model, EXACT) as a, LlamaContext(tiny_model, EXACT) as b:
        la = a.decode(toks, 0, n_logits=3)
        lb = b.decode(toks, 0, n_logits=3)
    assert la is not None and lb is not None
    assert la.shape == (3, tiny_model.n_vocab)
    assert np.array_equal(la, lb)


def test_seq_cp_prefix_then_suffix_matches_fresh_prefill(tiny_model: LlamaModel) -> None:
    toks = _prompt(tiny_model)
    cut = len(toks) // 2
    with LlamaContext(tiny_model, EXACT) as ctx:
        ref = ctx.decode(toks, 0, seq=0)
        ctx.clear()
        ctx.decode(toks[:cut], 0, seq=1, n_logits=0)
        ctx.seq_cp(1, 2)
        got = ctx.decode(toks[cut:], cut, seq=2)
        assert ctx.seq_pos_max(2) == len(toks) - 1
        assert ctx.seq_pos_max(1) == cut - 1
    assert ref is not None and got is not None
    assert int(ref.argmax()) == int(got.argmax())
    np.testing.assert_allclose(ref, got, rtol=0, atol=1e-4)


def test_state_blob_round_trip_into_another_sequence(tiny_model: LlamaModel) -> None:
    toks = _prompt(tiny_model)
    nxt = tiny_model.tokenize(" and runs away")
    with LlamaContext(tiny_model, EXACT) as ctx:
        ctx.decode(toks, 0, seq=0, n_logits=0)
        blob = ctx.seq_state(0)
        ref = ctx.decode(nxt, len(toks), seq=0)
        ctx.clear()
        ctx.set_seq_state(blob, 3)
        assert ctx.seq_pos_max(3) == len(toks) - 1
        got = ctx.decode(nxt, len(toks), seq=3)
    assert ref is not None and got is not None
    np.testing.assert_allclose(ref, got, rtol=0, atol=1e-4)


def test_bad_calls_raise_clear_errors(tiny_model: LlamaModel) -> None:
    with LlamaContext(tiny_model, EXACT) as ctx:
        with pytest.raises(ValueError, match="sequence id 9"):
            ctx.decode([1, 2], 0, seq=9)
        with pytest.raises(ValueError, match="do not fit the context"):
            ctx.decode([1] * 10, 510)
        with pytest.raises(RuntimeError, match="rejected"):
            ctx.set_seq_state(b"\x00" * 16, 0)
        # the context still works after the refused calls
        assert ctx.decode([1, 2, 3], 0) is not None
    with pytest.raises(GrammarError):
        Sampler(tiny_model, grammar="root ::= (")
    assert issubclass(DecodeError, RuntimeError)


def test_grammar_constrains_even_a_random_model(tiny_model: LlamaModel) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    gbnf = json_schema_to_gbnf(json.dumps(schema))
    toks = tiny_model.tokenize("{")
    with LlamaContext(tiny_model, EXACT) as ctx, Sampler(tiny_model, grammar=gbnf) as s:
        ctx.decode(toks, 0)
        out: list[int] = []
        pos = len(toks)
        for _ in range(40):
            t = s.sample(ctx)
            if tiny_model.is_eog(t):
                break
            out.append(t)
            ctx.decode([t], pos)
            pos += 1
    text = tiny_model.detokenize(out)
    # a random-weight model can run out of budget mid-number, but every emitted char must fit the grammar
    assert text.startswith("{")
    assert set(text) <= set('{}"n: 0123456789-\n\t')


@pytest.mark.real_model
def test_real_model_answers_and_emits_schema_valid_json() -> None:
    with LlamaModel(resolve("qwen0.5b")) as m, LlamaContext(m, ContextConfig(n_ctx=1024, n_threads=2)) as ctx:
        msgs = [{"role": "user", "content": "Create a private repository named nexus-demo. Reply in JSON."}]
        prompt = m.tokenize(m.apply_chat_template(msgs))
        assert prompt[0] == m.tokenize("<|im_start|>")[0]
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "private": {"type": "boolean"}},
            "required": ["name", "private"],
            "additionalProperties": False,
        }
        with Sampler(m, grammar=json_schema_to_gbnf(json.dumps(schema))) as s:
            ctx.decode(prompt, 0)
            pos, out = len(prompt), []
            for _ in range(48):
                t = s.sample(ctx)
                if m.is_eog(t):
                    break
                out.append(t)
                ctx.decode([t], pos)
                pos += 1
        args = json.loads(m.detokenize(out))
    jsonschema.validate(args, schema)
    assert "nexus-demo" in args["name"]
    assert args["private"] is True


def test_lazy_grammar_check_picks_the_grammar_first_chains_tokens(tiny_model: LlamaModel) -> None:
    """Greedy selection asks the grammar about its unconstrained pick and runs the grammar over the vocabulary only
    when it refuses; the tokens must be those of llama.cpp's grammar-first chain (grammar, then greedy)."""
    import llama_cpp.llama_cpp as L

    from nexus_agent.llm.sampling import _Candidates

    schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}
    gbnf = json_schema_to_gbnf(json.dumps(schema))
    toks = _prompt(tiny_model)
    refused = 0
    with LlamaContext(tiny_model, EXACT) as ctx:
        logits = ctx.decode(toks, 0)
        assert logits is not None
        ref = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
        L.llama_sampler_chain_add(ref, L.llama_sampler_init_grammar(tiny_model.vocab, gbnf.encode(), b"root"))
        L.llama_sampler_chain_add(ref, L.llama_sampler_init_greedy())
        cand = _Candidates(tiny_model.n_vocab)
        try:
            with Sampler(tiny_model, grammar=gbnf) as lazy:
                row = logits[-1]
                for i in range(40):
                    cand.fill(None, row)
                    cand.apply(ref)
                    want = cand.selected()
                    L.llama_sampler_accept(ref, want)
                    refused += int(row.argmax()) != want  # the random model's own pick broke the grammar
                    assert lazy.pick(row) == want, f"step {i}"
                    if tiny_model.is_eog(want):
                        break
                    row = ctx.decode([want], len(toks) + i)[-1]
        finally:
            L.llama_sampler_free(ref)
    assert refused > 0  # the fallback (grammar over the whole vocabulary) ran, not only the one-token check
