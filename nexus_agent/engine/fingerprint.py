"""The running model's ``.atb`` fingerprint, read from its GGUF metadata and vocabulary.

``Engine.fingerprint`` computes it once per engine and ``splice.py``, which imports the engine, builds splice targets
from that; so it sits below both. It reads a :class:`~nexus_agent.llm.LlamaModel`, which the ``splice`` package may
not import (it sits beside ``llm`` in the layer contract).
"""

from __future__ import annotations

import hashlib

from nexus_agent.llm import LlamaModel
from nexus_agent.splice.fingerprint import ModelFingerprint, RopeSet

_TOKENIZER_HASHES: dict[str, int] = {}


def tokenizer_hash(model: LlamaModel) -> int:
    """u64 over every token's bytes, in id order: two GGUFs with the same vocabulary agree (memoised per file)."""
    key = str(model.path.resolve())
    if key not in _TOKENIZER_HASHES:
        h = hashlib.blake2b(digest_size=8)
        for t in range(model.n_vocab):
            b = model.token_bytes(t, special=True)
            h.update(len(b).to_bytes(2, "little"))
            h.update(b)
        _TOKENIZER_HASHES[key] = int.from_bytes(h.digest(), "little")
    return _TOKENIZER_HASHES[key]


def fingerprint_of(model: LlamaModel) -> ModelFingerprint:
    """What a block must match to be spliced into a context of ``model`` (the .atb header's model fields)."""
    n_head = model.arch_int("attention.head_count", 0)
    n_head_kv = model.arch_int("attention.head_count_kv", n_head)
    head_dim = model.arch_int("attention.key_length", model.n_embd // max(n_head, 1))
    v_dim = model.arch_int("attention.value_length", head_dim)
    scaling = model.meta(f"{model.arch}.rope.scaling.type") or "none"
    factor = model.arch_float("rope.scaling.factor", 1.0)
    freq_scale = 1.0 / factor if scaling in ("linear", "yarn") and factor > 0 else 1.0
    rope = RopeSet(
        freq_base=model.arch_float("rope.freq_base", 10000.0),
        freq_scale=freq_scale,
        ext_factor=1.0 if scaling == "yarn" else 0.0,
        attn_factor=model.arch_float("rope.scaling.attn_factor", 1.0),
    )
    return ModelFingerprint(
        arch=model.arch,
        n_layer=model.n_layer,
        n_head_kv=n_head_kv,
        head_dim=head_dim,
        n_rot=model.arch_int("rope.dimension_count", head_dim),
        n_embd_k=n_head_kv * head_dim,
        n_embd_v=n_head_kv * v_dim,
        tokenizer_hash=tokenizer_hash(model),
        rope_type=model.rope_type,
        n_ctx_orig=model.arch_int("rope.scaling.original_context_length", model.n_ctx_train),
        rope=(rope,),
    )
