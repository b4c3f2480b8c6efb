"""Notifications and subscriptions, through the real server, checked on the store."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, store_of, world_session

DOCK = {"owner": "harbor-io", "repo": "dock"}


def _threads(data: Path) -> dict[int, tuple[bool, bool]]:
    """id -> (unread, done)."""
    with store_of(data) as st:
        rows = st.rows("SELECT id, unread, done FROM notifications ORDER BY id")
        return {r["id"]: (bool(r["unread"]), bool(r["done"])) for r in rows}


async def test_listing_and_reading_notifications(harbor: Path) -> None:
    async with world_session(harbor) as s:
        unread = await call_ok(s, "list_notifications")
        assert [(n["id"], n["subject"]["type"], n["reason"]) for n in unread] == [
            ("4", "CheckSuite", "ci_activity"),
            ("2", "Issue", "mention"),
            ("1", "PullRequest", "review_requested"),
        ]
        assert unread[2]["subject"] == {
            "title": "Add login",
            "url": "https://api.github.com/repos/harbor-io/dock/pulls/5",
            "latest_comment_url": "https://api.github.com/repos/harbor-io/dock/pulls/5",
            "type": "PullRequest",
        }
        everything = await call_ok(s, "list_notifications", filter="include_read_notifications")
        assert [n["subject"]["title"] for n in everything][1] == "Dock 1.0"
        participating = await call_ok(s, "list_notifications", filter="only_participating")
        assert {n["reason"] for n in participating} == {"mention", "review_requested"}
        scoped = await call_ok(s, "list_notifications", owner="harbor-io", repo="crane")
        assert scoped == []
        since = await call_ok(s, "list_notifications", since=unread[1]["updated_at"])
        assert [n["id"] for n in since] == ["4", "2"]
        details = await call_ok(s, "get_notification_details", notificationID="2")
        assert details["subject"]["title"] == "Session expiry" and details["unread"] is True
        err = await call_err(s, "get_notification_details", notificationID="99")
        assert "404" in err and "'99'" in err
        err = await call_err(s, "list_notifications", since="last week")
        assert err.startswith("invalid since time format, should be RFC3339/ISO8601")


async def test_dismissing_and_marking_notifications(harbor: Path) -> None:
    async with world_session(harbor) as s:
        assert await call_ok(s, "dismiss_notification", threadID="2", state="read") == "Notification marked as read"
        assert await call_ok(s, "dismiss_notification", threadID="1", state="done") == "Notification marked as done"
        assert _threads(harbor) == {1: (False, True), 2: (False, False), 3: (False, False), 4: (True, False)}
        everything = await call_ok(s, "list_notifications", filter="include_read_notifications")
        assert "1" not in {n["id"] for n in everything}  # done threads are gone from every listing
        # lastReadAt before thread 4's last update leaves it unread, as on GitHub.
        await call_ok(s, "mark_all_notifications_read", lastReadAt="2025-03-03T09:00:00Z")
        assert _threads(harbor)[4] == (True, False)
        assert await call_ok(s, "mark_all_notifications_read", **DOCK) == "All notifications marked as read"
        assert _threads(harbor)[4] == (False, False)
        assert await call_ok(s, "list_notifications") == []
        err = await call_err(s, "dismiss_notification", threadID="abc", state="read")
        assert "404" in err


async def test_subscriptions(harbor: Path) -> None:
    async with world_session(harbor) as s:
        ignored = await call_ok(s, "manage_notification_subscription", notificationID="2", action="ignore")
        assert (ignored["subscribed"], ignored["ignored"]) == (False, True)
        with store_of(harbor) as st:
            assert dict(st.row("SELECT subscribed, ignored FROM thread_subscriptions WHERE notification_id = 2")) == {
                "subscribed": 0,
                "ignored": 1,
            }
        await call_ok(s, "manage_notification_subscription", notificationID="2", action="watch")
        deleted = await call_ok(s, "manage_notification_subscription", notificationID="2", action="delete")
        assert deleted == "Notification subscription deleted"
        with store_of(harbor) as st:
            assert st.row("SELECT 1 FROM thread_subscriptions") is None
            assert dict(st.row("SELECT subscribed, ignored FROM repo_subscriptions WHERE repo_id = 1")) == {
                "subscribed": 1,
                "ignored": 0,
            }
        repo = await call_ok(s, "manage_repository_notification_subscription", **DOCK, action="ignore")
        assert repo["repository_url"] == "https://api.github.com/repos/harbor-io/dock" and repo["ignored"] is True
        await call_ok(s, "manage_repository_notification_subscription", owner="harbor-io", repo="crane", action="watch")
        with store_of(harbor) as st:
            rows = st.rows("SELECT repo_id, subscribed, ignored FROM repo_subscriptions ORDER BY repo_id")
            assert [tuple(r) for r in rows] == [(1, 0, 1), (2, 1, 0)]
        assert await call_ok(s, "manage_repository_notification_subscription", **DOCK, action="delete") == (
            "Repository subscription deleted"
        )
        err = await call_err(
            s, "manage_repository_notification_subscription", owner="harbor-io", repo="x", action="watch"
        )
        assert err.startswith("failed to watch repository subscription: 404")
        err = await call_err(s, "manage_notification_subscription", notificationID="77", action="watch")
        assert "404" in err
