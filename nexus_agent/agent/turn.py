"""One turn of the agent, run synchronously in one worker thread that holds the engine's turn lock:

1. route the request (retrieval; escalations are decided in the sidecar over the pruned window);
2. write arguments in the main context over the compressed signature, under the schema's grammar;
3. validate (one repair attempt inside the writer);
4. apply the turn policy (:func:`nexus_agent.agent.policy.decide`): run the tool, ask first (a tool that may write,
   unless ``auto_yes``; a question routed to a tool that declares a write asks even then), answer without it (a
   question that names none of a write's objects was not about one), or refuse (a write to an object whose
   identifier the conversation never gave);
5. call the tool (on the MCP event loop);
6. keep only a surrogate of the output in the history;
7. stream the final answer (with no tool: in the ``CHAT`` lane, under a system prompt without the argument rules,
   told that nothing was run, so an action request gets "I could not do that" rather than a made-up call).

Arguments and answers with a tool run in the conversation's own lane (``TurnDeps.lane``: ``MAIN`` for an agent's
first conversation, a lane of its own for each conversation opened on the same engine), so its KV stays warm.

Every failure becomes an ``error`` event and leaves the conversation as it was before the turn. A turn whose
consumer stops listening (Ctrl-C, a closed event stream) ends at its next event with :class:`TurnCancelled`; it
leaves the conversation as it was too, unless a tool already ran: that turn is kept, with the answer cut short,
so the history never hides a call that may have changed something.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.events import (
    AnswerEvent,
    Candidate,
    ErrorEvent,
    Event,
    RouteEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolSkippedEvent,
)
from nexus_agent.agent.history import Conversation, Turn, carries_nothing, surrogate
from nexus_agent.agent.policy import Ask, Refuse, Skip, decide
from nexus_agent.agent.policy import needs_confirmation as needs_confirmation  # re-exported: tests import it here
from nexus_agent.agent.prompts import (
    NO_TOOL,
    SYSTEM_CHAT,
    SYSTEM_MAIN,
    TOOL_DATA,
    TOOL_DONE,
    TOOL_EMPTY,
    TOOL_ERROR,
)
from nexus_agent.agent.view import MAX_ITEMS, answer_view, whole
from nexus_agent.backend import Backend
from nexus_agent.engine import CHAT, MAIN
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import PreviousTurn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouteOutcome:
    """What routing decided. ``tool`` is a qualified name (``server__tool``) or None for no-tool."""

    decision: str  # auto | escalated | no-tool
    tool: str | None
    candidates: list[tuple[str, float]]
    latency_ms: float


class TurnRouter(Protocol):
    """Everything the agent asks of routing (``agent/routing_adapter.AgentRouter``)."""

    def route_turn(
        self, query: str, window: list[dict[str, str]], previous: PreviousTurn | None = None
    ) -> RouteOutcome: ...

    def warm(self) -> None:
        """Load (or decode once) routing's stable prompt heads, before the first request needs them."""
        ...

    def after_turn(self) -> None:
        """Work that may wait until the answer is out (compiling the tool blocks a decision found missing)."""
        ...

    def apply_diff(self, changed: list[Tool], removed: list[str]) -> None:
        """A server's tool list changed: re-index ``changed`` (added or edited) and drop ``removed`` (qualified
        names)."""
        ...


@dataclass(frozen=True)
class CallResult:
    text: str
    is_error: bool


CallTool = Callable[[str, dict[str, Any]], CallResult]
Confirm = Callable[[str, dict[str, Any], Mapping[str, Any] | None], bool]
Emit = Callable[[Event], None]


class TurnCancelled(BaseException):
    """The turn was cancelled by its consumer. A ``BaseException``, like ``asyncio.CancelledError``, so the
    stages' ``except Exception`` handlers do not report it as a failure."""


def _never() -> bool:
    return False


@dataclass
class TurnDeps:
    backend: Backend  # the local engine (LocalBackend) or a remote server (RemoteBackend)
    router: TurnRouter
    tools: Callable[[], Mapping[str, Tool]]  # qualified name -> Tool (live view)
    annotations: Callable[[str], Mapping[str, Any] | None]
    call_tool: CallTool
    confirm: Confirm | None
    auto_yes: bool
    window_turns: int = 4
    cancelled: Callable[[], bool] = _never  # checked before each stage and at every event
    lane: int = MAIN  # the conversation's engine lane (Engine.open_lane)
    # the lane has a KV budget (--kv-budget): arguments and answers see the whole trace, in one lane whose cache
    # the engine keeps under the budget; routing still reads the last ``window_turns``
    full_trace: bool = False
    compact: bool = True  # answers read a compact view of the tool output (agent/view.py); False: the whole output
    max_items: int = MAX_ITEMS  # rows of a listed result the answer reads


def run_turn(deps: TurnDeps, convo: Conversation, request: str, emit: Emit) -> None:
    """Run one turn, emitting events. The conversation gains a ``Turn`` only if the turn completes, or if it is
    cancelled after its tool ran. Raises :class:`TurnCancelled` when ``deps.cancelled()`` turns true."""

    def send(ev: Event) -> None:
        check()
        emit(ev)

    def check() -> None:
        if deps.cancelled():
            raise TurnCancelled

    turn = Turn(user=request)
    partial: list[str] = []
    try:
        _run_turn(deps, convo, request, send, check, turn, partial)
    except TurnCancelled:
        if turn.tool is not None and not (convo.turns and convo.turns[-1] is turn):
            turn.answer = ("".join(partial).strip() + " …(interrupted)").strip()
            convo.turns.append(turn)
        raise


