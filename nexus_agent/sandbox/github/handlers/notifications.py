"""Notifications of the authenticated user, thread subscriptions and repository subscriptions.

A notification thread is about one subject (an issue, pull request, release, discussion, check suite ...) of a
repository, has a reason (``assign``, ``mention``, ``review_requested`` ...), and is unread until marked read;
"done" removes it from every listing. The sandbox's own calls never notify (GitHub does not notify you of your own
activity), so threads come from a world. A subject's title is read live when the subject still exists.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import minimal_user, opt_str, paginate, repo_of, req_str
from nexus_agent.sandbox.github.store import NotFound, Repo, iso

# Reasons in which the user takes part, for filter "only_participating".
PARTICIPATING = frozenset(
    {"assign", "author", "comment", "mention", "review_requested", "state_change", "team_mention"}
)
SUBJECT_TYPES = (
    "Issue",
    "PullRequest",
    "Release",
    "Discussion",
    "CheckSuite",
    "Commit",
    "RepositoryVulnerabilityAlert",
)


@dataclass(frozen=True)
class Notification:
    """``subject_number``: the issue/pull request/discussion number; ``subject_ref``: a release's tag."""

    id: int
    login: str
    repo_id: int
    subject_type: str
    subject_title: str
    subject_number: int | None
    subject_ref: str
    reason: str
    unread: bool
    done: bool
    updated_at: str
    last_read_at: str


def _notification(r: Any) -> Notification:
    d = dict(r)
    d["unread"], d["done"] = bool(d["unread"]), bool(d["done"])
    return Notification(**d)


def add_notification(
    sb: Sandbox,
    login: str,
    repo: Repo,
    *,
    subject_type: str,
    title: str,
    reason: str,
    number: int | None = None,
    ref: str = "",
    unread: bool = True,
) -> Notification:
    """A notification thread for ``login`` (shared by worlds)."""
    nid = sb.store.insert(
        "notifications",
        login=login,
        repo_id=repo.id,
        subject_type=subject_type,
        subject_title=title,
        subject_number=number,
        subject_ref=ref,
        reason=reason,
        unread=int(unread),
        updated_at=sb.store.now(),
    )
    return _notification(sb.store.row("SELECT * FROM notifications WHERE id = ?", (nid,)))


def _mine(sb: Sandbox) -> list[Notification]:
    rows = sb.store.rows(
        "SELECT * FROM notifications WHERE login = ? AND done = 0 ORDER BY updated_at DESC, id DESC", (sb.me,)
    )
    return [_notification(r) for r in rows]


def _thread(sb: Sandbox, raw: str, action: str) -> Notification:
    row = sb.store.row("SELECT * FROM notifications WHERE id = ? AND login = ?", (raw.strip(), sb.me))
    if row is None or not raw.strip().isdigit():
        raise ToolError(f"{action}: 404 Not Found: no notification thread {raw!r}")
    return _notification(row)


def _subject(sb: Sandbox, repo: Repo, n: Notification) -> dict[str, Any]:
    api = f"{API_ROOT}/repos/{repo.full_name}"
    title, url = n.subject_title, None
    if n.subject_type in ("Issue", "PullRequest") and n.subject_number is not None:
        with contextlib.suppress(NotFound):  # a deleted subject keeps the title it had
            title = sb.store.issue(repo.id, n.subject_number).title
        kind = "pulls" if n.subject_type == "PullRequest" else "issues"
        url = f"{api}/{kind}/{n.subject_number}"
    elif n.subject_type == "Discussion" and n.subject_number is not None:
        row = sb.store.row(
            "SELECT title FROM discussions WHERE repo_id = ? AND number = ?", (repo.id, n.subject_number)
        )
        title = row["title"] if row else title
    elif n.subject_type == "Release" and n.subject_ref:
        row = sb.store.row("SELECT id, name FROM releases WHERE repo_id = ? AND tag_name = ?", (repo.id, n.subject_ref))
        if row is not None:
            title, url = row["name"] or n.subject_ref, f"{api}/releases/{row['id']}"
    return {"title": title, "url": url, "latest_comment_url": url, "type": n.subject_type}


def thread_json(sb: Sandbox, n: Notification) -> dict[str, Any]:
    repo = sb.store.repo_by_id(n.repo_id)
    owner = sb.store.find_user(repo.owner)
    return {
        "id": str(n.id),
        "repository": {
            "id": repo.id,
            "node_id": f"R_sandbox{repo.id}",
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": minimal_user(sb, repo.owner) | {"type": owner.type if owner else "User"},
            "html_url": f"{HTML_ROOT}/{repo.full_name}",
            "description": repo.description,
            "fork": repo.fork_of is not None,
        },
        "subject": _subject(sb, repo, n),
        "reason": n.reason,
        "unread": n.unread,
        "updated_at": n.updated_at,
        "last_read_at": n.last_read_at or None,
        "url": f"{API_ROOT}/notifications/threads/{n.id}",
        "subscription_url": f"{API_ROOT}/notifications/threads/{n.id}/subscription",
    }


