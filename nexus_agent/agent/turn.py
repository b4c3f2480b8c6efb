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
6b. the agent loop (``TurnDeps.max_steps`` > 1, docs/agent-loop.md): ask the router for the next step
   (``TurnRouter.next_step``: another tool, back to 2 with the calls so far in the argument request, or ``done``);
   a repeated identical call, a later step that cannot run, or the budget ends the loop;
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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.claims import claims_change
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
from nexus_agent.agent.grounding import (
    NUMBER_FIELD,
    conversation_text,
    described_files,
    identifier_given,
    paths_in,
)
from nexus_agent.agent.history import (
    Call,
    Conversation,
    Turn,
    carries_nothing,
    finds_nothing,
    kept_output,
    surrogate,
)
from nexus_agent.agent.policy import Ask, Refuse, Skip, decide
from nexus_agent.agent.policy import needs_confirmation as needs_confirmation  # re-exported: tests import it here
from nexus_agent.agent.prompts import (
    LATER_STEP,
    LOOKUP,
    NO_TOOL,
    NOTHING_CHANGED,
    PLACEHOLDER,
    READ_FIRST,
    REPAIR,
    SYSTEM_CHAT,
    SYSTEM_MAIN,
    TEXT_QUESTION,
    TOOL_DATA,
    TOOL_DONE,
    TOOL_EMPTY,
    TOOL_ERROR,
    TOOL_STEP,
    TOOL_STEPS,
    VALUE_QUESTION,
    call_note,
)
from nexus_agent.agent.recall import Recalled
from nexus_agent.agent.request import Request
from nexus_agent.agent.sources import (
    described_entry,
    found_object_read,
    listed_files,
    listing_first,
    read_again,
    rows_with,
    source_in_text,
    unread_source,
    value_at,
)
from nexus_agent.agent.view import MAX_ITEMS, answer_view, named_logins, numbered, step_view, whole
from nexus_agent.backend import Backend
from nexus_agent.backend.decision import Messages
from nexus_agent.engine import CHAT, MAIN
from nexus_agent.examples import ArgKeys, Usage
from nexus_agent.examples.uses import ExampleUses
from nexus_agent.kv.segments import Part, SegKind
from nexus_agent.registry import IDENTIFIER, OVERWRITES, Tool
from nexus_agent.routing.followup import CallSoFar, PreviousTurn
from nexus_agent.routing.query import branches_named
from nexus_agent.routing.rerank.llm_choice import RESULT_CHARS as CALL_CHARS
from nexus_agent.signature import words

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouteOutcome:
    """What routing decided. ``tool`` is a qualified name (``server__tool``) or None for no-tool."""

    decision: str  # auto | escalated | no-tool
    tool: str | None
    candidates: list[tuple[str, float]]
    latency_ms: float
    operation: str | None = None  # a consolidated tool's operation, chosen with it (ExampleUses.operations)


class TurnRouter(Protocol):
    """Everything the agent asks of routing (``agent/routing_adapter.AgentRouter``)."""

    def route_turn(
        self, query: str, window: list[dict[str, str]], previous: PreviousTurn | None = None
    ) -> RouteOutcome: ...

    def next_step(self, query: str, window: list[dict[str, str]], calls: Sequence[CallSoFar]) -> RouteOutcome:
        """After ``calls`` (this turn's calls so far, compact): the next tool, or decision ``done`` (tool None)."""
        ...

    def warm(self) -> None:
        """Load (or decode once) routing's stable prompt heads, before the first request needs them."""
        ...

    def examples_for(self, query: str, tool: str, operation: str | None, uses: ExampleUses) -> list[Usage]:
        """The examples argument writing shows for ``tool`` (and ``operation``), as ``uses.arguments`` says:
        none, a fixed set, or the ones closest to ``query``."""
        ...

    def arg_keys(self, query: str, tool: str, operation: str | None) -> ArgKeys | None:
        """The keys argument writing writes for ``tool`` (``operation``), as its examples closest to ``query`` set
        them (``examples/keys.py``); None when none is close or that use is off."""
        ...

    def object_params(self, tool: str, operation: str | None) -> list[str]:
        """The identifier parameters naming the existing object a call of ``tool`` (``operation``) acts on: the
        required ones, and those its every example sets."""
        ...

    def reads_before(self, tool: str, operation: str | None) -> bool:
        """Whether a write of ``tool`` reads what it acts on first (a local tool its examples call after a read):
        the loop reads it first when the request quotes no value."""
        ...

    def made_before(self, tool: str) -> frozenset[str]:
        """The tools a multi-step example calls before ``tool`` (``git_add`` before ``git_commit``)."""
        ...

    def in_place(self, tool: str, params: Sequence[str]) -> str | None:
        """The write of ``tool``'s server that changes part of what ``tool`` (one that overwrites) would replace
        whole, taking the same ``params`` (``edit_file`` for ``write_file``); None when there is not exactly one."""
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
    # with ``full_trace``: what the request recalls of the trace's evicted spans (agent/recall.py); None: nothing
    recall: Callable[[str, Conversation], Recalled] | None = None
    compact: bool = True  # answers read a compact view of the tool output (agent/view.py); False: the whole output
    max_items: int = MAX_ITEMS  # rows of a listed result the answer reads
    max_steps: int = 1  # calls one request may make (the agent loop; 1: one call, answered at once)
    examples: ExampleUses = field(default_factory=ExampleUses)  # where the session's examples are used


def run_turn(deps: TurnDeps, convo: Conversation, request: str, emit: Emit) -> None:
    """Run one turn, emitting events. The conversation gains a ``Turn`` only if the turn completes, or if it is
    cancelled after a tool ran (then with every call that ran). Raises :class:`TurnCancelled` when
    ``deps.cancelled()`` turns true."""

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


@dataclass(frozen=True)
class _Step:
    """A call that ran in this turn: ``text`` is its whole output."""

    qualified: str
    tool: Tool
    arguments: dict[str, Any]
    text: str
    is_error: bool
    may_write: bool
    # a listing made in place of a read of a file nobody named (:func:`sources.listing_first`): that read's tool
    # and arguments, made again next with the file the request describes
    instead_of: tuple[str, dict[str, Any]] | None = None
    # the write this one was made in place of: the same server's write that changes part of what the other would
    # replace whole (write_file → edit_file)
    stands_for: str | None = None

    @property
    def writes(self) -> bool:
        """A tool that may write, and it succeeded."""
        return self.may_write and not self.is_error

    @property
    def read(self) -> bool:
        """A read, and it succeeded."""
        return not self.may_write and not self.is_error


@dataclass(frozen=True)
class _Halt:
    """A step whose tool did not run. ``stage``: ``skip`` (the policy's Skip, already reported), ``repeat`` (the
    same call again), or where it failed (route, arguments, confirm, tool)."""

    stage: str
    message: str
    name: str = ""
    server: str = ""
    # a write refused for an identifier nobody gave: the arguments it was written with (a later step may look the
    # object up first)
    refused: dict[str, Any] | None = None
    # a write refused for naming a repository as a value ("with the colour acme/docs uses"): that repository, where
    # the next step reads the value; or a local write refused for a path nobody named: the folder the request
    # names it in, which the next step lists (:func:`_folder_named`)
    where: str | None = None


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
        history = _trace(deps, convo, request, turn) if deps.full_trace else window
        try:
            route = deps.router.route_turn(request, window, convo.previous_tool_turn(deps.window_turns))
        except Exception as e:
            emit(ErrorEvent(stage="route", message=f"routing failed: {e}"))
            return
        emit(
            RouteEvent(
                decision=route.decision,
                tool=route.tool,
                operation=route.operation,
                candidates=[Candidate(name=n, score=s) for n, s in route.candidates],
                latency_ms=route.latency_ms,
            )
        )
        req = Request.parse(request)  # every later step reads this object, not the string again
        unchanged: str | None = None
        if route.tool is None:
            messages, seq = _without_tool(deps, req, window, history)
        else:
            loop = _loop(deps, route.tool, route.operation, req, window, history, emit, check, turn)
            if loop is None:
                return
            if isinstance(loop, str):  # every change it tried failed: the answer is written from the calls
                emit(TokenEvent(text=loop))
                _finish(deps, convo, turn, loop, emit)
                return
            messages, seq, unchanged = loop

        def on_token(text: str) -> None:
            partial.append(text)
            if unchanged is None:
                emit(TokenEvent(text=text))

        try:
            gen = eng.chat(messages, lane=seq, max_tokens=384, repeat_penalty=1.1, on_token=on_token)
        except Exception as e:
            emit(ErrorEvent(stage="answer", message=f"answer generation failed: {e}"))
            return
        answer = gen.text.strip()
        if unchanged is not None:
            # a change no call made: the answer is held until it is known not to claim one (claims.claims_change)
            answer = unchanged if claims_change(answer) else answer
            emit(TokenEvent(text=answer))
        _finish(deps, convo, turn, answer, emit)


def _trace(deps: TurnDeps, convo: Conversation, request: str, turn: Turn) -> list[dict[str, str]]:
    """The history under a KV budget: the whole trace, then the note of what the request recalled (if anything),
    marked part by part for the engine's memory manager."""
    msgs, parts = mark_trace(deps.backend, convo, deps.lane)
    if deps.recall is not None:
        try:
            got = deps.recall(request, convo)
        except Exception as e:  # retrieval failed: the turn goes on with what memory holds
            log.warning("recall failed: %s", e)
            got = Recalled()
        if got.note:
            t = len(convo.turns) + 1
            turn.recalled = got.note
            msgs.append({"role": "user", "content": got.note})
            parts.append([Part(SegKind.NOTE, got.note, t, f"{t}.n")])
            deps.backend.mark(deps.lane, msgs, parts)
            log.info("recalled %s before turn %d", ", ".join(got.spans), t)
    return msgs[1:]


