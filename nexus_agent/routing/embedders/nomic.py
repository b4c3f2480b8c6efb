"""nomic-embed-text-v1.5 (GGUF) through llama.cpp's embedding mode, with its asymmetric task prefixes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nexus_agent.routing.embedders.base import Embedder, Vectors, register_embedder, weights_id
from nexus_agent.routing.modelpath import resolve_model

# n_ubatch must hold a whole sequence: llama.cpp aborts (GGML_ASSERT) on an embedding batch larger than it.
_N_CTX = 2048
_MAX_DOC_TOKENS = 512  # nomic was trained on <=512-token passages; longer tool docs are cut
# One thread by default: a query is ~10 tokens, too little work to split, and on a busy 2-core machine a
# second spinning llama.cpp thread made each embedding ~45x slower (measured 4.5 s vs 0.09 s).


@register_embedder("nomic")
class NomicEmbedder(Embedder):
    def __init__(self, model: str | None = None, n_threads: int = 1) -> None:
        from llama_cpp import Llama

        self.path = resolve_model(model or "nomic")
        self.model_id = weights_id(self.path)
        self.llm: Any = Llama(
            str(self.path),
            embedding=True,
            n_ctx=_N_CTX,
            n_batch=_N_CTX,
            n_ubatch=_N_CTX,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
            use_extra_bufts=False,
        )
        self.dim = int(self.llm.n_embd())

    def document_prefix(self) -> str:
        return "search_document: "

    def query_prefix(self) -> str:
        return "search_query: "

    def _embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # One sequence per call keeps every batch under n_ubatch regardless of text lengths.
        for i, t in enumerate(texts):
            toks = self.llm.tokenize(t.encode("utf-8"), add_bos=True, special=False)[:_MAX_DOC_TOKENS]
            text = self.llm.detokenize(toks).decode("utf-8", errors="ignore") if len(toks) == _MAX_DOC_TOKENS else t
            out[i] = np.asarray(self.llm.embed(text, normalize=False, truncate=True), dtype=np.float32)
        return out
