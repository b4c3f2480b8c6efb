"""Rerankers for the escalated (low-margin) decisions, registered in :data:`RERANKERS`."""

from nexus_agent.routing.rerank.base import RERANKERS, Reranker, RerankResult, create_reranker, register_reranker

__all__ = ["RERANKERS", "RerankResult", "Reranker", "create_reranker", "register_reranker"]
