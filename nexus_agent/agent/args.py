"""Argument generation: JSON arguments written over the compressed signature, constrained by a GBNF
grammar compiled from the tool's JSON Schema, then validated against the schema with one repair attempt.

The model never sees the full schema: it reads the signature (``create_repository(name: string, …)``),
while the grammar, compiled from the full schema, makes invalid JSON and unknown keys impossible to emit.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import jsonschema
from llama_cpp.llama_grammar import json_schema_to_gbnf

from nexus_agent.agent import forms
from nexus_agent.agent.prompts import SYSTEM_MAIN, arg_request
from nexus_agent.backend import Backend, JsonConstraint, LocalBackend
from nexus_agent.engine import MAIN, Engine, Generation
from nexus_agent.registry import Tool
from nexus_agent.signature import SignatureOptions, signature, words

# Parameter descriptions stay, except those that only restate the name ("owner /*Repository owner*/"); the tool's
# own description is left out, since routing has already chosen the tool (docs/measurements.md#argument-signature).
ARG_SIGNATURE = SignatureOptions(max_enum=8, max_nested_keys=4, desc_chars=48, skip_restating_desc=True)


# Keywords llama.cpp's schema converter does not need and that some servers put in odd places. Without
# "description", a schema that is only a description (projects_write's "any JSON value") becomes ``{}``, which
# the converter reads as any value instead of rejecting the whole tool.
_DROP_KEYS = (
    "$schema",
    "$id",
    "title",
    "description",
    "examples",
    "default",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
)

# Any JSON object: the fallback grammar when a schema uses a construct the converter rejects; the schema
# validation step still catches what the grammar let through.
_ANY_OBJECT = json_schema_to_gbnf(json.dumps({"type": "object"}))


class ArgumentError(ValueError):
    """The model could not produce schema-valid arguments, even after one repair attempt."""


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


# Length bounds are expanded by the converter into one nested optional group per character; a
# ``maxLength: 20000`` (Stripe's dispute evidence) makes a grammar that overflows llama.cpp's recursive
# parser and crashes the process. Bounds above these are dropped; validation still enforces them.
_MAX_LENGTH_BOUND = 256
_MAX_ITEMS_BOUND = 64
_MAX_GRAMMAR_CHARS = 200_000


# Keywords whose value maps *names* to schemas: those names are data (a parameter may well be called "title" or
# "default"), so they are kept and only the schemas under them are stripped.
_NAMED_SCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _strip(schema: Any) -> Any:
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {
            k: ({n: _strip(s) for n, s in v.items()} if k in _NAMED_SCHEMAS and isinstance(v, Mapping) else _strip(v))
            for k, v in schema.items()
            if k not in _DROP_KEYS
        }
        for key, bound in (
            ("maxLength", _MAX_LENGTH_BOUND),
            ("minLength", _MAX_LENGTH_BOUND),
            ("maxItems", _MAX_ITEMS_BOUND),
            ("minItems", _MAX_ITEMS_BOUND),
        ):
            if isinstance(out.get(key), int) and out[key] > bound:
                del out[key]
        return out
    if isinstance(schema, list):
        return [_strip(x) for x in schema]
    return schema


def grammar_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema the grammar is compiled from: top-level unknown keys are closed off, because BFCL-style
    checking counts an unknown parameter as an error and the model has no reason to add one."""
    s = copy.deepcopy(dict(_strip(schema)))
    s.setdefault("type", "object")
    if s.get("type") == "object" and "additionalProperties" not in s:
        s["additionalProperties"] = False
    s.setdefault("properties", {})
    return s


def _mentioned(name_words: set[str], text_words: set[str]) -> bool:
    # prefix match, so "close" grounds "closed" and "label" grounds "labels"
    return any(
        w == t or (len(w) >= 4 and len(t) >= 4 and (w.startswith(t) or t.startswith(w)))
        for w in name_words
        for t in text_words
    )


def _nested_words(prop: Mapping[str, Any]) -> set[str]:
    keys = (prop.get("properties") or {}) | ((prop.get("items") or {}).get("properties") or {})
    return set().union(*(words(k) for k in keys)) if keys else set()


def _named(name: str, prop: Mapping[str, Any], text_words: set[str]) -> bool:
    """Whether the conversation names the parameter (its own words or those of its nested keys)."""
    return _mentioned(words(name) | _nested_words(prop), text_words)


