"""Elicitation: a server's ``elicitation/create`` (a form, or a URL to visit) put to the user, and the answer sent back.

The app answers through an :data:`ElicitationHandler` (``SourceOptions.elicitation``): the CLI asks on the terminal,
the Python API emits an event the app answers. This module is the protocol side, shared by both:

- :func:`apply_defaults` fills in the ``default`` of every field the user left out (SEP-1034);
- :func:`check_content` validates an answer against the requested schema (JSON Schema, restricted by the spec to
  flat properties of type string, number, integer, boolean or an array of enum strings);
- :func:`parse_field` turns one typed-in line into a field's value, for a prompt.

What goes back is the protocol's: ``accept`` with the content, ``decline`` (the user said no) or ``cancel`` (the user
dismissed it, or nobody could be asked). A handler that fails, or an answer that does not fit the schema, is sent as
``cancel``, never as made-up content.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
from mcp import types

log = logging.getLogger(__name__)

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class ElicitationRequest:
    """What a server asks. ``mode`` "form": fill ``schema``'s fields; "url": agree to visit ``url``."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None

    @property
    def fields(self) -> dict[str, dict[str, Any]]:
        """The requested fields by name, in the schema's order."""
        props = self.schema.get("properties") or {}
        return {str(k): dict(v) for k, v in props.items() if isinstance(v, Mapping)}

    @property
    def required(self) -> set[str]:
        return {str(r) for r in self.schema.get("required") or []}


@dataclass(frozen=True)
class ElicitationReply:
    """The user's answer: ``content`` only with ``accept`` of a form."""

    action: Action
    content: dict[str, Any] | None = None


ElicitationHandler = Callable[[ElicitationRequest], Awaitable[ElicitationReply]]


def apply_defaults(request: ElicitationRequest, content: Mapping[str, Any] | None) -> dict[str, Any]:
    """``content`` with every omitted field that has a ``default`` set to it."""
    out = dict(content or {})
    for name, prop in request.fields.items():
        if out.get(name) is None and "default" in prop:
            out[name] = prop["default"]
        if out.get(name) is None:
            out.pop(name, None)
    return out


def check_content(request: ElicitationRequest, content: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``content`` for the requested schema (empty: it fits)."""
    problems: list[str] = []
    unknown = sorted(set(content) - set(request.fields))
    if unknown:
        problems.append(f"unknown field(s): {', '.join(unknown)}")
    schema = {"type": "object", **dict(request.schema)}
    try:
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        for error in sorted(validator.iter_errors(dict(content)), key=lambda e: list(e.path)):
            where = ".".join(str(p) for p in error.path)
            problems.append(f"{where}: {error.message}" if where else error.message)
    except jsonschema.SchemaError as exc:
        problems.append(f"the server's schema is invalid: {exc.message}")
    return problems


def parse_field(prop: Mapping[str, Any], text: str) -> Any:
    """One typed-in answer as the field's type; raises ValueError with a message for the user."""
    kind = prop.get("type")
    text = text.strip()
    if kind == "boolean":
        low = text.lower()
        if low in ("y", "yes", "true", "1"):
            return True
        if low in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("expected a whole number") from None
    if kind == "number":
        try:
            return float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            raise ValueError("expected a number") from None
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def choices(prop: Mapping[str, Any]) -> list[str]:
    """The allowed values of an enum field (``enum``, ``oneOf``/``anyOf`` of ``const``, or an array's items)."""
    source = prop.get("items", prop) if prop.get("type") == "array" else prop
    if not isinstance(source, Mapping):
        return []
    if "enum" in source:
        return [str(v) for v in source["enum"]]
    options = source.get("oneOf") or source.get("anyOf") or []
    return [str(o["const"]) for o in options if isinstance(o, Mapping) and "const" in o]


def to_request(server: str, params: types.ElicitRequestParams) -> ElicitationRequest:
    if isinstance(params, types.ElicitRequestURLParams):
        return ElicitationRequest(server=server, message=params.message, mode="url", url=params.url)
    return ElicitationRequest(server=server, message=params.message, schema=dict(params.requested_schema))


async def answer_elicitation(
    server: str, params: types.ElicitRequestParams, handler: ElicitationHandler
) -> types.ElicitResult:
    """Ask ``handler`` and turn its reply into the protocol's result (defaults applied, content checked)."""
    request = to_request(server, params)
    try:
        reply = await handler(request)
    except Exception:
        log.exception("MCP server %r: the elicitation handler failed; answering cancel", server)
        return types.ElicitResult(action="cancel")
    if reply.action != "accept":
        return types.ElicitResult(action=reply.action)
    if request.mode == "url":
        return types.ElicitResult(action="accept")
    content = apply_defaults(request, reply.content)
    problems = check_content(request, content)
    if problems:
        log.warning(
            "MCP server %r: the elicitation answer does not fit the requested schema (%s); answering cancel",
            server,
            "; ".join(problems),
        )
        return types.ElicitResult(action="cancel")
    return types.ElicitResult(action="accept", content=content)
