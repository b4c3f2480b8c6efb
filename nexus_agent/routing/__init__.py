"""Retrieval-decoupled tool routing: SLB (INT8 dense) + BM25 candidates, margin gate, reranker / LLM decision.

Entry point: :func:`nexus_agent.routing.router.build_router` (a :class:`~nexus_agent.routing.router.Router` from
:class:`~nexus_agent.routing.options.RouterOptions`).
"""