def _prop_rank(prop: Mapping[str, Any], mentioned: bool) -> int | None:
    """Order of optional parameters in the argument view (higher first), or None to leave it out.

    The grammar fixes key order and the model tends to fill whatever the signature lists, so parameters the
    conversation names come first, plain scalars next; list and object parameters that nothing in the
    conversation names (``fields``, ``field_filters``) are left out, because a small model fills them with
    inventions rather than leave them empty."""
    t = prop.get("type")
    if t in ("array", "object") and not mentioned:
        return None
    rank = 2 if mentioned else 0
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


@lru_cache(maxsize=1024)
def _grammar_for(schema_json: str) -> str:
    try:
        g = json_schema_to_gbnf(json.dumps(grammar_schema(json.loads(schema_json))))
    except Exception:  # any converter failure falls back to "some JSON object"
        return _ANY_OBJECT
    return g if len(g) <= _MAX_GRAMMAR_CHARS else _ANY_OBJECT


def grammar_for(tool: Tool) -> str:
    """GBNF for ``tool``'s arguments, keys in the schema's property order (cached by schema)."""
    return _grammar_for(json.dumps(tool.input_schema))


def constraint_for(tool: Tool) -> JsonConstraint:
    """``tool``'s arguments as a backend constrains them: the grammar, and the schema it was compiled from (None
    where the grammar fell back to any JSON object, so a server's structured output falls back alike)."""
    gbnf = grammar_for(tool)
    return JsonConstraint(gbnf, None if gbnf == _ANY_OBJECT else grammar_schema(tool.input_schema))


def _grounded(
    value: Any, prop: Mapping[str, Any], name: str, text: str, text_words: set[str], today: dt.date | None = None
) -> bool:
    """Whether a value is supported by the conversation rather than invented: spelled as it is, or stated in
    another form (a date, a number in words, another unit, a paraphrased enum value: ``agent/forms/``), relative
    dates read from ``today``."""
    if isinstance(value, list):
        items = prop.get("items") or {}
        return bool(value) and all(_grounded(v, items, name, text, text_words, today) for v in value)
    if isinstance(value, dict):
        return bool(value) and any(_grounded(v, {}, k, text, text_words, today) for k, v in value.items())
    return _spelled(value, name, text, text_words) or forms.stated(
        value, prop, name, forms.Context(text, today or dt.date.today())
    )


def _spelled(value: Any, name: str, text: str, text_words: set[str]) -> bool:
    """Whether the conversation spells the scalar ``value`` as it is (a flag: names it; ``false`` always holds)."""
    if isinstance(value, bool):
        return value is False or _mentioned(words(name), text_words)
    if isinstance(value, int | float):
        return bool(re.search(rf"(?<![\w.]){re.escape(str(value))}(?![\w])", text)) or (
            float(value).is_integer() and bool(re.search(rf"(?<![\w.]){int(value)}(?![\w])", text))
        )
    if isinstance(value, str):
        vw = words(value)
        if value and value.lower() in text.lower():
            return True
        return bool(vw) and sum(1 for w in vw if _mentioned({w}, text_words)) / len(vw) >= 0.5
    return False


def _is_option(prop: Mapping[str, Any]) -> bool:
    """An enum or a flag: a choice of how to do something, which only the user makes."""
    return "enum" in prop or prop.get("type") == "boolean"


def drop_ungrounded(
    tool: Tool, args: dict[str, Any], context: str, user_context: str | None = None, today: dt.date | None = None
) -> dict[str, Any]:
    """Remove optional arguments the conversation does not support: placeholders such as ``your_username``,
    default-looking ``page: 1``, unrequested ``fields`` lists. Required arguments always stay.

    ``user_context`` (the user's own messages) grounds options (enums, flags): earlier tool output is full of
    words such as ``created_at`` that would otherwise ground ``orderBy: CREATED_AT`` nobody asked for."""
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    anyone = (context, words(context))
    user = anyone if user_context is None else (user_context, words(user_context))

    def supported(name: str, value: Any) -> bool:
        prop = props.get(name) or {}
        text, text_words = user if _is_option(prop) else anyone
        return _grounded(value, prop, name, text, text_words, today)

    kept = {k: v for k, v in args.items() if k in required or supported(k, v)}
    return kept if validate(tool, kept) is None else args


# A parameter that names which existing object to act on: issue_number, pullNumber, comment_id, page_id, threadID …
_IDENTIFIER = re.compile(r"(?:^|_)(?:number|id)$|[a-z0-9](?:Number|Id|ID)$")


def _kind_words(name: str, prop: Mapping[str, Any]) -> set[str]:
    """What an identifier parameter points at, as words: ``pullNumber`` → pull, pr; ``sub_issue_id`` → sub, issue.
    A description that says "issue or pull request number" adds the pull-request words."""
    kind = words(name) - {"number", "id", "ids"}
    if "pull" in kind or "pull request" in str(prop.get("description", "")).lower():
        kind |= {"pull", "pr", "prs"}
    return kind


