"""Typed events a turn emits, in order: ``route`` → (``tool_call`` → ``tool_result`` | ``tool_skipped``) →
``token``… → ``answer``; ``error`` may replace any step. Serialised with ``model_dump_json()`` for ``--json``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class Candidate(BaseModel):
    name: str
    score: float


class RouteEvent(_Event):
    """Routing's decision: ``auto`` (margin above τ), ``escalated`` (decided by the reranker/LLM) or
    ``no-tool``. ``tool`` is the qualified name (``server__tool``), None for no-tool."""

    type: Literal["route"] = "route"
    decision: Literal["auto", "escalated", "no-tool"]
    tool: str | None
    candidates: list[Candidate] = Field(default_factory=list)
    latency_ms: float = 0.0


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    name: str
    server: str = ""
    arguments: dict[str, Any]
    confirmed: bool = True


class ToolResultEvent(_Event):
    """``text`` is the surrogate kept in the history; ``chars`` the size of the full output."""

    type: Literal["tool_result"] = "tool_result"
    name: str
    is_error: bool
    text: str
    chars: int


class ToolSkippedEvent(_Event):
    """The routed tool was not used and the request is answered without one; ``reason`` says why for people."""

    type: Literal["tool_skipped"] = "tool_skipped"
    name: str
    server: str = ""
    reason: str


class TokenEvent(_Event):
    type: Literal["token"] = "token"
    text: str


class AnswerEvent(_Event):
    type: Literal["answer"] = "answer"
    text: str


class ErrorEvent(_Event):
    """``stage``: where it failed (route, arguments, confirm, tool, answer, config)."""

    type: Literal["error"] = "error"
    stage: str
    message: str


Event = Annotated[
    RouteEvent | ToolCallEvent | ToolResultEvent | ToolSkippedEvent | TokenEvent | AnswerEvent | ErrorEvent,
    Field(discriminator="type"),
]
