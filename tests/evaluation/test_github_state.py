"""The GitHub sandbox snapshot the multi-step evaluation diffs: the acme keys as they were, and one readable key per
object of the newer tables, so a call changes exactly the keys of what it changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from nexus_agent.evaluation.multistep import changed_keys, github_state
from nexus_agent.sandbox.github.server import GitHubSandboxServer, open_sandbox
from nexus_agent.sandbox.github.world import load_world

HARBOR = Path(__file__).resolve().parents[1] / "sandbox" / "worlds" / "harbor.json"
DOCK = {"owner": "harbor-io", "repo": "dock"}
# The key kinds the snapshot had before the newer tables, and the one per-repository key added for acme's tables.
ACME_KINDS = ("repo ", "label ", "issue ", "pull ", "comment ", "reaction ", "ref ")


def test_the_acme_snapshot_keeps_its_keys(tmp_path: Path) -> None:
    open_sandbox(tmp_path / "gh").close()
    state = github_state(tmp_path / "gh")
    new = sorted(k for k in state if not k.startswith(ACME_KINDS) or k.endswith(" stargazers"))
    assert new == [
        f"repo {r} stargazers" for r in ("acme/api", "acme/docs", "acme/infra", "acme/web", "octo-dev/dotfiles")
    ]
    assert state["issue acme/api#2 state"] == "open"
    assert state["pull acme/api#5 reviewers"] == "alice-lee"


@pytest.fixture(scope="module")
def harbor_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("harbor") / "gh"
    open_sandbox(data, world=load_world(HARBOR)).close()
    return data


def test_the_harbor_snapshot_names_every_area(harbor_template: Path) -> None:
    state = github_state(harbor_template)
    expected = {
        "issue harbor-io/dock#1 sub_issues": "harbor-io/dock#2,harbor-io/dock#3",
        "issue harbor-io/dock#3 type": "Bug",
        "issue harbor-io/dock#3 field Priority": "P0",
        "review harbor-io/dock#5 1": "ada-okafor|CHANGES_REQUESTED|Validate the user",
        "review_thread harbor-io/dock#5 1": "src/app.py:10 RIGHT|resolved=0",
        "review_comment harbor-io/dock#5 1 2": "tomas-berg|Will do",
        "collaborator harbor-io/dock ben-outside": "triage",
        "star tomas-berg harbor-io/dock": "1",
        "subscription mira-sol harbor-io/dock": "watching",
        "repo harbor-io/crane setting copilot": "off",
        "discussion_comment harbor-io/dock#7 1/2": "ben-outside|Thanks!",
        "project_value harbor-io/1 1 Sprint": "Sprint 1",
        "project_item harbor-io/1 3": "draft: Write launch post",
        "workflow_job harbor-io/dock 2 3": "test|attempt=1|completed|failure",
        "artifact harbor-io/dock 2 old": "1024|expired=1",
        "thread_subscription 1": None,
        "code_scanning_alert harbor-io/dock 1": "open|py/sql-injection",
        "dependabot_alert harbor-io/dock 2": "dismissed|urllib3",
    }
    for key, value in expected.items():
        assert state.get(key) == value, key
    assert state["release harbor-io/dock v2.0.0"].startswith('{"body":"","draft":1')
    assert '"subject":"Issue 3"' in state["notification 2"]
    assert '"where":"global"' in state["advisory GHSA-j8r2-6x86-q33q"]


CALLS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "sub_issue_write",
        {"method": "remove", **DOCK, "issue_number": 1, "sub_issue_id": 3},
        ["issue harbor-io/dock#1 sub_issues"],
    ),
    ("star_repository", DOCK, ["repo harbor-io/dock stargazers", "star mira-sol harbor-io/dock"]),
    (
        "projects_write",
        {
            "method": "update_project_item",
            "owner": "harbor-io",
            "project_number": 1,
            "item_id": 1,
            "updated_field": {"name": "Status", "value": "Done"},
        },
        ["project_value harbor-io/1 1 Status"],
    ),
    ("dismiss_notification", {"threadID": "2", "state": "done"}, ["notification 2"]),
    (
        "pull_request_review_write",
        {"method": "resolve_thread", **DOCK, "pullNumber": 5, "threadId": "PRRT_sbx1"},
        ["review_thread harbor-io/dock#5 1"],
    ),
    (
        "actions_run_trigger",
        {"method": "cancel_workflow_run", **DOCK, "run_id": 3},
        ["workflow_job harbor-io/dock 3 5", "workflow_run harbor-io/dock 3"],
    ),
    # Refused (tomas-berg's gist, not the caller's): nothing changes.
    ("update_gist", {"gist_id": "aaaabbbbccccddddeeeeffff00001111", "filename": "hello.py", "content": "x"}, []),
    # ben-outside asked; mira-sol may mark the answer as an admin of the organisation.
    (
        "discussion_comment_write",
        {"method": "mark_answer", "commentNodeID": "DC_sbx1"},
        ["discussion harbor-io/dock#7"],
    ),
    (
        "issue_write",
        {"method": "update", **DOCK, "issue_number": 2, "issue_fields": [{"field_name": "Notes", "value": "wip"}]},
        ["issue harbor-io/dock#2 field Notes"],
    ),
    (
        "manage_repository_notification_subscription",
        {**DOCK, "action": "ignore"},
        ["subscription mira-sol harbor-io/dock"],
    ),
]


@pytest.mark.parametrize(("tool", "args", "keys"), CALLS, ids=[c[0] for c in CALLS])
def test_a_call_changes_the_keys_of_what_it_changed(
    harbor_template: Path, tmp_path: Path, tool: str, args: dict[str, Any], keys: list[str]
) -> None:
    data = tmp_path / "gh"
    shutil.copytree(harbor_template, data, symlinks=True)
    before = github_state(data)
    sb = open_sandbox(data, world=load_world(HARBOR))
    try:
        result = GitHubSandboxServer(sb).call(tool, args)
    finally:
        sb.close()
    after = github_state(data)
    assert result.is_error == (tool == "update_gist"), result.content
    assert changed_keys(before, after) == keys