def ungrounded_identifiers(
    tool: Tool, args: Mapping[str, Any], request: str, history: Sequence[Mapping[str, str]] = ()
) -> dict[str, Any]:
    """Required identifier arguments (``issue_number``, ``pullNumber``, ``page_id`` …) the conversation does not
    give, so the model made them up: name → value. The grammar makes the model write every required value, and with
    none given it writes one (docs/measurements.md#made-up-identifiers).

    Given means: in the request itself, or in an earlier message (the user's words or a tool's output) that also
    names the identifier's kind or writes it as ``#N``. "close issue 1" earlier does not give a pull request 1;
    it does give the issue that "reopen it" means."""
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])

    def given(name: str, value: Any, prop: Mapping[str, Any]) -> bool:
        if _grounded(value, prop, name, request, words(request)):
            return True
        kind = _kind_words(name, prop)
        for m in history:
            text = m.get("content", "")
            tw = words(text)
            as_ref = re.search(rf"#{re.escape(str(value))}(?!\w)", text)  # "#12" is no "#1"
            if _grounded(value, prop, name, text, tw) and (not kind or kind & tw or as_ref):
                return True
        return False

    return {
        k: v
        for k, v in args.items()
        if k in required
        and _IDENTIFIER.search(k)
        and not isinstance(v, bool)
        and isinstance(v, int | float | str)
        and not given(k, v, props.get(k) or {})
    }


def gives_a_required_value(tool: Tool, args: Mapping[str, Any], request: str, history: list[dict[str, str]]) -> bool:
    """Whether the conversation gives the value of at least one required argument the model wrote (True when
    it wrote none: a tool that needs no object, such as ``mark_all_notifications_read``, is about none). A question
    routed to a write that gives none is about no object in particular ("what's the difference between a fork and
    a clone?" → ``fork_repository {"owner": "example", "repo": "example"}``)."""
    props = tool.input_schema.get("properties") or {}
    names = set(tool.input_schema.get("required") or [])
    required = [(k, v) for k, v in args.items() if k in names]
    if not required:
        return True
    text = conversation_text(request, history)
    tw = words(text)
    return any(_grounded(v, props.get(k) or {}, k, text, tw) for k, v in required)


def validate(tool: Tool, args: Any) -> str | None:
    """None when ``args`` validate against the tool's schema, else a one-line reason naming the field."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    try:
        cls = jsonschema.validators.validator_for(tool.input_schema, default=jsonschema.Draft202012Validator)
        err = jsonschema.exceptions.best_match(cls(dict(tool.input_schema)).iter_errors(args))
    except jsonschema.exceptions.SchemaError as e:
        return f"the tool's own schema is invalid: {e.message}"
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "<root>"
    return f"{where}: {err.message}"


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
    tool: Tool, request: str, history: list[dict[str, str]], today: dt.date | None = None
) -> list[dict[str, str]]:
    """Chat messages for argument writing: the shared system prompt, the (pruned) history, then the request
    with the tool's signature and the rules. Only the last message differs from the answer prompt. A tool with a
    date parameter is told today's date (with ``today``), so "next Tuesday" can be written as a date."""
    sig = signature(tool, ARG_SIGNATURE)
    date_note = today is not None and takes_a_date(tool)
    return [
        {"role": "system", "content": SYSTEM_MAIN},
        *history,
        {"role": "user", "content": arg_request(request, sig, today if date_note else None)},
    ]


def conversation_text(request: str, history: list[dict[str, str]], user_only: bool = False) -> str:
    """The words argument writing may draw on: every earlier message (or only the user's), then the request."""
    return "\n".join([*(m["content"] for m in history if not user_only or m["role"] == "user"), request])


def arg_prompt(
    tool: Tool, request: str, history: list[dict[str, str]], today: dt.date | None = None
) -> tuple[Tool, list[dict[str, str]]]:
    """What argument writing prefills: the view of ``tool`` for this conversation (:func:`arg_view`, whose
    schema the grammar follows) and the chat messages over its signature."""
    view = arg_view(tool, conversation_text(request, history))
    return view, arg_messages(view, request, history, today)


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
        self, tool: Tool, request: str, history: list[dict[str, str]] | None = None, today: dt.date | None = None
    ) -> ArgResult:
        """Arguments for ``tool``; ``today`` (default: the date now) is what relative dates are read from."""
        history = history or []
        today = today or dt.date.today()
        view, msgs = arg_prompt(tool, request, history, today)
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
