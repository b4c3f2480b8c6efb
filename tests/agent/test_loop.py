"""The agent loop (issue 44) on the tiny model: routing and arguments scripted, so each test pins one rule of the loop
(step numbers, the step budget, a repeated call, values taken from an earlier result, failures and cancellation);
the answer is generated for real."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.events import Event
from nexus_agent.agent.grounding import result_identifiers, ungrounded_identifiers
from nexus_agent.agent.history import Conversation
from nexus_agent.agent.request import Request
from nexus_agent.agent.routing_adapter import AgentRouter
from nexus_agent.agent.turn import (
    CallResult,
    RouteOutcome,
    TurnCancelled,
    TurnDeps,
    _echoed,
    _keeping_labels,
    _text_asked,
    broadened,
    run_turn,
    text_missing,
)
from nexus_agent.backend import LocalBackend
from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.registry import Tool, load_registry, split_key
from nexus_agent.routing.followup import CallSoFar, PreviousTurn, asks_for_change, steps_named
from nexus_agent.routing.options import RouterOptions
from nexus_agent.routing.router import NEXT_STEP_POOL
from tests.examples.test_in_place import EDIT as EDIT_FILE
from tests.examples.test_local_scope import READ as READ_FILE
from tests.examples.test_local_scope import WRITE as WRITE_FILE
from tests.examples.test_prerequisite import COMMIT, STAGE, STAGED

SEARCH = "github__search_issues"
COMMENT = "github__add_issue_comment"
LIST = "github__list_issues"
FOUND = json.dumps(
    {
        "total_count": 1,
        "items": [
            {
                "number": 2,
                "title": "API rate limiting",
                "state": "open",
                "html_url": "https://github.com/acme/api/issues/2",
                "body": "x" * 2000,
            }
        ],
    }
)
REQUEST = "Leave a comment 'Handled in #5' on the acme/api issue about rate limiting."


@pytest.fixture(scope="module")
def tools(registry_dir: Path) -> dict[str, Tool]:
    return {t.qualified_name: t for t in load_registry(registry_dir).profile("github_default")}


@pytest.fixture(scope="module")
def engine() -> Engine:
    eng = Engine(EngineConfig(model="tiny", n_ctx=4096, n_threads=1))
    yield eng
    eng.close()


@pytest.fixture
def chats(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The message lists the engine is asked to render, in order (the answer prompt is the last)."""
    seen: list[Any] = []
    real_chat = engine.tokenize_chat
    monkeypatch.setattr(engine, "tokenize_chat", lambda m, *a, **k: seen.append(m) or real_chat(m, *a, **k))
    return seen


class _Script:
    """Routes the request to ``first``, then each next step to the next of ``then`` (None or the end: done)."""

    def __init__(self, first: str, then: Sequence[str | None]) -> None:
        self.first, self.then = first, list(then)
        self.seen: list[list[CallSoFar]] = []  # what each next-step decision was shown

    def route_turn(
        self, query: str, window: list[dict[str, str]], previous: PreviousTurn | None = None
    ) -> RouteOutcome:
        return RouteOutcome("auto", self.first, [(self.first, 1.0)], 0.0)

    def next_step(self, query: str, window: list[dict[str, str]], calls: Sequence[CallSoFar]) -> RouteOutcome:
        self.seen.append(list(calls))
        tool = self.then.pop(0) if self.then else None
        return RouteOutcome("escalated" if tool else "done", tool, [], 0.0)

    def warm(self) -> None:
        pass

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

    def apply_diff(self, changed: list[Tool], removed: list[str]) -> None:
        pass


def _write_args(monkeypatch: pytest.MonkeyPatch, by_tool: Callable[[str], dict[str, Any]]) -> None:
    """Argument writing returns ``by_tool(tool name)`` (the tiny model cannot write these)."""
    monkeypatch.setattr(
        ArgumentWriter,
        "write",
        lambda self, tool, *a, **k: SimpleNamespace(arguments=by_tool(tool.name), schema_error=None),
    )


def _deps(
    engine: Engine,
    router: _Script,
    tools: dict[str, Tool],
    calls: list[tuple[str, dict[str, Any]]],
    results: dict[str, CallResult | Exception],
    max_steps: int = 4,
) -> TurnDeps:
    def call_tool(name: str, args: dict[str, Any]) -> CallResult:
        calls.append((name, args))
        out = results[name]
        if isinstance(out, Exception):
            raise out
        return out

    read_only = {"readOnlyHint": True}
    annotations = {SEARCH: read_only, LIST: read_only, "github__issue_read": read_only}
    return TurnDeps(
        backend=LocalBackend(engine),
        router=router,
        tools=lambda: tools,
        annotations=annotations.get,
        call_tool=call_tool,
        confirm=None,
        auto_yes=True,
        max_steps=max_steps,
    )


_ARGS = {
    "search_issues": {"query": "rate limiting", "owner": "acme", "repo": "api"},
    "add_issue_comment": {"owner": "acme", "repo": "api", "issue_number": 2, "body": "Handled in #5"},
}


