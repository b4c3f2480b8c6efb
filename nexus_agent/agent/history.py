"""The conversation and its pruned window.

Bulky tool output is replaced by a short *surrogate* as soon as it arrives, so neither the main context nor
the sidecar window grows with payload size. The window keeps the most recent turns verbatim.

Under a KV budget (``--kv-budget``) the conversation's lane holds the whole *trace* instead: every turn with each
call's whole output (cut at ``MAX_TOOL_CHARS``), kept here as text, told to the backend part by part
(:meth:`Conversation.trace_parts`: the request, the call, the result and its pinned identifiers, the answer, a
recalled note) so that the engine's memory manager knows what each cell holds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from nexus_agent.agent.pins import pins
from nexus_agent.agent.prompts import call_note
from nexus_agent.agent.view import MAX_TOOL_CHARS
from nexus_agent.kv.segments import Part, SegKind
from nexus_agent.routing.followup import PreviousTurn

SURROGATE_CHARS = 400
# Fields that identify things users refer back to ("that issue", "there"): kept in surrogates.
_KEY_FIELDS = (
    "owner",
    "repo",
    "full_name",
    "name",
    "login",
    "number",
    "title",
    "state",
    "path",
    "sha",
    "ref",
    "branch",
    "html_url",
    "url",
    "id",
    "message",
    "status",
    "merged",
)


def _scalar_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: obj[k] for k in _KEY_FIELDS if k in obj and isinstance(obj[k], str | int | float | bool)}
    for k, v in obj.items():
        if len(out) >= 6:
            break
        if k not in out and isinstance(v, str | int | float | bool) and len(str(v)) <= 60:
            out[k] = v
    return out


def surrogate(text: str, limit: int = SURROGATE_CHARS) -> str:
    """A short, deterministic summary of a tool's output (no LLM): identifying fields of JSON objects,
    the count and first items of JSON lists, or the head of plain text, plus the original size."""
    if len(text) <= limit:
        return text
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        data = None
    if isinstance(data, dict):
        # Listing tools wrap their list ({"issues": [...], "totalCount": 3}): summarise the list itself.
        items = next((v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)), None)
        if items is not None:
            data = items
        else:
            s = json.dumps(_scalar_fields(data), ensure_ascii=False)
            return f"{s[:limit]} (object with {len(data)} fields, {len(text)} chars)"
    if isinstance(data, list):
        heads = [
            json.dumps(_scalar_fields(x), ensure_ascii=False) if isinstance(x, dict) else json.dumps(x)
            for x in data[:3]
        ]
        body = "; ".join(heads)[:limit]
        return f"{len(data)} items: {body}" + (" …" if len(data) > 3 else "")
    head = " ".join(text[:limit].split())
    return f"{head} … ({len(text)} chars)"


def carries_nothing(text: str) -> bool:
    """Whether a tool's output is an empty result set: empty text, ``[]``, ``{}``, or a JSON object that holds at
    least one list, every list empty and every other value 0, false, null or ""
    (``{"total_count": 0, "incomplete_results": false, "items": []}``).

    Conservative on purpose: ``{"title": "Fix", "labels": []}`` is an object without labels, ``{"count": 0}`` and a
    bare ``0`` are answers, and a plain-text "No issues found" is left to the answer as data."""
    if not text.strip():
        return True
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return False
    if isinstance(data, list):
        return not data
    if not isinstance(data, dict):
        return False  # a bare 0, false or null is an answer
    if not data:
        return True
    lists = 0

    def empty(v: Any) -> bool:
        nonlocal lists
        if isinstance(v, dict):
            return all(empty(x) for x in v.values())
        if isinstance(v, list):
            lists += 1
            return not v
        return not v  # 0, 0.0, False, None, ""

    return empty(data) and lists > 0


# a plain-text output that says, and only says, that a search found nothing (the filesystem server's search_files:
# "No matches found")
_NONE_FOUND = re.compile(
    r"(?:no (?:\w+ ){0,2}(?:found|matches(?: found)?|results?(?: found)?)|nothing (?:found|matches)|"
    r"0 (?:matches|results))[.!]?",
    re.IGNORECASE,
)


def finds_nothing(text: str) -> bool:
    """Whether a read found nothing: :func:`carries_nothing`, or a one-line plain-text output that says so
    (:data:`_NONE_FOUND`). What a lookup and the written answer go by; the answer's templates keep
    :func:`carries_nothing`, which leaves such a line to the answer as data."""
    return carries_nothing(text) or bool(_NONE_FOUND.fullmatch(text.strip()))


@dataclass(frozen=True)
class Call:
    """A call of a turn before its last one (the agent loop): the qualified tool name, the arguments, the output's
    surrogate, and the output itself (cut at ``MAX_TOOL_CHARS``; what the trace holds under a KV budget)."""

    tool: str
    arguments: dict[str, Any]
    result: str
    output: str = ""


def kept_output(text: str) -> str:
    """What the trace keeps of a tool's output."""
    return text if len(text) <= MAX_TOOL_CHARS else text[:MAX_TOOL_CHARS] + " …(truncated)"


