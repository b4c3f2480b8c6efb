"""Rerankers for the escalated (low-margin) decisions, registered in :data:`RERANKERS`; the LLM ones talk to their
model through :class:`DecisionLLM`."""

from nexus_agent.routing.rerank.base import (
    RERANKERS,
    Reranker,
    RerankResult,
    create_reranker,
    register_reranker,
    reranker_class,
)
from nexus_agent.routing.rerank.llm import DecisionLLM

__all__ = [
    "RERANKERS",
    "DecisionLLM",
    "RerankResult",
    "Reranker",
    "create_reranker",
    "register_reranker",
    "reranker_class",
]
