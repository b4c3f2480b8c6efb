"""The questions routing puts to a model, as one small protocol beside :class:`~nexus_agent.backend.base.Backend`.

Routing never reaches an engine: the LLM decision asks for a *choice* among names, the relevance judge and the
pointwise reranker for the *log-odds* of two answers. A :class:`Decider` answers both, in-process over the engine's
logits (:class:`~nexus_agent.backend.local.LocalDecider`) or on an OpenAI-compatible server (``RemoteDecider``:
constrained output and first-token log-probabilities). Lanes name the engine sequence a question runs in, so the
decision's and the judge's pinned instructions do not evict each other; a server ignores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Choice:
    """A constrained pick. ``name``: one of the names offered, or None when a server's unconstrained reply named
    none of them. ``scores[i]`` belongs to ``names[i]``: the log-softmax of its first token among the allowed first
    tokens (in-process), or 1 for the pick and 0 for the rest (a server returns no per-name score).
    ``n_prompt_tokens``: the prompt's length (0 where the backend does not tokenise)."""

    name: str | None
    scores: list[float]
    n_prompt_tokens: int = 0


class Decider(Protocol):
    """What routing asks a model (module docstring). ``label`` names the backend in notices."""

    label: str

    def choose(self, messages: Messages, names: Sequence[str], *, lane: int, stable: Sequence[str] = ()) -> Choice:
        """The name the model writes after ``messages``, constrained to ``names``. ``stable``: strings of the
        prompt (each once, in order) whose KV may come from compiled blocks (``--splice``; in-process only)."""
        ...

    def log_odds(self, messages: Messages, yes: Sequence[str], no: Sequence[str], *, lane: int) -> float:
        """Log-odds (nats) that the reply's first token spells one of ``yes`` rather than one of ``no``
        (``logsumexp(yes) - logsumexp(no)`` over the one-token spellings)."""
        ...

    def separable(self, yes: Sequence[str], no: Sequence[str]) -> bool:
        """Whether one first token tells a ``yes`` spelling from a ``no`` one (a vocabulary that splits the
        answers cannot be scored by :meth:`log_odds`)."""
        ...

    def head(self, variants: Sequence[Messages]) -> int:
        """How many prompt tokens every chat in ``variants`` starts with (the stable head the engine keeps warm);
        0 where the backend does not tokenise."""
        ...

    def warm(self, variants: Sequence[Messages], *, lane: int) -> int:
        """Hold that head in ``lane`` now (in-process: from disk when a process decoded it before, so no request
        pays for it); returns its length in tokens (0 where the backend does not tokenise)."""
        ...

    def settle(self) -> None:
        """Work that may wait until a turn's answer is out (compiling the tool blocks a decision found missing)."""
        ...
