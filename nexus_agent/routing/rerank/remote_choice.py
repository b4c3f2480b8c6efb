"""The LLM decision (``llm-choice``) on a remote server: the same prompt, the pick constrained to the candidates'
names plus ``none`` by what the server honours (a grammar of the names on llama.cpp's servers, a JSON schema whose
``tool`` is an enum of them elsewhere; ``nexus_agent.backend.remote``). A server returns no per-candidate score, so
the scores are 1 for the pick and 0 for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexus_agent.backend import RemoteBackend
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.rerank.base import Reranker, RerankResult
from nexus_agent.routing.rerank.llm_choice import NONE, decision_prompt


class RemoteChoiceReranker(Reranker):
    """``llm-choice`` over a :class:`RemoteBackend` (not registered: ``--engine`` selects it)."""

    name = "llm-choice"
    uses_llm = True

    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend

    def rerank(
        self,
        query: str,
        candidates: Sequence[Tool],
        history: Sequence[dict[str, str]] = (),
        previous: PreviousTurn | None = None,
    ) -> RerankResult:
        names, messages = decision_prompt(query, candidates, history, previous)
        picked = self.backend.choose(messages, [*names, NONE])
        if picked is None:  # an unconstrained reply that names no candidate: retrieval's pick stands
            picked = names[0] if names else NONE
        choice = None if picked == NONE else candidates[names.index(picked)].qualified_name
        return RerankResult(scores=[1.0 if n == picked else 0.0 for n in names], choice=choice)
