"""The whole agent on a real model against the real offline GitHub sandbox server (a subprocess over stdio):
the public sync API, routing, grammar-constrained arguments, confirmation, the tool call, and the answer."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nexus_agent.agent.api import AgentConfig, SyncNexusAgent
from nexus_agent.agent.history import carries_nothing
from nexus_agent.engine import MAIN
from nexus_agent.sandbox.github import sandbox_mcp_config

pytestmark = pytest.mark.real_model


def _sandbox_config(d: Path) -> Path:
    """An MCP config file that starts the GitHub sandbox over stdio, with its data in ``d``."""
    path = d / "mcp.json"
    path.write_text(json.dumps(sandbox_mcp_config(d / "gh")))
    return path


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _sandbox_config(tmp_path_factory.mktemp("agent"))


@pytest.fixture(scope="module")
def agent(config_file: Path) -> SyncNexusAgent:
    confirmations: list[str] = []
    a = SyncNexusAgent(
        # one call per request: these tests pin the single-call rules; the loop's are in test_loop.py and
        # bench/multistep.py (with a loop, the refused comment below may be followed by a lookup)
        AgentConfig(model="qwen0.5b", config_file=config_file, n_ctx=4096, max_steps=1),
        confirm=lambda name, args, ann: confirmations.append(name) is not None and False,
    )
    a.confirmations = confirmations  # type: ignore[attr-defined]
    yield a
    a.close()


def test_lists_open_issues_through_the_sandbox(agent: SyncNexusAgent) -> None:
    events = agent.run("list the open issues in the acme/api repository")
    kinds = [e.type for e in events]
    assert kinds[0] == "route", kinds
    call = next(e for e in events if e.type == "tool_call")
    assert call.name in ("list_issues", "search_issues"), call  # type: ignore[union-attr]
    args = call.arguments  # type: ignore[union-attr]
    assert (args.get("owner") == "acme" and args.get("repo") == "api") or "acme/api" in json.dumps(args)
    result = next(e for e in events if e.type == "tool_result")
    assert result.is_error is False, result  # type: ignore[union-attr]
    assert kinds[-1] == "answer"
    assert len(agent.agent.conversation.turns) == 1
    assert "token" in kinds  # the answer streamed


def test_between_turns_the_lane_takes_in_the_history_the_next_turn_starts_with(agent: SyncNexusAgent) -> None:
    from nexus_agent.agent.turn import next_heads
    from nexus_agent.backend.local import common_head

    engine = agent.agent.engine
    assert engine is not None
    chat = agent.open_chat()  # its own history: the other tests' conversation stays free of numbers
    try:
        events = chat.run("list the open pull requests in acme/web")
        assert events[-1].type == "answer", [e.type for e in events]
        idles = list(agent.agent._idle)
        assert idles  # warm_next is on by default
        for idle in idles:
            idle.thread.join()
        variants, lane = next_heads(chat.conversation, chat.chat.lane, agent.agent.cfg.window_turns, False)[0]
        head = common_head([engine.tokenize_chat(v) for v in variants])
        held = engine.lane(lane)
        assert held.tokens[: len(head)] == head and held.exact >= len(head)
        # the next turn's argument prompt starts with it: nothing of the history is decoded again
        reused = engine.arena.stats.reused_tokens
        events = chat.run("and the open issues there?")
        assert events[-1].type == "answer", [e.type for e in events]
        assert engine.arena.stats.reused_tokens - reused >= len(head)
    finally:
        chat.close()


def test_small_talk_gets_no_tool_and_a_plain_answer(agent: SyncNexusAgent) -> None:
    events = agent.run("good evening! how was your day?")
    route = events[0]
    assert route.type == "route" and route.decision == "no-tool", route  # type: ignore[union-attr]
    assert not any(e.type == "tool_call" for e in events)
    answer = events[-1]
    assert answer.type == "answer", [e.type for e in events]
    text = answer.text.strip()  # type: ignore[union-attr]
    # the main context's system prompt carries the JSON-argument rules; the answer must not turn into one
    assert text and not text.startswith(("{", "```")), text


def test_an_action_no_tool_can_do_is_declined_not_faked(agent: SyncNexusAgent) -> None:
    events = agent.run("book a table for two at 7pm tonight")
    assert events[0].type == "route" and events[0].decision == "no-tool", events[0]  # type: ignore[union-attr]
    assert not any(e.type == "tool_call" for e in events)
    text = events[-1].text.strip()  # type: ignore[union-attr]
    # under the argument rules qwen0.5b answered this with a made-up JSON call; it must say it could not do it
    assert text and not text.startswith(("{", "```")), text
    assert re.search(r"\b(can't|cannot|can not|could not|couldn't|unable|not able)\b", text, re.IGNORECASE), text


def test_a_write_to_an_object_nobody_named_is_refused_before_confirmation(agent: SyncNexusAgent) -> None:
    before = (len(agent.agent.conversation.turns), len(agent.confirmations))  # type: ignore[attr-defined]
    # no number anywhere in the conversation: whatever issue number the model writes, it made it up
    events = agent.run("add a comment to the issue in acme/api saying thanks")
    route = events[0]
    assert route.type == "route" and route.tool == "github__add_issue_comment", route  # type: ignore[union-attr]
    err = events[-1]
    assert err.type == "error" and err.stage == "arguments" and "issue_number" in err.message, err  # type: ignore[union-attr]
    assert not any(e.type == "tool_call" for e in events)
    after = (len(agent.agent.conversation.turns), len(agent.confirmations))  # type: ignore[attr-defined]
    assert after == before  # nobody was asked, nothing recorded


def test_tool_that_writes_is_held_for_confirmation(agent: SyncNexusAgent) -> None:
    before = len(agent.agent.conversation.turns)
    events = agent.run("create an issue in acme/api titled 'Nexus test issue' with body 'created by a test'")
    call = next((e for e in events if e.type == "tool_call"), None)
    assert call is not None, [e.type for e in events]
    assert call.confirmed is False  # type: ignore[union-attr]
    assert agent.confirmations  # type: ignore[attr-defined]
    assert events[-1].type == "error" and events[-1].stage == "confirm"  # type: ignore[union-attr]
    assert len(agent.agent.conversation.turns) == before  # nothing recorded, nothing lost
    # and nothing was created on the server
    check = agent.run("search issues in acme/api for 'Nexus test issue'")
    res = next((e for e in check if e.type == "tool_result"), None)
    assert res is None or "Nexus test issue" not in res.text  # type: ignore[union-attr]


def test_a_search_that_finds_nothing_is_answered_as_nothing_found(agent: SyncNexusAgent) -> None:
    events = agent.run("search issues in acme/api for 'kubernetes operator crash'")
    res = next((e for e in events if e.type == "tool_result"), None)
    assert res is not None and carries_nothing(res.text), [e.type for e in events]  # type: ignore[union-attr]
    text = events[-1].text.strip()  # type: ignore[union-attr]
    # under the plain data prompt qwen0.5b answered an empty search with made-up or echoed JSON
    assert events[-1].type == "answer" and not text.startswith(("{", "```")), text
    assert re.search(
        r"\b(nothing|no (issues|results|matches)|(did not|didn't|could not|couldn't) find)\b", text, re.IGNORECASE
    ), text


def test_leaving_the_event_stream_cancels_the_turn(agent: SyncNexusAgent) -> None:
    request = "write a long story, at least 300 words, about a lighthouse keeper and a robot"
    before = len(agent.agent.conversation.turns)

    async def until_first_token() -> list[str]:
        seen: list[str] = []
        async with contextlib.aclosing(agent.agent.run(request)) as events:
            async for ev in events:
                seen.append(ev.type)
                if ev.type == "token":
                    break
        return seen

    seen = agent._submit(until_first_token())
    assert seen[0] == "route" and seen[-1] == "token" and "answer" not in seen, seen
    # aclose returned only once the turn had stopped; no tool ran, so nothing was recorded
    assert len(agent.agent.conversation.turns) == before
    events = agent.run("good evening! how was your day?")  # the next turn runs normally
    assert events[-1].type == "answer", [e.type for e in events]
    assert len(agent.agent.conversation.turns) == before + 1


def test_bad_config_names_file_key_and_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"github": {"command": 3}}}))
    proc = subprocess.run(
        [sys.executable, "-m", "nexus_agent.cli", "run", "--config", str(bad), "-p", "hi"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    err = " ".join(proc.stderr.split())
    assert "bad.json" in err and "mcpServers.github.command" in err


def test_a_question_about_no_named_object_is_answered_without_a_tool(agent: SyncNexusAgent) -> None:
    """Retrieval alone sends this conceptual question to merge_pull_request; the relevance judge (routing/judge.py)
    reads it as general knowledge, so no tool is routed and the model answers."""
    before = len(agent.agent.conversation.turns)
    events = agent.run("what's the difference between git merge and git rebase, conceptually?")
    route = events[0]
    assert route.type == "route" and route.decision == "no-tool", route
    assert route.candidates[0].name == "github__merge_pull_request", route  # type: ignore[union-attr]  # the case
    assert not any(e.type in ("tool_call", "tool_skipped", "error") for e in events), [e.type for e in events]
    assert events[-1].type == "answer" and events[-1].text.strip(), events[-1]  # type: ignore[union-attr]
    assert len(agent.agent.conversation.turns) == before + 1


def test_without_the_judge_a_question_routed_to_a_write_is_answered_not_refused(tmp_path: Path) -> None:
    """The safety rule behind the judge: with the embedding tests alone the question goes to merge_pull_request
    (auto) and the model makes up a PR number. It was refused with "say which one you mean"; a question that names
    none of a write's objects is answered, the write skipped."""
    a = SyncNexusAgent(
        AgentConfig(model="qwen0.5b", config_file=_sandbox_config(tmp_path), n_ctx=4096, relevance="exemplars"),
        confirm=lambda name, args, ann: False,
    )
    try:
        events = a.run("what's the difference between git merge and git rebase, conceptually?")
        route = events[0]
        assert route.type == "route" and route.tool == "github__merge_pull_request", route  # the case guarded
        assert not any(e.type in ("tool_call", "error") for e in events), [e.type for e in events]
        assert [e.name for e in events if e.type == "tool_skipped"] == ["merge_pull_request"]  # type: ignore[union-attr]
        assert events[-1].type == "answer" and events[-1].text.strip(), events[-1]  # type: ignore[union-attr]
    finally:
        a.close()


