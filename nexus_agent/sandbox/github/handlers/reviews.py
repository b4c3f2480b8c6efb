"""Pull request reviews: pending and submitted reviews, review threads and their comments, replies and reactions.

A review is ``PENDING`` until submitted (APPROVED, CHANGES_REQUESTED or COMMENTED); each user has at most one
pending review per pull request, and its comments are visible to nobody else. A review comment opens a thread on a
line (or a range, or a whole file) of the pull request's diff; replies join the thread. A reply made outside a
review is, as on GitHub, a one-comment COMMENTED review of its own. Submitting a review removes its author from the
requested reviewers.

pull_request_read's ``get_reviews`` and ``get_review_comments`` read these tables (see :func:`reviews_json` and
:func:`threads_json`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    author_association,
    decode_cursor,
    diff_range,
    drop_empty,
    encode_cursor,
    get_pull,
    minimal_user,
    node_id,
    opt_int,
    opt_str,
    paginate,
    parse_node_id,
    repo_of,
    req_int,
    req_str,
)
from nexus_agent.sandbox.github.store import Issue, Repo

EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
NO_PENDING = "No pending review found for the viewer"
_EMPTY_PAGE = {"hasNextPage": False, "hasPreviousPage": False, "startCursor": "", "endCursor": ""}
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Review:
    id: int
    issue_id: int
    author: str
    state: str
    body: str
    commit_id: str
    created_at: str
    submitted_at: str


@dataclass(frozen=True)
class ReviewComment:
    id: int
    thread_id: int
    review_id: int
    author: str
    body: str
    commit_id: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class Thread:
    """``line``/``start_line`` are diff-side line numbers (None for a file-level thread)."""

    id: int
    issue_id: int
    path: str
    subject_type: str
    line: int | None
    start_line: int | None
    side: str
    start_side: str | None
    resolved: bool
    resolved_by: str


def _review(r: Any) -> Review:
    return Review(
        r["id"], r["issue_id"], r["author"], r["state"], r["body"], r["commit_id"], r["created_at"], r["submitted_at"]
    )


def reviews_of(sb: Sandbox, issue: Issue) -> list[Review]:
    return [_review(r) for r in sb.store.rows("SELECT * FROM reviews WHERE issue_id = ? ORDER BY id", (issue.id,))]


def pending_review(sb: Sandbox, issue: Issue, login: str) -> Review | None:
    r = sb.store.row("SELECT * FROM reviews WHERE issue_id = ? AND author = ? AND state = 'PENDING'", (issue.id, login))
    return None if r is None else _review(r)


def comments_of(sb: Sandbox, thread_id: int) -> list[ReviewComment]:
    rows = sb.store.rows("SELECT * FROM review_comments WHERE thread_id = ? ORDER BY id", (thread_id,))
    return [ReviewComment(**dict(r)) for r in rows]


def threads_of(sb: Sandbox, issue: Issue) -> list[Thread]:
    """The pull request's threads that the authenticated user can see (others' pending comments are hidden)."""
    rows = sb.store.rows("SELECT * FROM review_threads WHERE issue_id = ? ORDER BY id", (issue.id,))
    out = []
    for r in rows:
        first = sb.store.row(
            "SELECT v.state, v.author FROM review_comments c JOIN reviews v ON v.id = c.review_id "
            "WHERE c.thread_id = ? ORDER BY c.id LIMIT 1",
            (r["id"],),
        )
        if first is None or (first["state"] == "PENDING" and first["author"].lower() != sb.me.lower()):
            continue
        out.append(
            Thread(
                r["id"],
                r["issue_id"],
                r["path"],
                r["subject_type"],
                r["line"],
                r["start_line"],
                r["side"],
                r["start_side"],
                bool(r["resolved"]),
                r["resolved_by"],
            )
        )
    return out


# -- writing (shared by the tools and worlds) -------------------------------------------------------


def start_review(sb: Sandbox, repo: Repo, issue: Issue, author: str, commit_id: str | None = None) -> Review:
    """A new PENDING review by ``author`` on the pull request's head (or ``commit_id``, one of its commits)."""
    if pending_review(sb, issue, author) is not None:
        raise ToolError("422 Unprocessable Entity: User can only have one pending review per pull request")
    assert issue.pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, issue.pull)
    commit = head
    if commit_id:
        found = git.resolve(commit_id)
        if found is None or not (found == head or git.is_ancestor(found, head)) or git.is_ancestor(found, base):
            raise ToolError(f"422 Unprocessable Entity: 'commitID' {commit_id} is not a commit of this pull request")
        commit = found
    now = sb.store.now()
    rid = sb.store.insert(
        "reviews", issue_id=issue.id, author=author, state="PENDING", body="", commit_id=commit, created_at=now
    )
    return Review(rid, issue.id, author, "PENDING", "", commit, now, "")


