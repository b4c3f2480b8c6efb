"""Routing inside the agent: the ``Router`` (SLB + BM25 + gate) with its LLM decision run on the agent's own
engine, in the sidecar sequence, so one model serves routing, arguments and answers.

The sidecar starts at position 0 each turn with the pruned window (recent turns verbatim, tool payloads as
surrogates), so an escalated decision sees "open a PR there" with the turn that said where "there" is.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict

from nexus_agent.agent.turn import RouteOutcome
from nexus_agent.backend import Backend
from nexus_agent.examples import ArgKeys, ExampleSet, Usage
from nexus_agent.examples.uses import ExampleUses
from nexus_agent.registry import Tool
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.followup import CallSoFar, PreviousTurn
from nexus_agent.routing.options import RouterConfig, RouterOptions
from nexus_agent.routing.router import Router, build_router

# how many examples a tool (and operation) shows in the static mode: one of each kind of call its examples make
STATIC_EXAMPLES = 5

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()


def shared_embedder(name: str) -> Embedder:
    """One embedder per process and name (loading nomic takes a second; routers are rebuilt often)."""
    with _embedders_lock:
        if name not in _embedders:
            _embedders[name] = create_embedder(name)
        return _embedders[name]


class AgentRouter:
    """Adapts ``nexus_agent.routing.Router`` to the turn pipeline (``route_turn``) and to MCP list diffs.

    The router is thread-safe: retrieval and tool-list changes take its lock, the judge and the decision run outside
    it. On the local engine every turn holds the engine's lock anyway; on a remote engine concurrent turns of
    different conversations queue only for retrieval (tens of ms)."""

    def __init__(self, router: Router) -> None:
        self.router = router

    def route_turn(
        self, query: str, window: list[dict[str, str]], previous: PreviousTurn | None = None
    ) -> RouteOutcome:
        res = self.router.route(query, window, previous=previous)
        return RouteOutcome(
            decision=res.decision,
            tool=res.tool,
            candidates=[(c.key, c.score) for c in res.candidates[:5]],
            latency_ms=res.latency_ms,
            operation=res.operation,
        )

    def next_step(self, query: str, window: list[dict[str, str]], calls: Sequence[CallSoFar]) -> RouteOutcome:
        res = self.router.next_step(query, window, calls)
        return RouteOutcome(
            decision=res.decision,
            tool=res.tool,
            candidates=[(c.key, c.score) for c in res.candidates[:5]],
            latency_ms=res.latency_ms,
            operation=res.operation,
        )

    def warm(self) -> None:
        """The decision's and the judge's stable heads into their lanes now (start-up)."""
        self.router.warm()

    def examples_for(self, query: str, tool: str, operation: str | None, uses: ExampleUses) -> list[Usage]:
        if uses.arguments == "static":
            return self.router.examples.fixed(tool, operation, STATIC_EXAMPLES)
        if uses.arguments == "retrieved":
            return self.router.closest_examples(query, tool, operation, uses.arg_examples)
        return []

    def object_params(self, tool: str, operation: str | None) -> list[str]:
        return self.router.object_params(tool, operation)

    def arg_keys(self, query: str, tool: str, operation: str | None) -> ArgKeys | None:
        return self.router.arg_keys(query, tool, operation)

    def reads_before(self, tool: str, operation: str | None) -> bool:
        return self.router.reads_before(tool, operation)

    def made_before(self, tool: str) -> frozenset[str]:
        return self.router.examples.made_before(tool) if self.router.cfg.examples.keys else frozenset()

    def in_place(self, tool: str, params: Sequence[str]) -> str | None:
        return self.router.in_place(tool, params)

    def after_turn(self) -> None:
        """Compile, within a small budget, the candidate lines the turn's decision found without a block
        (``--splice auto``); the next decisions splice them."""
        self.router.settle()

    def apply_diff(self, changed: list[Tool], removed: list[str]) -> None:
        """``tools/list_changed``: re-embed only the changed/added tools, drop the removed ones."""
        with self.router.lock:  # both changes land between two routings
            self.router.remove_tools(removed)
            self.router.replace_tools(changed)

    @classmethod
    def create(
        cls,
        tools: Sequence[Tool],
        options: RouterOptions,
        backend: Backend | None,
        examples: ExampleSet | None = None,
        uses: ExampleUses | None = None,
    ) -> AgentRouter:
        """:func:`~nexus_agent.routing.router.build_router` with the process's shared embedder; the decision and
        the relevance judge ask ``backend`` (None, or ``options.reranker == "none"``: retrieval only); ``examples``
        used as ``uses`` says (routing keys, the decision, operations)."""
        if backend is None:
            options = options.model_copy(update={"reranker": "none"})
        tuning = RouterConfig().tuned(examples=asdict(uses)) if uses is not None else None
        router = build_router(
            tools, options, backend, embedder=shared_embedder(options.embedder), tuning=tuning, examples=examples
        )
        return cls(router)
