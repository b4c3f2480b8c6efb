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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nexus_agent.agent.forms.dates import names_a_date
from nexus_agent.agent.grounding import conversation_text, drop_ungrounded, mentioned
from nexus_agent.agent.prompts import SYSTEM_MAIN, arg_request
from nexus_agent.agent.request import Request
from nexus_agent.agent.schema import constraint_for, validate
from nexus_agent.backend import Backend, JsonConstraint, LocalBackend
from nexus_agent.engine import MAIN, Engine, Generation
from nexus_agent.examples import Usage
from nexus_agent.examples.keys import ArgKeys, keys_view
from nexus_agent.registry import Tool
from nexus_agent.signature import SignatureOptions, signature, words

# Parameter descriptions stay, except those that only restate the name ("owner /*Repository owner*/"); the tool's
# own description is left out, since routing has already chosen the tool (docs/measurements.md#argument-signature).
ARG_SIGNATURE = SignatureOptions(max_enum=8, max_nested_keys=4, desc_chars=48, skip_restating_desc=True)
# what an example exchange asks (the real request asks the same over the tool's signature: prompts.ARG_RULES)
EXAMPLE_ASK = "JSON arguments for: {tool}"


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


def with_operation(tool: Tool, operation: str | None) -> Tool:
    """``tool`` with its operation parameter fixed to ``operation`` (a one-value enum: the grammar can write nothing
    else, and the signature shows it), or as it is when ``operation`` is None or not one of its values."""
    key = tool.operation_param
    if operation is None or key is None or operation not in tool.operations():
        return tool
    schema = dict(tool.input_schema)
    props = dict(schema.get("properties") or {})
    props[key] = {**props[key], "enum": [operation]}
    schema["properties"] = props
    return replace(tool, input_schema=schema)


def _named_in_full(name: str, text_words: set[str]) -> bool:
    """Whether the conversation names every word of the parameter (``labels``; not ``issue_fields`` for "the
    issue")."""
    return all(mentioned({w}, text_words) for w in words(name))


def arg_view(tool: Tool, context: str, keys: ArgKeys | None = None) -> Tool:
    """``tool`` as argument writing sees it: required parameters, then the optional ones ranked by
    :func:`_prop_rank` for this conversation, described only when the conversation names them. Validation still
    uses the full schema. ``keys`` (the closest examples' keys, ``examples/keys.py``): the closest example's keys
    are required too, and the optional parameters are only those the examples set or the conversation names in
    full."""
    schema = dict(tool.input_schema)
    props = schema.get("properties") or {}
    required = [k for k in schema.get("required") or [] if k in props]
    tw = words(context)
    optional = [k for k in props if k not in required]
    if keys is not None:
        required, optional = keys_view(props, required, keys, {k for k in optional if _named_in_full(k, tw)})
        schema["required"] = required
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


def example_turns(tool: Tool, examples: Sequence[Usage]) -> list[dict[str, str]]:
    """The examples as earlier exchanges: each request (in a world of its own), then its arguments as the reply; the
    first asks over the tool's signature (its required and plain parameters, an operation routing chose fixed), the
    others over its name. Their text depends only on the tool and the examples, so with the system prompt before
    them they are a stable head whose KV loads from disk (``HeadStore``)."""
    turns: list[dict[str, str]] = []
    for i, u in enumerate(examples):
        what = signature(arg_view(tool, ""), ARG_SIGNATURE) if i == 0 else tool.name
        ask = EXAMPLE_ASK.format(tool=what)
        turns.append({"role": "user", "content": f"{u.request}\n\n---\n{ask}" if u.request else ask})
        turns.append({"role": "assistant", "content": json.dumps(u.arguments, ensure_ascii=False)})
    return turns


def example_head(tool: Tool, examples: Sequence[Usage]) -> list[list[dict[str, str]]]:
    """The head argument writing starts with for ``tool`` (its operation fixed) and ``examples``, as two chats that
    differ only after it (:meth:`Backend.warm`): the system prompt and the example exchanges."""
    head = [{"role": "system", "content": SYSTEM_MAIN}, *example_turns(tool, examples)]
    return [[*head, {"role": "user", "content": u}] for u in "ab"]


