"""What each cell of a conversation lane holds: the trace's structure, as the memory manager reads it.

A :class:`Part` is a piece of a chat message's text with its kind (the agent knows it: the system head, a user
request, a call's arguments, a tool result, an answer, a recalled note) and, inside a result, the character ranges
of the identifiers and values it returned (the pins). The backend renders the messages, tokenises them and maps
each part to the token range it became: a :class:`Segment`. The engine and :mod:`nexus_agent.kv.memory` work on
segments only: token ranges of one lane, in order.

Kinds and what the manager does with them:

=========  ================================================================================================
kind       eviction
=========  ================================================================================================
head       pinned (the system prompt)
request    pinned (every user request)
call       pinned (a call's name and arguments)
frame      pinned (chat-template tokens between parts: role headers, ends of messages)
result     a tool's output: its pins stay, the rest is scored once when its turn completes
answer     scored once when its turn completes, like a result's unpinned text
note       a recalled note (re-inserted text of an evicted span): scored like an answer
prompt     the transient tail of the current prompt (an argument request, a question): never scored; it
           is replaced by the next turn's trace
=========  ================================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class SegKind(StrEnum):
    HEAD = "head"
    REQUEST = "request"
    CALL = "call"
    FRAME = "frame"
    RESULT = "result"
    ANSWER = "answer"
    NOTE = "note"
    PROMPT = "prompt"

    @property
    def pinned(self) -> bool:
        """The whole segment is a pin."""
        return self in _PINNED

    @property
    def scored(self) -> bool:
        """Its unpinned cells are scored once, when the segment's turn completes."""
        return self in _SCORED


_PINNED = frozenset({SegKind.HEAD, SegKind.REQUEST, SegKind.CALL, SegKind.FRAME})
_SCORED = frozenset({SegKind.RESULT, SegKind.ANSWER, SegKind.NOTE})


@dataclass(frozen=True)
class Part:
    """A piece of one message's text. ``turn``: 0 for the system head, 1.. for the conversation's turns (-1: the
    current prompt's transient tail). ``span``: the id under which the runtime keeps this text (what recall
    retrieves and re-inserts); empty for text nobody recalls. ``pins``: ``[start, end)`` character ranges of
    ``text`` that stay in memory (a result's identifiers and values)."""

    kind: SegKind
    text: str
    turn: int
    span: str = ""
    pins: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        for a, b in self.pins:
            if not 0 <= a < b <= len(self.text):
                raise ValueError(f"pin [{a}, {b}) is outside the part's {len(self.text)} characters")


@dataclass(frozen=True)
class Segment:
    """Tokens ``[start, end)`` of a lane, of one part. ``pins``: ``[a, b)`` token ranges (lane token indices,
    inside ``[start, end)``) that stay."""

    kind: SegKind
    turn: int
    start: int
    end: int
    span: str = ""
    pins: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"segment [{self.start}, {self.end}) is not a token range")
        for a, b in self.pins:
            if not self.start <= a < b <= self.end:
                raise ValueError(f"pin [{a}, {b}) is outside its segment [{self.start}, {self.end})")

    @property
    def n(self) -> int:
        return self.end - self.start


@dataclass
class SegmentMap:
    """The segments of one lane's tokens, in order and without gaps from token 0 to :attr:`end`. Tokens past
    :attr:`end` (a generation, a prompt with no parts) are of no known kind: the manager treats them as ``prompt``."""

    segments: list[Segment] = field(default_factory=list)

    def __post_init__(self) -> None:
        at = 0
        for s in self.segments:
            if s.start != at:
                raise ValueError(f"segments must tile the tokens in order: one starts at {s.start}, expected {at}")
            at = s.end

    @property
    def end(self) -> int:
        return self.segments[-1].end if self.segments else 0

    def turns(self) -> list[int]:
        """The conversation turns (≥ 1) the map holds, in order."""
        return sorted({s.turn for s in self.segments if s.turn >= 1})

    def turn_end(self, turn: int) -> int | None:
        """The token index where ``turn`` ends, when a later segment shows it complete (None otherwise)."""
        last = None
        for s in self.segments:
            if s.turn == turn:
                last = s.end
            elif last is not None and (s.turn > turn or s.turn < 0):
                return last
        return None

    def of_turn(self, turn: int) -> list[Segment]:
        return [s for s in self.segments if s.turn == turn]

    def truncated(self, n: int) -> SegmentMap:
        """The map of the first ``n`` tokens (a segment cut at ``n`` keeps its pins inside it)."""
        out: list[Segment] = []
        for s in self.segments:
            if s.start >= n:
                break
            if s.end <= n:
                out.append(s)
            else:
                pins = tuple((a, min(b, n)) for a, b in s.pins if a < n)
                out.append(Segment(s.kind, s.turn, s.start, n, s.span, pins))
        return SegmentMap(out)
