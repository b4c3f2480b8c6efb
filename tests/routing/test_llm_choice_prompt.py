"""The LLM decision's prompt (no model needed): which candidates carry a description."""

from __future__ import annotations

from pathlib import Path

from nexus_agent.registry import load_registry
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.rerank.llm_choice import FOLLOW_UP_HISTORY_MESSAGES, NONE, build_messages


def test_only_the_first_ten_candidates_are_described(registry_dir: Path) -> None:
    tools = load_registry(registry_dir).profile("github_all")[:14]
    user = build_messages("list my gists", tools, [])[1]["content"]
    listed = [line for line in user.splitlines() if line.startswith("- ") and not line.startswith(f"- {NONE} ")]
    assert [line[2:].split("(")[0] for line in listed] == [t.name for t in tools]  # every candidate, in order
    described = [t.name for t, line in zip(tools, listed, strict=True) if " — " in line]
    assert described == [t.name for t in tools[:10] if t.description.strip()]
    assert all(line.endswith(" [github]") for line in listed)
    assert f"- {NONE} — no tool needed" in user


def test_a_follow_up_names_the_call_it_follows_and_sees_two_turns(registry_dir: Path) -> None:
    tools = load_registry(registry_dir).profile("github_all")[:5]
    hist = [
        {"role": "user", "content": "gists of octo?"},
        {"role": "assistant", "content": "(used list_gists {}) → 2 items"},
        {"role": "user", "content": "thanks!"},
        {"role": "assistant", "content": "You're welcome."},
    ]
    prev = PreviousTurn("gists of octo?", tools[2].qualified_name)
    user = build_messages("the second one", tools, hist, FOLLOW_UP_HISTORY_MESSAGES, previous=prev)[1]["content"]
    assert f"The request follows the call of {tools[2].name}:" in user
    assert "gists of octo?" in user and "You're welcome." in user  # the tool turn past the small talk
    assert "follows the call" not in build_messages("the second one", tools, hist)[1]["content"]
    # a previous tool that is not listed is not named: the decision can only pick what it is shown
    other = PreviousTurn("x", "slack__slack_post_message")
    assert "follows the call" not in build_messages("q", tools, hist, previous=other)[1]["content"]
    assert "gists of octo?" not in build_messages("q", tools, hist)[1]["content"]  # a standalone request: one turn
