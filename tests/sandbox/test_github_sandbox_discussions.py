"""Discussions, categories, comments, replies and answers, through the real server, checked on the store."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, store_of, world_session

DOCK = {"owner": "harbor-io", "repo": "dock"}


def _comments(data: Path, number: int) -> list[tuple[str, str, bool]]:
    """(author, body, is a reply) of discussion ``number`` of harbor-io/dock, in order."""
    with store_of(data) as st:
        rows = st.rows(
            "SELECT c.author, c.body, c.reply_to FROM discussion_comments c "
            "JOIN discussions d ON d.id = c.discussion_id WHERE d.repo_id = 1 AND d.number = ? ORDER BY c.id",
            (number,),
        )
        return [(r["author"], r["body"], r["reply_to"] is not None) for r in rows]


async def test_reading_discussions(harbor: Path) -> None:
    async with world_session(harbor) as s:
        cats = await call_ok(s, "list_discussion_categories", **DOCK)
        assert [c["name"] for c in cats["categories"]] == [
            "Announcements",
            "General",
            "Ideas",
            "Polls",
            "Q&A",
            "Show and tell",
        ]
        qa = next(c["id"] for c in cats["categories"] if c["name"] == "Q&A")
        listed = await call_ok(s, "list_discussions", **DOCK, category=qa)
        assert [d["number"] for d in listed["discussions"]] == [7]  # numbered after the issues and pulls
        ordered = await call_ok(s, "list_discussions", **DOCK, orderBy="CREATED_AT", direction="ASC")
        assert [d["title"] for d in ordered["discussions"]] == ["How do I configure ports?", "Roadmap ideas"]
        org = await call_ok(s, "list_discussions", owner="harbor-io")  # the organisation's .github repository
        assert [d["title"] for d in org["discussions"]] == ["Welcome to Harbor"]
        one = await call_ok(s, "get_discussion", **DOCK, discussionNumber=7)
        assert (one["category"], one["isAnswered"], one["closed"]) == ({"name": "Q&A"}, False, False)
        comments = await call_ok(s, "get_discussion_comments", **DOCK, discussionNumber=7, includeReplies=True)
        assert comments["totalCount"] == 2
        assert comments["comments"][0]["replies"][0]["body"] == "Thanks!"
        assert comments["comments"][0]["replyTotalCount"] == 1
        err = await call_err(s, "get_discussion", **DOCK, discussionNumber=3)  # an issue, not a discussion
        assert "Could not resolve to a Discussion" in err
        err = await call_err(s, "list_discussions", owner="tomas-berg")
        assert "tomas-berg/.github" in err


async def test_discussion_comment_write(harbor: Path) -> None:
    async with world_session(harbor) as s:
        added = await call_ok(
            s, "discussion_comment_write", method="add", **DOCK, discussionNumber=7, body="Ports are in the README now."
        )
        assert added["url"].startswith("https://github.com/harbor-io/dock/discussions/7#discussioncomment-")
        top = added["id"]
        reply = await call_ok(
            s,
            "discussion_comment_write",
            method="reply",
            **DOCK,
            discussionNumber=7,
            commentNodeID=top,
            body="See the Configuration section.",
        )
        assert _comments(harbor, 7)[-2:] == [
            ("mira-sol", "Ports are in the README now.", False),
            ("mira-sol", "See the Configuration section.", True),
        ]
        err = await call_err(
            s,
            "discussion_comment_write",
            method="reply",
            **DOCK,
            discussionNumber=7,
            commentNodeID=reply["id"],
            body="nested",
        )
        assert "one level of nesting" in err
        err = await call_err(
            s, "discussion_comment_write", method="reply", **DOCK, discussionNumber=8, commentNodeID=top, body="x"
        )
        assert "does not belong to discussion #8" in err
        await call_ok(s, "discussion_comment_write", method="update", commentNodeID=top, body="Ports: DOCK_PORT.")
        assert ("mira-sol", "Ports: DOCK_PORT.", False) in _comments(harbor, 7)
        marked = await call_ok(s, "discussion_comment_write", method="mark_answer", commentNodeID=top)
        assert marked["discussionURL"] == "https://github.com/harbor-io/dock/discussions/7"
        assert (await call_ok(s, "get_discussion", **DOCK, discussionNumber=7))["isAnswered"] is True
        with store_of(harbor) as st:
            row = st.row("SELECT answer_id, answer_chosen_by FROM discussions WHERE repo_id = 1 AND number = 7")
        assert row["answer_chosen_by"] == "mira-sol" and f"DC_sbx{row['answer_id']}" == top
        await call_ok(s, "discussion_comment_write", method="unmark_answer", commentNodeID=top)
        assert (await call_ok(s, "get_discussion", **DOCK, discussionNumber=7))["isAnswered"] is False
        ideas = await call_ok(s, "discussion_comment_write", method="add", **DOCK, discussionNumber=8, body="idea")
        err = await call_err(s, "discussion_comment_write", method="mark_answer", commentNodeID=ideas["id"])
        assert "does not take answers" in err
        deleted = await call_ok(s, "discussion_comment_write", method="delete", commentNodeID=top)
        assert deleted["id"] == top
        assert all(
            body not in ("Ports: DOCK_PORT.", "See the Configuration section.") for _, body, _ in _comments(harbor, 7)
        )
        err = await call_err(s, "discussion_comment_write", method="update", commentNodeID=top, body="again")
        assert "Could not resolve to a node" in err
