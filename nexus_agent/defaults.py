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

MAX_STEPS: Final = 1
"""Tool calls one request may make (the agent loop, docs/agent-loop.md; ``--max-steps 3`` turns it on). One by
default, by measurement: on the first 16 multi-step tune tasks the loop (at most 4 steps) reached 0/16 as one call
did, answers claiming an action that never ran went from 2 to 5, and a single-call request whose call fails paid
minutes for retries (3 tasks: p50 20 s → 190 s); with qwen1.5b the first tool and its arguments, not the steps after,
are what fail."""

KV_SCORER: Final = "nexus"
"""The memory manager's scorer under ``--kv-budget`` (``--kv-policy``; ``nexus_agent.kv.policies.POLICIES``)."""

EXAMPLES: Final = "all"
"""Where the servers' verified usage examples are used (``nexus_agent.examples.uses.ARMS``): routing keys, the
decision, operations as choices, argument writing, the next step, repair (docs/examples.md)."""
