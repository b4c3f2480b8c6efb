"""sentence-transformers with any local model folder (optional: needs torch, imported only when used)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from nexus_agent.routing.embedders.base import Embedder, Vectors, register_embedder


@register_embedder("st")
class SentenceTransformerEmbedder(Embedder):
    def __init__(self, model: str | None = None, query_prefix: str = "", document_prefix: str = "") -> None:
        if not model:
            raise ValueError("the 'st' embedder needs a local model path (--embedder-model PATH)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub; the path must be local
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ImportError("the 'st' embedder needs `pip install sentence-transformers torch`") from exc
        self.model_path = model
        self.model: Any = SentenceTransformer(model, device="cpu")
        self.dim = int(self.model.get_sentence_embedding_dimension())
        self._qp, self._dp = query_prefix, document_prefix

    def fingerprint(self) -> str:
        return f"st:{self.model_path}:{super().fingerprint()}"

    def query_prefix(self) -> str:
        return self._qp

    def document_prefix(self) -> str:
        return self._dp

    def _embed(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(self.model.encode(list(texts), batch_size=32, convert_to_numpy=True), dtype=np.float32)
