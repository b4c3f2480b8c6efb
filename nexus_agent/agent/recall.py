"""Recall: a bounded memory answering about what it evicted (KV budget, issue 55).

The runtime keeps the text of every span of the trace (each call's output, each answer) in the history. When a
request comes, its nearest spans are retrieved with the routing index code (:class:`~nexus_agent.routing.index.
EmbeddingCache` over the agent's embedder, vectors in an :class:`~nexus_agent.routing.slb.SLB` keyed by span id,
each span one row per piece of its text, the call it came from in front). When one of the best matches above the
similarity floor has been evicted from the lane's KV (half its tokens or more, as the engine's memory manager
reports), its text comes back before the turn as a *recalled note*: a bounded prefill at the end of the context
(the compact view of the output for this request, agent/view.py; at most ``max_chars`` characters in all).

A span whose stored text no longer matches what was recorded (its digest or length), or is empty, is skipped with
a log line: the turn goes on and nothing else changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from nexus_agent.agent.history import Conversation
from nexus_agent.agent.prompts import call_note
from nexus_agent.agent.view import answer_view
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.index import EmbeddingCache
from nexus_agent.routing.slb import SLB

log = logging.getLogger(__name__)

FLOOR = 0.35  # cosine a span must reach to be recalled (tuned on the tune traces: docs/measurements.md#kv-eviction)
EVICTED = 0.5  # share of a span's tokens gone for it to count as evicted
TOP = 2  # best matches looked at per request
MAX_CHARS = 700  # the note's bound (about 200 tokens)
ROW_CHARS = 360  # characters of a span's text per index row
HEADER = "(Recalled from earlier in this conversation; it had left memory:)"


@dataclass(frozen=True)
class Span:
    """One span of the history: ``id`` as the trace names it (``<turn>.<call>``, ``<turn>.a``), the call it came
    from (empty for an answer), its text, and the digest and length recorded when it was indexed."""

    id: str
    turn: int
    call: str
    text: str
    digest: str
    length: int

    def intact(self) -> bool:
        return bool(self.text) and len(self.text) == self.length and _digest(self.text) == self.digest


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def history_spans(convo: Conversation) -> Iterator[tuple[str, int, str, str]]:
    """(span id, turn, call, text) for every output and answer of ``convo``, as ``Conversation.trace_parts`` names
    them."""
    for t, turn in enumerate(convo.turns, 1):
        for k, c in enumerate(turn.calls(), 1):
            out = c.output or c.result
            if out:
                yield f"{t}.{k}", t, call_note(c.tool.split("__", 1)[-1], c.arguments), out
        if turn.answer:
            yield f"{t}.a", t, "", turn.answer


@dataclass
class Recalled:
    """What one request recalled: the note (empty: nothing), the spans in it, the spans skipped as corrupt."""

    note: str = ""
    spans: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class SpanIndex:
    """The history's spans, embedded (the routing index code: an embedding memo and an SLB keyed by span id)."""

    def __init__(self, embedder: Embedder) -> None:
        self.cache = EmbeddingCache(embedder)
        self.slb = SLB(dim=embedder.dim)
        self.spans: dict[str, Span] = {}

    def sync(self, convo: Conversation) -> None:
        """Index the spans of ``convo`` not indexed yet."""
        for sid, turn, call, text in history_spans(convo):
            if sid in self.spans:
                continue
            self.spans[sid] = Span(sid, turn, call, text, _digest(text), len(text))
            rows = [f"{call} {text[i : i + ROW_CHARS]}".strip() for i in range(0, len(text), ROW_CHARS)]
            self.slb.add(sid, self.cache.documents(rows))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if not self.spans:
            return []
        keys, scores = self.slb.topk(self.cache.queries([query])[0], min(k, len(self.spans)))
        return [(key, float(s)) for key, s in zip(keys, scores, strict=True)]


class Recall:
    """Retrieves evicted spans for a request (module docstring). ``evicted()``: per span id, the share of its
    tokens the lane no longer holds (the engine's memory manager). ``index``: a span index to share (the spans of
    one history, read by several lanes)."""

    def __init__(
        self,
        embedder: Embedder,
        evicted: Callable[[], Mapping[str, float]],
        floor: float = FLOOR,
        top: int = TOP,
        max_chars: int = MAX_CHARS,
        index: SpanIndex | None = None,
    ) -> None:
        self.index = index or SpanIndex(embedder)
        self.evicted = evicted
        self.floor = floor
        self.top = top
        self.max_chars = max_chars
        self.fired = 0  # requests that recalled something
        self.asked = 0

    def __call__(self, request: str, convo: Conversation) -> Recalled:
        self.asked += 1
        self.index.sync(convo)
        hits = [(sid, s) for sid, s in self.index.search(request, self.top) if s >= self.floor]
        if not hits:
            return Recalled()
        gone = self.evicted()
        out = Recalled()
        pieces: list[str] = []
        room = self.max_chars - len(HEADER) - 1
        outputs = {self.index.spans[sid].turn for sid, _ in hits if self.index.spans[sid].call}
        for sid, _ in hits:
            if gone.get(sid, 0.0) < EVICTED:
                continue  # still held: nothing to recall
            if not self.index.spans[sid].call and self.index.spans[sid].turn in outputs:
                continue  # an answer next to its turn's own output says less than the output
            span = self.index.spans[sid]
            if not span.intact():
                log.warning("recall: span %s of the history is corrupt or short; skipped", sid)
                out.skipped.append(sid)
                continue
            piece = self._piece(span, request)[: max(room, 0)]
            if not piece:
                break
            pieces.append(piece)
            out.spans.append(sid)
            room -= len(piece) + 1
        if pieces:
            out.note = "\n".join([HEADER, *pieces])
            self.fired += 1
        return out

    @staticmethod
    def _piece(span: Span, request: str) -> str:
        if not span.call:
            return f"- turn {span.turn}, your answer: {span.text}"
        view = answer_view(span.text, request).text
        return f"- turn {span.turn}, {span.call} returned: {view}"


def note_json(r: Recalled) -> str:
    """The recall as one log line."""
    return json.dumps({"spans": r.spans, "skipped": r.skipped, "chars": len(r.note)})
