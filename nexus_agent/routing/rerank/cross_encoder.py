"""sentence-transformers ``CrossEncoder`` backend, used when the user points to a local cross-encoder folder.

No packaged cross-encoder exists here (shared/models.md), so this backend is only built on request; torch and
sentence-transformers are imported lazily.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from nexus_agent.registry import Tool
from nexus_agent.routing.docs import tool_document
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.rerank.base import Reranker, RerankResult, history_text, register_reranker


@register_reranker("cross-encoder")
class CrossEncoderReranker(Reranker):
    def __init__(self, model: str | None = None, min_score: float | None = None) -> None:
        if not model:
            raise ValueError("the cross-encoder reranker needs a local model path (--reranker-model PATH)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ImportError("the cross-encoder reranker needs `pip install sentence-transformers torch`") from exc
        self.model: Any = CrossEncoder(model, device="cpu")
        self.min_score = min_score

    def rerank(
        self,
        query: str,
        candidates: Sequence[Tool],
        history: Sequence[dict[str, str]] = (),
        previous: PreviousTurn | None = None,
        examples: Sequence[str] = (),
    ) -> RerankResult:
        ctx = history_text(history, max_messages=1)
        q = f"{ctx}\n{query}" if ctx else query
        scores = [float(s) for s in self.model.predict([(q, tool_document(t)) for t in candidates])]
        best = max(range(len(scores)), key=scores.__getitem__) if scores else -1
        choice = None
        if best >= 0 and (self.min_score is None or scores[best] >= self.min_score):
            choice = candidates[best].key
        return RerankResult(scores=scores, choice=choice)