def mark_trace(backend: Backend, convo: Conversation, lane: int) -> tuple[list[dict[str, str]], list[list[Part]]]:
    """Tell the backend what the conversation's trace (system prompt first) is made of; returns it."""
    msgs, parts = convo.trace_parts(SYSTEM_MAIN)
    backend.mark(lane, msgs, parts)
    return msgs, parts


def _finish(deps: TurnDeps, convo: Conversation, turn: Turn, answer: str, emit: Emit) -> None:
    """Record the completed turn, emit its answer, then the work that may wait until the answer is out."""
    turn.answer = answer
    convo.turns.append(turn)
    emit(AnswerEvent(text=turn.answer))
    try:
        deps.router.after_turn()
    except Exception as e:  # an optimisation failed after a complete turn: say it, keep the event stream as is
        log.warning("compiling tool blocks after the turn failed: %s", e)


def next_heads(convo: Conversation, lane: int, window_turns: int, full_trace: bool) -> list[tuple[list[Messages], int]]:
    """What the next turn of ``convo`` starts its prompts with, per lane, newest need first: the conversation's lane
    (arguments and a tool's answer: the system prompt and the history), then ``CHAT`` (an answer without a tool) when
    the history is the window. Each as two chats that differ only in the last user message, whose common head is the
    part already known (:meth:`Backend.prefill`)."""
    history = convo.trace() if full_trace else convo.window(window_turns)
    if not history:
        return []  # only the system prompts, which the lanes hold from the start

    def both(system: str, msgs: list[dict[str, str]]) -> list[Messages]:
        return [[{"role": "system", "content": system}, *msgs, {"role": "user", "content": u}] for u in "ab"]

    heads = [(both(SYSTEM_MAIN, history), lane)]
    if not full_trace:
        heads.append((both(SYSTEM_CHAT, history), CHAT))
    return heads


def _without_tool(
    deps: TurnDeps, request: Request, window: list[dict[str, str]], history: list[dict[str, str]]
) -> tuple[list[dict[str, str]], int]:
    """The answer prompt and lane of a request answered without a tool."""
    if deps.full_trace:
        # A budgeted lane holds the whole trace under SYSTEM_MAIN: answering there keeps it one growing prompt.
        messages = [
            {"role": "system", "content": SYSTEM_MAIN},
            *history,
            {"role": "user", "content": NO_TOOL.format(request=request.text)},
        ]
        return messages, deps.lane
    # No tool: answer in the CHAT lane under the system prompt without the JSON-argument rules (see prompts.NO_TOOL),
    # so the conversation's lane keeps its cached prefix for the next turn and the sidecar keeps the decision's head.
    messages = [
        {"role": "system", "content": SYSTEM_CHAT},
        *window,
        {"role": "user", "content": NO_TOOL.format(request=request.text)},
    ]
    return messages, CHAT


def _loop(
    deps: TurnDeps,
    first: str,
    first_op: str | None,
    request: Request,
    window: list[dict[str, str]],
    history: list[dict[str, str]],
    emit: Emit,
    check: Callable[[], None],
    turn: Turn,
) -> tuple[list[dict[str, str]], int, str | None] | str | None:
    """The agent loop from the routed tool ``first``: call, then decide between another call and the answer, up to
    ``deps.max_steps`` calls. Returns the answer prompt, its lane, and the answer written from the calls that
    replaces the model's if it claims a change when the request asked for one and no call made it
    (:func:`_unchanged`); the answer itself when every change it tried failed (:func:`_changes_not_made`); or None
    when the turn ends with an error (only at step 1: a later step that cannot run ends the loop, and the answer
    reports the calls that ran)."""
    steps: list[_Step] = []
    tried: list[CallSoFar] = []  # what the next-step decision reads: the calls that ran, and a refused first one
    not_run: list[str] = []  # writes that did not run (refused, not confirmed, no valid arguments): why
    note = ""
    held: str | None = None  # the write a later step held (refused, not confirmed): its not_run line says why
    qualified, operation, step = first, first_op, 1
    if (me := _who_am_i(deps, first, request)) is not None:
        # "assign … to me": the login is read first, so the write has it (qwen1.5b wrote "your_username")
        emit(RouteEvent(decision="auto", tool=me, candidates=[Candidate(name=me, score=1.0)], step=step))
        mine = _call_step(deps, me, None, request, history, steps, step, emit, check, given={})
        if isinstance(mine, _Step):
            steps.append(mine)
            tried.append(CallSoFar(me, {}, step_view(mine.text, request, CALL_CHARS), mine.is_error, False))
            _record(turn, mine)
            step += 1
    before = len(steps)  # the calls made before the routed tool's own (the login)
    waiting = _look_up_first(deps, qualified, operation, request, history, window, emit, step)
    if waiting is not None:
        # the write waits for its object: the lookup runs first and the write follows it (router._planned_step)
        tried.append(waiting.call)
        not_run.append(waiting.unrun)
        qualified, operation = waiting.lookup.tool or qualified, waiting.lookup.operation
    at: str | None = None  # where the next read reads: a repository a refused write named, or a folder it is in
    # the arguments the next step is given: a staging step the waiting write needs first, or a read made again
    staging: dict[str, Any] | None = None
    retry: tuple[str, str | None] | None = None  # a refused write made again after the read of its found object
    while True:
        purpose = waiting.note if waiting is not None and len(steps) == before else None
        got = _call_step(
            deps,
            qualified,
            operation,
            request,
            history,
            steps,
            step,
            emit,
            check,
            purpose=purpose,
            at=at,
            given=staging,
        )
        at, staged, staging = None, staging is not None, None
        retrying, retry = retry, None
        at_first = step == before + 1  # the routed tool's own step
        if isinstance(got, _Halt) and at_first:
            if got.stage == "skip":
                return (*_without_tool(deps, request, window, history), None)
            if got.refused is None or deps.max_steps == 1:
                emit(ErrorEvent(stage=got.stage, message=got.message))
                return None
        if (
            isinstance(got, _Halt)
            and got.refused is not None
            and (at_first or (len(steps) < deps.max_steps and _found_since(tried, qualified)))
        ):
            # A write whose object nobody named ("close the issue about X"): the next step may look it up first. If
            # the decision says done, a first write's turn ends with the refusal, as with one step. A later one is
            # looked up so once (measured on the tune split: "Create a folder …/2026-q2 and move the Q2 report from
            # …/reports into it" made the folder, then the move named a file nobody had named, and the turn ended
            # with the report still to be listed); without a lookup it is held as any later halt is.
            refused = CallSoFar(qualified, got.refused, f"not run: {got.message}", failed=True, ran=False)
            found = None if at_first else _found_read(deps, got.refused, got.message, steps, request)
            nxt: RouteOutcome | None
            if found is not None:
                # the object the search found, read whole: its fields the search's rows do not carry (a pull
                # request's head branch) are what the refused write needs
                nxt = RouteOutcome("auto", found[0], [(found[0], 1.0)], 0.0, None)
            else:
                nxt = _next(deps, request, window, [*tried, refused])
            if nxt is not None and nxt.tool is not None:
                tried.append(refused)
                not_run.append(f"{got.name or qualified} was not run: {got.message}")
                emit(ToolSkippedEvent(name=got.name, server=got.server, reason=got.message, step=step))
                step += 1
                _emit_route(emit, nxt, step)
                # after the object's read, the refused write (its operation too) is written again: the decision
                # after it had read the pull request's status instead
                retry = (qualified, operation) if found is not None else None
                staging = found[1] if found is not None else None
                qualified, operation, at = nxt.tool, nxt.operation, got.where
                continue
            if at_first:
                emit(ErrorEvent(stage=got.stage, message=got.message))
                return None
        if isinstance(got, _Halt):
            if got.stage != "skip":  # the policy's Skip was reported by _call_step
                emit(ToolSkippedEvent(name=got.name or qualified, server=got.server, reason=got.message, step=step))
            note = f"(Step {step} was not run: {got.message}.)\n"
            if got.stage != "repeat" and needs_confirmation(deps.annotations(qualified)):
                not_run.append(f"{got.name or qualified.split('__', 1)[-1]} was not run: {got.message}")
                held = qualified
            break
        if got.may_write and got.is_error and deps.examples.repair and repairable(got.text, got.tool):
            # a write that ran and failed on a parameter is written again once, told the error (today's model
            # repeated the failed arguments when the loop offered the write again)
            _record(turn, got)
            again = _call_step(deps, qualified, operation, request, history, steps, step, emit, check, repair=got)
            if isinstance(again, _Step):
                got = again
        if not got.may_write and not got.is_error and finds_nothing(got.text):
            # a search that found nothing searches once more by its terms' stems, in the same step
            wider = broadened(got.tool, got.arguments)
            if wider is not None:
                _record(turn, got)
                again = _call_step(deps, qualified, operation, request, history, steps, step, emit, check, given=wider)
                if isinstance(again, _Step):
                    got = again
        steps.append(got)
        tried.append(
            CallSoFar(
                got.qualified,
                got.arguments,
                step_view(got.text, request, CALL_CHARS),
                got.is_error,
                got.writes,
                empty=finds_nothing(got.text),
            )
        )
        _record(turn, got)
        if len(steps) >= deps.max_steps:
            # the budget counts calls that ran: a first write refused for a value nobody gave made no call, and
            # measured on the multi-step tune tasks (qwen1.5b) it left a find-read-write errand ("write September's
            # revenue from the Q3 report … as 'September: <amount>'") one call short
            if deps.max_steps > 1:
                note = f"(I stopped after {len(steps)} calls, the most one request may make.)\n"
            break
        check()
        if waiting is not None and waiting.creates and len(steps) == before + 1 and _NOT_FOUND.search(got.text):
            # the file the write that overwrites waited for does not exist: it is written, as the request asks
            # (measured on the check split: "write 'milk, bread, coffee' into …/groceries.txt" read, found no file,
            # and the decision after a failed read offers no write)
            nxt = RouteOutcome("auto", first, [(first, 1.0)], 0.0, first_op)
        elif staged and isinstance(got, _Step) and got.writes:
            # the files were staged: the write that waited for them follows
            nxt = RouteOutcome("auto", first, [(first, 1.0)], 0.0, first_op)
        elif retrying is not None and got.read:
            nxt = RouteOutcome("auto", retrying[0], [(retrying[0], 1.0)], 0.0, retrying[1])
        elif got.instead_of is not None and (entry := described_entry(got.text, request)) is not None:
            # the folder was listed in place of a made-up file: the read is made again, of the file described
            folder = str(got.arguments["path"]).rstrip("/")
            shown = [f"{folder}/{name}" for name in listed_files(got.text)]
            read, staging = read_again(
                got.instead_of, f"{folder}/{entry}", request, shown, deps.tools(), _reads_only(deps)
            )
            nxt = RouteOutcome("auto", read, [(read, 1.0)], 0.0, None)
        else:
            nxt = _next(deps, request, window, tried)
            if (
                waiting is not None
                and nxt is not None
                and nxt.tool == first
                and not any(s.qualified == first for s in steps)
                and (stage := _stages_first(deps, first, request, steps)) is not None
            ):
                # measured on the tune split (qwen1.5b): "commit only the modified file in …, leave untracked stuff
                # alone" read the status, then committed with nothing staged, and the budget ran out before the
                # commit could be made again
                nxt = RouteOutcome("auto", stage[0], [(stage[0], 1.0)], 0.0, None)
                staging = stage[1]
        if nxt is None:
            break
        step += 1
        _emit_route(emit, nxt, step)
        if nxt.tool is None:
            break
        qualified, operation = nxt.tool, nxt.operation
    if waiting is not None and (any(first in (s.qualified, s.stands_for) for s in steps) or held == first):
        # the write ran, or was tried and held, after its lookup: its own outcome is what the answer reports
        not_run.remove(waiting.unrun)
    if (failed := _changes_not_made(steps, not_run)) is not None:
        return failed
    if (partly := _partly_done(steps, not_run)) is not None:
        return partly
    return _answer_prompt(deps, request, history, steps, note), deps.lane, _unchanged(request, steps, note)