@dataclass
class Turn:
    """One user request and what happened. ``tool``, ``arguments`` and ``tool_result`` are its last call (the only
    one outside the agent loop); ``earlier`` the calls before it, in order. Results hold surrogates (the window
    reads them); ``tool_output`` the last call's output (the trace reads it). ``recalled``: a note of evicted text
    re-inserted before this turn (KV budget)."""

    user: str
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    tool_result: str | None = None
    answer: str = ""
    earlier: list[Call] = field(default_factory=list)
    tool_output: str = ""
    recalled: str = ""

    def calls(self) -> list[Call]:
        """Every call of the turn, in order."""
        last = [Call(self.tool, self.arguments or {}, self.tool_result or "", self.tool_output)] if self.tool else []
        return [*self.earlier, *last]


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)

    def window(self, max_turns: int = 4, max_chars: int | None = 3000) -> list[dict[str, str]]:
        """Chat messages of the last ``max_turns`` turns, newest kept first when over ``max_chars`` (None: no cap)."""
        msgs: list[list[dict[str, str]]] = []
        used = 0
        for t in reversed(self.turns[-max_turns:]):
            block = [{"role": "user", "content": t.user}]
            reply = t.answer
            notes = []
            for c in t.calls():
                note = call_note(c.tool.split("__", 1)[-1], c.arguments)
                notes.append(note + (f" → {c.result}" if c.result else ""))
            if notes:
                reply = "\n".join([*notes, reply]).strip()
            block.append({"role": "assistant", "content": reply or "(no answer)"})
            size = sum(len(m["content"]) for m in block)
            if msgs and max_chars is not None and used + size > max_chars:
                break
            used += size
            msgs.append(block)
        return [m for block in reversed(msgs) for m in block]

    def trace(self) -> list[dict[str, str]]:
        """Every turn, uncapped, with each call's output: the prompt history of a conversation whose lane has a KV
        budget (the engine evicts from its cache instead of the prompt dropping turns)."""
        return self.trace_parts("")[0][1:]

    def trace_parts(self, system: str) -> tuple[list[dict[str, str]], list[list[Part]]]:
        """The system message and every turn (:meth:`trace`), and what each message is made of: the system head;
        a recalled note; the request; each call (its name and arguments, pinned), its output (pinned where it
        returned identifiers and values, agent/pins.py) and the answer. Span ids: ``<turn>.<call>`` for outputs,
        ``<turn>.a`` for answers, ``<turn>.n`` for notes (turns count from 1)."""
        msgs: list[dict[str, str]] = [{"role": "system", "content": system}]
        parts: list[list[Part]] = [[Part(SegKind.HEAD, system, 0)]]
        for t, turn in enumerate(self.turns, 1):
            if turn.recalled:
                msgs.append({"role": "user", "content": turn.recalled})
                parts.append([Part(SegKind.NOTE, turn.recalled, t, f"{t}.n")])
            msgs.append({"role": "user", "content": turn.user})
            parts.append([Part(SegKind.REQUEST, turn.user, t)])
            reply: list[Part] = []
            for k, c in enumerate(turn.calls(), 1):
                lead = "\n" if reply else ""
                reply.append(Part(SegKind.CALL, lead + call_note(c.tool.split("__", 1)[-1], c.arguments) + " → ", t))
                out = c.output or c.result
                if out:
                    reply.append(Part(SegKind.RESULT, out, t, f"{t}.{k}", pins(out)))
            answer = turn.answer or ("" if reply else "(no answer)")
            if answer:
                reply.append(Part(SegKind.ANSWER, ("\n" if reply else "") + answer, t, f"{t}.a"))
            msgs.append({"role": "assistant", "content": "".join(p.text for p in reply)})
            parts.append(reply)
        return msgs, parts

    def previous_tool_turn(self, max_turns: int = 4) -> PreviousTurn | None:
        """The newest of the last ``max_turns`` turns that called a tool (small talk after it is skipped), as
        routing reads a follow-up of it; None when the window holds no tool turn."""
        for t in reversed(self.turns[-max_turns:]):
            if t.tool:
                return PreviousTurn(request=t.user, tool=t.tool)
        return None
