"""Retrieval-decoupled tool routing: SLB (INT8 dense) + BM25 candidates, margin gate, reranker / LLM decision.

Entry point: :class:`nexus_agent.routing.router.Router`.
"""