def _time(args: dict[str, Any], key: str) -> str | None:
    """An RFC 3339 argument normalised to the store's ``YYYY-MM-DDTHH:MM:SSZ``, or the real server's error."""
    value = opt_str(args, key)
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None or "T" not in value:
            raise ValueError("a date and time with a zone is required, e.g. 2025-03-03T09:00:00Z")
    except ValueError as e:
        raise ToolError(f"invalid {key} time format, should be RFC3339/ISO8601: {e}") from e
    return iso(int(parsed.timestamp()))


def _scoped(sb: Sandbox, args: dict[str, Any], notes: list[Notification]) -> list[Notification]:
    if opt_str(args, "owner") and opt_str(args, "repo"):
        repo = repo_of(sb, args)
        return [n for n in notes if n.repo_id == repo.id]
    return notes


@tool("list_notifications")
def list_notifications(sb: Sandbox, args: dict[str, Any]) -> object:
    since, before = _time(args, "since"), _time(args, "before")
    notes = _scoped(sb, args, _mine(sb))
    which = opt_str(args, "filter") or "default"
    if which != "include_read_notifications":
        notes = [n for n in notes if n.unread]
    if which == "only_participating":
        notes = [n for n in notes if n.reason in PARTICIPATING]
    if since:
        notes = [n for n in notes if n.updated_at >= since]
    if before:
        notes = [n for n in notes if n.updated_at < before]
    return [thread_json(sb, n) for n in paginate(notes, args, default=50)]


@tool("get_notification_details")
def get_notification_details(sb: Sandbox, args: dict[str, Any]) -> object:
    raw = req_str(args, "notificationID")
    return thread_json(sb, _thread(sb, raw, f"failed to get notification details for ID '{raw}'"))


@tool("dismiss_notification")
def dismiss_notification(sb: Sandbox, args: dict[str, Any]) -> object:
    state = req_str(args, "state")
    n = _thread(sb, req_str(args, "threadID"), f"failed to mark notification as {state}")
    values: dict[str, object] = {"unread": 0, "last_read_at": sb.store.now()}
    if state == "done":
        values["done"] = 1
    sb.store.update("notifications", n.id, **values)
    return f"Notification marked as {state}"


@tool("mark_all_notifications_read")
def mark_all_notifications_read(sb: Sandbox, args: dict[str, Any]) -> object:
    now = sb.store.now()
    last_read = _time(args, "lastReadAt") or now
    for n in _scoped(sb, args, _mine(sb)):
        # As on GitHub: what was updated after lastReadAt stays unread.
        if n.unread and n.updated_at <= last_read:
            sb.store.update("notifications", n.id, unread=0, last_read_at=now)
    return "All notifications marked as read"


@tool("manage_notification_subscription")
def manage_notification_subscription(sb: Sandbox, args: dict[str, Any]) -> object:
    action = req_str(args, "action")
    n = _thread(sb, req_str(args, "notificationID"), f"failed to {action} notification subscription")
    if action == "delete":
        sb.store.execute("DELETE FROM thread_subscriptions WHERE notification_id = ?", (n.id,))
        return "Notification subscription deleted"
    now = sb.store.now()
    watch = action == "watch"
    sb.store.execute(
        "INSERT OR REPLACE INTO thread_subscriptions(notification_id, subscribed, ignored, created_at) "
        "VALUES (?, ?, ?, ?)",
        (n.id, int(watch), int(not watch), now),
    )
    return {
        "subscribed": watch,
        "ignored": not watch,
        "reason": None,
        "created_at": now,
        "url": f"{API_ROOT}/notifications/threads/{n.id}/subscription",
        "thread_url": f"{API_ROOT}/notifications/threads/{n.id}",
    }


def subscribe_repo(sb: Sandbox, login: str, repo: Repo, *, watch: bool) -> str:
    """Watch (or ignore) ``repo`` for ``login``; returns the time. Shared by worlds."""
    now = sb.store.now()
    sb.store.execute(
        "INSERT OR REPLACE INTO repo_subscriptions(login, repo_id, subscribed, ignored, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (login, repo.id, int(watch), int(not watch), now),
    )
    return now


@tool("manage_repository_notification_subscription")
def manage_repository_notification_subscription(sb: Sandbox, args: dict[str, Any]) -> object:
    action = req_str(args, "action")
    try:
        repo = repo_of(sb, args)
    except ToolError as e:
        raise ToolError(f"failed to {action} repository subscription: {e}") from e
    if action == "delete":
        sb.store.execute("DELETE FROM repo_subscriptions WHERE login = ? AND repo_id = ?", (sb.me, repo.id))
        return "Repository subscription deleted"
    watch = action == "watch"
    now = subscribe_repo(sb, sb.me, repo, watch=watch)
    return {
        "subscribed": watch,
        "ignored": not watch,
        "reason": None,
        "created_at": now,
        "url": f"{API_ROOT}/repos/{repo.full_name}/subscription",
        "repository_url": f"{API_ROOT}/repos/{repo.full_name}",
    }
