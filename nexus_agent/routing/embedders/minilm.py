"""all-MiniLM-L6-v2 as int8 ONNX through onnxruntime, tokenised with the ``tokenizers`` library (no torch)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexus_agent.routing.embedders.base import Embedder, Vectors, register_embedder, weights_id
from nexus_agent.routing.modelpath import resolve_model

_MAX_LEN = 256  # the model's max_seq_length
_BATCH = 32


def _find_onnx(folder: Path) -> Path:
    hits = sorted(folder.glob("*.onnx"))
    if not hits:
        raise FileNotFoundError(f"{folder}: no .onnx file")
    return hits[0]


@register_embedder("minilm")
class MiniLMEmbedder(Embedder):
    def __init__(self, model: str | None = None, n_threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = resolve_model(model or "minilm")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = n_threads
        opts.inter_op_num_threads = 1
        onnx = _find_onnx(folder)
        self.model_id = f"{folder.name}/{weights_id(onnx)}"
        self.session: Any = ort.InferenceSession(str(onnx), opts, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(_MAX_LEN)
        self.tokenizer.enable_padding()
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.dim = 384

    def _embed(self, texts: Sequence[str]) -> Vectors:
        chunks = []
        for s in range(0, len(texts), _BATCH):
            enc = self.tokenizer.encode_batch(list(texts[s : s + _BATCH]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self.input_names})[0]
            if hidden.ndim == 2:  # model already pooled
                chunks.append(hidden.astype(np.float32))
                continue
            m = mask[:, :, None].astype(np.float32)  # mean pooling over real tokens
            chunks.append(((hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)).astype(np.float32))
        return np.concatenate(chunks, axis=0)


@register_embedder("minilm-tools")
class MiniLMToolsEmbedder(MiniLMEmbedder):
    """MiniLM fine-tuned on registry tool data (:mod:`nexus_agent.training`), shipped in the package; the default.

    It was trained on each tool's indexed synthetic requests (plus its situational ones), so indexing them again
    as extra SLB rows adds nothing (see bench/results/routing_ablation_tuned.md).
    """

    index_synthetic = False

    def __init__(self, model: str | None = None, n_threads: int = 1) -> None:
        super().__init__(model or "minilm-tools", n_threads)
