"""Rerankers for the escalated (low-margin) decisions, registered in :data:`RERANKERS`; the LLM ones ask their model
through a backend's :class:`~nexus_agent.backend.decision.Decider`."""

from nexus_agent.routing.rerank.base import (
    RERANKERS,
    Reranker,
    RerankResult,
    create_reranker,
    register_reranker,
    reranker_class,
)

# One module per backend; importing each runs its @register_reranker (none loads a model at import time).
from nexus_agent.routing.rerank import cross_encoder, llm_choice, llm_pointwise  # noqa: F401  isort: skip

__all__ = [
    "RERANKERS",
    "RerankResult",
    "Reranker",
    "create_reranker",
    "register_reranker",
    "reranker_class",
]
