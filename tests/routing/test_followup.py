"""Follow-up detection, tool siblings and reading earlier calls from chat messages (no model needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_agent.registry import load_registry
from nexus_agent.routing.followup import (
    PreviousTurn,
    context_text,
    leans_on,
    named_tools,
    objects,
    resolve_name,
    siblings,
    user_turns,
)


@pytest.mark.parametrize(
    ("query", "leans"),
    [
        ("and the ones before that?", True),
        ("great, squash it in", True),
        ("now do the same in the other repo", True),
        ("actually undo that", True),
        ("details on the critical one", True),
        ("the second one please", True),
        ("list the open issues in acme/api", False),
        ("create a repository called nexus-demo", False),
        ("italic items", False),  # "it" only as a word of its own
    ],
)
def test_leans_on_reads_the_words_that_point_back(query: str, leans: bool) -> None:
    assert leans_on(query) is leans


def test_siblings_share_the_object_and_the_server(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    tools = reg.profile("desktop_realistic")
    by = {t.qualified_name: t for t in tools}
    assert objects(by["github__get_release_by_tag"]) == {"release", "tag"}
    assert objects(by["github__star_repository"]) == {"repository"}
    rel = siblings(by["github__list_releases"], tools)
    assert {"github__get_latest_release", "github__get_release_by_tag"} <= set(rel)
    assert "github__list_releases" not in rel
    assert "github__unstar_repository" in siblings(by["github__star_repository"], tools)
    assert all(q.startswith("github__") for q in rel)  # gitlab's releases are another server's
    # the server's own name is no object: every slack tool says "slack"
    assert "slack" not in objects(by["slack__slack_post_message"])


def test_calls_are_read_from_tool_calls_tool_messages_and_call_notes() -> None:
    assert named_tools({"role": "assistant", "tool_calls": [{"function": {"name": "list_releases"}}]}) == [
        "list_releases"
    ]
    assert named_tools({"role": "tool", "name": "github__list_issues", "content": "[]"}) == ["github__list_issues"]
    note = '(used list_dependabot_alerts {"owner": "a", "repo": "b"}) → 2 items\nTwo alerts.'
    assert named_tools({"role": "assistant", "content": note}) == ["list_dependabot_alerts"]
    assert named_tools({"role": "user", "content": note}) == []  # a user quoting a note called nothing
    hist = [
        {"role": "user", "content": "alerts in a/b?"},
        {"role": "assistant", "content": note},
        {"role": "user", "content": "thanks!"},
        {"role": "assistant", "content": "You're welcome."},
    ]
    assert user_turns(hist) == [("thanks!", []), ("alerts in a/b?", ["list_dependabot_alerts"])]


def test_names_resolve_to_one_qualified_tool_or_none(registry_dir: Path) -> None:
    tools = {t.qualified_name: t for t in load_registry(registry_dir).profile("desktop_realistic")}
    assert resolve_name("list_releases", tools) == "github__list_releases"
    assert resolve_name("github/list_releases", tools) == "github__list_releases"
    assert resolve_name("no_such_tool", tools) is None
    shared = [t.name for t in tools.values() if sum(u.name == t.name for u in tools.values()) > 1]
    assert shared, "the profile has bare names on two servers (github and gitlab)"
    assert resolve_name(shared[0], tools) is None  # ambiguous without its server


def test_context_text_names_the_previous_request_and_tool() -> None:
    text = context_text("the second one", PreviousTurn("releases of acme/api?", "github__list_releases"))
    assert text.startswith("the second one") and "releases of acme/api?" in text and "list releases" in text


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Before I commit in /home/dana/projects/shop, let me review what's staged.", True),
        ("Discard Terraform run run-CZcmD7eagjhyX0vN; we are not applying it.", True),
        ("what's issue #4521 in vercel/next.js about?", True),
        ("and the ones before that?", False),
        ("actually undo that", False),
    ],
)
def test_a_request_may_name_its_own_object(query: str, names: bool) -> None:
    from nexus_agent.routing.followup import names_own_object

    assert names_own_object(query) is names