def submit_review(sb: Sandbox, issue: Issue, review: Review, event: str, body: str) -> None:
    """Submit a pending review with GitHub's rules for ``event`` (APPROVE, REQUEST_CHANGES, COMMENT)."""
    state = EVENTS[event]
    if state != "COMMENTED" and review.author.lower() == issue.author.lower():
        verb = "approve" if state == "APPROVED" else "request changes on"
        raise ToolError(f"422 Unprocessable Entity: Can not {verb} your own pull request")
    has_comments = sb.store.row("SELECT 1 FROM review_comments WHERE review_id = ?", (review.id,)) is not None
    if state != "APPROVED" and not body.strip() and not has_comments:
        raise ToolError(f"422 Unprocessable Entity: a review with event {event} needs a body or review comments")
    sb.store.update("reviews", review.id, state=state, body=body, submitted_at=sb.store.now())
    sb.store.execute("DELETE FROM pull_reviewers WHERE issue_id = ? AND reviewer = ?", (issue.id, review.author))


def diff_lines(sb: Sandbox, repo: Repo, issue: Issue, path: str) -> tuple[set[int], set[int]] | None:
    """(LEFT, RIGHT) line numbers that ``path``'s hunks show in the pull request's diff, or None if the file is not
    in the diff: a line comment must be on one of them, as on GitHub."""
    assert issue.pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, issue.pull)
    change = next((f for f in git.changed_files(base, head, with_patch=True) if f.filename == path), None)
    if change is None:
        return None
    left: set[int] = set()
    right: set[int] = set()
    old = new = 0
    for text in change.patch.splitlines():
        m = _HUNK.match(text)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
        elif text.startswith("-"):
            left.add(old)
            old += 1
        elif text.startswith("+"):
            right.add(new)
            new += 1
        elif not text.startswith("\\"):
            left.add(old)
            right.add(new)
            old += 1
            new += 1
    return left, right


def add_thread(
    sb: Sandbox,
    repo: Repo,
    issue: Issue,
    review: Review,
    *,
    path: str,
    body: str,
    subject_type: str = "LINE",
    line: int | None = None,
    side: str | None = None,
    start_line: int | None = None,
    start_side: str | None = None,
) -> ReviewComment:
    """A new thread with its first comment in ``review``; the position is checked against the diff."""
    lines = diff_lines(sb, repo, issue, path)
    if lines is None:
        raise ToolError(
            f"422 Unprocessable Entity: 'path' {path!r} is not a file changed by pull request #{issue.number}"
        )
    side = side or "RIGHT"
    if subject_type == "FILE":
        line = start_line = None
    else:
        if line is None:
            raise ToolError("missing required parameter: line (required when subjectType is 'LINE')")
        shown = lines[0] if side == "LEFT" else lines[1]
        if line not in shown:
            raise ToolError(
                f"422 Unprocessable Entity: line {line} ({side}) of {path} is not part of the pull request's diff"
            )
        if start_line is not None:
            start_shown = lines[0] if (start_side or side) == "LEFT" else lines[1]
            if start_line > line or start_line not in start_shown:
                raise ToolError(
                    f"422 Unprocessable Entity: 'startLine' {start_line} must be a diff line before 'line' {line}"
                )
    tid = sb.store.insert(
        "review_threads",
        issue_id=issue.id,
        path=path,
        subject_type=subject_type,
        line=line,
        start_line=start_line,
        side=side,
        start_side=start_side if start_line is not None else None,
    )
    return _add_comment(sb, tid, review, body)


