"""A deterministic tiny random-weight GGUF model, for fast and exact tests.

The weights are random but seeded, and the vocabulary is real: it is copied from a vocab-only GGUF that
llama-cpp-python's sdist vendors (``vendor/llama.cpp/models/ggml-vocab-*.gguf``), so tokenisation behaves
as in the real model family. The same arguments always give a byte-identical file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

# The chat template of Qwen2.5 / SmolLM2 (ChatML), kept short: tests only need a stable, real template.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinyConfig:
    """Shape of the tiny model. ``embd`` must be divisible by ``heads``; head_dim = embd // heads."""

    arch: Literal["llama", "qwen2"] = "llama"
    layers: int = 2
    embd: int = 64
    heads: int = 4
    kv_heads: int = 2
    ff: int = 128
    ctx: int = 4096
    rope_base: float = 10000.0
    seed: int = 1234
    qk_gain: float = 2.5  # scales Wq, Wk so attention is peaky and position errors show up in outputs
    emb_std: float = 0.3


def _copy_tokenizer(reader: Any, writer: Any) -> int:
    from gguf import GGUFValueType

    n = 0
    for key, f in reader.fields.items():
        if not key.startswith("tokenizer.") or key == "tokenizer.chat_template":
            continue
        vtype = f.types[0]
        sub = f.types[1] if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(key, f.contents(), vtype, sub)
        n += 1
    return n


def write_tiny_gguf(out: Path, vocab_gguf: Path, cfg: TinyConfig) -> Path:
    """Write the tiny model to ``out`` (f16 weights, f32 norms) and return ``out``."""
    from gguf import GGUFReader, GGUFWriter

    if cfg.embd % cfg.heads or cfg.heads % cfg.kv_heads:
        raise ValueError(f"bad tiny shape: embd={cfg.embd} heads={cfg.heads} kv_heads={cfg.kv_heads}")
    rng = np.random.default_rng(cfg.seed)
    reader = GGUFReader(str(vocab_gguf))
    n_vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    hd = cfg.embd // cfg.heads

    tmp = out.with_suffix(".partial")
    w = GGUFWriter(str(tmp), cfg.arch)
    w.add_name(f"tiny-{cfg.arch}-{cfg.layers}L-{cfg.embd}d")
    w.add_context_length(cfg.ctx)
    w.add_embedding_length(cfg.embd)
    w.add_block_count(cfg.layers)
    w.add_feed_forward_length(cfg.ff)
    w.add_head_count(cfg.heads)
    w.add_head_count_kv(cfg.kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(cfg.rope_base)
    w.add_rope_dimension_count(hd)
    w.add_vocab_size(n_vocab)
    w.add_file_type(1)
    _copy_tokenizer(reader, w)
    w.add_chat_template(CHATML_TEMPLATE)

    def mat(n_out: int, n_in: int, gain: float = 1.0) -> np.ndarray:
        # numpy shape (n_out, n_in) is ggml ne {n_in, n_out}
        x = rng.standard_normal((n_out, n_in), dtype=np.float32) * (gain / np.sqrt(n_in))
        return x.astype(np.float16)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    emb = rng.standard_normal((n_vocab, cfg.embd), dtype=np.float32) * cfg.emb_std
    w.add_tensor("token_embd.weight", emb.astype(np.float16))
    w.add_tensor("output_norm.weight", norm(cfg.embd))
    for i in range(cfg.layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", norm(cfg.embd))
        w.add_tensor(p + "attn_q.weight", mat(cfg.heads * hd, cfg.embd, cfg.qk_gain))
        w.add_tensor(p + "attn_k.weight", mat(cfg.kv_heads * hd, cfg.embd, cfg.qk_gain))
        w.add_tensor(p + "attn_v.weight", mat(cfg.kv_heads * hd, cfg.embd))
        if cfg.arch == "qwen2":
            w.add_tensor(p + "attn_q.bias", 0.1 * rng.standard_normal(cfg.heads * hd, dtype=np.float32))
            w.add_tensor(p + "attn_k.bias", 0.1 * rng.standard_normal(cfg.kv_heads * hd, dtype=np.float32))
            w.add_tensor(p + "attn_v.bias", 0.1 * rng.standard_normal(cfg.kv_heads * hd, dtype=np.float32))
        w.add_tensor(p + "attn_output.weight", mat(cfg.embd, cfg.heads * hd))
        w.add_tensor(p + "ffn_norm.weight", norm(cfg.embd))
        w.add_tensor(p + "ffn_gate.weight", mat(cfg.ff, cfg.embd))
        w.add_tensor(p + "ffn_up.weight", mat(cfg.ff, cfg.embd))
        w.add_tensor(p + "ffn_down.weight", mat(cfg.embd, cfg.ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.replace(out)
    return out