def _found_read(
    deps: TurnDeps, refused: Mapping[str, Any], why: str, steps: Sequence[_Step], request: Request
) -> tuple[str, dict[str, Any]] | None:
    """The read of the object the last step's search found (:func:`sources.found_object_read`), for a write refused
    (``refused``: its arguments; ``why``: the refusal) for a value the search's rows could not give; None otherwise.
    Only such a value: a number the rows do give (an invented one) stays refused."""
    named = [k for k in refused if re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", why)]
    if not named or any(NUMBER_FIELD.search(k) or IDENTIFIER.search(k) for k in named):
        return None
    if not steps or not steps[-1].read:
        return None
    last = steps[-1]
    done = [(s.qualified, s.arguments) for s in steps]
    return found_object_read(last.tool, last.arguments, last.text, request, deps.tools(), _reads_only(deps), done)


def _found_since(tried: Sequence[CallSoFar], qualified: str) -> bool:
    """Whether a call that ran and found something came after ``qualified`` was last held unrun (True when it never
    was): a write refused again may then be looked up again. Measured on the tune split: "Take September's revenue
    from the Q3 report in …/reports and write it …" listed the folder for the write that waited, was refused for
    its placeholder, and ended with the report unread and a call left."""
    last = max((i for i, c in enumerate(tried) if c.tool == qualified and not c.ran), default=None)
    return last is None or any(c.ran and not c.failed and not c.empty for c in tried[last + 1 :])


def searched_by_description(tool: Tool, args: dict[str, Any], request: Request) -> dict[str, Any]:
    """A lookup's arguments, its text ``query`` searching by the words that describe the object: its terms that
    share none of them are left out, and when none is left, those words replace it, in the request's order.
    Measured on the multi-step tune tasks: under :data:`LOOKUP`'s note qwen1.5b still searched for "acme/api", the
    repository, found nothing, and the issue the request described was never changed."""
    prop = (tool.input_schema.get("properties") or {}).get("query") or {}
    if prop.get("type") != "string" or not request.describing:
        return args
    query = str(args.get("query", ""))
    # its terms that describe nothing go: "squash-merge rate limiting" found no pull request titled "Add rate
    # limiting …"; a search qualifier (``is:open``) stays
    kept = [t for t in query.split() if ":" in t or words(t) & request.describing]
    if any(words(t) & request.describing for t in kept):
        return args if kept == query.split() else {**args, "query": " ".join(kept)}
    said = [t for t in re.findall(r"[^\W_]+", request.text) if words(t) & request.describing]
    return {**args, "query": " ".join(dict.fromkeys(said))}


def _stem(term: str) -> str:
    """A search term cut to its stem when it is long and inflected ("limiting" -> "limit", "expired" -> "expir"),
    so a substring search finds the other forms ("rate limiter"); a qualifier (``is:open``) as it is."""
    if ":" in term or len(term) <= 5:
        return term
    for suffix in ("ing", "ed", "es", "er", "s"):
        if term.lower().endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[: -len(suffix)]
    return term


def broadened(tool: Tool, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """A search's arguments once more, its text ``query`` in stems (:func:`_stem`), after it found nothing; None
    when no term changes. Measured on the multi-step tune tasks: "the rate limiting pull request" searched
    ``search_pull_requests`` for "rate limiting", which a title "Add token bucket rate limiter" does not contain,
    and the merge it was for was never made.

    A name ``pattern`` without a wildcard (the filesystem's search_files: a glob) is searched as a part of a name
    at any depth: "README" matches no "README.md" as a glob (measured on the tune split: the README was never
    found, and the fix it was for never made)."""
    props = tool.input_schema.get("properties") or {}
    pattern = args.get("pattern")
    if (
        (props.get("pattern") or {}).get("type") == "string"
        and isinstance(pattern, str)
        and pattern.strip()
        and not any(ch in pattern for ch in "*?[")
    ):
        return {**args, "pattern": f"**/*{pattern.strip()}*"}
    prop = props.get("query") or {}
    query = args.get("query")
    if prop.get("type") != "string" or not isinstance(query, str):
        return None
    stems = " ".join(_stem(t) for t in query.split())
    return {**args, "query": stems} if stems != " ".join(query.split()) else None


@dataclass(frozen=True)
class _Waiting:
    """A write that waits for its object's lookup: as the next-step decision reads it (``call``, not run), the line
    the answer reports if the lookup finds nothing (``unrun``), the lookup's route, and its argument note."""

    call: CallSoFar
    unrun: str
    lookup: RouteOutcome
    note: str
    # a write that overwrites, waiting for a read of its file: when the read finds none, the write creates it
    creates: bool = False


# the request names its user as a person a change is for: "assign it to me", "add me as a reviewer"
_ME = re.compile(
    r"\b(?:to|assign|ping|mention|cc|notify)\s+me\b|\bme as (?:an? )?(?:reviewer|assignee|owner)\b|\bmyself\b",
    re.IGNORECASE,
)
# a read that says who the user is: GitHub's get_me, others' whoami or current user
_WHOAMI = re.compile(r"(?:^|_)(?:me|whoami|current_user|authenticated_user)$", re.IGNORECASE)


def _who_am_i(deps: TurnDeps, first: str, request: Request) -> str | None:
    """The read of ``first``'s server that says who the user is (:data:`_WHOAMI`: read-only, nothing required), when
    ``first`` is a write, the request names its user as the person a change is for ("assign it to me") and the loop
    has room for it; else None."""
    tool = deps.tools().get(first)
    if deps.max_steps < 2 or tool is None or not _ME.search(request.text):
        return None
    if not needs_confirmation(deps.annotations(first)):
        return None
    for q, t in deps.tools().items():
        if t.server != tool.server or not _WHOAMI.search(t.name) or t.input_schema.get("required"):
            continue
        if (deps.annotations(q) or {}).get("readOnlyHint") is True:
            return q
    return None


def _look_up_first(
    deps: TurnDeps,
    qualified: str,
    operation: str | None,
    request: Request,
    history: list[dict[str, str]],
    window: list[dict[str, str]],
    emit: Emit,
    step: int = 1,
) -> _Waiting | None:
    """When the routed write acts on an existing object (:meth:`TurnRouter.object_params`) that the conversation
    does not identify ("close the issue about the login button": no number), its arguments are not written yet:
    the lookup the router plans for it runs first, and the write follows with what it found. None when the write
    names its object, the loop has one step, or no lookup is planned.

    Measured on the multi-step tune tasks (qwen1.5b, all examples): written at once, such a write ran on an object
    nobody named (``issue_number`` 1) or with a made-up field in place of the number (``issue_fields``), and the
    write after the lookup had one step left, or none."""
    tool = deps.tools().get(qualified)
    if deps.max_steps < 2 or tool is None or not needs_confirmation(deps.annotations(qualified)):
        return None
    if tool.declares_write and request.question:
        return None  # a question routed to a write: the policy decides (skips it, the model answers); nothing to find
    params = deps.router.object_params(qualified, operation)
    creates = False
    if params and not any(identifier_given(tool, p, request, history) for p in params):
        why = f"the request does not say which one it means ({', '.join(params)}), so it was looked up first"
        note = LOOKUP.format(tool=tool.name, params=", ".join(params))
    elif (
        not params
        and not request.quoted
        and not _branch_given(tool, request)
        and deps.router.reads_before(qualified, operation)
    ):
        # measured on the multi-step tune tasks (qwen1.5b): written at once, "tick it off in …/todo.md" replaced
        # the whole list with "Tick it off", and "Add a P.S. … his number from …/contacts.csv" the whole letter
        why = "it waited for a read of what it acts on, as the request quotes nothing to write"
        note = READ_FIRST.format(tool=tool.name)
    elif (
        not params
        and _replaces_whole(deps, qualified, tool, request)
        and deps.router.reads_before(qualified, operation)
    ):
        # measured on the multi-step tune tasks (qwen1.5b): "Fix the typo in …/shopping-list.txt: 'bred' should be
        # 'bread'" was written at once with write_file, and the list became the one word "bread". Read first, a file
        # that exists is then changed in place (in_place); one that does not is written, unless the request asks
        # to amend what is there (measured on the tune split: read missing, "fix the typo" wrote a new one-word
        # file)
        why = "it waited for a read of what it acts on, as it would replace a file whole"
        note = READ_FIRST.format(tool=tool.name)
        creates = not _AMENDS.search(request.text)
    else:
        return None
    shown = {tool.operation_param: operation} if tool.operation_param and operation else {}
    waiting = CallSoFar(qualified, shown, f"not run yet: {why}", failed=True, ran=False)
    nxt = _next(deps, request, window, [waiting])
    if nxt is None or nxt.tool is None or nxt.decision != "auto":
        return None  # no planned lookup: the arguments are written as for any write
    emit(ToolSkippedEvent(name=tool.name, server=tool.server, reason=why, step=step))
    _emit_route(emit, nxt, step)
    return _Waiting(waiting, f"{tool.name} was not run: {why}", nxt, note, creates)


# a request to amend what a file already holds: a missing file is then not written anew
_AMENDS = re.compile(
    r"\b(?:fix|correct|change|edit|replace|update|tick|double|halve|remove|delete|swap|rename)\b", re.IGNORECASE
)


def _branch_given(tool: Tool, request: Request) -> bool:
    """Whether ``tool`` takes a branch (a parameter named for one) and the request names one (:func:`branches_named`):
    what a checkout acts on is given, and nothing need be read for it. Measured on a reworded tune request
    (qwen1.5b): "Switch …/repo to the feature/csv-export branch" waited for a read, and the read chosen failed."""
    takes = any("branch" in p.lower() for p in tool.input_schema.get("properties") or {})
    return takes and bool(branches_named(request.text))


def _replaces_whole(deps: TurnDeps, qualified: str, tool: Tool, request: Request) -> bool:
    """Whether ``tool`` says it overwrites, the request does not ask for that, and its server has a write that
    changes part of the same object (``TurnRouter.in_place``): then a file the request names is read first."""
    if not _overwrite_unasked(tool, request):
        return False
    objects = [k for k in tool.input_schema.get("properties") or {} if _NAMES_OBJECT.search(k)]
    return bool(objects) and deps.router.in_place(qualified, objects) is not None


# An error that names what to change in the arguments: a parameter, a missing or required value, an unsupported or
# invalid field. A 404 ("no such issue") is not one: other arguments cannot make a missing object exist.
_FIXABLE = re.compile(
    r"\b(?:missing|required|unsupported|not supported|unknown (?:field|parameter|argument|key)|"
    r"invalid (?:argument|parameter|field|value)s?|not allowed|cannot be combined)\b",
    re.IGNORECASE,
)


def repairable(error: str, tool: Tool) -> bool:
    """Whether a failed call's ``error`` says what to change in its arguments (:data:`_FIXABLE`, or one of the
    tool's parameter names as a word), and is not a not-found."""
    if re.search(r"\b404\b|not found|does not exist", error, re.IGNORECASE):
        return False
    params = tool.input_schema.get("properties") or {}
    return any(_names(error, p) for p in params) or bool(_FIXABLE.search(error))


# the names of parameters that take free text (a comment's body, a commit's message), not a code or a name a
# model could make up (a label's ``color`` is a string too)
_TEXT_PARAM = re.compile(r"^(?:body|message|text|content|comment|description|summary|note)$", re.IGNORECASE)


def text_missing(tool: Tool, args: Mapping[str, Any], error: str) -> str | None:
    """The free-text parameter (:data:`_TEXT_PARAM`, a string with no enum, format or pattern: a comment's
    ``body``, a commit's ``message``) that a failed call's ``error`` names and its ``args`` leave out; the first in
    the schema's order, else None."""
    for name, prop in (tool.input_schema.get("properties") or {}).items():
        if name in args or prop.get("type") != "string" or {"enum", "const", "format", "pattern"} & set(prop):
            continue
        if _TEXT_PARAM.match(name) and _names(error, name):
            return name
    return None


def _names(error: str, param: str) -> bool:
    """Whether ``error`` names the parameter ``param`` as a word, or its plural ("issue types are not enabled")."""
    return bool(re.search(rf"(?<![\w-]){re.escape(param)}s?(?![\w-])", error))


def without_named_optional(tool: Tool, args: Mapping[str, Any], error: str) -> dict[str, Any] | None:
    """``args`` less the optional arguments that the failed call's ``error`` names, when some are named and what
    is left still changes something (an optional argument that names no object); None otherwise.

    Why: measured on the multi-step tune tasks, qwen1.5b set ``issue_write``'s optional ``type`` from a word of
    the request ("… in a comment", "the pagination bug"), the sandbox refused it ("issue types are not enabled"),
    and the rewrite told the error set it again, or asked for something else: the close the request asked for was
    never made. Leaving out what the error names is the rewrite, and it is not the model's to get wrong."""
    required = set(tool.input_schema.get("required") or [])
    named = {k for k in args if k not in required and k != tool.operation_param and _names(error, k)}
    left = {k: v for k, v in args.items() if k not in named}
    changes = [k for k in left if k not in required and k != tool.operation_param and not IDENTIFIER.search(k)]
    return left if named and changes else None


# an error that says the object does not exist
_NOT_FOUND = re.compile(r"\b404\b|not found|does not exist|no such (?:file|directory)|ENOENT", re.IGNORECASE)
# git's words for an object that is not there: a path ("pathspec 'x' did not match any files"), a ref ("Ref 'x' did
# not resolve to an object", "malformed object name x", "unknown revision", "invalid reference: x")
_GIT_MISSING = re.compile(
    r"did not match any files?|did not resolve to an object|malformed object name|unknown revision|"
    r"invalid reference|not a valid (?:object|ref|branch)",
    re.IGNORECASE,
)
# what a command-line tool's error wrapper puts before the line that says what went wrong (the git server's
# "Cmd('git') failed due to: exit code(128)\n  cmdline: …\n  stderr: 'fatal: …'")
_STDERR = re.compile(r"^\s*stderr:\s*['\"]?(.*?)['\"]?\s*$", re.MULTILINE)
# arguments that name the object a call is about
_NAMES_OBJECT = re.compile(r"(?:^|_)(?:number|id|path|source|file|filename|branch|ref|name)$|[a-z0-9](?:Number|Id|ID)$")


def _unfilled(args: Mapping[str, Any], request: Request) -> str | None:
    """The first of the request's placeholders (``Request.slots``: "<amount>", "@login") that an argument value
    still holds as it is, else None."""
    text = json.dumps(args, ensure_ascii=False).lower()
    return next((slot for slot in request.slots if slot.lower() in text), None)


def _ask_alone(deps: TurnDeps, prompt: str, max_tokens: int) -> str:
    """The model's reply to ``prompt`` asked on its own (the chat lane, its KV not kept): one value or text a write
    needs, away from the whole call's arguments."""
    messages = [{"role": "system", "content": SYSTEM_CHAT}, {"role": "user", "content": prompt}]
    return deps.backend.chat(messages, lane=CHAT, max_tokens=max_tokens, keep=False).text


def _echoed(tool: Tool, args: Mapping[str, Any], request: Request) -> str | None:
    """The free-text parameter of ``tool`` whose value in ``args`` is the request itself (at least 6 words, and at
    least four fifths of the request's words in the request's order), else None. A request that quotes its text
    is not echoed: the quote is the value.

    Measured on the multi-step tune tasks (qwen1.5b): "Merge acme/api PR 6, then leave a comment on it with the
    merge commit SHA" merged, then commented the request, word for word."""
    own = re.findall(r"\w+", request.text.lower())
    if len(own) < 6:
        return None
    props = tool.input_schema.get("properties") or {}
    for name, value in args.items():
        if not isinstance(value, str) or (props.get(name) or {}).get("type") != "string":
            continue
        if any(q.strip() and q.strip().lower() in value.lower() for q in request.quoted):
            continue
        theirs = re.findall(r"\w+", value.lower())
        # the bounds first: the common subsequence costs words × words (a whole file's content)
        if 6 <= len(theirs) <= 1.5 * len(own) and _in_order(own, theirs) >= 0.8 * len(own):
            return name
    return None


# a code fence around a reply, with its language tag ("```json")
_FENCE = re.compile(r"^\s*```[\w-]*\s*|\s*```\s*$")
# a reply that declines to write, not the text
_REFUSAL = re.compile(r"^[\s\"'{]*(?:\w+\"?\s*:\s*\"?)?(?:I'm sorry|I am sorry|Sorry|I can(?:'|no)t|I'm unable)", re.I)


def _text_asked(deps: TurnDeps, request: Request, tool: Tool, param: str, steps: Sequence[_Step]) -> str | None:
    """The text of ``tool``'s ``param`` as the model writes it alone (:data:`TEXT_QUESTION`), over the outputs of
    this turn's calls (``steps``); None when the reply is empty or repeats the request (:func:`_echoed`)."""
    data = "\n".join(
        f"{s.tool.name} {json.dumps(s.arguments, ensure_ascii=False)}: {whole(s.text, 600)}" for s in steps
    )
    prompt = TEXT_QUESTION.format(request=request.text, data=data or "(no calls yet)", param=param, tool=tool.name)
    text = _FENCE.sub("", _ask_alone(deps, prompt, 96)).strip()
    if _REFUSAL.match(text):
        # measured on a reworded tune request (qwen1.5b): "I'm sorry, but I can't assist with that request." was
        # posted as the comment that was to tell bob-kim the issue was closed
        return None
    try:
        # measured (qwen1.5b): replied with the call's arguments as JSON, the text as its ``body``
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get(param), str):
        text = obj[param].strip()
    if not any(c.isalnum() for c in text) or _echoed(tool, {param: text}, request) is not None:
        return None
    return text


def _in_order(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest common subsequence of the word lists ``a`` and ``b``."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def _filled(value: Any, slot: str, filler: str) -> Any:
    """``value`` (arguments, or any JSON value in them) with ``slot`` replaced by ``filler`` in its every string."""
    if isinstance(value, str):
        return re.sub(re.escape(slot), lambda _: filler, value, flags=re.IGNORECASE)
    if isinstance(value, dict):
        return {k: _filled(v, slot, filler) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, slot, filler) for v in value]
    return value


def _value_read(deps: TurnDeps, request: Request, slot: str, reads: Sequence[_Step]) -> str | None:
    """The value ``slot`` stands for in the output of a read of this turn, as the model answers
    :data:`VALUE_QUESTION` over that output alone (the read of ``slot`` when it is a path the request takes a value
    from, else the last read); None when its reply is empty or is not in that output as written (a value no read
    returned is not written).

    Measured on the multi-step tune tasks (qwen1.5b): asked inside the whole call's arguments, with the output in
    the step's view, "write it … as 'September: <amount>'" kept "<amount>", and "call Ravi on his number from
    …/contacts.csv" wrote the path, even when the rewrite was told what the placeholder was."""
    if slot.startswith("/"):
        source = next((s for s in reversed(reads) if slot in _paths_read([s])), None)
        before = re.search(rf"((?:[\w'-]+\s+){{1,4}})(?:from|in)\s+{re.escape(slot)}", request.text)
        what = f'"{before.group(1).strip()}"' if before else f"what it takes from {slot}"
    else:
        # not a listing made in place of a read: the file's name is not the value in it
        source = next((s for s in reversed(reads) if s.instead_of is None), None)
        what = slot
    if source is None:
        return None
    args = json.dumps(source.arguments, ensure_ascii=False)
    prompt = VALUE_QUESTION.format(
        request=request.text, source=f"{source.tool.name} {args}", data=whole(source.text, 1500), what=what
    )
    reply = _ask_alone(deps, prompt, 32)
    value = (reply.strip().splitlines() or [""])[0].strip().strip("`'\"").strip()
    # in the output as a whole word or words: a stray "a" or "-" of a reply is no value
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", source.text, re.IGNORECASE) if value else None
    if found is None or not any(c.isalnum() for c in value) or value.lower() == slot.lower():
        return None
    return found.group()


def _with_value(args: dict[str, Any], slot: str, value: str) -> dict[str, Any]:
    """``args`` with ``slot`` replaced by ``value``: a source's path with the word before it ("his number from
    …/contacts.csv" → "his number 555-0199"), a placeholder as it is."""
    if not slot.startswith("/"):
        return dict(_filled(args, slot, value))
    out = _filled(args, f" from {slot}", f" {value}")
    return dict(_filled(_filled(out, f" in {slot}", f" {value}"), slot, value))


def _repository_as_value(args: Mapping[str, Any], request: Request) -> tuple[str, str] | None:
    """The first top-level argument, not a repository's own (``owner``, ``repo``…), whose value is one of the
    repositories the request names, or a path under it ("acme/docs", "acme/web/ui-label-color"), as
    ``param=value``, and that repository; else None. A repository is where a value is, not the value: "with the same
    colour acme/docs uses" was written ``color: "acme/docs"``. Only a call with an ``owner`` counts, and only
    ``owner/…`` refs of that owner: a file "docs/rate-limits.md" the request names is a path, not a repository."""
    owner = args.get("owner")
    if not isinstance(owner, str) or not owner:
        return None
    for k, v in args.items():
        if not isinstance(v, str) or "repo" in k.lower() or k.lower() in ("owner", "org", "organization"):
            continue
        for ref in request.repos:
            if ref.split("/")[0].lower() != owner.lower():
                continue
            if v.lower() == ref.lower() or v.lower().startswith(ref.lower() + "/"):
                return f"{k}={v}", ref
    return None


# a request to write a created object's number into another one: "mention the new issue's number in a comment on
# #3", "reference it by number in a comment on PR #5"
_MENTIONS_NUMBER = re.compile(
    r"\b(?:mention\w*|referenc\w*|link\w*|cit\w+|point\w*)\b[^.;]{0,40}?\b(?:number|it|its|them|the new)\b"
    r"|\b(?:its|the new \w+(?:'s)?) number\b",
    re.IGNORECASE,
)
_TEXT_PARAMS = ("body", "comment", "text", "message")


def _created_number(steps: Sequence[_Step]) -> int | None:
    """The number of the object the last write of this turn that returned one created: its ``"number": 8``, or the
    number its ``url`` ends with (GitHub's server answers a create with ``{"id": "26", "url": "…/issues/8"}``: the
    id is no number)."""
    for s in reversed(steps):
        if not s.writes:
            continue
        try:
            out = json.loads(s.text)
        except ValueError:
            continue
        number = numbered(out).get("number") if isinstance(out, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            return number
    return None


def _refers_to_created(tool: Tool, args: dict[str, Any], request: Request, steps: Sequence[_Step]) -> dict[str, Any]:
    """A write after a write of this turn that created a numbered object (an issue): measured on the tune split
    (qwen1.5b), "Open an acme/web issue 'Redirect old blog URLs' and then mention the new issue's number in a
    comment on the footer links issue (#3)" commented on the new issue, without its number.

    * its number parameter (``issue_number``) is the one ``#N`` the request names outside its quoted values when
      the model wrote the new object's number there (the request names the object the comment goes on);
    * when the request asks for the new number to be mentioned (:data:`_MENTIONS_NUMBER`) and the write is about
      another object, its text (``body``) says ``#N`` if it does not yet.

    ``args`` unchanged otherwise."""
    created = _created_number(steps)
    if created is None:
        return args
    quoted = " ".join(request.quoted)
    refs = {r for r in request.refs if f"#{r}" not in quoted}
    keys = [k for k in args if NUMBER_FIELD.search(k) and not isinstance(args[k], bool)]
    out = dict(args)
    for k in keys:
        if str(out[k]) == str(created) and str(created) not in request.numbers and len(refs) == 1:
            out[k] = int(next(iter(refs)))
    about_another = any(str(out[k]) != str(created) for k in keys)
    text = next((k for k in _TEXT_PARAMS if isinstance(out.get(k), str)), None)
    mention = about_another and text is not None and _MENTIONS_NUMBER.search(request.text)
    if mention and text is not None and not re.search(rf"#{created}(?!\d)", out[text]):
        out[text] = f"{out[text].rstrip()} (#{created})".lstrip()
    return out


# "tag the … issue as a good first issue (keep …)", "label it as wontfix": the label the request names after "as"
_TAGGED_AS = re.compile(
    r"\b(?:tag|label|mark)\w*\b[^.;:]*?\bas\s+(?:an?\s+)?([\w:/-]+(?:\s+[\w:/-]+){0,3}?)\s*"
    r"(?=$|[(.,;!]|\s+(?:and|but|keep\w*|too|as well)\b)",
    re.IGNORECASE,
)
# what "mark it as …" says of a state, not a label
_STATE_AS = frozenset(
    {"closed", "open", "opened", "completed", "complete", "done", "resolved", "read", "ready", "draft"}
)


def _with_label_named(args: dict[str, Any], request: Request) -> dict[str, Any]:
    """``args`` of a write that sets ``labels``, with the label the request names after "tag/label/mark … as"
    added when the list lacks it; ``args`` unchanged otherwise. Measured on the tune split (qwen1.5b): "tag the acme/api
    issue about the health endpoint as a good first issue (keep whatever labels it already has)" was written
    ``"labels": ["enhancement"]``, its labels before, without the new one."""
    labels = args.get("labels")
    m = _TAGGED_AS.search(request.text)
    if not isinstance(labels, list) or m is None:
        return args
    named = m.group(1).strip()
    if named.lower() in _STATE_AS or any(isinstance(x, str) and x.lower() == named.lower() for x in labels):
        return args
    return {**args, "labels": [*labels, named]}


# a request to keep what an issue is labelled already: "(keep whatever labels it already has)", "keeping its current
# labels", "without removing its other labels", "don't drop its existing labels"
_KEEP_LABELS = re.compile(
    r"\b(?:keep(?:ing|s)?|without\s+(?:removing|losing|dropping)|(?:don'?t|do\s+not)\s+(?:remove|lose|drop))\b"
    r"[^.;!?]{0,40}?\blabels\b",
    re.IGNORECASE,
)


def _keeping_labels(args: dict[str, Any], request: Request, results: Sequence[str]) -> dict[str, Any]:
    """``args`` of a write that sets an issue's ``labels``, with the labels a read of this turn returned for that
    issue (its ``issue_number``) put first, when the request asks to keep them (:data:`_KEEP_LABELS`) and the list
    lacks some; ``args`` unchanged otherwise. Setting ``labels`` replaces them all. Measured on the tune split
    (qwen1.5b): with the search's row of issue 7 labelled ``enhancement``, "tag … as a good first issue (keep
    whatever labels it already has)" was written ``["enhancement", "good first issue"]`` on one run and, with two
    more examples in the bank, ``["good_first_issue", "good first issue"]`` on the next."""
    labels, number = args.get("labels"), args.get("issue_number")
    if not isinstance(labels, list) or number is None or not _KEEP_LABELS.search(request.text):
        return args
    had = _labels_of(number, results)
    have = {str(x).lower() for x in labels}
    missing = [x for x in had if x.lower() not in have]
    return {**args, "labels": [*missing, *labels]} if missing else args


def _labels_of(number: Any, results: Sequence[str]) -> list[str]:
    """The label names the first object numbered ``number`` has in the JSON of ``results`` (a search's rows, a
    read's object; :func:`sources.rows_with`), else []."""
    for text in results:
        try:
            rows = rows_with(json.loads(text), "number")
        except ValueError:
            continue
        for row in rows:
            if str(row["number"]) == str(number) and isinstance(row.get("labels"), list):
                names = [x if isinstance(x, str) else x.get("name") for x in row["labels"] if isinstance(x, str | dict)]
                return [x for x in dict.fromkeys(names) if isinstance(x, str) and x]
    return []


def _stages_first(
    deps: TurnDeps, waiting: str, request: Request, steps: Sequence[_Step]
) -> tuple[str, dict[str, Any]] | None:
    """The call that stages the files the request describes (:func:`grounding.described_files`, as a status of
    this turn lists them) before ``waiting``, a write that takes no files (``git_commit``): a tool of its server
    with a ``files`` list that the examples make before it (``git_add``), with the arguments it shares with the
    last read (``repo_path``). None when the request describes no files so listed, or no such tool."""
    tool = deps.tools().get(waiting)
    reads = [s for s in steps if s.read]
    if tool is None or not reads or "files" in (tool.input_schema.get("properties") or {}):
        return None
    files = described_files(request, [s.text for s in reads])
    if not files:
        return None
    before = deps.router.made_before(waiting)
    for q, t in deps.tools().items():
        props = t.input_schema.get("properties") or {}
        if t.server != tool.server or q not in before or (props.get("files") or {}).get("type") != "array":
            continue
        shared = {k: v for k, v in reads[-1].arguments.items() if k in props and k != "files"}
        return q, {**shared, "files": files}
    return None


def _files_described(
    tool: Tool, args: Mapping[str, Any], request: Request, results: Sequence[str]
) -> dict[str, Any] | None:
    """``args`` with its list of files (an array parameter named ``files`` or ``paths``) set to the files a status
    of this turn lists in the state the request describes (:func:`grounding.described_files`); None when it has
    no such parameter or nothing is so listed."""
    props = tool.input_schema.get("properties") or {}
    key = next((k for k in ("files", "paths") if (props.get(k) or {}).get("type") == "array"), None)
    if key is None:
        return None
    found = described_files(request, results)
    if not found or args.get(key) == found:
        return None
    return {**args, key: found}


def _folder_named(args: Mapping[str, Any], request: Request) -> str | None:
    """The folder the request names that a refused local write's object path is in ("…/reports" for a made-up
    ``…/reports/Q2-report``), or that folder itself given as the object ("move the Q2 report from …/reports"
    written ``source: "…/reports"``): where the next step lists. None when the write names no such path.

    A whole path the request writes, not a prefix of one: measured on the tune split, the folder ``…/files`` of
    ``source: "…/files/reports"`` was listed, as every path of the request starts with it."""
    named = set(paths_in(request.text))
    for k in ("source", "path", "src", "file_path"):
        v = args.get(k)
        if not isinstance(v, str) or not v.startswith("/"):
            continue
        v = v.rstrip("/")
        if v in named and "." not in v.rsplit("/", 1)[-1]:
            return v
        folder = v.rsplit("/", 1)[0]
        if folder in named:
            return folder
    return None


def _in_repository(tool: Tool, args: dict[str, Any], ref: str) -> dict[str, Any]:
    """``args`` of a read with its ``owner`` and ``repo`` set to ``ref`` ("acme/docs"), for a tool that has both;
    or, when ``ref`` is a local folder (:func:`_folder_named`), its ``path`` set to it: measured on the tune split,
    after "move the Q2 report from …/reports" was refused for a made-up file name, the model listed the folder the
    report was to go to, and the move was refused again."""
    props = tool.input_schema.get("properties") or {}
    if ref.startswith("/"):
        return {**args, "path": ref} if "path" in props else args
    if "owner" not in props or "repo" not in props or ref.count("/") != 1:
        return args
    owner, repo = ref.split("/")
    return {**args, "owner": owner, "repo": repo}


def _creates_named(tool: Tool, args: Mapping[str, Any], request: Request) -> bool:
    """Whether ``tool`` creates what it overwrites ("Create a new file or completely overwrite …") and its object is
    one the request names as written (a path): a read that found that file missing is no reason not to write it."""
    if not OVERWRITES.search(tool.description):
        return False
    named = [v for k, v in args.items() if isinstance(v, str) and _NAMES_OBJECT.search(k)]
    return bool(named) and all(v in request.text for v in named)


def _reported_missing(steps: Sequence[_Step], args: Mapping[str, Any]) -> str | None:
    """Why the object ``args`` name does not exist, when a read of this turn asked for it and failed as not found
    (its error's first line), else None."""
    values = {json.dumps(v) for v in args.values() if isinstance(v, str | int) and not isinstance(v, bool)}
    for s in steps:
        if s.may_write or not s.is_error or not _NOT_FOUND.search(s.text):
            continue
        named = [json.dumps(v) for k, v in s.arguments.items() if _NAMES_OBJECT.search(k) and not isinstance(v, bool)]
        if named and all(v in values for v in named):
            return f"{s.tool.name} found it missing: {_first_line(s.text)}"
    return None


# a request that asks for what a tool that overwrites does ("overwrite it", "so it only says …")
_ASKS_OVERWRITE = re.compile(
    r"\b(?:overwrite|replace (?:the )?(?:whole|entire|all)|only says?|from scratch|start over)\b", re.IGNORECASE
)


def _overwrite_unasked(tool: Tool, request: Request) -> bool:
    """Whether ``tool`` says it overwrites and the request does not ask for what it does (:data:`_ASKS_OVERWRITE`)."""
    return bool(OVERWRITES.search(tool.description)) and not _ASKS_OVERWRITE.search(request.text)


def _overwrites_read(
    tool: Tool, steps: Sequence[_Step], args: Mapping[str, Any], request: Request
) -> tuple[str, list[str]] | None:
    """Why a call of a tool that overwrites (its description says so) may not run, and the parameters naming its
    object: that object (a path argument) is one a read of this turn just read, or a listing of this turn listed,
    so it exists, and the request does not ask for it to be replaced whole. None when it may.

    Measured on the multi-step check tasks (qwen1.5b): after reading contacts.csv, "Change Maria Gonzalez's phone
    number" was written as the whole file's new text, by a model that cannot copy a file's every line; on tune,
    "tick it off in …/todo.md" left a one-line list."""
    if not _overwrite_unasked(tool, request):
        return None
    read = {v for s in steps if s.read for v in s.arguments.values() if isinstance(v, str)} | set(_paths_read(steps))
    # or a listing of this turn shows it in its folder: measured on the tune split, "Add that date to the budget item
    # in …/todo.md" listed …/notes, then replaced todo.md whole with one line
    read |= {
        f"{str(s.arguments['path']).rstrip('/')}/{name}"
        for s in steps
        if s.read and s.instead_of is not None
        for name in listed_files(s.text)
    }
    named = {k: v for k, v in args.items() if isinstance(v, str) and _NAMES_OBJECT.search(k) and v in read}
    if not named:
        return None
    why = "which this turn read; the request asks to change it, not to overwrite it"
    return f"it would replace the whole of {next(iter(named.values()))}, {why}", list(named)


def _changes_not_made(steps: list[_Step], not_run: list[str]) -> str | None:
    """The answer when the turn tried a change and none succeeded (a write failed, or was refused, not confirmed or
    left without valid arguments: ``not_run``), written from the calls, not by the model: measured on the multi-step
    check tasks, qwen1.5b answered "The comment was added to the PR" after both its comment calls had been refused,
    under a prompt that said nothing had changed. None when a change succeeded or none was tried (the model answers,
    as for any read)."""
    failed = [s for s in steps if s.may_write and s.is_error]
    if not (failed or not_run) or any(s.writes for s in steps):
        return None
    why = [_failure(s) for s in failed] + [x.rstrip(".") for x in not_run]
    # a read that failed is reported too: "no such file" is what the user of "fix the typo in X" must learn
    return _nothing_changed("; ".join(why) + ".", [s for s in steps if not s.may_write])


def _partly_done(steps: list[_Step], not_run: list[str]) -> str | None:
    """The answer when some changes were made and another was not (it failed, or was refused, not confirmed or
    left without valid arguments, and did not succeed later), written from the calls: measured on the tune split,
    after the folder was made and the move refused, qwen1.5b answered "The Q2 report … was moved into it". None
    when every change tried was made."""
    made = {s.tool.name for s in steps if s.writes}
    if not made:
        return None
    failed = [s for s in steps if s.may_write and s.is_error and s.tool.name not in made]
    pending = [x.rstrip(".") for x in not_run if x.split(" ", 1)[0] not in made]
    if not (failed or pending):
        return None
    done = "; ".join(f"{s.tool.name} returned `{_first_line(s.text).replace('`', chr(39))}`" for s in steps if s.writes)
    why = "; ".join([_failure(s) for s in failed] + pending)
    found = [_failure(s) if s.is_error else _found(s) for s in steps if not s.may_write]
    return f"Done: {done}. Not done: {why}." + (" What I found: " + "; ".join(found) + "." if found else "")


def _unchanged(request: Request, steps: list[_Step], note: str) -> str | None:
    """For a request for a change that no call made (every call a read), the answer written from the calls; None
    when a call wrote or the request asks for no change."""
    if not request.change or any(s.may_write for s in steps):
        return None
    stopped = f" {note.strip().strip('()')}" if note else ""
    return _nothing_changed(f"no call made the change you asked for.{stopped}", steps)


def _nothing_changed(why: str, reads: Sequence[_Step]) -> str:
    """The answer written from the calls when nothing was changed: ``why``, then what each of ``reads`` found (or
    its error)."""
    found = [_failure(s) if s.is_error else _found(s) for s in reads]
    return f"Nothing was changed: {why}" + (" What I found: " + "; ".join(found) + "." if found else "")


def _failure(s: _Step) -> str:
    """A failed call as a written answer says it: the error is the tool's output, quoted as data (in backticks), as
    what the reads found is; an error that says its object is not there is said so in words first, with the name
    the error quotes ("git_add failed: 'src/invoice.py' was not found (`fatal: pathspec …`)"): measured on the
    multi-step tune tasks, "Commit my changes to src/invoice.py" (no such file) was answered with git's
    ``exit code(128)`` alone, which tells the user nothing."""
    line = _error_line(s.text)
    quoted = f"`{line.replace('`', chr(39))}`"
    if not (_NOT_FOUND.search(s.text) or _GIT_MISSING.search(s.text)):
        return f"{s.tool.name} failed: {quoted}"
    name = re.search(r"'([^'\n]{1,120})'", line)
    what = f"'{name.group(1)}' was not found" if name else "what it names was not found"
    return f"{s.tool.name} failed, as {what} ({quoted})"


def _error_line(text: str) -> str:
    """The line of an error that says what went wrong: a command's ``stderr:`` line when the error wraps one (its
    first line is only the exit code), else the first line."""
    m = _STDERR.search(text)
    return _first_line(m.group(1)) if m and m.group(1).strip() else _first_line(text)


def _found(s: _Step) -> str:
    """One read of a written answer: what it found, the tool's output quoted as data (in backticks), or that it
    found nothing, said in words ("the dark mode PR" a search did not find is what the user must learn)."""
    if finds_nothing(s.text):
        args = json.dumps(s.arguments, ensure_ascii=False)
        return f"{s.tool.name} found nothing matching {args}"
    data = surrogate(s.text).replace("`", "'")
    return f"{s.tool.name} returned `{data}`"


def _first_line(text: str, limit: int = 200) -> str:
    line = next((x.strip() for x in text.splitlines() if x.strip()), "no message")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _next(
    deps: TurnDeps, request: Request, window: list[dict[str, str]], tried: list[CallSoFar]
) -> RouteOutcome | None:
    """The next-step decision; None when it failed (the calls that ran are answered anyway)."""
    try:
        return deps.router.next_step(request.text, window, tried)
    except Exception as e:
        log.warning("the next-step decision failed: %s", e)
        return None


def _emit_route(emit: Emit, nxt: RouteOutcome, step: int) -> None:
    emit(
        RouteEvent(
            decision=nxt.decision,
            tool=nxt.tool,
            operation=nxt.operation,
            candidates=[Candidate(name=n, score=s) for n, s in nxt.candidates],
            latency_ms=nxt.latency_ms,
            step=step,
        )
    )


def _steps_note(request: Request, steps: list[_Step]) -> str:
    """The calls this turn made so far, as the next call's arguments read them (one line each, with a compact view
    of the output: the value a later call needs, ids, numbers, names, URLs, SHAs, paths), then ``LATER_STEP``.
    It goes into the argument request itself: in the history before it, a small model still wrote
    ``issue_write {"method": "create", …}`` for "close that issue" after a search had found it."""
    notes = [
        call_note(s.tool.name, s.arguments) + (" FAILED: " if s.is_error else " → ") + step_view(s.text, request)
        for s in steps
    ]
    return "\n".join(["Calls made so far:", *notes, LATER_STEP])


def _record(turn: Turn, step: _Step) -> None:
    """Keep the call in the turn at once, so a cancelled turn still shows every call that ran."""
    if turn.tool is not None:
        turn.earlier.append(Call(turn.tool, turn.arguments or {}, turn.tool_result or "", turn.tool_output))
    turn.tool, turn.arguments, turn.tool_result = step.qualified, step.arguments, surrogate(step.text)
    turn.tool_output = kept_output(step.text)


def _with_repair(note: str | None, tool: Tool, repair: _Step) -> str:
    """The argument note for a rewrite of ``repair``'s failed call: its arguments and error (:data:`REPAIR`)."""
    failed = REPAIR.format(
        tool=tool.name, args=json.dumps(repair.arguments, ensure_ascii=False), error=_first_line(repair.text)
    )
    return f"{note}\n{failed}" if note else failed


def _write_args(
    deps: TurnDeps,
    tool: Tool,
    qualified: str,
    operation: str | None,
    request: Request,
    history: list[dict[str, str]],
    steps: list[_Step],
    note: str | None,
    rewrite: bool,
) -> dict[str, Any] | _Halt:
    """The arguments the model writes for ``tool`` under ``note``: beside the tool's closest example when it
    rewrites a failed call (``rewrite``, the note then holds the error: :func:`_with_repair`), else beside the
    examples the turn's uses give."""
    try:
        if rewrite:
            uses = replace(deps.examples, arguments="retrieved", arg_examples=1)
        else:
            uses = deps.examples.with_history(bool(history))
        examples = deps.router.examples_for(request.text, qualified, operation, uses)
        result = ArgumentWriter(deps.backend, lane=deps.lane).write(
            tool,
            request.text,
            history,
            note=note,
            examples=examples,
            operation=operation,
            results=[st.text for st in steps],
            keys=deps.router.arg_keys(request.text, qualified, operation),
        )
    except Exception as e:  # the engine failed (a remote server down, a full context): the turn ends here
        return _Halt("arguments", f"argument writing for {tool.name} failed: {e}", tool.name, tool.server)
    if result.arguments is None:
        why = f"could not write valid arguments for {tool.name}: {result.schema_error}"
        return _Halt("arguments", why, tool.name, tool.server)
    return result.arguments


def _paths_read(steps: Sequence[_Step]) -> list[str]:
    """The local paths the successful reads of ``steps`` were given, by ``path`` or in a list of ``paths``."""
    found: list[str] = []
    for s in steps:
        if s.read:
            given = s.arguments.get("paths")
            found += [
                p
                for p in ([s.arguments.get("path")] + (given if isinstance(given, list) else []))
                if isinstance(p, str)
            ]
    return found


def _reads_only(deps: TurnDeps) -> Callable[[str], bool]:
    """Whether a tool of ``deps`` is one that runs without confirmation (it reads)."""
    return lambda q: not needs_confirmation(deps.annotations(q))


def _instead(
    deps: TurnDeps,
    tool: Tool,
    instead: tuple[str, dict[str, Any] | None],
    why: str,
    request: Request,
    history: list[dict[str, str]],
    steps: list[_Step],
    step: int,
    emit: Emit,
    check: Callable[[], None],
) -> _Step | _Halt:
    """The call ``instead`` (a tool, and its arguments, or None to write them) made in this step in place of
    ``tool``'s, reported as such: a skip that says why, and the route to it."""
    emit(ToolSkippedEvent(name=tool.name, server=tool.server, reason=why, step=step))
    emit(RouteEvent(decision="auto", tool=instead[0], candidates=[Candidate(name=instead[0], score=1.0)], step=step))
    return _call_step(deps, instead[0], None, request, history, steps, step, emit, check, given=instead[1])


def _call_step(
    deps: TurnDeps,
    qualified: str,
    operation: str | None,
    request: Request,
    history: list[dict[str, str]],
    steps: list[_Step],
    step: int,
    emit: Emit,
    check: Callable[[], None],
    repair: _Step | None = None,
    purpose: str | None = None,
    given: dict[str, Any] | None = None,
    at: str | None = None,
    placeholder: str | None = None,
) -> _Step | _Halt:
    """Write arguments for ``qualified`` (its ``operation`` fixed, when routing chose one), hold or run it: the call
    that ran, or why it did not (``_Halt``). ``repair``: the same tool's call that just failed on a parameter; the
    arguments are written again, told its error, beside the tool's closest example, or, when the error names
    optional arguments it set, are the same less those (:func:`without_named_optional`). ``purpose``: the note of a
    lookup that a write waits for (:data:`LOOKUP`). ``given``: the arguments, written already (a search again by
    its stems, :func:`broadened`). ``at``: the repository a refused write named as a value ("acme/docs"), where a
    read at this step reads. ``placeholder``: the note of a rewrite of arguments that held the request's placeholder
    (:data:`PLACEHOLDER`)."""
    tool = deps.tools().get(qualified)
    if tool is None:
        return _Halt("route", f"routed to {qualified}, which is no longer offered")
    check()
    note = _steps_note(request, steps) if steps else purpose
    fixed = without_named_optional(tool, repair.arguments, repair.text) if repair is not None else given
    if repair is not None and fixed is None and (missing := text_missing(tool, repair.arguments, repair.text)):
        # the text the failed write left out, asked alone: measured on reworded tune requests (qwen1.5b), "close
        # the issue … as completed, and leave a comment there telling bob-kim" wrote add_issue_comment with no body,
        # and its rewrite, told "at least one of 'body' or 'reaction' is required", wrote the same again
        text = _text_asked(deps, request, tool, missing, steps)
        fixed = {**repair.arguments, missing: text} if text is not None else None
    if fixed is not None:
        args = fixed  # the rewrite leaves out what the error named, nothing else; or the arguments given
    else:
        if repair is not None:
            note = _with_repair(note, tool, repair)
        elif placeholder is not None:
            note = f"{note}\n{placeholder}" if note else placeholder
        written = _write_args(deps, tool, qualified, operation, request, history, steps, note, repair is not None)
        if isinstance(written, _Halt):
            return written
        args = written if purpose is None else searched_by_description(tool, written, request)
    if _repeats(qualified, args, [*steps, *([repair] if repair else [])]):
        why = f"it would call {tool.name} again with the same arguments, so the loop stopped"
        return _Halt("repeat", why, tool.name, tool.server)
    annotations = deps.annotations(qualified)
    if (
        needs_confirmation(annotations)
        and not _creates_named(tool, args, request)
        and (gone := _reported_missing(steps, args)) is not None
    ):
        # a read of this turn found the object missing: changing it would make something up (create a file for
        # "fix the typo in X", write to an issue that does not exist)
        return _Halt("arguments", f"{tool.name} was not run: {gone}", tool.name, tool.server)
    if needs_confirmation(annotations) and (whole := _overwrites_read(tool, steps, args, request)) is not None:
        why, params = whole
        editor = deps.router.in_place(qualified, params)
        if editor is None or editor == qualified:
            return _Halt("arguments", why, tool.name, tool.server)
        # the same server's write that changes part of it, in this step: measured on the multi-step tune tasks
        # (qwen1.5b), "tick it off in …/todo.md" and "Replace the TODO placeholder in …" read the file, then chose
        # write_file, and the turn ended with nothing changed
        why = f"{why}: {editor} changes it in place"
        made = _instead(deps, tool, (editor, None), why, request, history, steps, step, emit, check)
        return replace(made, stands_for=qualified) if isinstance(made, _Step) else made
    reads = [s for s in steps if s.read]
    slot = None
    if needs_confirmation(annotations):
        slot = _unfilled(args, request) or source_in_text(args, request, _paths_read(reads))
    echo = _echoed(tool, args, request) if needs_confirmation(annotations) and slot is None else None
    if echo is not None:
        # the text the request asks for is not the request: asked alone, over what the calls returned; a reply
        # that repeats the request too is refused, so the request is never written as its own text
        text = _text_asked(deps, request, tool, echo, steps)
        if text is None:
            why = f"its {echo} repeats the request, not the text the request asks for"
            return _Halt("arguments", why, tool.name, tool.server, refused=args)
        args = {**args, echo: text}
    if slot is not None and slot.startswith("@"):
        # a login's placeholder ("mentioning them by @login") and one login the reads returned where the request
        # looks ("whoever is assigned": assignees): it is that login. Measured on the multi-step tune tasks
        # (qwen1.5b): told so, the rewrite still wrote "@login", with "assignees": ["bob-kim"] in the step's view
        logins = list(dict.fromkeys(x for s in reads for x in named_logins(s.text, request)))
        if len(logins) == 1:
            args = _filled(args, slot, f"@{logins[0]}")
            slot = _unfilled(args, request)
    if (
        slot is not None
        and not slot.startswith("@")  # a login: only the one the reads returned where the request looks, above
        and reads
        and repair is None
        and (value := _value_read(deps, request, slot, reads))
    ):
        # asked alone over the output it is in, the value the placeholder (or the source's path) stands for
        args = _with_value(args, slot, value)
        slot = _unfilled(args, request) or source_in_text(args, request, _paths_read(reads))
    if slot is not None:
        # measured on the multi-step tune tasks (qwen1.5b): "write it … as 'September: <amount>'" wrote the text
        # with "<amount>" in it, and "mentioning them by @login" a comment saying "@login". Refused like a number
        # nobody gave, so the next step may read the value first; after a read, written again once, told so
        # (the comment after the search that found the assignee still said "@login")
        if reads and given is None and repair is None and placeholder is None:
            hint = PLACEHOLDER.format(tool=tool.name, args=json.dumps(args, ensure_ascii=False), slot=slot)
            return _call_step(
                deps,
                qualified,
                operation,
                request,
                history,
                steps,
                step,
                emit,
                check,
                purpose=purpose,
                placeholder=hint,
            )
        why = f"{slot} is the request's placeholder for a value not looked up yet"
        if slot.startswith("/"):
            why = f"its text holds {slot}, where the value is, not the value"
        return _Halt("arguments", why, tool.name, tool.server, refused=args)
    misplaced = _repository_as_value(args, request) if needs_confirmation(annotations) else None
    if misplaced is not None:
        param = misplaced[0].split("=", 1)[0]
        found = value_at(args, param, misplaced[1], request, [(s.arguments, s.text) for s in reads])
        if found is not None:
            args = found  # read there already: the described row's field of that name
        else:
            # measured on the multi-step tune tasks (qwen1.5b): "a 'good first issue' label … with the same colour
            # acme/docs uses for it" was created with the colour "acme/docs". Refused like a placeholder, so the
            # next step reads the value there first.
            why = f"{misplaced[0]} names a repository where the value is, not the value; it was not looked up yet"
            return _Halt("arguments", why, tool.name, tool.server, refused=args, where=misplaced[1])
    if at is not None and not needs_confirmation(annotations):
        args = _in_repository(tool, args, at)  # the read of a value in the repository a refused write named
    if not needs_confirmation(annotations) and given is None:
        said = "\n".join([conversation_text(request.text, history), *(s.text for s in steps)])
        listed = [str(s.arguments.get("path", "")) for s in reads]
        instead = listing_first(tool, args, request, said, listed, deps.tools(), _reads_only(deps))
        if instead is not None:
            why = f"{args['path']} is a file nobody named: {instead[1]['path']} is listed first"
            listing = _instead(deps, tool, instead, why, request, history, steps, step, emit, check)
            return replace(listing, instead_of=(qualified, dict(args))) if isinstance(listing, _Step) else listing
    if needs_confirmation(annotations) and repair is None and len(steps) + 2 <= deps.max_steps:
        reader = next((s.qualified for s in reversed(reads) if isinstance(s.arguments.get("path"), str)), None)
        source = unread_source(tool, args, request, _paths_read(reads), reader)
        if source is not None:
            why = f"it waited for a read of {source[1]['path']}, which the request names as where its value is"
            return _instead(deps, tool, source, why, request, history, steps, step, emit, check)
    results = [s.text for s in steps]
    seen = [*history, {"role": "assistant", "content": note}] if note else history
    if needs_confirmation(annotations):
        args = _refers_to_created(tool, args, request, steps)
        args = _with_label_named(args, request)
        args = _keeping_labels(args, request, results)
    decision = decide(tool, annotations, args, request, seen, deps.auto_yes, results)
    if isinstance(decision, Refuse) and (files := _files_described(tool, args, request, results)) is not None:
        # the files in the state the request describes, as the turn's status listed them: measured on the tune
        # split, "Stage every untracked file …, but not the modified one" was written as the modified one, refused,
        # and written so again
        args = files
        decision = decide(tool, annotations, args, request, seen, deps.auto_yes, results)
    if isinstance(decision, Skip):
        # the route event still names the tool; this says why it was not used
        emit(ToolSkippedEvent(name=tool.name, server=tool.server, reason=decision.reason, step=step))
        return _Halt("skip", decision.reason, tool.name, tool.server)
    if isinstance(decision, Refuse):
        return _Halt(
            "arguments", decision.reason, tool.name, tool.server, refused=args, where=_folder_named(args, request)
        )
    confirmed = True
    if isinstance(decision, Ask):
        confirmed = bool(deps.confirm and deps.confirm(qualified, args, annotations))
    emit(ToolCallEvent(name=tool.name, server=tool.server, arguments=args, confirmed=confirmed, step=step))
    if isinstance(decision, Ask) and not confirmed:
        return _Halt("confirm", decision.refusal, tool.name, tool.server)
    check()
    try:
        out = deps.call_tool(qualified, args)
    except Exception as e:
        if step == 1:
            return _Halt("tool", f"{tool.name} failed: {e}", tool.name, tool.server)
        out = CallResult(f"{tool.name} failed: {e}", True)  # seen by the next decision like an error result
    emit(
        ToolResultEvent(name=tool.name, is_error=out.is_error, text=surrogate(out.text), chars=len(out.text), step=step)
    )
    return _Step(qualified, tool, args, out.text, out.is_error, decision.may_write)


def _repeats(qualified: str, args: Mapping[str, Any], steps: Sequence[_Step]) -> bool:
    """Whether the call was made before in this turn, and no write has succeeded since: with nothing changed it can
    only end as it did. After a write (a commit after ``git_add`` staged what it lacked) it may not."""
    last = max((i for i, s in enumerate(steps) if s.qualified == qualified and s.arguments == args), default=None)
    return last is not None and not any(s.writes for s in steps[last + 1 :])


def _answer_prompt(
    deps: TurnDeps, request: Request, history: list[dict[str, str]], steps: list[_Step], note: str
) -> list[dict[str, str]]:
    """The answer's chat: one call answered as before the loop (a template for a write, a read, an empty read, an
    error); several, a loop that stopped early, or a request for a change that no call made, from the list of calls
    that ran, and only those (with ``NOTHING_CHANGED`` for the last)."""
    if request.change and not any(s.writes for s in steps):
        note += NOTHING_CHANGED
    if len(steps) == 1 and not note:
        answer = _one_call(deps, request, steps[0])
    else:
        calls = "".join(
            TOOL_STEP.format(
                n=i,
                tool=s.tool.name,
                args=json.dumps(s.arguments, ensure_ascii=False),
                outcome="FAILED" if s.is_error else "done" if s.may_write else "returned",
                data=_data(deps, request, s),
            )
            for i, s in enumerate(steps, 1)
        )
        answer = TOOL_STEPS.format(request=request.text, calls=calls or "(none)\n", note=note)
    return [{"role": "system", "content": SYSTEM_MAIN}, *history, {"role": "user", "content": answer}]


def _data(deps: TurnDeps, request: Request, s: _Step) -> str:
    """What the answer reads of a call's output: a compact view (agent/view.py), the whole of it for an error or
    on demand."""
    if s.is_error or not deps.compact:
        return whole(s.text)
    return answer_view(s.text, request, deps.max_items).text


def _one_call(deps: TurnDeps, request: Request, s: _Step) -> str:
    # a write's empty output is its success; a read's means it found nothing, which answers nothing
    template = (
        TOOL_ERROR if s.is_error else TOOL_DONE if s.may_write else TOOL_EMPTY if carries_nothing(s.text) else TOOL_DATA
    )
    args = json.dumps(s.arguments, ensure_ascii=False)
    return template.format(tool=s.tool.name, args=args, data=_data(deps, request, s), request=request.text)
