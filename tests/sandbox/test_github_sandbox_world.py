"""Worlds: validation that names the path, seeding through the store and git, determinism, no silent reuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gh_sandbox_support import HARBOR, call_err, call_ok, git, store_of
from mcp import Client
from pydantic import ValidationError

from nexus_agent.sandbox.github import sandbox_server_params
from nexus_agent.sandbox.github.server import open_sandbox
from nexus_agent.sandbox.github.world import World, load_world, world_hash

NIMBUS = Path(__file__).resolve().parent / "worlds" / "nimbus.json"


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(NIMBUS.read_text())
    return doc


def test_world_seeds_its_objects(tmp_path: Path) -> None:
    sb = open_sandbox(tmp_path / "gh", world=load_world(NIMBUS))
    try:
        st = sb.store
        assert sb.me == "lena-park"
        assert [u.login for u in st.users("Organization")] == ["nimbus-labs"]
        assert st.team_members("nimbus-labs", "core") == ["lena-park", "omar-haddad"]
        assert [t.name for t in st.teams_of("ines-costa")] == ["docs"]  # an empty team name defaults to the slug
        orbit = st.repo("nimbus-labs", "orbit")
        assert (orbit.language, orbit.topics, orbit.private) == ("Go", ("scheduler", "go"), False)
        assert st.repo("lena-park", "notes").private
        assert {lb.name: lb.color for lb, _ in st.labels(orbit.id)} == {"bug": "d73a4a", "needs-triage": "ededed"}
        # Issues first, explicit numbers kept, the rest fill the gaps in order: 1, 14, 2 then pulls 3, 20.
        by_number = {i.number: i for i in st.issues(orbit.id)}
        assert sorted(by_number) == [1, 2, 3, 14, 20]
        assert by_number[14].title == "Document the retry policy"
        assert (by_number[2].state, by_number[2].state_reason) == ("closed", "not_planned")
        one = by_number[1]
        assert [lb.name for lb in one.labels] == ["bug", "needs-triage"] and one.assignees == ("omar-haddad",)
        assert [(c.author, c.body) for c in st.comments(one.id)] == [
            ("omar-haddad", "Reproduced."),
            ("lena-park", "Thanks!"),
        ]
        pr = by_number[3].pull
        assert pr is not None and (pr.head_ref, pr.base_ref, pr.merged) == ("feat/retry", "main", False)
        assert pr.reviewers == ("lena-park", "nimbus-labs/docs")
        merged = by_number[20].pull
        assert merged is not None and merged.merged and by_number[20].state == "closed"
        # Creation follows the numbers.
        assert by_number[1].created_at < by_number[2].created_at < by_number[3].created_at < by_number[14].created_at
        gh = tmp_path / "gh"
        assert git(gh, "nimbus-labs/orbit", "show", "main:README.md") == "# Orbit\n"  # the squash-merged PR
        assert git(gh, "nimbus-labs/orbit", "show", "feat/retry:retry.go").startswith("package main")
        assert git(gh, "nimbus-labs/orbit", "cat-file", "-t", "v0.1.0").strip() == "tag"
        assert git(gh, "nimbus-labs/orbit", "cat-file", "-t", "v0.1.0-light").strip() == "commit"
        log = git(gh, "nimbus-labs/orbit", "log", "--format=%an|%s", "v0.1.0").splitlines()
        assert log == ["Ines Costa|Start a changelog", "Omar Haddad|Initial commit"]
    finally:
        sb.close()


def _heads(data_dir: Path) -> list[str]:
    return [git(data_dir, "nimbus-labs/orbit", "rev-parse", ref).strip() for ref in ("main", "feat/retry", "v0.1.0")]


def test_world_is_deterministic(tmp_path: Path) -> None:
    seen = []
    for run in ("a", "b"):
        sb = open_sandbox(tmp_path / run, world=load_world(NIMBUS))
        try:
            seen.append((_heads(tmp_path / run), sb.store.now(), sb.store.get_meta("world")))
        finally:
            sb.close()
    assert seen[0] == seen[1]
    assert seen[0][2] == world_hash(load_world(NIMBUS))


def test_a_data_dir_is_not_served_as_another_world(tmp_path: Path) -> None:
    data = tmp_path / "gh"
    open_sandbox(data, world=load_world(NIMBUS)).close()
    open_sandbox(data, world=load_world(NIMBUS)).close()  # the same world: reopened as is
    other = _doc()
    other["users"][0]["name"] = "Lena P."
    with pytest.raises(RuntimeError, match="another world"):
        open_sandbox(data, world=World.model_validate(other))
    with pytest.raises(RuntimeError, match="not the acme demo data"):
        open_sandbox(data)
    sb = open_sandbox(data, reset=True, world=World.model_validate(other))
    try:
        assert sb.store.user("lena-park").name == "Lena P."
    finally:
        sb.close()
    acme = tmp_path / "acme"
    open_sandbox(acme).close()
    with pytest.raises(RuntimeError, match="acme demo data, not this world"):
        open_sandbox(acme, world=load_world(NIMBUS))


def _edit(path: list[str | int], value: Any) -> dict[str, Any]:
    doc = _doc()
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["repos", 0, "issues", 0, "colour"], "red", "repos.0.issues.0.colour"),  # unknown key, with its location
        (["repos", 0, "issues", 1, "author"], "nobody", "repos[0].issues[1].author: user 'nobody'"),
        (["repos", 0, "issues", 1, "labels"], ["wontfix"], "repos[0].issues[1].labels[0]: label 'wontfix'"),
        (
            ["repos", 0, "pulls", 0, "number"],
            14,
            "repos[0]: two issues, pull requests or discussions have the same number",
        ),
        (["repos", 0, "pulls", 0, "head"], "feat/none", "repos[0].pulls[0].head: branch 'feat/none'"),
        (["repos", 0, "pulls", 0, "reviewers"], ["nimbus-labs/qa"], "repos[0].pulls[0].reviewers[0]: team"),
        (["repos", 0, "branches", 1, "from"], "feat/later", "repos[0].branches[1].from"),
        (["orgs", 0, "teams", 0, "members"], ["ghost"], "orgs[0].teams[0].members[0]: user 'ghost'"),
        (["me"], "omar", "me: 'omar' is not one of the users"),
        (["repos", 1, "owner"], "someone", "repos[1].owner"),
    ],
)
def test_world_validation_names_the_path(path: list[str | int], value: Any, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        World.model_validate(_edit(path, value))
    assert message in str(info.value)


def test_a_world_that_cannot_be_built_names_the_item(tmp_path: Path) -> None:
    doc = _doc()
    doc["repos"][0]["branches"].append({"name": "empty"})  # a branch with no commits of its own
    doc["repos"][0]["pulls"].append({"title": "Nothing", "head": "empty"})
    with pytest.raises(ValueError, match=r"repos\[0\]\.pulls\[2\]: 422 Validation Failed: No commits"):
        open_sandbox(tmp_path / "gh", world=World.model_validate(doc))


async def test_the_server_seeds_from_a_world_file(tmp_path: Path) -> None:
    async with Client(sandbox_server_params(tmp_path / "gh", world=NIMBUS)) as s:
        me = await call_ok(s, "get_me")
        assert me["login"] == "lena-park"
        issue = await call_ok(s, "issue_read", method="get", owner="nimbus-labs", repo="orbit", issue_number=14)
        assert issue["title"] == "Document the retry policy"
        err = await call_err(s, "issue_read", method="get", owner="acme", repo="api", issue_number=1)
        assert "404" in err


def test_the_command_refuses_an_invalid_world_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(["repos", 0, "issues", 1, "author"], "nobody")))
    proc = subprocess.run(
        [sys.executable, "-m", "nexus_agent.sandbox.github", "--data-dir", str(tmp_path / "gh"), "--world", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "repos[0].issues[1].author" in proc.stderr
    assert not (tmp_path / "gh").exists()


def test_the_harbor_world_seeds_every_area(harbor: Path) -> None:
    with store_of(harbor) as st:
        dock = st.repo("harbor-io", "dock")

        def count(table: str) -> int:
            return int(st.row(f"SELECT COUNT(*) AS n FROM {table}")["n"])

        # Issues 1-4, pulls 5-6, discussions 7-8: one numbering.
        assert [i.number for i in reversed(st.issues(dock.id))] == [1, 2, 3, 4, 5, 6]
        assert [r["number"] for r in st.rows("SELECT number FROM discussions WHERE repo_id = ?", (dock.id,))] == [7, 8]
        assert st.next_number(dock.id) == 9
        assert [r["child_id"] for r in st.rows("SELECT child_id FROM sub_issues ORDER BY position")] == [2, 3]
        assert (
            st.row("SELECT t.name FROM issue_type_of o JOIN issue_types t ON t.id = o.type_id WHERE o.issue_id = 1")[
                "name"
            ]
            == "Feature"
        )
        assert count("issue_field_values") == 4
        assert [(r["author"], r["state"]) for r in st.rows("SELECT author, state FROM reviews")] == [
            ("ada-okafor", "CHANGES_REQUESTED"),
            ("tomas-berg", "COMMENTED"),  # the reply, a review of its own
        ]
        assert [r["login"] for r in st.rows("SELECT login FROM collaborators")] == ["ben-outside"]
        assert dock.stars == 11 and count("stars") == 1
        assert [r["tag_name"] for r in st.rows("SELECT tag_name FROM releases ORDER BY id")] == [
            "v1.0.0",
            "v1.1.0-rc1",
            "v2.0.0",
        ]
        assert (count("workflows"), count("workflow_runs"), count("workflow_jobs"), count("workflow_artifacts")) == (
            2,
            3,
            5,
            2,
        )
        assert count("discussion_categories") == 8 and count("discussion_comments") == 3
        assert (count("code_scanning_alerts"), count("dependabot_alerts"), count("secret_scanning_alerts")) == (2, 2, 1)
        assert count("code_quality_findings") == 1 and count("advisories") == 4
        assert count("gists") == 3 and count("gist_files") == 3
        assert count("projects") == 2 and count("project_items") == 3 and count("project_status_updates") == 1
        # Every project has the built-in fields and "View 1"; the roadmap adds three fields and a board.
        assert count("project_fields") == 2 * 8 + 3 and count("project_views") == 3
        assert count("notifications") == 4 and count("repo_subscriptions") == 1
        assert dict(st.row("SELECT key, value FROM repo_settings")) == {"key": "copilot", "value": "off"}
    ci = git(harbor, "harbor-io/dock", "show", "main:.github/workflows/ci.yml")
    assert "workflow_dispatch:" in ci and "name: test" in ci and "name: lint" in ci
    assert "workflow_dispatch" not in git(harbor, "harbor-io/dock", "show", "main:.github/workflows/deploy.yml")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["repos"][0]["issues"][0].update(type="Epic"), "repos[0].issues[0].type: 'Epic'"),
        (lambda d: d["repos"][0]["issues"][1]["fields"].update(Priority="P7"), "repos[0].issues[1].fields.Priority"),
        (lambda d: d["repos"][0]["issues"][0].update(sub_issues=[2, 5]), "repos[0].issues[0].sub_issues[1]: 5"),
        (lambda d: d["repos"][0]["pulls"][0]["reviews"][0].update(author="x"), "reviews[0].author: user 'x'"),
        (lambda d: d["repos"][0]["discussions"][0].update(category="Chat"), "discussions[0].category: 'Chat'"),
        (lambda d: d["projects"][0]["items"][0]["values"].update(Sprint="Sprint 9"), "items[0].values.Sprint"),
        (lambda d: d["projects"][0]["items"].append({"repo": "harbor-io/dock"}), "items[3]: give either"),
        (lambda d: d["notifications"][0].update(number=40), "notifications[0].number: 40"),
        (lambda d: d["repos"][0]["workflows"][0]["runs"][0].update(branch="nope"), "runs[0].branch: branch 'nope'"),
        (lambda d: d["advisories"].append(d["advisories"][0]), "a GHSA id is used twice"),
        (lambda d: d["gists"].append(d["gists"][2]), "gists[3].id: 'aaaabbbbccccddddeeeeffff00001111' is used twice"),
    ],
)
def test_harbor_validation_names_the_path(edit: Any, message: str) -> None:
    doc = json.loads(HARBOR.read_text())
    edit(doc)
    with pytest.raises(ValidationError) as info:
        World.model_validate(doc)
    assert message in str(info.value)
