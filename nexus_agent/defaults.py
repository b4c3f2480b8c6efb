"""The defaults every entry point shares (CLI, Python API, evaluation, bench/), in one place.

Why these: docs/measurements.md#chat-model and docs/measurements.md#routing-embedder.
"""

from __future__ import annotations

from typing import Final

CHAT_MODEL: Final = "qwen1.5b"
"""Chat model short name (``nexus_agent.models.CATALOG``): arguments, answers and the LLM routing decision."""

EMBEDDER: Final = "minilm-tools"
"""Routing embedder backend (``nexus_agent.routing.embedders.EMBEDDERS``)."""

RERANKER: Final = "llm-choice"
"""The decision an escalated request goes to (``nexus_agent.routing.rerank.RERANKERS``); ``none``: retrieval top-1."""

MAX_STEPS: Final = 3
"""Tool calls one request may make (the agent loop, docs/agent-loop.md): 40 of the 42 multi-step tune tasks need at
most 3 calls, no measured turn ran more than 2, and a step that goes wrong costs minutes on 2 cores."""
