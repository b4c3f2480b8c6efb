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
"""Tool calls one request may make (the agent loop, docs/agent-loop.md; ``--max-steps 1``: one call, answered at
once). Three by measurement: on the whole check split (64 tasks, qwen1.5b, ``bench/examples.py --steps-baseline 1``,
``bench/results/examples_check64_s9.md``) three steps reached 23/64 against 16/64 at one (multi-step 4/39 against
1/39, single-call 11/14 both, absent targets with no write tried 5/11 against 4/11, no claim of an unrun change at
either), for p50 31 s against 18 s. (One step had been the default while the loop, then at 4 steps, reached 0/16 on
the first 16 tune tasks as one call did.)"""

KV_SCORER: Final = "nexus"
"""The memory manager's scorer under ``--kv-budget`` (``--kv-policy``; ``nexus_agent.kv.policies.POLICIES``)."""

EXAMPLES: Final = "all"
"""Where the servers' verified usage examples are used (``nexus_agent.examples.uses.ARMS``): routing keys, the
decision, operations as choices, argument writing, the next step, repair (docs/examples.md)."""
