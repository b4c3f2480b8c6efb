"""Pull request reviews, review threads, replies and Copilot, through the real server, checked on the store."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, git, store_of, world_session

DOCK = {"owner": "harbor-io", "repo": "dock"}


def _reviews(data: Path, number: int) -> list[tuple[str, str, str]]:
    with store_of(data) as st:
        issue = st.issue(st.repo("harbor-io", "dock").id, number)
        rows = st.rows("SELECT author, state, body FROM reviews WHERE issue_id = ? ORDER BY id", (issue.id,))
        return [(r["author"], r["state"], r["body"]) for r in rows]


async def test_pending_review_with_a_line_comment_then_submitted(harbor: Path) -> None:
    async with world_session(harbor) as s:
        err = await call_err(
            s,
            "add_comment_to_pending_review",
            **DOCK,
            pullNumber=5,
            path="src/app.py",
            body="x",
            subjectType="LINE",
            line=9,
        )
        assert err == "No pending review found for the viewer"
        assert await call_ok(s, "pull_request_review_write", method="create", **DOCK, pullNumber=5) == (
            "pending pull request created"
        )
        err = await call_err(s, "pull_request_review_write", method="create", **DOCK, pullNumber=5)
        assert "one pending review" in err
        # Line 9 of src/app.py is an added line of the diff; line 2 is not in any hunk; README.md is not changed.
        await call_ok(
            s,
            "add_comment_to_pending_review",
            **DOCK,
            pullNumber=5,
            path="src/app.py",
            body="Name it sign_in?",
            subjectType="LINE",
            line=9,
        )
        err = await call_err(
            s,
            "add_comment_to_pending_review",
            **DOCK,
            pullNumber=5,
            path="src/app.py",
            body="x",
            subjectType="LINE",
            line=2,
        )
        assert "is not part of the pull request's diff" in err
        err = await call_err(
            s, "add_comment_to_pending_review", **DOCK, pullNumber=5, path="README.md", body="x", subjectType="FILE"
        )
        assert "is not a file changed by pull request #5" in err
        # Pending comments are the author's alone until submitted.
        assert _reviews(harbor, 5)[-1] == ("mira-sol", "PENDING", "")
        done = await call_ok(
            s,
            "pull_request_review_write",
            method="submit_pending",
            **DOCK,
            pullNumber=5,
            event="APPROVE",
            body="Looks good",
        )
        assert done == "pending pull request review successfully submitted"
        assert _reviews(harbor, 5)[-1] == ("mira-sol", "APPROVED", "Looks good")
        with store_of(harbor) as st:
            pr = st.issue(st.repo("harbor-io", "dock").id, 5)
            assert pr.pull is not None and "mira-sol" not in pr.pull.reviewers  # a review answers the request
        threads = await call_ok(s, "pull_request_read", method="get_review_comments", **DOCK, pullNumber=5)
        assert threads["totalCount"] == 2
        mine = threads["reviewThreads"][1]
        assert mine["comments"][0] == {
            **mine["comments"][0],
            "body": "Name it sign_in?",
            "line": 9,
            "author": "mira-sol",
        }
        listed = await call_ok(s, "pull_request_read", method="get_reviews", **DOCK, pullNumber=5)
        assert [(r["user"]["login"], r["state"]) for r in listed] == [
            ("ada-okafor", "CHANGES_REQUESTED"),
            ("tomas-berg", "COMMENTED"),
            ("mira-sol", "APPROVED"),
        ]


async def test_review_rules_and_deleting_a_pending_review(harbor: Path) -> None:
    async with world_session(harbor) as s:
        err = await call_err(s, "pull_request_review_write", method="create", **DOCK, pullNumber=5, event="COMMENT")
        assert "needs a body or review comments" in err
        assert _reviews(harbor, 5)[-1][1] != "PENDING"  # the failed call left nothing behind
        await call_ok(s, "pull_request_review_write", method="create", **DOCK, pullNumber=5)
        await call_ok(
            s,
            "add_comment_to_pending_review",
            **DOCK,
            pullNumber=5,
            path="src/app.py",
            body="whole file",
            subjectType="FILE",
        )
        deleted = await call_ok(s, "pull_request_review_write", method="delete_pending", **DOCK, pullNumber=5)
        assert deleted == "pending pull request review successfully deleted"
        with store_of(harbor) as st:
            assert st.row("SELECT 1 FROM review_threads WHERE subject_type = 'FILE'") is None
        err = await call_err(
            s, "pull_request_review_write", method="submit_pending", **DOCK, pullNumber=5, event="APPROVE"
        )
        assert err == "No pending review found for the viewer"
        # The pull request's own author cannot approve it (mira-sol authors none in harbor; create one).
        await call_ok(s, "create_branch", **DOCK, branch="mine")
        await call_ok(s, "push_files", **DOCK, branch="mine", message="m", files=[{"path": "m.txt", "content": "m"}])
        pr = await call_ok(s, "create_pull_request", **DOCK, title="Mine", head="mine", base="main")
        number = int(pr["url"].rsplit("/", 1)[1])
        err = await call_err(
            s, "pull_request_review_write", method="create", **DOCK, pullNumber=number, event="APPROVE"
        )
        assert "Can not approve your own pull request" in err


async def test_threads_resolve_reply_and_react(harbor: Path) -> None:
    async with world_session(harbor) as s:
        threads = await call_ok(s, "pull_request_read", method="get_review_comments", **DOCK, pullNumber=5)
        thread_id = threads["reviewThreads"][0]["id"]
        first_url = threads["reviewThreads"][0]["comments"][0]["html_url"]
        comment_id = int(first_url.rsplit("_r", 1)[1])
        resolved = await call_ok(
            s, "pull_request_review_write", method="resolve_thread", **DOCK, pullNumber=5, threadId=thread_id
        )
        assert resolved == "review thread resolved successfully"
        with store_of(harbor) as st:
            assert st.row("SELECT resolved, resolved_by FROM review_threads")["resolved_by"] == "mira-sol"
        await call_ok(
            s, "pull_request_review_write", method="unresolve_thread", **DOCK, pullNumber=5, threadId=thread_id
        )
        err = await call_err(
            s, "pull_request_review_write", method="resolve_thread", **DOCK, pullNumber=5, threadId="PRRT_nope"
        )
        assert "Could not resolve to a PullRequestReviewThread node" in err
        both = await call_ok(
            s,
            "add_reply_to_pull_request_comment",
            **DOCK,
            commentId=comment_id,
            pullNumber=5,
            body="Fixed in the next push",
            reaction="rocket",
        )
        assert set(both) == {"comment", "reaction"} and both["comment"]["url"].startswith(
            "https://github.com/harbor-io/dock/pull/5#discussion_r"
        )
        with store_of(harbor) as st:
            bodies = [r["body"] for r in st.rows("SELECT body FROM review_comments ORDER BY id")]
            reactions = st.rows("SELECT author, content FROM review_comment_reactions")
        assert bodies[-1] == "Fixed in the next push"
        assert [(r["author"], r["content"]) for r in reactions] == [("mira-sol", "rocket")]
        err = await call_err(s, "add_reply_to_pull_request_comment", **DOCK, commentId=comment_id, body="x")
        assert "pullNumber" in err
        err = await call_err(s, "add_reply_to_pull_request_comment", **DOCK, commentId=999, reaction="eyes")
        assert "404" in err


async def test_copilot_assignment_opens_a_draft_pull_request(harbor: Path) -> None:
    async with world_session(harbor) as s:
        out = await call_ok(s, "assign_copilot_to_issue", **DOCK, issue_number=3, custom_instructions="Keep it small")
        assert out["message"] == "successfully assigned copilot to issue - pull request created"
        pr = out["pull_request"]
        assert pr["title"] == "[WIP] Session expiry" and pr["state"] == "OPEN"
        with store_of(harbor) as st:
            repo = st.repo("harbor-io", "dock")
            issue, pull = st.issue(repo.id, 3), st.issue(repo.id, pr["number"])
            task = st.row("SELECT kind, custom_instructions FROM copilot_tasks")
        assert "Copilot" in issue.assignees
        assert pull.pull is not None and pull.pull.draft and pull.pull.head_ref == "copilot/fix-3"
        assert pull.author == "Copilot" and "Fixes #3" in pull.body
        assert dict(task) == {"kind": "assignment", "custom_instructions": "Keep it small"}
        assert git(harbor, "harbor-io/dock", "log", "-1", "--format=%an|%s", "copilot/fix-3").strip() == (
            "copilot-swe-agent[bot]|Initial plan"
        )
        again = await call_ok(s, "assign_copilot_to_issue", **DOCK, issue_number=3)
        assert again["pull_request"]["number"] == pr["number"]  # idempotent: no second pull request
        intent = await call_ok(
            s,
            "assign_copilot_to_issue_with_intent",
            **DOCK,
            issue_number=2,
            rationale="Well-scoped form work",
            confidence="HIGH",
            is_suggestion=True,
        )
        assert intent["message"] == "recorded pending copilot assignment suggestion"
        with store_of(harbor) as st:
            assert "Copilot" not in st.issue(st.repo("harbor-io", "dock").id, 2).assignees
        assert await call_ok(s, "request_copilot_review", **DOCK, pullNumber=6) == ""
        with store_of(harbor) as st:
            pull6 = st.issue(st.repo("harbor-io", "dock").id, 6).pull
            assert pull6 is not None and "Copilot" in pull6.reviewers
        err = await call_err(s, "assign_copilot_to_issue", owner="harbor-io", repo="crane", issue_number=1)
        assert err.startswith("copilot isn't available as an assignee for this issue")
        err = await call_err(
            s,
            "assign_copilot_to_issue_with_intent",
            **DOCK,
            issue_number=2,
            rationale=" ",
            confidence="LOW",
            is_suggestion=False,
        )
        assert err == "rationale is required"