def _run_turn(
    deps: TurnDeps,
    convo: Conversation,
    request: str,
    emit: Emit,
    check: Callable[[], None],
    turn: Turn,
    partial: list[str],
) -> None:
    eng = deps.backend
    with eng.turn():
        window = convo.window(deps.window_turns)
        history = convo.trace() if deps.full_trace else window
        try:
            route = deps.router.route_turn(request, window, convo.previous_tool_turn(deps.window_turns))
        except Exception as e:
            emit(ErrorEvent(stage="route", message=f"routing failed: {e}"))
            return
        emit(
            RouteEvent(
                decision=route.decision,
                tool=route.tool,
                candidates=[Candidate(name=n, score=s) for n, s in route.candidates],
                latency_ms=route.latency_ms,
            )
        )
        used = _use_tool(deps, route, request, history, emit, check, turn) if route.tool is not None else _WITHOUT_TOOL
        if used is None:
            return
        if used is _WITHOUT_TOOL and deps.full_trace:
            # A budgeted lane holds the whole trace under SYSTEM_MAIN: answering there keeps it one growing prompt.
            messages = [
                {"role": "system", "content": SYSTEM_MAIN},
                *history,
                {"role": "user", "content": NO_TOOL.format(request=request)},
            ]
            seq = deps.lane
        elif used is _WITHOUT_TOOL:
            # No tool: answer in the CHAT lane under the system prompt without the JSON-argument rules (see
            # prompts.NO_TOOL), so the conversation's lane keeps its cached prefix for the next turn and the
            # sidecar keeps the routing decision's head.
            messages = [
                {"role": "system", "content": SYSTEM_CHAT},
                *window,
                {"role": "user", "content": NO_TOOL.format(request=request)},
            ]
            seq = CHAT
        else:
            messages, seq = used

        def on_token(text: str) -> None:
            partial.append(text)
            emit(TokenEvent(text=text))

        try:
            gen = eng.chat(messages, lane=seq, max_tokens=384, repeat_penalty=1.1, on_token=on_token)
        except Exception as e:
            emit(ErrorEvent(stage="answer", message=f"answer generation failed: {e}"))
            return
        turn.answer = gen.text.strip()
        convo.turns.append(turn)
        emit(AnswerEvent(text=turn.answer))
        try:
            deps.router.after_turn()
        except Exception as e:  # an optimisation failed after a complete turn: say it, keep the event stream as is
            log.warning("compiling tool blocks after the turn failed: %s", e)


# sentinel of _use_tool: answer the request without a tool (compared by identity)
_WITHOUT_TOOL: Final[tuple[list[dict[str, str]], int]] = ([], CHAT)


def _use_tool(
    deps: TurnDeps,
    route: RouteOutcome,
    request: str,
    window: list[dict[str, str]],
    emit: Emit,
    check: Callable[[], None],
    turn: Turn,
) -> tuple[list[dict[str, str]], int] | None:
    """Write arguments for ``route.tool``, hold or run it, and build the answer prompt: (messages, sequence), or
    None when the turn stops here (an error was emitted), or ``_WITHOUT_TOOL``."""
    assert route.tool is not None
    tool = deps.tools().get(route.tool)
    if tool is None:
        emit(ErrorEvent(stage="route", message=f"routed to {route.tool}, which is no longer offered"))
        return None
    check()
    try:
        result = ArgumentWriter(deps.backend, lane=deps.lane).write(tool, request, window)
    except Exception as e:  # the engine failed (a remote server down, a full context): the turn ends here
        emit(ErrorEvent(stage="arguments", message=f"argument writing for {tool.name} failed: {e}"))
        return None
    if result.arguments is None:
        emit(
            ErrorEvent(
                stage="arguments",
                message=f"could not write valid arguments for {tool.name}: {result.schema_error}",
            )
        )
        return None
    args = result.arguments
    annotations = deps.annotations(route.tool)
    decision = decide(tool, annotations, args, request, window, deps.auto_yes)
    if isinstance(decision, Skip):
        # the route event still names the tool; this says why it was not used
        emit(ToolSkippedEvent(name=tool.name, server=tool.server, reason=decision.reason))
        return _WITHOUT_TOOL
    if isinstance(decision, Refuse):
        emit(ErrorEvent(stage="arguments", message=decision.reason))
        return None
    confirmed = True
    if isinstance(decision, Ask):
        confirmed = bool(deps.confirm and deps.confirm(route.tool, args, annotations))
    emit(ToolCallEvent(name=tool.name, server=tool.server, arguments=args, confirmed=confirmed))
    if isinstance(decision, Ask) and not confirmed:
        emit(ErrorEvent(stage="confirm", message=decision.refusal))
        return None
    check()
    try:
        out = deps.call_tool(route.tool, args)
    except Exception as e:
        emit(ErrorEvent(stage="tool", message=f"{tool.name} failed: {e}"))
        return None
    short = surrogate(out.text)
    turn.tool, turn.arguments, turn.tool_result = route.tool, args, short
    emit(ToolResultEvent(name=tool.name, is_error=out.is_error, text=short, chars=len(out.text)))
    # the answer reads a compact view of the output (agent/view.py), the whole of it for an error or on demand
    data = whole(out.text) if out.is_error or not deps.compact else answer_view(out.text, request, deps.max_items).text
    # a write's empty output is its success; a read's means it found nothing, which answers nothing
    template = (
        TOOL_ERROR
        if out.is_error
        else TOOL_DONE
        if decision.may_write
        else TOOL_EMPTY
        if carries_nothing(out.text)
        else TOOL_DATA
    )
    answer = template.format(tool=tool.name, args=json.dumps(args, ensure_ascii=False), data=data, request=request)
    messages = [{"role": "system", "content": SYSTEM_MAIN}, *window, {"role": "user", "content": answer}]
    return messages, deps.lane
