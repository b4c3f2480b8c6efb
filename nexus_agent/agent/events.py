"""Typed events a turn emits, in order: ``route`` → (``tool_call`` → ``tool_result`` | ``tool_skipped``) →
``token``… → ``answer``; ``error`` may replace any step. In the agent loop (``max_steps`` > 1) each call is a step:
after a ``tool_result`` comes the next step's ``route`` (decision ``done`` when the request is carried out), and the
``route``, ``tool_call``, ``tool_result`` and ``tool_skipped`` events carry their ``step`` (1 for the first).
``elicitation`` (a server's question, which the app answers) may come during a tool call. Serialised with
``model_dump_json()`` for ``--json``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class Candidate(BaseModel):
    name: str
    score: float


class RouteEvent(_Event):
    """Routing's decision: ``auto`` (margin above τ), ``escalated`` (decided by the reranker/LLM), ``no-tool``,
    or, for a step after the first, ``done`` (no further call). ``tool`` is the qualified name (``server__tool``),
    None for no-tool and done; ``operation``, for a consolidated tool (``issue_write``), the value of its operation
    parameter routing chose (``update``), which the arguments then carry."""

    type: Literal["route"] = "route"
    decision: Literal["auto", "escalated", "no-tool", "done"]
    tool: str | None
    operation: str | None = None
    candidates: list[Candidate] = Field(default_factory=list)
    latency_ms: float = 0.0
    step: int = 1


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    name: str
    server: str = ""
    arguments: dict[str, Any]
    confirmed: bool = True
    step: int = 1


class ToolResultEvent(_Event):
    """``text`` is the surrogate kept in the history; ``chars`` the size of the full output."""

    type: Literal["tool_result"] = "tool_result"
    name: str
    is_error: bool
    text: str
    chars: int
    step: int = 1


class ToolSkippedEvent(_Event):
    """The routed tool was not used; ``reason`` says why for people. At step 1 the request is answered without a
    tool; at a later step the loop stops there and the answer is written from the calls that ran. One exception: a
    write whose object the request describes but does not identify waits for a lookup (the agent loop): a route
    event for the lookup follows, at step 1 too, and the write comes after it."""

    type: Literal["tool_skipped"] = "tool_skipped"
    name: str
    server: str = ""
    reason: str
    step: int = 1


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


class ElicitationEvent(_Event):
    """A server asks the user something during a tool call (MCP ``elicitation/create``); the call waits for the answer.

    Answer with :meth:`accept` (a form's field values; omitted fields get the schema's defaults), :meth:`decline`
    (the user said no) or :meth:`cancel` (dismissed). ``mode`` "form": fill ``requested_schema``'s fields; "url":
    agree to open ``url``. The app answers from any thread; the first answer counts. ``yes`` (auto-approval of tool
    calls) never answers an elicitation.
    """

    type: Literal["elicitation"] = "elicitation"
    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    url: str | None = None
    _reply: Callable[[str, dict[str, Any] | None], None] | None = PrivateAttr(default=None)

    def bind(self, reply: Callable[[str, dict[str, Any] | None], None]) -> ElicitationEvent:
        """Internal: where the answer goes (set by the agent before the event is emitted)."""
        self._reply = reply
        return self

    def accept(self, content: dict[str, Any] | None = None) -> None:
        self._answer("accept", dict(content or {}))

    def decline(self) -> None:
        self._answer("decline", None)

    def cancel(self) -> None:
        self._answer("cancel", None)

    def _answer(self, action: str, content: dict[str, Any] | None) -> None:
        if self._reply is None:
            raise RuntimeError("this elicitation event is not connected to a server's request")
        self._reply(action, content)


Event = Annotated[
    RouteEvent
    | ToolCallEvent
    | ToolResultEvent
    | ToolSkippedEvent
    | ElicitationEvent
    | TokenEvent
    | AnswerEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
