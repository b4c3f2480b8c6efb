"""Reranker interface and registry.

A reranker sees the query (plus recent history) and a candidate pool, and returns one score per candidate
(higher = better). A reranker may also say that no candidate fits (``none_score``): the router turns that into
the ``no-tool`` decision.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from nexus_agent.backend import Decider
from nexus_agent.examples import Example
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import CallSoFar, PreviousTurn


@dataclass(frozen=True)
class RerankResult:
    """``scores[i]`` belongs to ``candidates[i]``; ``choice`` is the picked tool's qualified name or None."""

    scores: list[float]
    choice: str | None
    n_prompt_tokens: int = 0


class Reranker(ABC):
    name: str = ""
    # the decision asks a model through a backend's :class:`~nexus_agent.backend.decision.Decider` (its
    # constructor takes ``decider``); the relevance judge then asks the same one
    uses_llm: ClassVar[bool] = False
    decider: Decider | None = None

    def warm(self) -> None:  # noqa: B027 - a reranker without a model has nothing to warm
        """Hold the decision's stable head in the model's cache now (start-up), so no request pays for it."""

    def settle(self) -> None:
        """Work that may wait until the turn's answer is out (the decider's: compiling missing tool blocks)."""
        if self.decider is not None:
            self.decider.settle()

    @abstractmethod
    def rerank(
        self,
        query: str,
        candidates: Sequence[Tool],
        history: Sequence[dict[str, str]] = (),
        previous: PreviousTurn | None = None,
        examples: Sequence[str] = (),
    ) -> RerankResult:
        """Score ``candidates`` for ``query``. ``previous``: the request is a follow-up of that tool turn
        (``routing/followup.py``); ``examples``: for the first candidates, the request of each one's closest verified
        example ("" where it has none). A reranker may use either or not."""

    def next_step(
        self, query: str, candidates: Sequence[Tool], calls: Sequence[CallSoFar], examples: Sequence[Example] = ()
    ) -> RerankResult:
        """After ``calls`` (this request's calls so far): the next tool among ``candidates``, or ``choice`` None when
        the request is done; ``examples``: verified multi-step examples closest to the request. Without a model to
        ask, one call is all a request gets."""
        return RerankResult(scores=[], choice=None)


R = TypeVar("R", bound=type[Reranker])
RERANKERS: dict[str, type[Reranker]] = {}


def register_reranker(name: str) -> Callable[[R], R]:
    def deco(cls: R) -> R:
        cls.name = name
        RERANKERS[name] = cls
        return cls

    return deco


def reranker_class(name: str) -> type[Reranker]:
    """The class registered as ``name`` (KeyError naming the known ones). The package imports every backend, so
    all are registered once ``nexus_agent.routing.rerank`` is imported."""
    if name not in RERANKERS:
        raise KeyError(f"unknown reranker {name!r} (known: {', '.join(sorted(RERANKERS))})")
    return RERANKERS[name]


def create_reranker(name: str, **kwargs: object) -> Reranker:
    make: Callable[..., Reranker] = reranker_class(name)
    return make(**kwargs)


def history_text(history: Sequence[dict[str, str]], max_messages: int = 2, max_chars: int = 300) -> str:
    """The last ``max_messages`` messages, each cut to ``max_chars``: enough for coreference ("open a PR there")."""
    lines = []
    for turn in list(history)[-max_messages:]:
        content = " ".join(str(turn.get("content", "")).split())[:max_chars]
        lines.append(f"{turn.get('role', 'user')}: {content}")
    return "\n".join(lines)
