"""The turn pipeline on the tiny model with a real retrieval router (MiniLM, no reranker): event order,
confirmation, surrogates, and that every failure leaves the conversation as it was."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.events import Event
from nexus_agent.agent.history import Conversation, Turn, carries_nothing, surrogate
from nexus_agent.agent.prompts import SYSTEM_CHAT
from nexus_agent.agent.routing_adapter import AgentRouter
from nexus_agent.agent.turn import (
    CallResult,
    RouteOutcome,
    TurnCancelled,
    TurnDeps,
    TurnRouter,
    needs_confirmation,
    run_turn,
)
from nexus_agent.backend import LocalBackend
from nexus_agent.engine import CHAT, Engine, EngineConfig
from nexus_agent.registry import Registry, Tool, load_registry
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.options import RouterOptions


@pytest.fixture(scope="module")
def reg(registry_dir: Path) -> Registry:
    return load_registry(registry_dir)


@pytest.fixture(scope="module")
def tools(reg: Registry) -> dict[str, Tool]:
    return {t.qualified_name: t for t in reg.profile("github_default")}


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(EngineConfig(model="tiny", n_ctx=4096, n_threads=1))
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def router(tools: dict[str, Tool]) -> AgentRouter:
    return AgentRouter.create(list(tools.values()), RouterOptions(embedder="minilm"), None)


@pytest.fixture
def chats(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The message lists the engine is asked to render, in order (the answer prompt is the last)."""
    seen: list[Any] = []
    real_chat = engine.tokenize_chat
    monkeypatch.setattr(engine, "tokenize_chat", lambda m, *a, **k: seen.append(m) or real_chat(m, *a, **k))
    return seen


def _deps(
    engine: Engine,
    router: TurnRouter,
    tools: dict[str, Tool],
    calls: list[Any],
    result: Any = None,
    confirm: bool = False,
    yes: bool = False,
) -> TurnDeps:
    def call_tool(name: str, args: dict[str, Any]) -> CallResult:
        calls.append((name, args))
        if isinstance(result, Exception):
            raise result
        return result

    annotations = {"github__get_me": {"readOnlyHint": True}}
    return TurnDeps(
        backend=LocalBackend(engine),
        router=router,
        tools=lambda: tools,
        annotations=annotations.get,
        call_tool=call_tool,
        confirm=lambda *a: confirm,
        auto_yes=yes,
    )


def test_read_only_tool_runs_and_history_keeps_only_a_surrogate(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool]
) -> None:
    payload = json.dumps({"login": "octo-dev", "name": "Octo Dev", "bio": "x" * 5000})
    calls: list[Any] = []
    convo = Conversation()
    events: list[Event] = []
    run_turn(
        _deps(engine, router, tools, calls, CallResult(payload, False)),
        convo,
        "show my GitHub user profile (get me)",
        events.append,
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "route" and kinds[-1] == "answer", kinds
    route = events[0]
    assert route.tool == "github__get_me", route  # type: ignore[union-attr]
    assert calls == [("github__get_me", {})]
    result = next(e for e in events if e.type == "tool_result")
    assert result.chars == len(payload) and len(result.text) < 600  # type: ignore[union-attr]
    assert len(convo.turns) == 1
    assert convo.turns[0].tool_result == surrogate(payload)
    assert "octo-dev" in convo.turns[0].tool_result
    assert "x" * 1000 not in json.dumps(convo.window())


def test_tool_that_may_write_is_not_run_without_confirmation(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool]
) -> None:
    calls: list[Any] = []
    convo = Conversation()
    events: list[Event] = []
    annotations = {"readOnlyHint": False}
    assert needs_confirmation(annotations) and needs_confirmation(None)
    assert not needs_confirmation({"readOnlyHint": True})
    assert needs_confirmation({"readOnlyHint": True, "destructiveHint": True})
    run_turn(
        _deps(engine, router, tools, calls, CallResult("{}", False)),
        convo,
        "delete the file docs/old.md from acme/api on branch main",
        events.append,
    )
    route = events[0]
    assert route.type == "route" and route.tool is not None
    if any(e.type == "tool_call" for e in events):  # arguments were valid: the call must be held back
        call = next(e for e in events if e.type == "tool_call")
        assert call.confirmed is False  # type: ignore[union-attr]
        assert events[-1].type == "error" and events[-1].stage == "confirm"  # type: ignore[union-attr]
    assert calls == []
    assert convo.turns == []