def test_a_question_does_not_merge_even_with_yes(tmp_path: Path) -> None:
    """Retrieval sends "is acme/web#2 mergeable?" to merge_pull_request (auto, the number grounded): with --yes the
    question merged the PR. Now the agent asks, and answered no, nothing runs."""
    asked: list[str] = []
    a = SyncNexusAgent(
        AgentConfig(model="qwen0.5b", config_file=_sandbox_config(tmp_path), n_ctx=4096, yes=True),
        confirm=lambda name, args, ann: asked.append(name) is None and False,
    )
    try:
        events = a.run("is acme/web#2 mergeable?")
        route = events[0]
        assert route.type == "route" and route.tool == "github__merge_pull_request", route  # the case guarded
        assert asked == ["github__merge_pull_request"], [e.type for e in events]
        assert not any(e.type == "tool_result" for e in events)
        assert events[-1].type == "error" and "question" in events[-1].message  # type: ignore[union-attr]
        assert a.agent.conversation.turns == []
    finally:
        a.close()


def test_chats_opened_on_one_agent_keep_their_own_history_on_one_model(agent: SyncNexusAgent) -> None:
    engine = agent.agent.engine
    assert engine is not None
    first = len(agent.agent.conversation.turns)
    work, home = agent.open_chat(), agent.open_chat()
    try:
        ev_work = work.run("list the open issues in the acme/api repository")
        ev_home = home.run("good evening! how was your day?")
        assert ev_work[-1].type == "answer" and ev_home[-1].type == "answer"
        assert [t.user for t in work.conversation.turns] == ["list the open issues in the acme/api repository"]
        assert [t.user for t in home.conversation.turns] == ["good evening! how was your day?"]
        assert work.conversation.turns[0].tool is not None and home.conversation.turns[0].tool is None
        assert len(agent.agent.conversation.turns) == first  # the agent's first chat is untouched
        assert agent.agent.engine is engine  # one model load serves every chat
        # switching back to the work chat: its lane still holds its prompt, so the next turn starts warm
        assert engine.lane(work.chat.lane).tokens
        reused = engine.arena.stats.reused_tokens
        ev = work.run("and in acme/web?")
        assert ev[-1].type == "answer", [e.type for e in ev]
        assert engine.arena.stats.reused_tokens > reused
        assert len(work.conversation.turns) == 2 and len(home.conversation.turns) == 1
    finally:
        work.close()
        home.close()
    assert engine.lane(work.chat.lane).tokens == []  # a closed chat's KV is gone


def test_with_a_kv_budget_the_conversation_keeps_its_whole_trace_under_the_budget(tmp_path: Path) -> None:
    a = SyncNexusAgent(
        AgentConfig(model="qwen0.5b", config_file=_sandbox_config(tmp_path), n_ctx=4096, kv_budget=384),
        confirm=lambda name, args, ann: False,
    )
    try:
        requests = [
            "list the open issues in the acme/api repository",
            "thanks! how are you today?",
            "list the open pull requests in acme/web",
            "and the closed issues in acme/api?",
        ]
        for r in requests:
            events = a.run(r)
            assert events[-1].type == "answer", [(e.type, getattr(e, "message", "")) for e in events]
        engine = a.agent.engine
        assert engine is not None
        lane = engine.lane(MAIN)  # the agent's first chat
        kv = lane.kv
        assert kv is not None and kv.steps, "the trace never reached the budget"
        assert kv.cells <= 384
        assert lane.slot is not None and engine.ctx.seq_pos_max(lane.slot) < 384
        # the lane's prompt is the whole trace: the first request is still in it, three turns later
        text = engine.model.detokenize(lane.tokens)
        assert requests[0] in text and requests[1] in text
        assert len(lane.tokens) > 384
    finally:
        a.close()
