"""The generation backend interface: what a turn needs of whatever generates its text.

A turn asks for two things: a reply to a chat (the answer, streamed), and a JSON reply of a given shape (a tool's
arguments). Routing asks its own questions (a choice among names, the log-odds of two answers) through the backend's
:class:`~nexus_agent.backend.decision.Decider`. Lanes name the conversation a call belongs to; the local engine keeps
each lane's KV warm, a remote server ignores them (its own prefix cache finds the shared prefix).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from nexus_agent.backend.decision import Decider, Messages
from nexus_agent.engine import Generation
from nexus_agent.kv.segments import Part
from nexus_agent.splice.mode import SpliceMode

TokenCallback = Callable[[str], None]


@dataclass(frozen=True)
class JsonConstraint:
    """The shape a reply must have, in the two forms backends take: ``gbnf``, the llama.cpp grammar compiled from the
    schema (the local sampler applies it; so can a llama.cpp server), and ``schema``, the JSON Schema it was compiled
    from, for a server's structured output (None: any JSON object)."""

    gbnf: str
    schema: Mapping[str, Any] | None


class Backend(Protocol):
    """Generates chat replies. ``local``: it owns a local KV cache (compiled-block splicing, the radix arena and
    eviction work on it); ``label`` says which backend in notices and errors."""

    local: bool
    label: str

    def turn(self) -> AbstractContextManager[object]:
        """Held for a whole turn. The local engine serialises turns on it; a remote server needs no lock."""
        ...

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        lane: int,
        max_tokens: int,
        json: JsonConstraint | None = None,
        repeat_penalty: float = 1.0,
        on_token: TokenCallback | None = None,
        keep: bool = True,
    ) -> Generation:
        """Greedy reply to ``messages`` (chat-templated with the assistant prompt). ``json``: the reply is JSON of
        that shape, as far as the backend can enforce it (callers validate). ``keep=False``: the reply is not part of
        the conversation (the local lane rolls back to the prompt). Remote failures raise ``RemoteError``."""
        ...

    def mark(self, lane: int, messages: list[dict[str, str]], parts: list[list[Part]]) -> None:
        """What each of ``messages`` (a conversation's head: system prompt and trace) is made of, for the chats in
        ``lane`` that start with them: the segments a KV budget's memory manager reads (nothing on a server)."""
        ...

    def warm(self, variants: Sequence[Messages], lane: int) -> int:
        """Hold in ``lane`` the head every chat of ``variants`` starts with (a system prompt), so the first request
        does not decode it; returns its length in tokens (0 on a server, whose prefix cache does this)."""
        ...

    def prefill(self, variants: Sequence[Messages], lane: int, stop: Callable[[], bool]) -> int:
        """Decode into ``lane`` the head every chat of ``variants`` starts with (a conversation so far, which the
        next turn's prompts repeat), a chunk at a time until done or ``stop()``; never stored on disk. Returns the
        head's tokens the lane holds (0 on a server, whose prefix cache does this on the next request)."""
        ...

    def decider(self, splice: SpliceMode = SpliceMode.OFF) -> Decider:
        """Routing's questions on this backend; ``splice``: compiled tool blocks for a choice's stable lines (a local
        KV cache only: a server ignores it)."""
        ...