class _RoutesTo:
    """A router that sends every request to one tool (the routing itself is tested elsewhere)."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.previous: list[PreviousTurn | None] = []

    def route_turn(
        self, query: str, window: list[dict[str, str]], previous: PreviousTurn | None = None
    ) -> RouteOutcome:
        self.previous.append(previous)
        return RouteOutcome("auto", self.tool, [(self.tool, 1.0)], 0.0)

    def after_turn(self) -> None:
        pass

    def examples_for(self, query: str, tool: str, operation: str | None, uses: Any) -> list[Any]:
        return []

    def arg_keys(self, query: str, tool: str, operation: str | None) -> None:
        return None

    def object_params(self, tool: str, operation: str | None) -> list[str]:
        return []

    def reads_before(self, tool: str, operation: str | None) -> bool:
        return False

    def made_before(self, tool: str) -> frozenset[str]:
        return frozenset()

    def in_place(self, tool: str, params: Sequence[str]) -> str | None:
        return None


def test_routing_is_told_the_last_tool_turn_past_small_talk(engine: Engine, tools: dict[str, Tool]) -> None:
    convo = Conversation(
        [
            Turn("open issues in acme/api?", "github__list_issues", {"owner": "acme", "repo": "api"}, "[]", "None."),
            Turn("thanks!", answer="You're welcome."),
        ]
    )
    router = _RoutesTo("github__get_me")
    run_turn(_deps(engine, router, tools, [], CallResult("{}", False)), convo, "and the closed ones?", lambda e: None)
    assert router.previous == [PreviousTurn("open issues in acme/api?", "github__list_issues")]
    run_turn(_deps(engine, router, tools, [], CallResult("{}", False)), Conversation(), "hi", lambda e: None)
    assert router.previous[-1] is None


@pytest.mark.parametrize(
    ("request_text", "answer", "asked", "ran"),
    [
        ("create a repository called nexus-demo", False, False, True),  # a command: --yes covers it
        ("should nexus-demo be a private repository?", False, True, False),  # a question: asked, refused
        ("should nexus-demo be a private repository?", True, True, True),  # asked, allowed
    ],
)
def test_a_question_asks_before_a_write_even_with_yes(
    engine: Engine,
    tools: dict[str, Tool],
    monkeypatch: pytest.MonkeyPatch,
    request_text: str,
    answer: bool,
    asked: bool,
    ran: bool,
) -> None:
    """ "is acme-corp/web#77 mergeable?" was routed to merge_pull_request with the number grounded: --yes must
    not turn a question into a merge."""
    tool = tools["github__create_repository"]
    assert tool.declares_write
    # the arguments a model writes here, fixed: the question case depends on them naming the repository
    out = SimpleNamespace(arguments={"name": "nexus-demo", "private": True}, schema_error=None)
    monkeypatch.setattr(ArgumentWriter, "write", lambda self, *a, **k: out)
    calls: list[Any] = []
    questions: list[str] = []
    deps = _deps(engine, _RoutesTo(tool.qualified_name), tools, calls, CallResult("{}", False), yes=True)
    deps.confirm = lambda name, args, ann: questions.append(name) is None and answer
    convo = Conversation()
    events: list[Event] = []
    run_turn(deps, convo, request_text, events.append)
    assert questions == ([tool.qualified_name] if asked else [])
    assert bool(calls) == ran and len(convo.turns) == int(ran), [e.type for e in events]
    if not ran:
        assert events[-1].type == "error" and events[-1].stage == "confirm"  # type: ignore[union-attr]
        assert "question" in events[-1].message and "--yes" in events[-1].message  # type: ignore[union-attr]


_MERGE_ARGS = {"owner": "acme", "repo": "api", "pullNumber": 5}
_FORK_ARGS = {"owner": "example", "repo": "example"}


@pytest.mark.parametrize(
    ("name", "written", "request_text", "outcome"),
    [
        # a question about no PR in particular: the PR number is made up
        ("merge_pull_request", _MERGE_ARGS, "what's the difference between merge and rebase?", "answered"),
        # a command: which one? (an error names pullNumber)
        ("merge_pull_request", _MERGE_ARGS, "merge the pull request in acme/api", "arguments"),
        # no identifier made up, but no value the conversation gives: not about a repository either
        ("fork_repository", _FORK_ARGS, "what's the difference between a fork and a clone?", "answered"),
        # the question names the repository: held for a yes (none here)
        ("fork_repository", {"owner": "acme", "repo": "api"}, "should I fork acme/api?", "confirm"),
    ],
)
def test_a_question_naming_none_of_a_writes_objects_is_answered_without_it(
    engine: Engine,
    tools: dict[str, Tool],
    chats: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    written: dict[str, Any],
    request_text: str,
    outcome: str,
) -> None:
    tool = tools[f"github__{name}"]
    assert tool.declares_write
    # the arguments a model writes for these requests (the tiny model cannot write valid ones here)
    out = SimpleNamespace(arguments=dict(written), schema_error=None)
    monkeypatch.setattr(ArgumentWriter, "write", lambda self, *a, **k: out)
    calls: list[Any] = []
    convo = Conversation()
    events: list[Event] = []
    deps = _deps(engine, _RoutesTo(tool.qualified_name), tools, calls, CallResult("{}", False), yes=True)
    run_turn(deps, convo, request_text, events.append)
    assert calls == []
    if outcome == "answered":
        assert not any(e.type == "tool_call" for e in events)
        assert [e.type for e in events if e.type != "token"] == ["route", "tool_skipped", "answer"], events
        assert events[1].name == name  # type: ignore[union-attr]
        assert chats[-1][0]["content"] == SYSTEM_CHAT  # the no-tool answer prompt
        assert len(convo.turns) == 1 and convo.turns[0].tool is None
    else:
        err = events[-1]
        assert err.type == "error" and err.stage == outcome, err
        assert outcome != "arguments" or "pullNumber" in err.message  # type: ignore[union-attr]
        assert convo.turns == []


def test_a_call_that_changed_something_is_answered_as_done_a_read_as_data(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool], chats: list[Any]
) -> None:
    calls: list[Any] = []
    events: list[Event] = []
    # create_repository may write (no readOnlyHint); allowed with --yes
    run_turn(
        _deps(engine, router, tools, calls, CallResult('{"full_name": "octo-dev/demo"}', False), yes=True),
        Conversation(),
        "create a new repository called demo",
        events.append,
    )
    assert [c[0] for c in calls] == ["github__create_repository"], events
    assert events[-1].type == "answer"
    assert "it succeeded" in chats[-1][-1]["content"] and "what was done" in chats[-1][-1]["content"]
    run_turn(
        _deps(engine, router, tools, calls, CallResult('{"login": "octo-dev"}', False)),
        Conversation(),
        "show my GitHub user profile (get me)",
        events.append,
    )
    assert calls[-1][0] == "github__get_me" and "it succeeded" not in chats[-1][-1]["content"]  # read-only: data


def test_a_read_that_found_nothing_is_answered_from_the_empty_result_prompt(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool], chats: list[Any]
) -> None:
    calls: list[Any] = []
    events: list[Event] = []
    empty = CallResult('{"total_count": 0, "incomplete_results": false, "items": []}', False)
    run_turn(
        _deps(engine, router, tools, calls, empty),
        Conversation(),
        "show my GitHub user profile (get me)",
        events.append,
    )
    assert calls[-1][0] == "github__get_me" and events[-1].type == "answer"
    assert "returned nothing" in chats[-1][-1]["content"]
    # a write's empty output is its success, not "nothing found"
    run_turn(
        _deps(engine, router, tools, calls, CallResult("", False), yes=True),
        Conversation(),
        "create a new repository called demo",
        events.append,
    )
    assert calls[-1][0] == "github__create_repository"
    assert "it succeeded" in chats[-1][-1]["content"] and "returned nothing" not in chats[-1][-1]["content"]


def test_empty_results_are_told_from_objects_that_lack_a_field() -> None:
    for text in (
        "",
        "  ",
        "[]",
        "{}",
        '{"total_count": 0, "incomplete_results": false, "items": []}',
        '{"data": {"nodes": [], "cursor": null}}',
    ):
        assert carries_nothing(text), text
    for text in (
        '{"title": "Fix", "labels": []}',
        '[{"number": 1}]',
        '{"total_count": 3, "items": []}',
        "No issues found",
        '{"query": "x", "items": []}',
        "0",
        '{"count": 0}',
        "null",
    ):
        assert not carries_nothing(text), text


def test_crashed_tool_gives_an_error_and_keeps_the_conversation(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool]
) -> None:
    calls: list[Any] = []
    convo = Conversation()
    events: list[Event] = []
    run_turn(
        _deps(engine, router, tools, calls, RuntimeError("server 'github' crashed again after a restart")),
        convo,
        "show my GitHub user profile (get me)",
        events.append,
    )
    assert events[-1].type == "error"
    assert events[-1].stage == "tool" and "crashed" in events[-1].message  # type: ignore[union-attr]
    assert convo.turns == []


def test_answer_without_a_tool_is_written_in_its_own_lane_without_the_argument_rules(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, Any]] = []
    real_chat, real_generate = engine.tokenize_chat, engine.generate
    monkeypatch.setattr(engine, "tokenize_chat", lambda m, *a, **k: seen.append(("chat", m)) or real_chat(m, *a, **k))
    monkeypatch.setattr(
        engine, "generate", lambda p, *a, **k: seen.append(("generate", k.get("seq"))) or real_generate(p, *a, **k)
    )
    calls: list[Any] = []
    convo = Conversation()
    events: list[Event] = []
    run_turn(_deps(engine, router, tools, calls), convo, "good evening! how was your day?", events.append)
    route = events[0]
    assert route.type == "route" and route.decision == "no-tool", route  # type: ignore[union-attr]
    assert calls == [] and events[-1].type == "answer", [e.type for e in events]
    chat = [m for kind, m in seen if kind == "chat"]
    assert chat[-1][0] == {"role": "system", "content": SYSTEM_CHAT}  # no JSON-argument rules to imitate
    assert "No tool was run" in chat[-1][-1]["content"] and chat[-1][-1]["content"].startswith("good evening")
    # written in the CHAT lane: the conversation's lane keeps its cached prefix, the sidecar the decision's head
    assert [x for x in seen if x[0] != "chat"][-1] == ("generate", CHAT)
    assert len(convo.turns) == 1 and convo.turns[0].tool is None


def _cancel_at(kind: str, events: list[Event]) -> tuple[Any, Any]:
    """(emit, cancelled) for a consumer that stops listening once it has seen an event of ``kind``."""
    seen = {"stop": False}

    def emit(ev: Event) -> None:
        events.append(ev)
        seen["stop"] = seen["stop"] or ev.type == kind

    return emit, lambda: seen["stop"]


def _cancelled_turn(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool], kind: str, request: str
) -> tuple[list[Any], Conversation, list[Event]]:
    """Run a get_me turn whose consumer stops at the first ``kind`` event: (tool calls, conversation, events)."""
    calls: list[Any] = []
    convo = Conversation()
    events: list[Event] = []
    emit, cancelled = _cancel_at(kind, events)
    deps = _deps(engine, router, tools, calls, CallResult('{"login": "octo-dev"}', False))
    deps.cancelled = cancelled
    with pytest.raises(TurnCancelled):
        run_turn(deps, convo, request, emit)
    return calls, convo, events


def test_turn_cancelled_before_its_tool_runs_changes_nothing(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool]
) -> None:
    request = "show my GitHub user profile (get me)"
    fresh: list[Event] = []
    run_turn(
        _deps(engine, router, tools, [], CallResult('{"login": "octo-dev"}', False)),
        Conversation(),
        request,
        fresh.append,
    )
    calls, convo, events = _cancelled_turn(engine, router, tools, "route", request)
    assert [e.type for e in events] == ["route"]
    assert calls == [] and convo.turns == []
    # the engine is left usable and its cache consistent: the same turn now gives what it gave before
    again: list[Event] = []
    run_turn(_deps(engine, router, tools, [], CallResult('{"login": "octo-dev"}', False)), convo, request, again.append)

    def outcome(evs: list[Event]) -> list[Any]:  # everything but timings
        return [e.model_dump(exclude={"latency_ms"}) for e in evs]

    assert outcome(again) == outcome(fresh)
    assert fresh[-1].type == "answer" and len(convo.turns) == 1


def test_turn_cancelled_after_its_tool_ran_is_kept_and_marked_interrupted(
    engine: Engine, router: AgentRouter, tools: dict[str, Tool]
) -> None:
    calls, convo, events = _cancelled_turn(engine, router, tools, "token", "show my GitHub user profile (get me)")
    assert calls == [("github__get_me", {})]
    kinds = [e.type for e in events]
    assert kinds.count("token") == 1 and "answer" not in kinds, kinds
    assert len(convo.turns) == 1
    turn = convo.turns[0]
    assert turn.tool == "github__get_me" and "octo-dev" in (turn.tool_result or "")
    assert turn.answer.endswith("…(interrupted)"), turn.answer
    assert turn.answer.startswith(events[-1].text.strip())  # type: ignore[union-attr]


def test_surrogate_keeps_identifying_fields() -> None:
    items = [{"number": i, "title": f"Bug {i}", "state": "open", "body": "y" * 300} for i in range(20)]
    s = surrogate(json.dumps(items))
    assert s.startswith("20 items") and '"number": 0' in s and "y" * 100 not in s
    assert surrogate("short") == "short"


def test_list_changed_diff_updates_routing_incrementally(tools: dict[str, Tool]) -> None:
    router = AgentRouter.create(list(tools.values()), RouterOptions(embedder="minilm"), None)
    forecast = Tool(
        server="weather",
        name="get_forecast",
        description="Get the weather forecast for a city",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    query = "what's the weather forecast for Lisbon tomorrow?"
    assert router.route_turn(query, []).tool != "weather__get_forecast"
    router.apply_diff([forecast], [])
    assert router.route_turn(query, []).tool == "weather__get_forecast"
    router.apply_diff([], ["weather__get_forecast"])
    assert router.route_turn(query, []).tool != "weather__get_forecast"
