"""Elicitation, the protocol side: defaults (SEP-1034), checks against the requested schema, and what is sent back.

End to end (a server's elicitation/create through MCPServerSource, in both modes) runs in test_conformance.py
(``elicitation-sep1034-client-defaults``).
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import types

from nexus_agent.mcp.elicitation import (
    ElicitationReply,
    ElicitationRequest,
    answer_elicitation,
    apply_defaults,
    check_content,
    choices,
    parse_field,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe", "minLength": 1},
        "age": {"type": "integer", "default": 30, "minimum": 0},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
    },
    "required": ["email"],
}
REQUEST = ElicitationRequest(server="s", message="m", schema=SCHEMA)


def test_defaults_fill_omitted_fields_only() -> None:
    content = apply_defaults(REQUEST, {"age": 41, "email": "x@example.com", "name": None})
    assert content == {
        "name": "John Doe",
        "age": 41,
        "score": 95.5,
        "status": "active",
        "verified": True,
        "email": "x@example.com",
    }


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"email": "x@example.com"}, None),
        ({}, "'email' is a required property"),
        ({"email": "x@example.com", "age": -1}, "age: -1 is less than the minimum of 0"),
        ({"email": "x@example.com", "status": "gone"}, "status: 'gone' is not one of"),
        ({"email": "x@example.com", "age": "30"}, "age: '30' is not of type 'integer'"),
        ({"email": "x@example.com", "tags": ["a", "z"]}, "tags.1: 'z' is not one of"),
        ({"email": "x@example.com", "extra": 1}, "unknown field(s): extra"),
    ],
)
def test_content_is_checked_against_the_schema(content: dict[str, Any], problem: str | None) -> None:
    problems = check_content(REQUEST, content)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_typed_in_answers_become_field_values() -> None:
    assert parse_field({"type": "integer"}, " 42 ") == 42
    assert parse_field({"type": "number"}, "2.5") == 2.5
    assert parse_field({"type": "boolean"}, "Yes") is True
    assert parse_field({"type": "array"}, "a, b,") == ["a", "b"]
    assert parse_field({"type": "string"}, " hi ") == "hi"
    with pytest.raises(ValueError, match="whole number"):
        parse_field({"type": "integer"}, "4.5")
    with pytest.raises(ValueError, match="yes or no"):
        parse_field({"type": "boolean"}, "maybe")
    assert choices(SCHEMA["properties"]["status"]) == ["active", "inactive"]
    assert choices({"type": "string", "oneOf": [{"const": "x", "title": "X"}]}) == ["x"]
    assert choices(SCHEMA["properties"]["tags"]) == ["a", "b"]


FORM = types.ElicitRequestFormParams(message="Who?", requested_schema=SCHEMA)


async def _answer(reply: ElicitationReply | Exception, params: types.ElicitRequestParams = FORM) -> types.ElicitResult:
    seen: list[ElicitationRequest] = []

    async def handler(request: ElicitationRequest) -> ElicitationReply:
        seen.append(request)
        if isinstance(reply, Exception):
            raise reply
        return reply

    result = await answer_elicitation("srv", params, handler)
    assert seen and seen[0].server == "srv"
    return result


async def test_accept_sends_the_content_with_defaults() -> None:
    result = await _answer(ElicitationReply("accept", {"email": "x@example.com"}))
    assert result.action == "accept"
    assert result.content is not None and result.content["name"] == "John Doe"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_are_sent_as_such_without_content(action: str) -> None:
    result = await _answer(ElicitationReply(action, {"email": "x@example.com"}))  # type: ignore[arg-type]
    assert (result.action, result.content) == (action, None)


async def test_an_answer_that_does_not_fit_or_a_failing_handler_is_a_cancel() -> None:
    assert (await _answer(ElicitationReply("accept", {"age": 3}))).action == "cancel"  # email is required
    assert (await _answer(RuntimeError("app bug"))).action == "cancel"


async def test_url_mode_carries_the_url_and_no_content() -> None:
    params = types.ElicitRequestURLParams(message="Sign in", url="https://example.com/x", elicitation_id="e1")
    seen: list[ElicitationRequest] = []

    async def handler(request: ElicitationRequest) -> ElicitationReply:
        seen.append(request)
        return ElicitationReply("accept", {"ignored": 1})

    result = await answer_elicitation("srv", params, handler)
    assert (result.action, result.content) == ("accept", None)
    assert (seen[0].mode, seen[0].url) == ("url", "https://example.com/x")
