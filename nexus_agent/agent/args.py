"""Argument generation: JSON arguments written over the compressed signature, constrained by a GBNF
grammar compiled from the tool's JSON Schema, then validated against the schema with one repair attempt
(the grammar and the validation: ``agent/schema.py``), and optional values the conversation does not support dropped
(``agent/grounding.py``).

The model never sees the full schema: it reads the signature (``create_repository(name: string, …)``),
while the grammar, compiled from the full schema, makes invalid JSON and unknown keys impossible to emit.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from nexus_agent.agent.forms.dates import names_a_date
from nexus_agent.agent.grounding import conversation_text, drop_ungrounded, mentioned
from nexus_agent.agent.prompts import SYSTEM_MAIN, arg_request
from nexus_agent.agent.schema import constraint_for, validate
from nexus_agent.backend import Backend, JsonConstraint, LocalBackend
from nexus_agent.engine import MAIN, Engine, Generation
from nexus_agent.registry import Tool
from nexus_agent.signature import SignatureOptions, signature, words

# Parameter descriptions stay, except those that only restate the name ("owner /*Repository owner*/"); the tool's
# own description is left out, since routing has already chosen the tool (docs/measurements.md#argument-signature).
ARG_SIGNATURE = SignatureOptions(max_enum=8, max_nested_keys=4, desc_chars=48, skip_restating_desc=True)


@dataclass
class ArgResult:
    """Arguments for one call; times in ms (``ttft_ms`` = to the first argument token of the first try)."""

    tool: str
    arguments: dict[str, Any] | None
    raw: str
    json_valid: bool
    schema_error: str | None
    repaired: bool
    ttft_ms: float
    total_ms: float
    n_prompt_tokens: int


def _nested_words(prop: Mapping[str, Any]) -> set[str]:
    keys = (prop.get("properties") or {}) | ((prop.get("items") or {}).get("properties") or {})
    return set().union(*(words(k) for k in keys)) if keys else set()


def _named(name: str, prop: Mapping[str, Any], text_words: set[str]) -> bool:
    """Whether the conversation names the parameter (its own words or those of its nested keys)."""
    return mentioned(words(name) | _nested_words(prop), text_words)


def _prop_rank(prop: Mapping[str, Any], named: bool) -> int | None:
    """Order of optional parameters in the argument view (higher first), or None to leave it out.

    The grammar fixes key order and the model tends to fill whatever the signature lists, so parameters the
    conversation names come first, plain scalars next; list and object parameters that nothing in the
    conversation names (``fields``, ``field_filters``) are left out, because a small model fills them with
    inventions rather than leave them empty."""
    t = prop.get("type")
    if t in ("array", "object") and not named:
        return None
    rank = 2 if named else 0
    if t in ("string", "integer", "number", "boolean") and "enum" not in prop:
        rank += 1
    return rank


def arg_view(tool: Tool, context: str) -> Tool:
    """``tool`` as argument writing sees it: required parameters, then the optional ones ranked by
    :func:`_prop_rank` for this conversation, described only when the conversation names them. Validation still
    uses the full schema."""
    schema = dict(tool.input_schema)
    props = schema.get("properties") or {}
    required = [k for k in schema.get("required") or [] if k in props]
    tw = words(context)
    optional = [k for k in props if k not in required]
    named = {k for k in optional if _named(k, props[k], tw)}
    ranked = [(r, k) for k in optional if (r := _prop_rank(props[k], k in named)) is not None]
    order = required + [k for _, k in sorted(ranked, key=lambda rk: -rk[0])]
    # A description helps bind a value the conversation supplies; for an optional parameter the conversation never
    # names it only costs prompt tokens (docs/measurements.md#argument-signature). One that says how to write the
    # value (a unit, a format) stays, cut to that clause: "20 dollars" is 2000 for "amount in cents".
    view: dict[str, Any] = {}
    for k in order:
        prop = dict(props[k])
        hint = value_hint(str(prop.get("description", "")))
        if hint is not None:
            prop["description"] = hint
        elif k not in required and k not in named:
            prop.pop("description", None)
        view[k] = prop
    schema["properties"] = view
    return replace(tool, input_schema=schema)


# A description clause that says how a value is written: its unit or its format.
_HOW_TO_WRITE = re.compile(
    r"\b(?:in (?:cents|seconds|minutes|milliseconds|hours|days|meters|metres|kilometers|bytes)|cents|"
    r"smallest currency unit|milliseconds|seconds|minutes|meters|metres|iso ?8601|yyyy|hh:mm|unix|iana|"
    r"timestamp|e\.g\.|for example|format)\b",
    re.I,
)


def value_hint(desc: str, width: int = 48) -> str | None:
    """The clause of ``desc`` that says how a value is written (its unit or format), at most ``width`` characters
    (the signature's description budget), or None when it says neither."""
    m = _HOW_TO_WRITE.search(desc)
    if m is None:
        return None
    if len(desc) <= width:
        return desc
    dot = max(desc.rfind(". ", 0, m.start()), desc.rfind("; ", 0, m.start()))
    start = dot + 2 if dot >= 0 else 0  # the clause's start, when the cue fits the width from there
    if m.end() - start > width:
        start = desc.find(" ", m.start() - width // 2) + 1  # else centred on the cue, from a word start
    cut = desc[start : start + width]
    if start + width < len(desc) and " " in cut[m.end() - start :]:
        cut = cut[: cut.rfind(" ")]  # end on a whole word
    return cut.strip()


_DATE_WORDS = re.compile(r"\b(date|time|iso ?8601|yyyy|since|until|before|after)")


def takes_a_date(tool: Tool) -> bool:
    """Whether a parameter of ``tool`` is a date or time (its ``format``, or its name or description says so)."""
    for name, prop in (tool.input_schema.get("properties") or {}).items():
        fmt = str(prop.get("format", ""))
        text = f"{name} {prop.get('description', '')}".lower()
        if fmt in ("date", "date-time", "time") or _DATE_WORDS.search(text):
            return True
    return False


def arg_messages(
    tool: Tool, request: str, history: list[dict[str, str]], today: dt.date | None = None, note: str | None = None
) -> list[dict[str, str]]:
    """Chat messages for argument writing: the shared system prompt, the (pruned) history, then the request
    with the tool's signature and the rules. Only the last message differs from the answer prompt. A tool with a
    date parameter is told today's date (with ``today``), so "next Tuesday" can be written as a date."""
    sig = signature(tool, ARG_SIGNATURE)
    # only when the user names a date: told today's date unasked, the small models add it as a filter (a
    # `since` of today on "list the open issues"), which the grounding check then drops, seconds of decoding later
    date_note = (
        today is not None and takes_a_date(tool) and names_a_date(conversation_text(request, history, user_only=True))
    )
    return [
        {"role": "system", "content": SYSTEM_MAIN},
        *history,
        {"role": "user", "content": arg_request(request, sig, today if date_note else None, note)},
    ]


def arg_prompt(
    tool: Tool, request: str, history: list[dict[str, str]], today: dt.date | None = None, note: str | None = None
) -> tuple[Tool, list[dict[str, str]]]:
    """What argument writing prefills: the view of ``tool`` for this conversation (:func:`arg_view`, whose
    schema the grammar follows) and the chat messages over its signature."""
    view = arg_view(tool, conversation_text(request, history))
    return view, arg_messages(view, request, history, today, note)


class ArgumentWriter:
    """Writes arguments in the conversation's lane (the signature prompt, never the full schema), on the local
    engine or a remote server (``backend``; an :class:`Engine` is taken as the local backend)."""

    def __init__(self, backend: Backend | Engine, max_tokens: int = 256, lane: int = MAIN) -> None:
        self.backend: Backend = LocalBackend(backend) if isinstance(backend, Engine) else backend
        self.max_tokens = max_tokens
        self.lane = lane  # the conversation's lane: its cached history serves the argument prompt

    def _attempt(self, msgs: list[dict[str, str]], constraint: JsonConstraint) -> Generation:
        # keep=False: the JSON is not part of the conversation; the agent records the call itself.
        return self.backend.chat(msgs, lane=self.lane, json=constraint, max_tokens=self.max_tokens, keep=False)

    def write(
        self,
        tool: Tool,
        request: str,
        history: list[dict[str, str]] | None = None,
        today: dt.date | None = None,
        note: str | None = None,
    ) -> ArgResult:
        """Arguments for ``tool``; ``today`` (default: the date now) is what relative dates are read from; ``note``:
        a line for the request (a later step of the agent loop)."""
        history = history or []
        today = today or dt.date.today()
        view, msgs = arg_prompt(tool, request, history, today, note)
        grammar = constraint_for(view)
        with self.backend.turn():
            gen = self._attempt(msgs, grammar)
            first = gen
            args, err, json_ok = self._check(tool, gen.text)
            repaired = False
            if err is not None:
                repaired = True
                fix = [
                    *msgs,
                    {"role": "assistant", "content": gen.text},
                    {"role": "user", "content": f"That is invalid ({err}). Reply with corrected JSON arguments only."},
                ]
                gen = self._attempt(fix, grammar)
                args, err, json_ok2 = self._check(tool, gen.text)
                json_ok = json_ok and json_ok2
        if args is not None and err is None:
            args = drop_ungrounded(
                tool,
                args,
                conversation_text(request, history),
                conversation_text(request, history, user_only=True),
                today,
            )
        return ArgResult(
            tool.name,
            args if err is None else None,
            gen.text,
            json_ok,
            err,
            repaired,
            first.ttft_ms,
            first.total_ms + (gen.total_ms if repaired else 0.0),
            first.n_prompt,
        )

    @staticmethod
    def _check(tool: Tool, text: str) -> tuple[dict[str, Any] | None, str | None, bool]:
        try:
            args = json.loads(_json_part(text))
        except json.JSONDecodeError as e:
            return None, f"not valid JSON ({e.msg} at char {e.pos})", False
        err = validate(tool, args)
        return (args if err is None else None), err, True


def _json_part(text: str) -> str:
    """The JSON object in a reply: the text itself, or, from a server that enforced no format, the span from the
    first ``{`` to the last ``}`` (past a code fence or a sentence around it). A grammar-constrained reply is the
    object already."""
    s = text.strip()
    if s.startswith("{"):
        return s
    i, j = s.find("{"), s.rfind("}")
    return s[i : j + 1] if 0 <= i < j else s
