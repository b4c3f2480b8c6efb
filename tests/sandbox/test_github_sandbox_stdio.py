"""The sandbox as a real subprocess over stdio, driven by the official mcp client.

All tests of this module share one data directory (seeded by the first server start); each test works
on its own issues/branches so the order of tests does not matter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gh_sandbox_support import ERAS, call_err, call_ok, git, stdio_session, text_of
from mcp import types

from nexus_agent.sandbox.github.tools import TOOLS_DIR


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gh-sandbox") / "data"


@pytest.mark.parametrize("mode", list(ERAS))
async def test_list_tools_returns_exactly_the_vendored_definitions(data_dir: Path, mode: str) -> None:
    async with stdio_session(data_dir, mode) as s:
        listed = (await s.list_tools()).tools
    vendored = {p.stem: json.loads(p.read_text()) for p in TOOLS_DIR.glob("*.json")}
    assert len(listed) == len(vendored) == 86
    assert sorted(t.name for t in listed) == sorted(vendored)
    for tool in listed:
        wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        expected = vendored[tool.name]
        assert wire["name"] == expected["name"]
        assert wire["description"] == expected["description"]
        assert wire["inputSchema"] == expected["inputSchema"]
        assert wire.get("annotations") == expected.get("annotations")
        assert wire == expected, tool.name  # nothing added or dropped (e.g. _meta)


@pytest.mark.parametrize("mode", list(ERAS))
async def test_get_me_and_seeded_data(data_dir: Path, mode: str) -> None:
    async with stdio_session(data_dir, mode) as s:
        me = await call_ok(s, "get_me")
        assert me["login"] == "octo-dev"
        assert me["details"]["name"] == "Octo Dev"
        repos = await call_ok(s, "search_repositories", query="org:acme")
        names = {r["full_name"] for r in repos["items"]}
        assert {"acme/api", "acme/web", "acme/docs"} <= names
        branches = await call_ok(s, "list_branches", owner="acme", repo="api")
        assert {"main", "feature/rate-limit", "fix/token-expiry"} <= {b["name"] for b in branches}
        tags = await call_ok(s, "list_tags", owner="acme", repo="api")
        assert tags[0]["name"] == "v0.1.0"
        assert tags[0]["sha"] == git(data_dir, "acme/api", "rev-parse", "v0.1.0^{commit}").strip()


async def test_get_file_contents_returns_text_and_embedded_resource(data_dir: Path) -> None:
    async with stdio_session(data_dir) as s:
        result = await s.call_tool("get_file_contents", {"owner": "acme", "repo": "api", "path": "src/api/auth.py"})
        assert not result.is_error
        blob_sha = git(data_dir, "acme/api", "rev-parse", "main:src/api/auth.py").strip()
        assert text_of(result) == f"successfully downloaded text file (SHA: {blob_sha})"
        resource = result.content[1]
        assert isinstance(resource, types.EmbeddedResource)
        assert isinstance(resource.resource, types.TextResourceContents)
        assert resource.resource.text == git(data_dir, "acme/api", "show", "main:src/api/auth.py")
        listing = await call_ok(s, "get_file_contents", owner="acme", repo="api", path="src", fields=["name", "type"])
        assert listing == [{"name": "api", "type": "dir"}]


async def test_issue_lifecycle(data_dir: Path) -> None:
    async with stdio_session(data_dir) as s:
        created = await call_ok(
            s,
            "issue_write",
            method="create",
            owner="acme",
            repo="api",
            title="Webhook retries hammer the database",
            body="Retries have no backoff.",
            labels=["bug"],
            assignees=["alice-lee"],
        )
        number = int(created["url"].rsplit("/", 1)[1])

        listed = await call_ok(s, "list_issues", owner="acme", repo="api", state="OPEN")
        assert number in [i["number"] for i in listed["issues"]]
        found = await call_ok(s, "search_issues", query="webhook retries backoff", owner="acme", repo="api")
        assert found["items"][0]["number"] == number

        await call_ok(
            s, "add_issue_comment", owner="acme", repo="api", issue_number=number, body="Adding exponential backoff."
        )
        comments = await call_ok(s, "issue_read", method="get_comments", owner="acme", repo="api", issue_number=number)
        assert [c["body"] for c in comments] == ["Adding exponential backoff."]
        assert comments[0]["user"]["login"] == "octo-dev"

        await call_ok(
            s,
            "issue_write",
            method="update",
            owner="acme",
            repo="api",
            issue_number=number,
            labels=["bug", "priority:high"],
            state="closed",
            state_reason="completed",
        )
        issue = await call_ok(s, "issue_read", method="get", owner="acme", repo="api", issue_number=number)
        assert issue["state"] == "closed"
        assert issue["state_reason"] == "completed"
        assert issue["labels"] == ["bug", "priority:high"]
        assert issue["comments"] == 1
        assert issue["closed_by"] == "octo-dev"
        still_open = await call_ok(s, "list_issues", owner="acme", repo="api", state="OPEN")
        assert number not in [i["number"] for i in still_open["issues"]]
        closed = await call_ok(s, "search_issues", query="webhook is:closed", owner="acme", repo="api")
        assert number in [i["number"] for i in closed["items"]]


async def test_branch_commit_pull_request_diff_merge(data_dir: Path) -> None:
    async with stdio_session(data_dir) as s:
        main_before = git(data_dir, "acme/docs", "rev-parse", "main").strip()
        await call_ok(s, "create_branch", owner="acme", repo="docs", branch="fix/install-command")
        page = await s.call_tool(
            "get_file_contents",
            {"owner": "acme", "repo": "docs", "path": "docs/getting-started.md", "ref": "fix/install-command"},
        )
        blob_sha = text_of(page).split("SHA: ")[1].rstrip(")")
        resource = page.content[1]
        assert isinstance(resource, types.EmbeddedResource)
        assert isinstance(resource.resource, types.TextResourceContents)
        new_text = resource.resource.text.replace("acme-client==0.1", "acme-client==0.3")
        written = await call_ok(
            s,
            "create_or_update_file",
            owner="acme",
            repo="docs",
            path="docs/getting-started.md",
            branch="fix/install-command",
            message="Install acme-client 0.3",
            content=new_text,
            sha=blob_sha,
        )
        assert written["commit"]["message"] == "Install acme-client 0.3"
        assert git(data_dir, "acme/docs", "rev-parse", "main").strip() == main_before  # other branch untouched

        pr = await call_ok(
            s,
            "create_pull_request",
            owner="acme",
            repo="docs",
            title="Update install command",
            head="fix/install-command",
            base="main",
            body="Fixes #1",
        )
        number = int(pr["url"].rsplit("/", 1)[1])
        diff = await call_ok(s, "pull_request_read", method="get_diff", owner="acme", repo="docs", pullNumber=number)
        assert diff == git(data_dir, "acme/docs", "diff", "--full-index", "-M", "main", "fix/install-command")
        assert "-    pip install acme-client==0.1" in diff
        assert "+    pip install acme-client==0.3" in diff
        files = await call_ok(s, "pull_request_read", method="get_files", owner="acme", repo="docs", pullNumber=number)
        assert [(f["filename"], f["status"], f["additions"], f["deletions"]) for f in files] == [
            ("docs/getting-started.md", "modified", 1, 1)
        ]
        details = await call_ok(s, "pull_request_read", method="get", owner="acme", repo="docs", pullNumber=number)
        assert details["mergeable_state"] == "clean" and details["commits"] == 1

        merged = await call_ok(s, "merge_pull_request", owner="acme", repo="docs", pullNumber=number)
        assert merged["merged"] is True
        main_after = git(data_dir, "acme/docs", "rev-parse", "main").strip()
        assert merged["sha"] == main_after
        parents = git(data_dir, "acme/docs", "rev-list", "--parents", "-n", "1", "main").split()
        assert parents[1:] == [main_before, git(data_dir, "acme/docs", "rev-parse", "fix/install-command").strip()]
        assert "acme-client==0.3" in git(data_dir, "acme/docs", "show", "main:docs/getting-started.md")

        after = await call_ok(s, "pull_request_read", method="get", owner="acme", repo="docs", pullNumber=number)
        assert after["merged"] is True and after["state"] == "closed" and after["merged_by"] == "octo-dev"
        # The diff of a merged PR stays what was merged.
        assert (
            await call_ok(s, "pull_request_read", method="get_diff", owner="acme", repo="docs", pullNumber=number)
            == diff
        )
        # "Fixes #1" closed the issue when the PR landed on the default branch.
        issue = await call_ok(s, "issue_read", method="get", owner="acme", repo="docs", issue_number=1)
        assert issue["state"] == "closed"
        assert await call_err(s, "merge_pull_request", owner="acme", repo="docs", pullNumber=number)


async def test_squash_merge_of_seeded_pull_request(data_dir: Path) -> None:
    async with stdio_session(data_dir) as s:
        base = git(data_dir, "acme/api", "rev-parse", "main").strip()
        await call_ok(s, "merge_pull_request", owner="acme", repo="api", pullNumber=6, merge_method="squash")
        parents = git(data_dir, "acme/api", "rev-list", "--parents", "-n", "1", "main").split()
        assert parents[1:] == [base]  # squash: one new commit on top of main
        assert "issued_at + TOKEN_TTL_S" in git(data_dir, "acme/api", "show", "main:src/api/auth.py")
        issue = await call_ok(s, "issue_read", method="get", owner="acme", repo="api", issue_number=1)
        assert issue["state"] == "closed"  # PR body says "Fixes #1"


async def test_existing_file_needs_matching_sha(data_dir: Path) -> None:
    write = {"owner": "acme", "repo": "web", "path": "README.md", "branch": "main", "message": "x", "content": "y"}
    async with stdio_session(data_dir) as s:
        err = await call_err(s, "create_or_update_file", **write)  # no sha for a file that exists
        assert "sha" in err and "409" in err
        err = await call_err(s, "create_or_update_file", **write, sha="0" * 40)
        assert "does not match" in err


async def test_a_tool_without_data_answers_empty_not_unsupported(data_dir: Path) -> None:
    async with stdio_session(data_dir) as s:
        listed = await call_ok(s, "list_discussions", owner="acme", repo="api")
        assert listed["discussions"] == [] and listed["totalCount"] == 0
        err = await call_err(s, "list_discussions", owner="acme")  # no acme/.github repository
        assert err == "Could not resolve to a Repository with the name 'acme/.github'."


async def test_invalid_arguments_give_a_clear_error(data_dir: Path) -> None:
    async with stdio_session(data_dir) as s:
        err = await call_err(s, "issue_read", method="get", owner="acme", repo="api")
        assert "missing required argument 'issue_number'" in err
        err = await call_err(s, "pull_request_read", method="get_everything", owner="acme", repo="api", pullNumber=5)
        assert "argument 'method'" in err and "get_everything" in err
        err = await call_err(s, "list_issues", owner="acme", repo="api", state="open")
        assert "argument 'state'" in err  # the enum is OPEN/CLOSED
        err = await call_err(s, "issue_read", method="get", owner="acme", repo="api", issue_number=999)
        assert "404" in err