def arg_messages(
    tool: Tool,
    request: str,
    history: list[dict[str, str]],
    today: dt.date | None = None,
    note: str | None = None,
    examples: Sequence[Usage] = (),
) -> list[dict[str, str]]:
    """Chat messages for argument writing: the shared system prompt, the tool's examples as earlier exchanges
    (:func:`example_turns`), the (pruned) history, then the request with the tool's signature and the rules. A tool
    with a date parameter is told today's date (with ``today``), so "next Tuesday" can be written as a date."""
    sig = signature(tool, ARG_SIGNATURE)
    # only when the user names a date: told today's date unasked, the small models add it as a filter (a
    # `since` of today on "list the open issues"), which the grounding check then drops, seconds of decoding later
    date_note = (
        today is not None and takes_a_date(tool) and names_a_date(conversation_text(request, history, user_only=True))
    )
    return [
        {"role": "system", "content": SYSTEM_MAIN},
        *example_turns(tool, examples),
        *history,
        {"role": "user", "content": arg_request(request, sig, today if date_note else None, note)},
    ]


def arg_prompt(
    tool: Tool,
    request: str,
    history: list[dict[str, str]],
    today: dt.date | None = None,
    note: str | None = None,
    examples: Sequence[Usage] = (),
    keys: ArgKeys | None = None,
) -> tuple[Tool, list[dict[str, str]]]:
    """What argument writing prefills: the view of ``tool`` for this conversation (:func:`arg_view`, whose
    schema the grammar follows; ``keys``: the closest examples' keys) and the chat messages over its signature."""
    view = arg_view(tool, conversation_text(request, history), keys)
    return view, arg_messages(view, request, history, today, note, examples)


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
        examples: Sequence[Usage] = (),
        operation: str | None = None,
        results: Sequence[str] = (),
        keys: ArgKeys | None = None,
    ) -> ArgResult:
        """Arguments for ``tool``; ``today`` (default: the date now) is what relative dates are read from; ``note``:
        a line for the request (a later step of the agent loop); ``examples``: shown before the history
        (:func:`example_turns`); ``operation``: the value routing chose for a consolidated tool's operation
        parameter, which the grammar then fixes; ``results``: the outputs of the calls this turn made so far, whose
        values ground an optional argument as the conversation's do (a login ``get_me`` returned); ``keys``: the
        keys the closest examples of the tool set (:func:`arg_view`)."""
        history = history or []
        today = today or dt.date.today()
        tool = with_operation(tool, operation)
        view, msgs = arg_prompt(tool, request, history, today, note, examples, keys)
        grammar = constraint_for(view)
        with self.backend.turn():
            if examples:
                # the system prompt and the examples are the same tokens for every request to this tool: loaded
                # from disk when a process wrote them before, so they cost no prefill (a no-op on a server)
                self.backend.warm(example_head(tool, examples), self.lane)
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
            context = "\n".join([conversation_text(request, history), *results])
            if args is not None and err is None and copied_from_examples(tool, args, examples, context):
                # the model took an example's value (its repository, a number) for the request's: the examples
                # teach the form only, so the arguments are written again without them
                plain = arg_messages(view, request, history, today, note)
                again = self._attempt(plain, grammar)
                args2, err2, _ = self._check(tool, again.text)
                if args2 is not None and err2 is None:
                    gen, args, repaired = again, args2, True
        if args is not None and err is None:
            args = owner_and_repo(tool, args, conversation_text(request, history))
            args = named_owner(tool, args, conversation_text(request, history, user_only=True))
            args = as_quoted(args, Request.of(request).quoted)
            args = drop_ungrounded(
                tool,
                args,
                "\n".join([conversation_text(request, history), *results]),
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


def owner_and_repo(tool: Tool, args: dict[str, Any], context: str = "") -> dict[str, Any]:
    """``args`` with an ``owner`` written as ``owner/repo`` split into its two parameters, for a tool that has
    both: an owner holds no slash, and qwen1.5b wrote ``{"owner": "acme/web", "repo": "web"}`` for "acme/web".
    A ``repo`` of its own beside it is replaced only when ``context`` (the conversation) names ``owner/repo`` as
    written: "acme/docs … on main" was written ``{"owner": "acme/docs", "repo": "main"}``."""
    props = tool.input_schema.get("properties") or {}
    owner = args.get("owner")
    if not ("owner" in props and "repo" in props and isinstance(owner, str) and owner.count("/") == 1):
        return args
    first, second = owner.split("/")
    named = bool(re.search(rf"(?<![\w./-]){re.escape(owner)}(?![\w/-])", context, re.IGNORECASE))
    if not (first and second) or (args.get("repo") not in (None, "", second) and not named):
        return args  # a repository of its own beside it, and the conversation does not say which: not ours to guess
    return {**args, "owner": first, "repo": second}


# an ``owner/repo`` standing alone in text: not part of a path ("src/api/app.py") or a URL
_STANDALONE_REF = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.-]*)/([\w.-]*\w)(?![\w/-])")


