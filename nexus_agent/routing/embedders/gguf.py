"""The shared base of the GGUF embedders (nomic, gemma): llama.cpp's embedding mode, one sequence per call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nexus_agent.routing.embedders.base import Embedder, Vectors, weights_id
from nexus_agent.routing.modelpath import resolve_model

# n_ubatch must hold a whole sequence: llama.cpp aborts (GGML_ASSERT) on an embedding batch larger than it.
_N_CTX = 2048


class GGUFEmbedder(Embedder):
    """A GGUF embedding model (pooling in the GGUF; the base class L2-normalises).

    One thread by default: a query is a few dozen tokens, too little work to split, and on a busy 2-core machine a
    second spinning llama.cpp thread made each embedding ~45x slower (nomic, measured 4.5 s vs 0.09 s).
    """

    default_model = ""  # catalog name of the weights
    max_tokens = 0  # texts are cut to this many tokens (0: the context)

    def __init__(self, model: str | None = None, n_threads: int = 1) -> None:
        from llama_cpp import Llama

        self.path = resolve_model(model or self.default_model)
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

    def _embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # One sequence per call keeps every batch under n_ubatch regardless of text lengths.
        for i, t in enumerate(texts):
            out[i] = np.asarray(self.llm.embed(self._cut(t), normalize=False, truncate=True), dtype=np.float32)
        return out

    def _cut(self, text: str) -> str:
        if not self.max_tokens:
            return text
        toks = self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        if len(toks) < self.max_tokens:
            return text
        return str(self.llm.detokenize(toks[: self.max_tokens]).decode("utf-8", errors="ignore"))