def test_find_then_act_runs_both_steps_and_numbers_their_events(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, chats: list[Any]
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    router = _Script(SEARCH, [COMMENT])
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {SEARCH: CallResult(FOUND, False), COMMENT: CallResult("{}", False)}
    convo = Conversation()
    events: list[Event] = []
    run_turn(_deps(engine, router, tools, calls, results), convo, REQUEST, events.append)
    steps = [(e.type, getattr(e, "step", None)) for e in events if e.type not in ("token", "answer")]
    assert steps == [
        ("route", 1),
        ("tool_call", 1),
        ("tool_result", 1),
        ("route", 2),
        ("tool_call", 2),
        ("tool_result", 2),
        ("route", 3),
    ], steps
    assert events[-1].type == "answer"
    assert [e.decision for e in events if e.type == "route"] == ["auto", "escalated", "done"]  # type: ignore[union-attr]
    assert calls == [(SEARCH, _ARGS["search_issues"]), (COMMENT, _ARGS["add_issue_comment"])]
    # the next decision saw the first call, compact: the number and title kept, the body left out
    (first,) = router.seen[0]
    assert first.tool == SEARCH and '"number": 2' in first.result and "x" * 100 not in first.result
    # the answer is written from both calls, and the history keeps both
    answer_prompt = chats[-1][-1]["content"]
    assert "1. search_issues" in answer_prompt and "2. add_issue_comment" in answer_prompt
    (turn,) = convo.turns
    assert [c.tool for c in turn.calls()] == [SEARCH, COMMENT]
    window = json.dumps(convo.window())
    assert "used search_issues" in window and "used add_issue_comment" in window


def test_the_step_budget_ends_the_loop(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, chats: list[Any]
) -> None:
    pages = iter(range(1, 100))
    _write_args(monkeypatch, lambda name: {"owner": "acme", "repo": "api", "page": next(pages)})
    router = _Script(LIST, [LIST] * 10)  # the decision never says done
    calls: list[tuple[str, dict[str, Any]]] = []
    events: list[Event] = []
    run_turn(
        _deps(engine, router, tools, calls, {LIST: CallResult("[]", False)}, max_steps=2),
        Conversation(),
        "list every issue in acme/api",
        events.append,
    )
    assert len(calls) == 2 and len(router.seen) == 1  # no decision after the last allowed call
    assert max(getattr(e, "step", 0) for e in events) == 2
    assert events[-1].type == "answer"
    assert "stopped after 2 calls" in chats[-1][-1]["content"]


def test_a_single_step_budget_makes_one_call_and_asks_no_next_step(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, chats: list[Any]
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    router = _Script(SEARCH, [COMMENT])
    calls: list[tuple[str, dict[str, Any]]] = []
    run_turn(
        _deps(engine, router, tools, calls, {SEARCH: CallResult(FOUND, False)}, max_steps=1),
        Conversation(),
        REQUEST,
        lambda e: None,
    )
    assert [c[0] for c in calls] == [SEARCH] and router.seen == []
    # a change was asked and only a read ran: the answer is told that nothing changed (measured: "…has been closed")
    assert "NOT changed" in chats[-1][-1]["content"]
    run_turn(
        _deps(engine, _Script(SEARCH, []), tools, calls, {SEARCH: CallResult(FOUND, False)}, max_steps=1),
        Conversation(),
        "which acme/api issues are about rate limiting?",
        lambda e: None,
    )
    assert "I ran search_issues" in chats[-1][-1]["content"]  # a read answered by the single-call prompt, as before


def test_a_repeated_identical_call_ends_the_loop_with_a_note(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, chats: list[Any]
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    router = _Script(SEARCH, [SEARCH, SEARCH])
    calls: list[tuple[str, dict[str, Any]]] = []
    convo = Conversation()
    events: list[Event] = []
    run_turn(_deps(engine, router, tools, calls, {SEARCH: CallResult(FOUND, False)}), convo, REQUEST, events.append)
    assert calls == [(SEARCH, _ARGS["search_issues"])]
    skipped = [e for e in events if e.type == "tool_skipped"]
    assert len(skipped) == 1 and skipped[0].step == 2 and "same arguments" in skipped[0].reason  # type: ignore[union-attr]
    assert events[-1].type == "answer" and not any(e.type == "error" for e in events)
    assert "same arguments" in chats[-1][-1]["content"]
    assert len(convo.turns) == 1 and convo.turns[0].tool == SEARCH


def test_a_value_from_an_earlier_result_is_given_and_an_invented_one_is_refused(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, chats: list[Any]
) -> None:
    request = "Leave a comment 'done' on the acme/api issue about rate limiting."
    comment = {"owner": "acme", "repo": "api", "issue_number": 2, "body": "done"}
    # the rule itself: 2 is returned by the search, 7 by nothing
    tool = tools[COMMENT]
    assert ungrounded_identifiers(tool, comment, request) == {"issue_number": 2}  # not in the request
    assert ungrounded_identifiers(tool, comment, request, results=[FOUND]) == {}
    assert ungrounded_identifiers(tool, {**comment, "issue_number": 7}, request, results=[FOUND]) == {"issue_number": 7}
    assert result_identifiers([FOUND, "see #12 and issue 13"]) == {"2", "12"}
    # several rows, or several #N: which one is not pinned down, so none is given
    several = json.dumps([{"number": 2, "title": "a"}, {"number": 3, "title": "b"}])
    assert result_identifiers([several, "see #12 and #13"]) == set()
    assert result_identifiers([json.dumps({"number": 6, "head": {"sha": "abc"}, "id": 40})]) == {"6", "40"}
    assert ungrounded_identifiers(tool, {**comment, "issue_number": 3}, request, results=[several]) == {
        "issue_number": 3
    }
    # several rows, one of which the request describes better than any other: that row's number is given
    found = json.dumps(
        {
            "total_count": 3,
            "items": [
                {"number": 9, "title": "Support API keys in addition to bearer tokens"},
                {"number": 2, "title": "Add rate limiting to public endpoints"},
                {"number": 4, "title": "Rate the docs"},
            ],
        }
    )
    assert result_identifiers([found], request) == {"2"} and result_identifiers([found]) == set()
    assert ungrounded_identifiers(tool, comment, request, results=[found]) == {}
    assert ungrounded_identifiers(tool, {**comment, "issue_number": 9}, request, results=[found]) == {"issue_number": 9}
    # a tie, or words only the repository name and "issue" share, describe no row
    assert result_identifiers([found], "comment on the acme/api issue about the rate") == set()
    assert result_identifiers([found], "comment on the acme/api issue about the api") == set()
    # a number inside the text the request gives as another value (the comment) names no object
    quoted = "Leave a comment 'Handled in #5' on the acme/api issue about rate limiting."
    handled = {**comment, "issue_number": 5, "body": "Handled in #5"}
    assert ungrounded_identifiers(tool, handled, quoted) == {"issue_number": 5}
    assert ungrounded_identifiers(tool, handled, "comment 'Handled in #5' on acme/api issue 5") == {}

    for number, ran in ((2, True), (7, False)):
        _write_args(monkeypatch, lambda name, n=number: {**comment, "issue_number": n} if "comment" in name else {})
        calls: list[tuple[str, dict[str, Any]]] = []
        events: list[Event] = []
        results: dict[str, CallResult | Exception] = {
            SEARCH: CallResult(FOUND, False),
            COMMENT: CallResult("{}", False),
        }
        convo = Conversation()
        run_turn(_deps(engine, _Script(SEARCH, [COMMENT]), tools, calls, results), convo, request, events.append)
        assert [c[0] for c in calls] == ([SEARCH, COMMENT] if ran else [SEARCH]), number
        assert events[-1].type == "answer"  # a later step that cannot run still gets an answer from what ran
        if not ran:
            skipped = next(e for e in events if e.type == "tool_skipped")
            assert skipped.step == 2 and "issue_number" in skipped.reason  # type: ignore[union-attr]
            # the change did not run: the answer is written from the calls and says so
            text = events[-1].text  # type: ignore[union-attr]
            assert text.startswith("Nothing was changed: add_issue_comment was not run:") and "issue_number" in text
            assert "search_issues returned" in text
            assert [c.tool for c in convo.turns[0].calls()] == [SEARCH]


def test_a_failed_step_is_seen_by_the_next_decision(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    router = _Script(SEARCH, [COMMENT, None])
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {
        SEARCH: CallResult(FOUND, False),
        COMMENT: RuntimeError("connection reset"),
    }
    convo = Conversation()
    events: list[Event] = []
    run_turn(_deps(engine, router, tools, calls, results), convo, REQUEST, events.append)
    assert [c[0] for c in calls] == [SEARCH, COMMENT]
    assert len(router.seen) == 2
    failed = router.seen[1][1]
    assert failed.tool == COMMENT and failed.failed and "connection reset" in failed.result
    result = [e for e in events if e.type == "tool_result"][1]
    assert result.is_error and result.step == 2  # type: ignore[union-attr]
    assert events[-1].type == "answer"


def test_cancelled_in_a_later_step_keeps_every_call_that_ran(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {SEARCH: CallResult(FOUND, False), COMMENT: CallResult("{}", False)}
    deps = _deps(engine, _Script(SEARCH, [COMMENT]), tools, calls, results)
    events: list[Event] = []
    stop = {"now": False}

    def emit(ev: Event) -> None:
        events.append(ev)
        stop["now"] = stop["now"] or (ev.type == "tool_result" and ev.step == 2)

    deps.cancelled = lambda: stop["now"]
    convo = Conversation()
    with pytest.raises(TurnCancelled):
        run_turn(deps, convo, REQUEST, emit)
    assert [c[0] for c in calls] == [SEARCH, COMMENT]
    (turn,) = convo.turns
    assert [c.tool for c in turn.calls()] == [SEARCH, COMMENT] and turn.answer.endswith("(interrupted)")


class _Picks:
    """A next-step decision that records the pool it was shown and picks its first tool."""

    uses_llm = True
    decider = None

    def __init__(self) -> None:
        self.pools: list[list[str]] = []

    def next_step(
        self, query: str, candidates: Sequence[Tool], calls: Sequence[CallSoFar], examples: Sequence[Any] = ()
    ) -> Any:
        self.pools.append([t.qualified_name for t in candidates])
        return SimpleNamespace(scores=[0.0] * len(candidates), choice=candidates[0].qualified_name)

    def settle(self) -> None:
        pass


def test_next_step_routing_asks_only_when_a_change_is_asked_and_never_offers_a_write_again(
    tools: dict[str, Tool],
) -> None:
    router = AgentRouter.create(list(tools.values()), RouterOptions(embedder="minilm"), None)
    picks = _Picks()
    router.router.reranker = picks  # type: ignore[assignment]
    searched = [CallSoFar(SEARCH, {"query": "rate limiting"}, '{"number": 2}')]
    # a request that asks for no change is done once its read succeeded: no decision asked
    out = router.next_step("which acme/api issues mention rate limiting?", [], searched)
    assert out.decision == "done" and out.tool is None and picks.pools == []
    # a change is asked: the decision sees a pool with the last tool's siblings
    out = router.next_step("close the acme/api issue about rate limiting", [], searched)
    assert out.tool is not None and len(picks.pools) == 1 and len(picks.pools[0]) <= NEXT_STEP_POOL
    # as many writes as the request names changes: done without asking
    wrote = [*searched, CallSoFar(COMMENT, {"issue_number": 2}, "{}", wrote=True)]
    out = router.next_step("comment 'done' on the acme/api issue about rate limiting", [], wrote)
    assert out.decision == "done" and len(picks.pools) == 1
    # one more change named: retrieval's first, a write, is the next change without the decision (measured: after
    # the issue was made, the decision read it twice and the comment asked for was never made); never the write
    # that succeeded
    made = [CallSoFar("github__issue_write", {"method": "create"}, '{"number": 9}', wrote=True)]
    out = router.next_step("Open an issue 'Retry headers' in acme/api, then mention it in a comment on #2", [], made)
    assert out.decision == "auto" and out.tool == COMMENT and len(picks.pools) == 1
    # ... the first write of the pool, after reads; never the write that succeeded
    out = router.next_step("comment 'done' on the acme/api issue about rate limiting, then close it", [], wrote)
    assert out.decision == "auto" and out.tool is not None and len(picks.pools) == 1
    assert split_key(out.tool)[0] != COMMENT and tools[split_key(out.tool)[0]].read_only_hint is not True
    # a check named after the change is no change: asked
    router.next_step("comment 'done' on the acme/api issue about rate limiting, then show it to me", [], wrote)
    assert len(picks.pools) == 2 and COMMENT not in picks.pools[-1] and picks.pools[-1]
    # a failed call is decided on, even for a request that asks for no change
    failed = [CallSoFar(SEARCH, {"query": "x"}, "boom", failed=True)]
    router.next_step("which acme/api issues mention rate limiting?", [], failed)
    assert len(picks.pools) == 3 and SEARCH not in picks.pools[-1]  # and the tool that failed is not offered again
    # after a write that ran and failed, no tool that may write is offered: only declared reads
    broke = [*searched, CallSoFar(COMMENT, {"issue_number": 2}, "boom", failed=True)]
    router.next_step("comment 'done' on the acme/api issue about rate limiting, then close it", [], broke)
    assert picks.pools[-1] and all(tools[k].read_only_hint is True for k in picks.pools[-1])
    n_before = len(picks.pools)
    # a write refused before it ran (a number nobody gave), then a lookup: the write again, with no decision
    refused = [CallSoFar(COMMENT, {"issue_number": 7}, "not run", failed=True, ran=False), *searched]
    out = router.next_step("comment 'done' on the acme/api issue about rate limiting", [], refused)
    assert out.tool == COMMENT and out.decision == "auto" and len(picks.pools) == n_before
    # ... unless the lookup found nothing: the object is not there, the turn is done (no other write is tried)
    nothing = CallSoFar(SEARCH, {"query": "dark mode"}, "0 items:", empty=True)
    out = router.next_step("comment 'done' on the acme/api issue about dark mode", [], [refused[0], nothing])
    assert out.decision == "done" and out.tool is None and len(picks.pools) == n_before
    assert steps_named("close it") == 1 and steps_named("create it and then show me the list") == 2
    assert steps_named("list the open pull requests") == 0
    # a clause counts once, and quoted text is a value, not a step (measured: after "Create a label called wontfix
    # in acme/docs, colour ffffff" had made the label, two named changes sent the loop on to create_repository)
    assert steps_named("Create a label called wontfix in acme/docs, colour ffffff.") == 1
    assert steps_named("Comment 'ping' on the acme/docs issue about the Kubernetes deployment guide.") == 1
    assert steps_named("Open an issue in acme/api titled 'Add request IDs to the logs'.") == 1
    assert steps_named("Stage src/calc.py in /r, commit it as 'Tax-aware total', then show me the log") == 3
    assert steps_named("Close the issue about the shortcut, and let bob-kim know in a comment on it.") == 2
    # "file" is a change before an article only ("file an issue …, then comment …" had stopped after the issue)
    assert steps_named("In acme/web, file an issue titled 'Redirect old blog URLs', then comment on issue #3") == 2
    assert steps_named("Show me what the file says") == 0
    assert steps_named("Save 'call the bank' in /n/reminder.txt, then list /n so I can check it's there") == 2


def test_a_change_that_could_not_be_made_is_looked_up_then_made_again_once(tools: dict[str, Tool]) -> None:
    """The plan after a refused or failed write: a read-only lookup of the same server that needs no identifier,
    then the write again; the decision is asked for neither, and again only when the plan has no step left."""
    router = AgentRouter.create(list(tools.values()), RouterOptions(embedder="minilm"), None)
    picks = _Picks()
    router.router.reranker = picks  # type: ignore[assignment]
    ask = "comment 'done' on the acme/api issue about rate limiting"
    for first in (
        CallSoFar(COMMENT, {"issue_number": 7}, "not run", failed=True, ran=False),
        CallSoFar(COMMENT, {"issue_number": 7}, "404 Not Found", failed=True),
    ):
        out = router.next_step(ask, [], [first])
        lookup = router.router.tools[out.tool or ""]
        assert out.decision == "auto" and picks.pools == []
        assert lookup.server == "github" and lookup.read_only_hint is True and not lookup.requires_identifier
        found = CallSoFar(lookup.qualified_name, {"query": "rate limiting"}, '{"total_count":1,"items":[{"number":2}]}')
        assert router.next_step(ask, [], [first, found]).tool == COMMENT and picks.pools == []
        # a lookup that found nothing: the object is not there, so no retry and no other write: done (issue 54;
        # the decision was asked here before, and went on to writes on other objects)
        empty = CallSoFar(lookup.qualified_name, {"query": "x"}, "0 items:\n", empty=True)
        out = router.next_step(ask, [], [first, empty])
        assert out.decision == "done" and out.tool is None and picks.pools == []
        # the write made again and failed again: no second retry, only reads are offered
        again = CallSoFar(COMMENT, {"issue_number": 2}, "boom", failed=True)
        router.next_step(ask, [], [first, found, again])
        assert len(picks.pools) == 1 and all(tools[k].read_only_hint is True for k in picks.pools[-1])
        picks.pools.clear()
    # looked up before the write failed: the decision reads what was found
    looked = [
        CallSoFar(SEARCH, {"query": "rate limiting"}, '{"number": 2}'),
        CallSoFar(COMMENT, {}, "boom", failed=True),
    ]
    router.next_step(ask, [], looked)
    assert len(picks.pools) == 1


@pytest.mark.parametrize(
    ("request_text", "change"),
    [
        ("close that issue", True),
        ("open an issue in acme/docs quoting the port", True),
        ("let bob-kim know in a comment", True),
        ("list the open pull requests in acme/api", False),
        ("Who's assigned to issue 1 in acme/api?", False),
        ("What's in notes/invoice.txt?", False),
        ("which closed issues have the most comments?", False),
    ],
)
def test_a_change_is_told_from_a_question(request_text: str, change: bool) -> None:
    assert asks_for_change(request_text) is change


@pytest.mark.parametrize("then", [[SEARCH, COMMENT], [None]])
def test_a_first_write_refused_for_a_made_up_number_may_look_the_object_up_first(
    engine: Engine,
    tools: dict[str, Tool],
    monkeypatch: pytest.MonkeyPatch,
    then: list[str | None],
) -> None:
    """Routed straight to add_issue_comment with a number nobody gave: refused, as before; the next decision sees the
    refusal and may search first, and the number the search returns is then given. If it says done, the turn ends
    with the refusal, as with one step."""
    request = "Leave a comment 'done' on the acme/api issue about rate limiting."
    written = iter([7, 2])  # made up first, then the number the search returned
    _write_args(
        monkeypatch,
        lambda name: (
            {"owner": "acme", "repo": "api", "issue_number": next(written), "body": "done"}
            if "comment" in name
            else dict(_ARGS[name])
        ),
    )
    router = _Script(COMMENT, then)
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {SEARCH: CallResult(FOUND, False), COMMENT: CallResult("{}", False)}
    convo = Conversation()
    events: list[Event] = []
    run_turn(_deps(engine, router, tools, calls, results), convo, request, events.append)
    (refused,) = router.seen[0]
    assert refused.tool == COMMENT and refused.failed and "issue_number" in refused.result
    if then == [None]:
        assert calls == [] and events[-1].type == "error" and convo.turns == []
        return
    assert [c[0] for c in calls] == [SEARCH, COMMENT] and calls[1][1]["issue_number"] == 2
    kinds = [(e.type, getattr(e, "step", None)) for e in events if e.type in ("tool_skipped", "tool_call", "route")]
    assert kinds[:4] == [("route", 1), ("tool_skipped", 1), ("route", 2), ("tool_call", 2)], kinds
    assert events[-1].type == "answer" and [c.tool for c in convo.turns[0].calls()] == [SEARCH, COMMENT]


def test_when_every_change_failed_the_answer_is_written_from_the_calls_not_by_the_model(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, chats: list[Any]
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    results: dict[str, CallResult | Exception] = {
        SEARCH: CallResult(FOUND, False),
        COMMENT: CallResult("Validation Failed: issue 2 is locked\n(details follow)", True),
    }
    convo = Conversation()
    events: list[Event] = []
    rendered = len(chats)
    run_turn(_deps(engine, _Script(SEARCH, [COMMENT, None]), tools, [], results), convo, REQUEST, events.append)
    answer = events[-1]
    assert answer.type == "answer", [e.type for e in events]
    text = answer.text  # type: ignore[union-attr]
    assert text.startswith("Nothing was changed: add_issue_comment failed: `Validation Failed: issue 2 is locked`")
    assert "search_issues returned `" in text and "API rate limiting" in text  # what the search found, quoted
    assert [e.text for e in events if e.type == "token"] == [text]  # type: ignore[union-attr]
    assert convo.turns[-1].answer == text and len(convo.turns[-1].calls()) == 2
    # the model wrote no answer: only the steps' own prompts were rendered (no answer prompt after the comment)
    assert not any("I made these tool calls" in m[-1]["content"] for m in chats[rendered:])

    # a search that found nothing says so in words (the user must learn that the object was not found)
    results[SEARCH] = CallResult('{"total_count": 0, "incomplete_results": false, "items": []}', False)
    events = []
    script = _Script(SEARCH, [COMMENT, None])
    run_turn(_deps(engine, script, tools, [], results), convo, REQUEST, events.append)
    assert "search_issues found nothing matching {" in events[-1].text  # type: ignore[union-attr]
    # the next-step decision is told the search was empty (its compact result only reads "0 items:")
    assert script.seen[0][0].tool == SEARCH and script.seen[0][0].empty
    results[SEARCH] = CallResult(FOUND, False)

    # a change that succeeded: the model answers, as before
    results[COMMENT] = CallResult('{"id": 99, "html_url": "https://github.com/acme/api/issues/2#c99"}', False)
    events = []
    script = _Script(SEARCH, [COMMENT, None])
    run_turn(_deps(engine, script, tools, [], results), convo, REQUEST, events.append)
    assert not script.seen[0][0].empty  # the search found the issue
    assert events[-1].type == "answer" and not events[-1].text.startswith("Nothing was changed")  # type: ignore[union-attr]


def test_the_request_is_parsed_once_for_the_whole_turn(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54's design note: the request is parsed on arrival, and every step (the view, grounding, the policy,
    the answer) reads that object, however many calls the turn makes."""
    from nexus_agent.agent import request as request_module

    parsed: list[str] = []
    real = request_module.Request.parse

    def counting(text: str) -> request_module.Request:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(request_module.Request, "parse", staticmethod(counting))
    comment = {"owner": "acme", "repo": "api", "issue_number": 2, "body": "Handled in #5"}
    _write_args(monkeypatch, lambda name: comment if "comment" in name else {"query": "rate limiting"})
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {SEARCH: CallResult(FOUND, False), COMMENT: CallResult("{}", False)}
    run_turn(_deps(engine, _Script(SEARCH, [COMMENT]), tools, calls, results), Conversation(), REQUEST, lambda e: None)
    assert [c[0] for c in calls] == [SEARCH, COMMENT]  # the search's number grounded the comment: both ran
    assert parsed == [REQUEST]
    req = real(REQUEST)
    assert req.quoted == ("Handled in #5",) and req.repos == ("acme/api",) and req.refs == ("5",)
    assert req.change and not req.question and req.steps == steps_named(REQUEST) and "rate" in req.describing


def test_a_write_to_an_object_a_read_found_missing_is_not_run(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read of this turn failed as not found: a write to the same object is not tried (it would make the object
    up), and the answer is written from the calls."""
    read = "github__issue_read"
    asked = {"method": "get", "owner": "acme", "repo": "api", "issue_number": 42}
    comment = {"owner": "acme", "repo": "api", "issue_number": 42, "body": "thanks"}
    _write_args(monkeypatch, lambda name: comment if "comment" in name else asked)
    calls: list[tuple[str, dict[str, Any]]] = []
    events: list[Event] = []
    results: dict[str, CallResult | Exception] = {
        read: CallResult("404 Not Found: issue acme/api#42 does not exist", True),
        COMMENT: CallResult("{}", False),
    }
    deps = _deps(engine, _Script(read, [COMMENT]), tools, calls, results)
    run_turn(deps, Conversation(), "comment 'thanks' on acme/api issue 42", events.append)
    assert [c[0] for c in calls] == [read]  # the comment never ran
    skipped = next(e for e in events if e.type == "tool_skipped")
    assert "found it missing" in skipped.reason and "does not exist" in skipped.reason  # type: ignore[union-attr]
    assert events[-1].text.startswith("Nothing was changed: add_issue_comment was not run")  # type: ignore[union-attr]


def test_a_lookup_searches_by_the_words_that_describe_its_object() -> None:
    from nexus_agent.agent.request import Request
    from nexus_agent.agent.turn import searched_by_description

    search = Tool(
        "github", "search_issues", "Search issues.", {"type": "object", "properties": {"query": {"type": "string"}}}
    )
    asked = Request.parse("Close the acme/web issue about the search keyboard shortcut")
    # a query of the repository's name only is replaced by the describing words, in the request's order
    assert searched_by_description(search, {"query": "acme/web", "owner": "acme"}, asked) == {
        "query": "search keyboard shortcut",
        "owner": "acme",
    }
    # one that shares a describing word is the model's to keep
    kept = {"query": "keyboard shortcut"}
    assert searched_by_description(search, kept, asked) == kept
    # less its terms that describe nothing (the change asked for, an inflected one too), a qualifier kept
    merge = Request.parse("Squash-merge the rate limiting PR in acme/api and make sure the issue it closes is closed")
    assert searched_by_description(search, {"query": "squash-merge rate limiting is:pr"}, merge) == {
        "query": "rate limiting is:pr"
    }
    assert "closes" not in merge.describing and "closed" not in merge.describing
    assert Request.parse("close the acme/api PR that adds WebSocket support").describing == {"web", "socket", "support"}
    listing = Tool(
        "github", "list_issues", "List issues.", {"type": "object", "properties": {"state": {"type": "string"}}}
    )
    assert searched_by_description(listing, {"state": "open"}, asked) == {"state": "open"}


class _LooksUp(_Script):
    """The router as it plans a lookup: the comment acts on an issue (its ``issue_number``), and a write that has not
    run is followed by the planned search (decision ``auto``), then by the write."""

    def arg_keys(self, query: str, tool: str, operation: str | None) -> None:
        return None

    def object_params(self, tool: str, operation: str | None) -> list[str]:
        return ["issue_number"] if tool == COMMENT else []

    def next_step(self, query: str, window: list[dict[str, str]], calls: Sequence[CallSoFar]) -> RouteOutcome:
        out = super().next_step(query, window, calls)
        return RouteOutcome("auto", out.tool, [], 0.0) if out.tool else out


@pytest.mark.parametrize("found", [True, False])
def test_a_write_whose_object_is_only_described_waits_for_its_lookup(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, found: bool
) -> None:
    notes: dict[str, str | None] = {}

    def write(self: Any, tool: Tool, *a: Any, **k: Any) -> Any:
        notes[tool.name] = k.get("note")
        return SimpleNamespace(arguments=dict(_ARGS[tool.name]), schema_error=None)

    monkeypatch.setattr(ArgumentWriter, "write", write)
    # after a lookup that found nothing the router says done (Router._looked_up_nothing)
    router = _LooksUp(COMMENT, [SEARCH, COMMENT] if found else [SEARCH])
    calls: list[tuple[str, dict[str, Any]]] = []
    empty = json.dumps({"total_count": 0, "items": []})
    results: dict[str, CallResult | Exception] = {
        SEARCH: CallResult(FOUND if found else empty, False),
        COMMENT: CallResult("{}", False),
    }
    events: list[Event] = []
    run_turn(_deps(engine, router, tools, calls, results, max_steps=2), Conversation(), REQUEST, events.append)
    # the comment's arguments are not written before the search: it waits, and the search is step 1
    steps = [(e.type, getattr(e, "step", None)) for e in events if e.type not in ("token", "answer")]
    assert steps[:5] == [("route", 1), ("tool_skipped", 1), ("route", 1), ("tool_call", 1), ("tool_result", 1)]
    skipped = next(e for e in events if e.type == "tool_skipped")
    assert "looked up first" in skipped.reason and "issue_number" in skipped.reason  # type: ignore[union-attr]
    assert "finds the object that add_issue_comment will then change" in str(notes["search_issues"])
    # the decision was shown the waiting write as a call that did not run
    assert router.seen[0][0].tool == COMMENT and not router.seen[0][0].ran
    if found:
        assert [c[0] for c in calls] == [SEARCH, COMMENT]  # two calls within a budget of two
        assert "Nothing was changed" not in events[-1].text  # type: ignore[union-attr]
    else:
        # the lookup found nothing, by its words or their stems: no write is tried, and the answer says why
        assert [c[0] for c in calls] == [SEARCH, SEARCH] and sum(e.type == "tool_skipped" for e in events) == 1
        text = events[-1].text  # type: ignore[union-attr]
        assert text.startswith("Nothing was changed: add_issue_comment was not run") and "looked up first" in text


def _local_deps(engine: Engine, router: _Script, calls: list[tuple[str, dict[str, Any]]]) -> TurnDeps:
    """A turn with the local file tools only: the read returns a todo list, the write succeeds."""
    results: dict[str, CallResult | Exception] = {
        READ_FILE.qualified_name: CallResult("- [ ] renew passport\n- [ ] call the bank", False),
        WRITE_FILE.qualified_name: CallResult("Successfully wrote", False),
    }
    local = {t.qualified_name: t for t in (WRITE_FILE, READ_FILE)}
    deps = _deps(engine, router, local, calls, results, max_steps=3)
    return replace(deps, annotations={READ_FILE.qualified_name: {"readOnlyHint": True}}.get)


class _ReadsFirst(_Script):
    """The router as it plans a read before a local write (``reads_before``) and the write after it."""

    def reads_before(self, tool: str, operation: str | None) -> bool:
        return tool == WRITE_FILE.qualified_name

    def next_step(self, query: str, window: list[dict[str, str]], calls: Sequence[CallSoFar]) -> RouteOutcome:
        out = super().next_step(query, window, calls)
        return RouteOutcome("auto", out.tool, [], 0.0) if out.tool else out


TICK = "I renewed my passport, tick it off in /home/ana/notes/todo.md"


@pytest.mark.parametrize(
    ("quoted", "target", "request_"),
    [
        (False, "/home/ana/notes/done.md", f"{TICK} and save it as /home/ana/notes/done.md"),
        (False, "/home/ana/notes/done.md", TICK),  # a new file nobody named
        (False, "/home/ana/notes/todo.md", TICK),
        (True, "", "tick 'renew passport' off in /home/ana/notes/todo.md"),
    ],
)
def test_a_local_write_that_takes_its_text_from_files_reads_them_first(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, quoted: bool, target: str, request_: str
) -> None:
    """ "tick it off in …/todo.md" was written at once as the whole file's new text ("Tick it off"): the write now
    waits for a read of what the request names; a request that quotes what to write is written at once."""
    notes: dict[str, str | None] = {}
    args = {
        READ_FILE.name: {"path": "/home/ana/notes/todo.md"},
        # a new file runs; over the file it read, the write is refused (as the next test)
        WRITE_FILE.name: {"path": target or "/home/ana/notes/todo.md", "content": "- [x] renew passport"},
    }

    def write(self: Any, tool: Tool, *a: Any, **k: Any) -> Any:
        notes[tool.name] = k.get("note")
        return SimpleNamespace(arguments=dict(args[tool.name]), schema_error=None)

    monkeypatch.setattr(ArgumentWriter, "write", write)
    router = _ReadsFirst(WRITE_FILE.qualified_name, [READ_FILE.qualified_name, WRITE_FILE.qualified_name])
    calls: list[tuple[str, dict[str, Any]]] = []
    deps = _local_deps(engine, router, calls)
    events: list[Event] = []
    run_turn(deps, Conversation(), request_, events.append)
    if quoted:
        assert [c[0] for c in calls][:1] == [WRITE_FILE.qualified_name]
        return
    if request_ == TICK and target.endswith("done.md"):
        # a new file nobody named, for a request that asks for no new one: read, then refused
        assert [c[0] for c in calls] == [READ_FILE.qualified_name]
        skips = [e.reason for e in events if e.type == "tool_skipped"]  # type: ignore[union-attr]
        assert "no such file is named" in skips[-1] and "done.md" in skips[-1]
        return
    if target.endswith("todo.md"):
        # read, then held: the answer says once why the write did not run
        assert [c[0] for c in calls] == [READ_FILE.qualified_name]
        answer = events[-1].text  # type: ignore[union-attr]
        assert answer.count("write_file was not run") == 1 and "replace the whole of" in answer
        return
    assert [c[0] for c in calls] == [READ_FILE.qualified_name, WRITE_FILE.qualified_name]
    skipped = next(e for e in events if e.type == "tool_skipped")
    assert "waited for a read of what it acts on" in skipped.reason  # type: ignore[union-attr]
    assert "reads what write_file will then change" in str(notes[READ_FILE.name])
    assert router.seen[0][0].tool == WRITE_FILE.qualified_name and not router.seen[0][0].ran


@pytest.mark.parametrize("said", ["The issue about rate limiting was closed.", "Issue #2 is about rate limiting."])
def test_an_answer_claiming_a_change_no_call_made_is_written_from_the_calls(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, said: str
) -> None:
    """ "close the rate limiting issue" that ran only a search: the model's "was closed" is replaced by what the calls
    did; an answer that claims nothing stands. Either way the text comes out once, after it was checked."""
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))

    def chat(self: Any, messages: Any, lane: int, on_token: Callable[[str], None] | None = None, **k: Any) -> Any:
        if on_token is not None:
            on_token(said)
        return SimpleNamespace(text=said)

    monkeypatch.setattr(LocalBackend, "chat", chat)
    router = _Script(SEARCH, [None])
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {SEARCH: CallResult(FOUND, False)}
    events: list[Event] = []
    request = "Close the acme/api issue about rate limiting."
    run_turn(_deps(engine, router, tools, calls, results, max_steps=2), Conversation(), request, events.append)
    assert [c[0] for c in calls] == [SEARCH]
    answer = events[-1].text  # type: ignore[union-attr]
    tokens = [e.text for e in events if e.type == "token"]  # type: ignore[union-attr]
    assert tokens == [answer]
    if "closed" in said:
        assert answer.startswith("Nothing was changed: no call made the change") and "search_issues returned" in answer
    else:
        assert answer == said


@pytest.mark.parametrize("asks", ["tick it off in /home/ana/notes/todo.md", "overwrite /home/ana/notes/todo.md"])
def test_a_write_that_overwrites_a_file_the_turn_read_runs_only_when_asked_to(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, asks: str
) -> None:
    """A tool that says it overwrites, on the path a read of the turn just read: refused unless the request asks for
    the file to be replaced whole (after reading contacts.csv qwen1.5b wrote the whole file anew to change one
    number)."""
    args = {
        READ_FILE.name: {"path": "/home/ana/notes/todo.md"},
        WRITE_FILE.name: {"path": "/home/ana/notes/todo.md", "content": "- [x] renew passport"},
    }
    _write_args(monkeypatch, lambda name: dict(args[name]))
    router = _Script(READ_FILE.qualified_name, [WRITE_FILE.qualified_name])
    calls: list[tuple[str, dict[str, Any]]] = []
    deps = _local_deps(engine, router, calls)
    events: list[Event] = []
    run_turn(deps, Conversation(), asks, events.append)
    if asks.startswith("overwrite"):
        assert [c[0] for c in calls] == [READ_FILE.qualified_name, WRITE_FILE.qualified_name]
        return
    assert [c[0] for c in calls] == [READ_FILE.qualified_name]
    answer = events[-1].text  # type: ignore[union-attr]
    assert answer.startswith("Nothing was changed: write_file was not run: it would replace the whole of")
    assert answer.count("was not run") == 1


class _InPlace(_Script):
    """The router as it names the write that changes part of a file (``in_place``) for the one that overwrites."""

    def in_place(self, tool: str, params: Sequence[str]) -> str | None:
        return EDIT_FILE.qualified_name if tool == WRITE_FILE.qualified_name and list(params) == ["path"] else None


def test_a_write_held_for_overwriting_a_file_the_turn_read_gives_way_to_an_edit_in_the_same_step(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Replace the TODO placeholder in …" read the file, then chose write_file, which is held (it would replace the
    file whole): the edit of the same server runs in its place, in the same step, and the answer reports it."""
    edits = [{"oldText": "- [ ] renew passport", "newText": "- [x] renew passport"}]
    args = {
        READ_FILE.name: {"path": "/home/ana/notes/todo.md"},
        WRITE_FILE.name: {"path": "/home/ana/notes/todo.md", "content": "- [x] renew passport"},
        EDIT_FILE.name: {"path": "/home/ana/notes/todo.md", "edits": edits},
    }
    _write_args(monkeypatch, lambda name: dict(args[name]))
    router = _InPlace(READ_FILE.qualified_name, [WRITE_FILE.qualified_name, None])
    calls: list[tuple[str, dict[str, Any]]] = []
    deps = _local_deps(engine, router, calls)
    local = {t.qualified_name: t for t in (WRITE_FILE, READ_FILE, EDIT_FILE)}
    deps = replace(
        deps,
        tools=lambda: local,
        call_tool=lambda name, a: (
            calls.append((name, a)) or CallResult("- [ ] renew passport" if "read" in name else "ok", False)
        ),
    )
    events: list[Event] = []
    run_turn(deps, Conversation(), "I renewed my passport, tick it off in /home/ana/notes/todo.md", events.append)
    assert calls == [(READ_FILE.qualified_name, args[READ_FILE.name]), (EDIT_FILE.qualified_name, args[EDIT_FILE.name])]
    skipped = next(e for e in events if e.type == "tool_skipped")
    assert "replace the whole of" in skipped.reason and "edit_file changes it in place" in skipped.reason  # type: ignore[union-attr]
    routed = [e.tool for e in events if e.type == "route"]  # type: ignore[union-attr]
    assert routed == [READ_FILE.qualified_name, WRITE_FILE.qualified_name, EDIT_FILE.qualified_name, None]  # then done
    assert not events[-1].text.startswith("Nothing was changed")  # type: ignore[union-attr]


def test_a_failed_write_runs_again_with_the_same_arguments_once_a_write_changed_something(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same call twice is a repeat (it can only end as it did) unless a write succeeded between them: the commit
    that failed for nothing staged runs again, unchanged, once ``git_add`` has staged the file."""
    args = {STAGE.name: {"repo_path": "/r", "files": ["src/invoice.py"]}, COMMIT.name: {"repo_path": "/r"}}
    _write_args(monkeypatch, lambda name: dict(args[name]))
    outcomes = {
        COMMIT.qualified_name: [CallResult(STAGED, True), CallResult("Committed abc1234", False)],
        STAGE.qualified_name: [CallResult("Files staged", False)],
    }
    calls: list[tuple[str, dict[str, Any]]] = []
    local = {t.qualified_name: t for t in (STAGE, COMMIT)}
    deps = _deps(
        engine, _Script(COMMIT.qualified_name, [STAGE.qualified_name, COMMIT.qualified_name]), local, calls, {}
    )
    deps = replace(deps, call_tool=lambda name, a: calls.append((name, a)) or outcomes[name].pop(0))
    events: list[Event] = []
    run_turn(
        deps, Conversation(), "Commit my changes to src/invoice.py in /r with the message 'Fix invoice'.", events.append
    )
    assert [c[0] for c in calls] == [COMMIT.qualified_name, STAGE.qualified_name, COMMIT.qualified_name]
    assert not any(e.type == "tool_skipped" for e in events)
    # with nothing written between them, the same call again is still a repeat: the loop stops
    calls.clear()
    outcomes[COMMIT.qualified_name] = [CallResult(STAGED, True)]
    deps = replace(deps, router=_Script(COMMIT.qualified_name, [COMMIT.qualified_name]))
    events.clear()
    run_turn(
        deps, Conversation(), "Commit my changes to src/invoice.py in /r with the message 'Fix invoice'.", events.append
    )
    assert [c[0] for c in calls] == [COMMIT.qualified_name]
    assert any(e.type == "tool_skipped" and "same arguments" in e.reason for e in events)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("query", "wider"),
    [
        ("rate limiting", "rate limit"),
        ("expired tokens", "expir token"),
        ("fixes typo", None),  # a short word stays whole
        ("is:open crashing uploads", "is:open crash upload"),
        ("dark mode", None),  # nothing to cut: no second search
    ],
)
def test_a_search_that_found_nothing_is_broadened_to_its_stems(
    tools: dict[str, Tool], query: str, wider: str | None
) -> None:
    out = broadened(tools[SEARCH], {"query": query, "owner": "acme"})
    assert (out or {}).get("query") == wider and (out is None or out["owner"] == "acme")
    assert broadened(tools[COMMENT], {"body": query}) is None  # no text query: not a search


def test_an_empty_search_runs_once_more_by_its_stems_in_the_same_step(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]))
    found = iter(
        [CallResult('{"total_count":0,"incomplete_results":false,"items":[]}', False), CallResult(FOUND, False)]
    )
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {COMMENT: CallResult("{}", False)}
    deps = _deps(engine, _Script(SEARCH, [COMMENT]), tools, calls, results)
    deps = replace(
        deps,
        call_tool=lambda n, a: calls.append((n, a)) or (next(found) if n == SEARCH else results[n]),  # type: ignore[arg-type]
    )
    events: list[Event] = []
    run_turn(deps, Conversation(), REQUEST, events.append)
    assert [c[0] for c in calls] == [SEARCH, SEARCH, COMMENT]
    assert calls[0][1]["query"] == "rate limiting" and calls[1][1]["query"] == "rate limit"
    assert [e.step for e in events if e.type == "tool_result"] == [1, 1, 2]  # type: ignore[attr-defined]


def test_a_write_that_keeps_the_requests_placeholder_is_not_run_and_the_value_is_read_first(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "write it … as 'September: <amount>'" was written with "<amount>" in it: refused like a number nobody gave,
    so the next step reads the value, and the write after it has it."""
    contents = iter(["September: <amount>", "September: 4100"])
    args = {READ_FILE.name: lambda: {"path": "/home/ana/q3.csv"}}
    args[WRITE_FILE.name] = lambda: {"path": "/home/ana/summary.txt", "content": next(contents)}
    _write_args(monkeypatch, lambda name: args[name]())
    calls: list[tuple[str, dict[str, Any]]] = []
    router = _Script(WRITE_FILE.qualified_name, [READ_FILE.qualified_name, WRITE_FILE.qualified_name])
    events: list[Event] = []
    request = (
        "Take September's revenue from /home/ana/q3.csv and write it to /home/ana/summary.txt as 'September: <amount>'"
    )
    run_turn(_local_deps(engine, router, calls), Conversation(), request, events.append)
    assert [c[0] for c in calls] == [READ_FILE.qualified_name, WRITE_FILE.qualified_name]
    assert calls[1][1]["content"] == "September: 4100"
    (skipped,) = [e for e in events if e.type == "tool_skipped"]
    assert "<amount>" in skipped.reason and skipped.step == 1  # type: ignore[union-attr]
    # the refused write is what the next-step decision saw first: a call that did not run
    assert router.seen[0][0].tool == WRITE_FILE.qualified_name and not router.seen[0][0].ran


def test_a_write_that_keeps_the_placeholder_after_a_read_is_written_again_once_told_so(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the read that has the value, "mentioning them by @login" was still written "@login": the write is
    written again once in the same step, told the placeholder; a refused first write counts no call, so a budget of
    two still reads and writes."""
    contents = iter(["September: <amount>", "September: <amount>", "September: 4100"])
    notes: list[str | None] = []

    def write(self: Any, tool: Tool, *a: Any, **k: Any) -> Any:
        if tool.name == READ_FILE.name:
            return SimpleNamespace(arguments={"path": "/home/ana/q3.csv"}, schema_error=None)
        notes.append(k.get("note"))
        return SimpleNamespace(
            arguments={"path": "/home/ana/summary.txt", "content": next(contents)}, schema_error=None
        )

    monkeypatch.setattr(ArgumentWriter, "write", write)
    calls: list[tuple[str, dict[str, Any]]] = []
    router = _Script(WRITE_FILE.qualified_name, [READ_FILE.qualified_name, WRITE_FILE.qualified_name])
    request = (
        "Take September's revenue from /home/ana/q3.csv and write it to /home/ana/summary.txt as 'September: <amount>'"
    )
    deps = replace(_local_deps(engine, router, calls), max_steps=2)
    events: list[Event] = []
    run_turn(deps, Conversation(), request, events.append)
    assert [c[0] for c in calls] == [READ_FILE.qualified_name, WRITE_FILE.qualified_name]
    assert calls[1][1]["content"] == "September: 4100"
    assert len(notes) == 3 and "<amount> is my placeholder" in str(notes[2]) and "placeholder" not in str(notes[1])
    # with no value written the second time, it is not run
    contents = iter(["September: <amount>"] * 3)
    calls.clear()
    router = _Script(WRITE_FILE.qualified_name, [READ_FILE.qualified_name, WRITE_FILE.qualified_name])
    run_turn(replace(_local_deps(engine, router, calls), max_steps=2), Conversation(), request, lambda e: None)
    assert [c[0] for c in calls] == [READ_FILE.qualified_name]


def test_a_login_placeholder_is_the_one_login_the_lookup_returned_where_the_request_looks(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Whoever is assigned to …: ping them …, mentioning them by @login" wrote "@login" even when told so, with
    ``"assignees": ["bob-kim"]`` in the lookup's view: the one login of the field the request names is filled in."""
    found = json.loads(FOUND)
    found["items"][0] |= {"assignees": [{"login": "bob-kim"}], "user": {"login": "carol-ops"}}
    body = {"owner": "acme", "repo": "api", "issue_number": 2, "body": "@login, any ETA? cc @LOGIN"}
    _write_args(monkeypatch, lambda name: dict(_ARGS[name]) if name == "search_issues" else dict(body))
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {
        SEARCH: CallResult(json.dumps(found), False),
        COMMENT: CallResult("{}", False),
    }
    request = (
        "Whoever is assigned to the acme/api rate limiting issue: ask them for an ETA there, mentioning them by @login."
    )
    run_turn(_deps(engine, _Script(SEARCH, [COMMENT]), tools, calls, results), Conversation(), request, lambda e: None)
    assert calls[-1] == (COMMENT, {**body, "body": "@bob-kim, any ETA? cc @bob-kim"})
    # the request names no field of people there: nothing is filled, the placeholder is refused
    calls.clear()
    other = "Ask on the acme/api rate limiting issue for an ETA, mentioning them by @login."
    run_turn(_deps(engine, _Script(SEARCH, [COMMENT]), tools, calls, results), Conversation(), other, lambda e: None)
    assert [c[0] for c in calls] == [SEARCH]


@pytest.mark.parametrize(
    ("text", "slots"),
    [
        ("write it to x as 'September: <amount>'", ("<amount>",)),
        ("Create a branch fix/issue-<that number>.", ("<that number>",)),
        ("backup/<that name without the 'feature/' prefix>", ("<that name without the 'feature/' prefix>",)),
        ("ping them, mentioning them by @login.", ("@login",)),
        ("replace <div> with <section> in index.html", ()),  # HTML tags are values
        ("mail bob@login.com", ()),  # an address
        ("if a<b and c>d", ()),
    ],
)
def test_the_placeholders_a_request_leaves_for_values_it_does_not_know(text: str, slots: tuple[str, ...]) -> None:
    assert Request.parse(text).slots == slots


LABEL_WRITE = Tool(
    "github",
    "label_write",
    "Create, update or delete a label in a repository.",
    {
        "type": "object",
        "properties": {
            "method": {"type": "string", "enum": ["create", "update", "delete"]},
            "owner": {"type": "string"},
            "repo": {"type": "string"},
            "name": {"type": "string"},
            "color": {"type": "string"},
        },
        "required": ["method", "owner", "repo", "name"],
    },
)


def test_a_write_that_names_a_repository_as_a_value_reads_the_value_there_first(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "a 'good first issue' label in acme/web with the same colour acme/docs uses" was created with the colour
    "acme/docs": the write is refused, the next step's read runs in acme/docs whatever repository the model wrote,
    and the write follows with the value it read."""
    label = {"method": "create", "owner": "acme", "repo": "web", "name": "good first issue"}
    written = iter([{**label, "color": "acme/docs"}, {**label, "color": "7057ff"}])
    args = {"get_label": {"owner": "acme", "repo": "web", "name": "good first issue"}}
    _write_args(monkeypatch, lambda name: next(written) if name == "label_write" else dict(args[name]))
    local = {**tools, LABEL_WRITE.qualified_name: LABEL_WRITE}
    get_label = "github__get_label"
    results: dict[str, CallResult | Exception] = {
        get_label: CallResult('{"name": "good first issue", "color": "7057ff"}', False),
        LABEL_WRITE.qualified_name: CallResult('{"id": 11}', False),
    }
    calls: list[tuple[str, dict[str, Any]]] = []
    deps = _deps(
        engine, _Script(LABEL_WRITE.qualified_name, [get_label, LABEL_WRITE.qualified_name]), local, calls, results
    )
    deps = replace(deps, annotations={get_label: {"readOnlyHint": True}}.get)
    events: list[Event] = []
    request = "Create a 'good first issue' label in acme/web with the same colour acme/docs uses for it."
    run_turn(deps, Conversation(), request, events.append)
    assert calls == [
        (get_label, {"owner": "acme", "repo": "docs", "name": "good first issue"}),
        (LABEL_WRITE.qualified_name, {**label, "color": "7057ff"}),
    ]
    skipped = next(e for e in events if e.type == "tool_skipped")
    assert "color=acme/docs names a repository" in skipped.reason  # type: ignore[union-attr]


def test_a_path_the_request_names_is_no_repository_as_a_value() -> None:
    """ "add docs/rate-limits.md on it" names a path with a slash: it is a file's path, not a repository, as its first
    part is not the call's owner; "acme/docs" for a colour is one."""
    from nexus_agent.agent.turn import _repository_as_value

    said = Request.parse("In acme/docs: add docs/rate-limits.md with the colour acme/web uses")
    page = {"owner": "acme", "repo": "docs", "path": "docs/rate-limits.md", "content": "x"}
    assert _repository_as_value(page, said) is None
    assert _repository_as_value({"owner": "acme", "repo": "docs", "color": "acme/web"}, said) == (
        "color=acme/web",
        "acme/web",
    )
    assert _repository_as_value({"path": "acme/web"}, said) is None  # no owner: not a repository's call


class _ReadsFirstInPlace(_ReadsFirst, _InPlace):
    """Plans a read before the write that overwrites, and names the edit that changes part of a file."""


@pytest.mark.parametrize(
    ("ask", "exists"),
    [
        ("Fix the typo in {path}: 'bred' should be 'bread'.", True),
        ("Fix the typo in {path}: 'bred' should be 'bread'.", False),
        ("Write 'bread' into {path}, not a word more.", False),
    ],
)
def test_a_quoted_write_that_would_replace_a_file_whole_reads_it_first(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, ask: str, exists: bool
) -> None:
    """ "Fix the typo in …: 'bred' should be 'bread'" was written at once with write_file, and the list became the
    word "bread": the write now reads the file first; over a file that exists the edit runs. A missing one is
    written when the request asks for it to be written (a read that found it missing is no reason not to create
    it), not when it asks to amend what is there (the tune split's "fix the typo" in a file that does not exist:
    a new one-word file was written)."""
    path = "/home/ana/notes/shopping-list.txt"
    args = {
        READ_FILE.name: {"path": path},
        WRITE_FILE.name: {"path": path, "content": "bread"},
        EDIT_FILE.name: {"path": path, "edits": [{"oldText": "bred", "newText": "bread"}]},
    }
    _write_args(monkeypatch, lambda name: dict(args[name]))
    # over a missing file the write follows its read without a decision (after a failed read, the decision offers
    # no write): the script says done there
    then = WRITE_FILE.qualified_name if exists else None
    router = _ReadsFirstInPlace(WRITE_FILE.qualified_name, [READ_FILE.qualified_name, then])
    calls: list[tuple[str, dict[str, Any]]] = []
    deps = _local_deps(engine, router, calls)
    local = {t.qualified_name: t for t in (WRITE_FILE, READ_FILE, EDIT_FILE)}
    read = CallResult("- bred\n- milk", False) if exists else CallResult("Error: ENOENT: no such file", True)

    def call(name: str, a: dict[str, Any]) -> CallResult:
        calls.append((name, a))
        return read if name == READ_FILE.qualified_name else CallResult("ok", False)

    deps = replace(deps, tools=lambda: local, call_tool=call)
    events: list[Event] = []
    run_turn(deps, Conversation(), ask.format(path=path), events.append)
    amends = ask.startswith("Fix")
    ran = [EDIT_FILE] if exists else [] if amends else [WRITE_FILE]
    assert [c[0] for c in calls] == [READ_FILE.qualified_name, *(t.qualified_name for t in ran)]
    first = next(e for e in events if e.type == "tool_skipped")
    assert "as it would replace a file whole" in first.reason  # type: ignore[union-attr]
    if not ran:
        assert events[-1].text.startswith("Nothing was changed") and "no such file" in events[-1].text  # type: ignore[union-attr]


@pytest.mark.parametrize("request_", ["Assign acme/api issue 11 to me.", "Assign acme/api issue 11 to bob-kim."])
def test_a_change_for_me_reads_who_i_am_first(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, request_: str
) -> None:
    """ "Assign the … issue to me" was written with ``assignees: ["your_username"]``: a write for "me" reads the
    server's current user first (``get_me``), in the same turn, and its arguments see the login; a change for
    someone named reads nothing more."""
    notes: list[str | None] = []
    assign = {"method": "update", "owner": "acme", "repo": "api", "issue_number": 11, "assignees": ["octo-dev"]}

    def write(self: Any, tool: Tool, *a: Any, **k: Any) -> Any:
        notes.append(k.get("note"))
        return SimpleNamespace(arguments=dict(assign), schema_error=None)

    monkeypatch.setattr(ArgumentWriter, "write", write)
    me, issue_write = "github__get_me", "github__issue_write"
    results: dict[str, CallResult | Exception] = {
        me: CallResult('{"login": "octo-dev", "name": "Octo Dev"}', False),
        issue_write: CallResult('{"number": 11}', False),
    }
    calls: list[tuple[str, dict[str, Any]]] = []
    deps = _deps(engine, _Script(issue_write, [None]), tools, calls, results)
    deps = replace(deps, annotations={me: {"readOnlyHint": True}}.get)
    run_turn(deps, Conversation(), request_, lambda e: None)
    if request_.endswith("to me."):
        assert calls == [(me, {}), (issue_write, assign)]
        assert "octo-dev" in str(notes[-1])  # the write's arguments were told the login
    else:
        assert calls == [(issue_write, assign)]


def test_a_text_that_repeats_the_request_is_not_the_text_it_asks_for(tools: dict[str, Tool]) -> None:
    comment = tools["github__add_issue_comment"]
    request = Request.of("Merge acme/api PR 6, then leave a comment on it with the merge commit SHA.")
    echoed = {"owner": "acme", "repo": "api", "issue_number": 6, "body": request.text}
    assert _echoed(comment, echoed, request) == "body"
    # a few words changed or added still repeat it
    near = dict(echoed, body="Merged acme/api PR 6; then leave a comment on it with the merge commit SHA please")
    assert _echoed(comment, near, request) == "body"
    assert _echoed(comment, dict(echoed, body="Merged in e0f13c0 (merge commit SHA)."), request) is None
    # a request that quotes its text: the quote is the value, however much of the request it is
    quoting = Request.of("Comment 'Merge acme/api PR 6 then leave a comment' on acme/api PR 6")
    assert _echoed(comment, dict(echoed, body="Merge acme/api PR 6 then leave a comment"), quoting) is None


@pytest.mark.parametrize("learns", [True, "json", False])
def test_an_echoed_text_is_asked_alone_then_refused(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, learns: bool
) -> None:
    request = "Leave a comment on acme/api issue 2 saying which release fixed the rate limiting bug, please."
    _write_args(monkeypatch, lambda name: {"owner": "acme", "repo": "api", "issue_number": 2, "body": request})
    asked: list[str] = []
    real_chat = LocalBackend.chat

    def chat(self: Any, messages: Any, *a: Any, **k: Any) -> Any:
        if "Write the body of add_issue_comment" in messages[-1]["content"]:
            asked.append(messages[-1]["content"])
            if learns == "json":  # the call's arguments, its text as their body
                return SimpleNamespace(text=json.dumps({"issue_number": 1, "body": "Fixed in 1.4.2."}, indent=2))
            return SimpleNamespace(text="Fixed in 1.4.2." if learns else f"`{request}`")
        return real_chat(self, messages, *a, **k)

    monkeypatch.setattr(LocalBackend, "chat", chat)
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, CallResult | Exception] = {COMMENT: CallResult("{}", False)}
    events: list[Event] = []
    run_turn(_deps(engine, _Script(COMMENT, []), tools, calls, results), Conversation(), request, events.append)
    assert len(asked) == 1 and asked[0].startswith(request)
    if learns:
        assert calls == [(COMMENT, {"owner": "acme", "repo": "api", "issue_number": 2, "body": "Fixed in 1.4.2."})]
    else:
        assert calls == []  # the request is never posted as its own comment
        assert events[-1].type == "error" and "repeats the request" in events[-1].message  # type: ignore[union-attr]


def test_the_text_a_failed_write_left_out_is_asked_alone(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment written with no body failed ("at least one of 'body' or 'reaction' is required"); its rewrite
    wrote the same again (reworded tune request, qwen1.5b). The body is asked alone and the call made once more;
    only a free-text parameter the error names is asked for so (:func:`text_missing`)."""
    comment = tools["github__add_issue_comment"]
    error = "missing required parameter: at least one of 'body' or 'reaction' is required"
    bare = {"owner": "acme", "repo": "api", "issue_number": 2}
    assert text_missing(comment, bare, error) == "body"
    assert text_missing(comment, {**bare, "body": "x"}, error) is None
    assert text_missing(comment, bare, "issue_number must be a number") is None
    # a colour is a string, not text to write
    label = Tool("github", "label_write", "Labels.", {"type": "object", "properties": {"color": {"type": "string"}}})
    assert text_missing(label, {"name": "x"}, "missing required parameter: color") is None
    request = "Close acme/api issue 2 and leave a comment there telling bob-kim it is done."
    _write_args(monkeypatch, lambda name: dict(bare))
    real_chat = LocalBackend.chat

    def chat(self: Any, messages: Any, *a: Any, **k: Any) -> Any:
        if "Write the body of add_issue_comment" in messages[-1]["content"]:
            return SimpleNamespace(text='```json\n{"body": "@bob-kim this is done now."}\n```')
        return real_chat(self, messages, *a, **k)

    monkeypatch.setattr(LocalBackend, "chat", chat)
    outcomes = [CallResult(error, True), CallResult("{}", False)]

    class _InTurn(dict):  # type: ignore[type-arg]
        def __getitem__(self, name: str) -> CallResult:
            return outcomes.pop(0)

    calls: list[tuple[str, dict[str, Any]]] = []
    run_turn(_deps(engine, _Script(COMMENT, []), tools, calls, _InTurn()), Conversation(), request, lambda e: None)
    assert calls == [(COMMENT, bare), (COMMENT, {**bare, "body": "@bob-kim this is done now."})]


@pytest.mark.parametrize(
    "reply",
    [
        "I'm sorry, but I can't assist with that request.",
        '```json\n{\n  "body": "I\'m sorry, but I can\'t assist with that request."\n}\n```',
        "",
    ],
)
def test_a_text_the_model_declines_to_write_is_none(
    engine: Engine, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch, reply: str
) -> None:
    monkeypatch.setattr(LocalBackend, "chat", lambda self, *a, **k: SimpleNamespace(text=reply))
    deps = _deps(engine, _Script(COMMENT, []), tools, [], {})
    request = Request.of("close acme/web issue 4 and leave a comment there telling bob-kim")
    assert _text_asked(deps, request, tools[COMMENT], "body", []) is None


def test_a_request_to_keep_the_labels_keeps_those_a_read_returned() -> None:
    """Setting ``labels`` replaces them all: "(keep whatever labels it already has)" adds the labels the search's
    row of that issue had, which qwen1.5b wrote on one run and left out on the next."""
    rows = json.dumps(
        {
            "total_count": 2,
            "items": [
                {"number": 2, "title": "Rate limits", "labels": [{"name": "bug"}]},
                {"number": 7, "title": "Health endpoint should report version", "labels": ["enhancement"]},
            ],
        }
    )
    request = Request.of(
        "tag the acme/api issue about the health endpoint as a good first issue (keep whatever labels it already has)"
    )
    args = {"issue_number": 7, "labels": ["good_first_issue", "good first issue"]}
    kept = _keeping_labels(args, request, [rows])
    assert kept["labels"] == ["enhancement", "good_first_issue", "good first issue"]
    assert _keeping_labels({**args, "labels": ["enhancement", "x"]}, request, [rows])["labels"] == ["enhancement", "x"]
    for said in ("Label acme/api#7 good first issue", "keep it open and label it good first issue"):
        assert _keeping_labels(args, Request.of(said), [rows]) == args
    dropped = Request.of("Label it priority:high; don't drop its existing labels")
    assert _keeping_labels({"issue_number": 2, "labels": ["priority:high"]}, dropped, [rows])["labels"] == [
        "bug",
        "priority:high",
    ]