def _add_comment(sb: Sandbox, thread_id: int, review: Review, body: str) -> ReviewComment:
    now = sb.store.now()
    cid = sb.store.insert(
        "review_comments",
        thread_id=thread_id,
        review_id=review.id,
        author=review.author,
        body=body,
        commit_id=review.commit_id,
        created_at=now,
        updated_at=now,
    )
    return ReviewComment(cid, thread_id, review.id, review.author, body, review.commit_id, now, now)


def reply(sb: Sandbox, repo: Repo, issue: Issue, comment: ReviewComment, author: str, body: str) -> ReviewComment:
    """A reply in ``comment``'s thread, made outside any pending review: a COMMENTED review of its own."""
    review = start_review(sb, repo, issue, author) if pending_review(sb, issue, author) is None else None
    if review is None:
        # The author's pending review holds the reply until it is submitted, as on GitHub.
        pending = pending_review(sb, issue, author)
        assert pending is not None
        return _add_comment(sb, comment.thread_id, pending, body)
    out = _add_comment(sb, comment.thread_id, review, body)
    sb.store.update("reviews", review.id, state="COMMENTED", submitted_at=sb.store.now())
    return out


# -- shapes -----------------------------------------------------------------------------------------


def comment_url(repo: Repo, issue: Issue, comment_id: int) -> str:
    return f"{HTML_ROOT}/{repo.full_name}/pull/{issue.number}#discussion_r{comment_id}"