def named_owner(tool: Tool, args: dict[str, Any], context: str) -> dict[str, Any]:
    """``args`` with its ``owner`` set to the owner of the one repository ``context`` (the conversation) names by
    that ``repo``'s name, when the pair written (``owner/repo``) is not named there. Measured on the multi-step tune
    tasks (qwen1.5b): "Assign the acme/api issue … to me" read ``get_me`` first, and its lookup searched
    ``{"owner": "octo-dev", "repo": "api"}``, the login in place of the owner the request names, and found nothing.
    Two named repositories of that name (acme/api, other/api), or none: left as written."""
    props = tool.input_schema.get("properties") or {}
    owner, repo = args.get("owner"), args.get("repo")
    if not ("owner" in props and "repo" in props and isinstance(owner, str) and isinstance(repo, str)):
        return args
    named = {(o.lower(), r.lower()): o for o, r in _STANDALONE_REF.findall(context)}
    if (owner.lower(), repo.lower()) in named:
        return args
    owners = {o for (_, r), o in named.items() if r == repo.lower()}
    return {**args, "owner": owners.pop()} if len(owners) == 1 else args


# parameters whose value is a slug by nature: a request's "my feature" is written my-feature there, and rightly
_SLUGS = re.compile(r"branch|ref|path|file|tag|slug|sha|head|base|key|url", re.IGNORECASE)


def _slug(text: str) -> str:
    return re.sub(r"[\s_-]+", "-", text.strip().lower())


def as_quoted(args: dict[str, Any], quoted: Sequence[str]) -> dict[str, Any]:
    """``args`` with a top-level string value, or a top-level list's item, the model wrote as a slug of a value the
    request quotes ("good first issue" written ``good-first-issue``) given back as quoted: qwen1.5b looked up the label
    ``good-first-issue``, which does not exist. Not for a parameter whose value is a slug by nature (a branch, a
    path: :data:`_SLUGS`)."""
    spaced = {_slug(q): q for q in quoted if " " in q.strip()}

    def back(v: Any) -> Any:
        return spaced.get(_slug(v), v) if isinstance(v, str) and " " not in v else v

    out = dict(args)
    for k, v in args.items():
        if _SLUGS.search(k):
            continue
        # a list's items too: "labels": ["enhancement", "good_first_issue"] for "Add the 'good first issue' label …"
        # (a reworded tune request, qwen1.5b)
        out[k] = [back(x) for x in v] if isinstance(v, list) else back(v)
    return out


def _leaves(value: Any) -> list[str | int]:
    """The string and integer values anywhere in ``value`` (a JSON object's leaves; booleans are not values one
    could copy by mistake)."""
    if isinstance(value, Mapping):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return [value]
    return []


def _enum_values(schema: Any) -> set[str]:
    """Every string an ``enum`` or ``const`` anywhere in ``schema`` allows (lower case)."""
    out: set[str] = set()
    if isinstance(schema, Mapping):
        for k, v in schema.items():
            if k == "enum" and isinstance(v, list):
                out |= {str(x).lower() for x in v}
            elif k == "const":
                out.add(str(v).lower())
            else:
                out |= _enum_values(v)
    elif isinstance(schema, list):
        for v in schema:
            out |= _enum_values(v)
    return out


def copied_from_examples(
    tool: Tool, args: Mapping[str, Any], examples: Sequence[Usage], context: str
) -> list[str | int]:
    """The values of ``args`` that came from ``examples`` rather than from ``context`` (the request, the
    conversation and this turn's results): a string that contains an example's string of 3 or more characters, or an
    integer equal to an example's, when ``context`` does not state that example value (a value of one of ``tool``'s
    enums is a choice, not a copy). Example values live in a world
    of their own (``docs/examples.md``), so one found in the arguments was copied."""
    if not examples:
        return []
    said = context.lower()
    numbers = set(re.findall(r"\d+", said))
    choices = _enum_values(tool.input_schema)
    shown = {x for u in examples for x in _leaves(u.arguments) if not (isinstance(x, str) and x.lower() in choices)}
    found: list[str | int] = []
    for v in _leaves(dict(args)):
        if isinstance(v, int):
            if v in shown and str(v) not in numbers:
                found.append(v)
            continue
        low = v.lower()
        for e in shown:
            if isinstance(e, str) and len(e) >= 3 and e.lower() in low and e.lower() not in said:
                found.append(v)
                break
    return found


def _json_part(text: str) -> str:
    """The JSON object in a reply: the text itself, or, from a server that enforced no format, the span from the
    first ``{`` to the last ``}`` (past a code fence or a sentence around it). A grammar-constrained reply is the
    object already."""
    s = text.strip()
    if s.startswith("{"):
        return s
    i, j = s.find("{"), s.rfind("}")
    return s[i : j + 1] if 0 <= i < j else s
