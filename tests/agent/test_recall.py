"""Recall under a KV budget (agent/recall.py): a request gets back the evicted span it is about, as a bounded note
before the turn; a span still held is not recalled; a corrupt or short span is skipped with a log line and the turn
goes on with the session as it was. The retrieval is the routing index code over the default embedder; the turn runs
on the tiny qwen2 model under the memory manager."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.events import Event
from nexus_agent.agent.history import Conversation, Turn
from nexus_agent.agent.recall import MAX_CHARS, Recall
from nexus_agent.agent.routing_adapter import shared_embedder
from nexus_agent.agent.turn import CallResult, RouteOutcome, TurnDeps, run_turn
from nexus_agent.backend import LocalBackend
from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.engine.engine import MAIN
from nexus_agent.kv.segments import SegKind
from nexus_agent.registry import Registry, Tool, load_registry
from nexus_agent.routing.followup import CallSoFar, PreviousTurn

CONFIG = json.dumps({"host": "localhost", "port": 8443, "theme": "light"}, indent=2)


def _convo() -> Conversation:
    issues = json.dumps(
        {
            "total_count": 2,
            "items": [{"number": 41, "title": "Login fails after reset"}, {"number": 57, "title": "Dark mode"}],
        }
    )
    me = json.dumps({"login": "carol-ops", "name": "Carol Ops", "company": "@acme"})
    turns = []
    for user, tool, args, out, answer in (
        ("Search the issues about login.", "github__search_issues", {"query": "login"}, issues, "Found #41."),
        (
            "Read the website config.",
            "filesystem__read_text_file",
            {"path": "projects/website/config.json"},
            CONFIG,
            "Read it.",
        ),
        ("Who am I on GitHub?", "github__get_me", {}, me, "You are carol-ops."),
    ):
        t = Turn(user=user, answer=answer)
        t.tool, t.arguments, t.tool_result, t.tool_output = tool, args, out[:40], out
        turns.append(t)
    return Conversation(turns)


@pytest.fixture(scope="module")
def embedder() -> Any:
    return shared_embedder("minilm-tools")


def test_an_evicted_span_comes_back_and_a_held_one_does_not(embedder: Any) -> None:
    convo = _convo()
    gone: dict[str, float] = {"2.1": 1.0}
    recall = Recall(embedder, lambda: gone)
    got = recall("Which port does the website config use?", convo)
    assert got.spans == ["2.1"] and got.skipped == []
    assert "8443" in got.note and "read_text_file" in got.note and len(got.note) <= MAX_CHARS
    gone.clear()  # held again: nothing to recall
    assert recall("Which port does the website config use?", convo).note == ""
    assert recall.fired == 1 and recall.asked == 2


def test_a_corrupt_or_short_span_is_skipped_with_a_log_line(embedder: Any, caplog: pytest.LogCaptureFixture) -> None:
    convo = _convo()
    recall = Recall(embedder, lambda: {"2.1": 1.0})
    recall.index.sync(convo)
    span = recall.index.spans["2.1"]
    for bad in (replace(span, text=span.text[:10]), replace(span, text=""), replace(span, text=span.text.upper())):
        recall.index.spans["2.1"] = bad
        with caplog.at_level(logging.WARNING, logger="nexus_agent.agent.recall"):
            got = recall("Which port does the website config use?", convo)
        assert got.note == "" and got.skipped == ["2.1"]
        assert any("2.1" in r.message and "corrupt" in r.message for r in caplog.records)
        caplog.clear()


# -- in a turn, on the engine's memory manager


class _Route:
    def route_turn(
        self, query: str, window: list[dict[str, str]], previous: PreviousTurn | None = None
    ) -> RouteOutcome:
        return RouteOutcome("auto", "filesystem__read_text_file", [("filesystem__read_text_file", 1.0)], 0.0)

    def next_step(self, query: str, window: list[dict[str, str]], calls: Sequence[CallSoFar]) -> RouteOutcome:
        return RouteOutcome("done", None, [], 0.0)

    def warm(self) -> None:
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

    def after_turn(self) -> None:
        pass

    def apply_diff(self, changed: list[Tool], removed: list[str]) -> None:
        pass


@pytest.fixture(scope="module")
def tools(registry_dir: Path) -> dict[str, Tool]:
    reg: Registry = load_registry(registry_dir)
    return {t.qualified_name: t for t in reg.profile("github_default")}


def _turn_with_recall(
    recall: Recall, tools: dict[str, Tool], convo: Conversation, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Event], Engine]:
    """One turn of ``convo`` under the memory manager (tiny qwen2), its arguments written by a stub."""
    monkeypatch.setattr(
        ArgumentWriter, "write", lambda self, tool, *a, **k: SimpleNamespace(arguments={"path": "x"}, schema_error=None)
    )
    eng = Engine(
        EngineConfig(
            model="tiny-qwen2", n_ctx=4096, n_slots=4, n_batch=64, kv_budget=1024, evict="keydiff", kv_manager=True
        )
    )
    tool = Tool(
        name="read_text_file",
        server="filesystem",
        description="Read a text file",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    tools = {**tools, tool.qualified_name: tool}
    backend = LocalBackend(eng, heads=False)
    deps = TurnDeps(
        backend=backend,
        router=_Route(),
        tools=lambda: tools,
        annotations=lambda q: {"readOnlyHint": True},
        call_tool=lambda name, args: CallResult("port = 9000", False),
        confirm=None,
        auto_yes=True,
        full_trace=True,
        recall=recall,
    )
    events: list[Event] = []
    run_turn(deps, convo, "What port does the website config use?", events.append)
    return events, eng


def test_a_recalled_note_goes_before_the_turn_and_stays_in_the_trace(
    embedder: Any, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    convo = _convo()
    events, eng = _turn_with_recall(Recall(embedder, lambda: {"2.1": 1.0}), tools, convo, monkeypatch)
    try:
        assert events[-1].type == "answer", events[-1]
        turn = convo.turns[-1]
        assert "8443" in turn.recalled
        msgs, parts = convo.trace_parts("s")
        note = msgs.index({"role": "user", "content": turn.recalled})
        assert msgs[note + 1]["content"] == turn.user  # the note comes right before its request
        assert parts[note][0].kind is SegKind.NOTE and parts[note][0].span == "4.n"
        mem = eng.memory(MAIN)
        assert mem is not None and any(s.kind is SegKind.NOTE for s in mem.segments.segments)
    finally:
        eng.close()


def test_a_corrupt_span_leaves_the_turn_and_the_session_as_they_were(
    embedder: Any, tools: dict[str, Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    convo = _convo()
    before = [(t.user, t.tool, t.tool_output, t.answer, t.recalled) for t in convo.turns]
    recall = Recall(embedder, lambda: {"2.1": 1.0})
    recall.index.sync(convo)
    recall.index.spans["2.1"] = replace(recall.index.spans["2.1"], text="{")
    events, eng = _turn_with_recall(recall, tools, convo, monkeypatch)
    try:
        assert events[-1].type == "answer"
        assert convo.turns[-1].recalled == ""
        assert [(t.user, t.tool, t.tool_output, t.answer, t.recalled) for t in convo.turns[:3]] == before
        assert convo.turns[1].tool_output == CONFIG, "the history's own text is untouched"
        mem = eng.memory(MAIN)
        assert mem is not None and not any(s.kind is SegKind.NOTE for s in mem.segments.segments)
    finally:
        eng.close()