def reviews_json(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> list[dict[str, Any]]:
    """pull_request_read get_reviews: MinimalPullRequestReview items (pending ones only for their author)."""
    visible = [r for r in reviews_of(sb, issue) if r.state != "PENDING" or r.author.lower() == sb.me.lower()]
    return [
        drop_empty(
            {
                "id": r.id,
                "state": r.state,
                "body": r.body,
                "html_url": f"{HTML_ROOT}/{repo.full_name}/pull/{issue.number}#pullrequestreview-{r.id}",
                "user": minimal_user(sb, r.author),
                "commit_id": r.commit_id,
                "submitted_at": r.submitted_at,
                "author_association": author_association(sb, repo, r.author),
            }
        )
        for r in paginate(visible, args)
    ]


def threads_json(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> dict[str, Any]:
    """pull_request_read get_review_comments: review threads with their comments, cursor-paginated."""
    threads = threads_of(sb, issue)
    if not threads:
        return {"reviewThreads": [], "totalCount": 0, "pageInfo": _EMPTY_PAGE}
    assert issue.pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, issue.pull)
    changed = {f.filename for f in git.changed_files(base, head, with_patch=False)}
    start = decode_cursor(opt_str(args, "after"))
    per_page = opt_int(args, "perPage") or 30
    page = threads[start : start + per_page]
    items = []
    for t in page:
        comments = comments_of(sb, t.id)
        items.append(
            {
                "id": node_id("PRRT", t.id),
                "is_resolved": t.resolved,
                "is_outdated": t.path not in changed,
                "is_collapsed": t.resolved,
                "comments": [
                    drop_empty(
                        {
                            "body": c.body,
                            "path": t.path,
                            "line": t.line,
                            "author": c.author,
                            "created_at": c.created_at,
                            "updated_at": c.updated_at,
                            "html_url": comment_url(repo, issue, c.id),
                        }
                    )
                    for c in comments
                ],
                "total_count": len(comments),
            }
        )
    end = start + len(page)
    return {
        "reviewThreads": items,
        "totalCount": len(threads),
        "pageInfo": {
            "hasNextPage": end < len(threads),
            "hasPreviousPage": start > 0,
            "startCursor": encode_cursor(start) if page else "",
            "endCursor": encode_cursor(end) if page else "",
        },
    }


# -- tools ------------------------------------------------------------------------------------------


def _thread(sb: Sandbox, args: dict[str, Any]) -> Thread:
    raw = opt_str(args, "threadId")
    if not raw:
        raise ToolError("threadId is required for resolve_thread and unresolve_thread methods")
    tid = parse_node_id("PRRT", raw)
    row = None if tid is None else sb.store.row("SELECT issue_id FROM review_threads WHERE id = ?", (tid,))
    if tid is None or row is None:
        raise ToolError(f"Could not resolve to a PullRequestReviewThread node with the global id of '{raw}'")
    found = next((t for t in _all_threads(sb, row["issue_id"]) if t.id == tid), None)
    if found is None:
        raise ToolError(f"Could not resolve to a PullRequestReviewThread node with the global id of '{raw}'")
    return found


def _all_threads(sb: Sandbox, issue_id: int) -> list[Thread]:
    row = sb.store.row(
        "SELECT r.owner, r.name, i.number FROM issues i JOIN repos r ON r.id = i.repo_id WHERE i.id = ?", (issue_id,)
    )
    assert row is not None
    return threads_of(sb, sb.store.issue(sb.store.repo(row["owner"], row["name"]).id, row["number"]))


def _create(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    if issue.state != "open":
        raise ToolError(f"422 Unprocessable Entity: pull request #{issue.number} is closed")
    review = start_review(sb, repo, issue, sb.me, opt_str(args, "commitID"))
    event = opt_str(args, "event")
    if event is None:
        return "pending pull request created"
    submit_review(sb, issue, review, event, opt_str(args, "body") or "")
    return "pull request review submitted successfully"


def _submit_pending(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    review = pending_review(sb, issue, sb.me)
    if review is None:
        raise ToolError(NO_PENDING)
    event = opt_str(args, "event")
    if event is None:
        raise ToolError("missing required parameter: event (required when method is 'submit_pending')")
    submit_review(sb, issue, review, event, opt_str(args, "body") or "")
    return "pending pull request review successfully submitted"


def _delete_pending(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    review = pending_review(sb, issue, sb.me)
    if review is None:
        raise ToolError(NO_PENDING)
    threads = sb.store.rows("SELECT DISTINCT thread_id FROM review_comments WHERE review_id = ?", (review.id,))
    sb.store.execute("DELETE FROM review_comments WHERE review_id = ?", (review.id,))
    for t in threads:
        if sb.store.row("SELECT 1 FROM review_comments WHERE thread_id = ?", (t["thread_id"],)) is None:
            sb.store.execute("DELETE FROM review_threads WHERE id = ?", (t["thread_id"],))
    sb.store.execute("DELETE FROM reviews WHERE id = ?", (review.id,))
    return "pending pull request review successfully deleted"


def _set_resolved(sb: Sandbox, args: dict[str, Any], resolved: bool) -> object:
    thread = _thread(sb, args)
    if thread.resolved != resolved:
        sb.store.update("review_threads", thread.id, resolved=int(resolved), resolved_by=sb.me if resolved else "")
    return "review thread resolved successfully" if resolved else "review thread unresolved successfully"


@tool("pull_request_review_write")
def pull_request_review_write(sb: Sandbox, args: dict[str, Any]) -> object:
    method = req_str(args, "method")
    if method in ("resolve_thread", "unresolve_thread"):
        # owner, repo and pullNumber are not used: the thread's node id names it.
        return _set_resolved(sb, args, method == "resolve_thread")
    repo = repo_of(sb, args)
    issue, _ = get_pull(sb, repo, req_int(args, "pullNumber"))
    writers = {"create": _create, "submit_pending": _submit_pending, "delete_pending": _delete_pending}
    return writers[method](sb, repo, issue, args)


@tool("add_comment_to_pending_review")
def add_comment_to_pending_review(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue, _ = get_pull(sb, repo, req_int(args, "pullNumber"))
    mine = [r for r in reviews_of(sb, issue) if r.author.lower() == sb.me.lower()]
    if not mine:
        raise ToolError(NO_PENDING)
    latest = mine[-1]
    if latest.state != "PENDING":
        url = f"{HTML_ROOT}/{repo.full_name}/pull/{issue.number}#pullrequestreview-{latest.id}"
        raise ToolError(f"The latest review, found at {url} is not pending")
    add_thread(
        sb,
        repo,
        issue,
        latest,
        path=req_str(args, "path"),
        body=req_str(args, "body"),
        subject_type=req_str(args, "subjectType"),
        line=opt_int(args, "line"),
        side=opt_str(args, "side"),
        start_line=opt_int(args, "startLine"),
        start_side=opt_str(args, "startSide"),
    )
    return "pull request review comment successfully added to pending review"


def find_comment(sb: Sandbox, repo: Repo, comment_id: int) -> tuple[Issue, ReviewComment] | None:
    """The review comment ``comment_id`` of ``repo`` and its pull request, if visible to the authenticated user."""
    row = sb.store.row(
        "SELECT c.*, i.number FROM review_comments c JOIN review_threads t ON t.id = c.thread_id "
        "JOIN issues i ON i.id = t.issue_id WHERE c.id = ? AND i.repo_id = ?",
        (comment_id, repo.id),
    )
    if row is None:
        return None
    issue = sb.store.issue(repo.id, row["number"])
    if row["thread_id"] not in {t.id for t in threads_of(sb, issue)}:
        return None
    d = {k: row[k] for k in row.keys() if k != "number"}  # noqa: SIM118 - sqlite3.Row is not a mapping
    return issue, ReviewComment(**d)


@tool("add_reply_to_pull_request_comment")
def add_reply_to_pull_request_comment(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    comment_id = req_int(args, "commentId")
    if comment_id < 1:
        raise ToolError("commentId must be greater than 0")
    body, reaction = opt_str(args, "body"), opt_str(args, "reaction")
    if body is None and reaction is None:
        raise ToolError("at least one of body or reaction is required")
    if body is not None and body == "":
        raise ToolError("body cannot be empty when provided")
    found = find_comment(sb, repo, comment_id)
    if found is None:
        what = "add reply to" if body is not None else "add reaction to"
        raise ToolError(
            f"failed to {what} pull request review comment: 404 Not Found: no review comment {comment_id} in "
            f"{repo.full_name}"
        )
    issue, comment = found
    out: dict[str, Any] = {}
    if reaction is not None:
        sb.store.execute(
            "INSERT OR IGNORE INTO review_comment_reactions(comment_id, author, content) VALUES (?, ?, ?)",
            (comment_id, sb.me, reaction),
        )
        row = sb.store.row(
            "SELECT id FROM review_comment_reactions WHERE comment_id = ? AND author = ? AND content = ?",
            (comment_id, sb.me, reaction),
        )
        rid = int(row["id"]) if row else 0
        out["reaction"] = {
            "id": str(rid),
            "url": f"{API_ROOT}/repos/{repo.full_name}/pulls/comments/{comment_id}/reactions/{rid}",
        }
    if body is not None:
        number = opt_int(args, "pullNumber")
        if number is None:
            raise ToolError("missing required parameter: pullNumber (required when body is provided)")
        if number != issue.number:
            raise ToolError(
                f"failed to add reply to pull request comment: 404 Not Found: comment {comment_id} is on "
                f"pull request #{issue.number}, not #{number}"
            )
        new = reply(sb, repo, issue, comment, sb.me, body)
        out["comment"] = {"id": str(new.id), "url": comment_url(repo, issue, new.id)}
    if len(out) == 2:
        return out
    return next(iter(out.values()))
