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
"""Tool calls one request may make (the agent loop, docs/agent-loop.md; ``--max-steps 1``: one call, as before). Three
by default, by measurement on the multi-step check split (docs/measurements.md#examples): one call cannot carry a
request that needs a lookup before its change ("close the issue about rate limiting"), which is most of them, and a
request that names one step ends after its call without a decision (``Router.next_step``'s done)."""

KV_SCORER: Final = "nexus"
"""The memory manager's scorer under ``--kv-budget`` (``--kv-policy``; ``nexus_agent.kv.policies.POLICIES``)."""

EXAMPLES: Final = "all"
"""Where the servers' verified usage examples are used (``nexus_agent.examples.uses.ARMS``): routing keys, the
decision, operations as choices, argument writing, the next step, repair (docs/examples.md)."""
