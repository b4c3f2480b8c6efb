"""Discussions: categories, discussions, comments and replies, answers.

Discussions are numbered in the same sequence as the repository's issues and pull requests (as on GitHub). Without
``repo``, the tools read an organisation's discussions, which GitHub keeps in its ``.github`` repository. Comments
nest one level (a reply answers a top-level comment); a comment of a discussion in an answerable (Q&A) category
can be marked as its answer. Node ids: ``D_…`` discussions, ``DC_…`` comments, ``DIC_…`` categories.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nexus_agent.sandbox.github.context import HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    decode_cursor,
    encode_cursor,
    node_id,
    opt_int,
    opt_str,
    parse_node_id,
    req_int,
    req_str,
)
from nexus_agent.sandbox.github.handlers.repos import is_admin_of, visible
from nexus_agent.sandbox.github.store import NotFound, Repo

# The categories GitHub gives a repository when discussions are turned on: (name, emoji, description, answerable).
DEFAULT_CATEGORIES = (
    ("Announcements", ":mega:", "Updates from maintainers", False),
    ("General", ":speech_balloon:", "Chat about anything and everything here", False),
    ("Ideas", ":bulb:", "Share ideas for new features", False),
    ("Polls", ":ballot_box:", "Take a vote from the community", False),
    ("Q&A", ":pray:", "Ask the community for help", True),
    ("Show and tell", ":raised_hands:", "Show off something you've made", False),
)


@dataclass(frozen=True)
class Category:
    id: int
    name: str
    slug: str
    emoji: str
    description: str
    answerable: bool


@dataclass(frozen=True)
class Discussion:
    id: int
    repo_id: int
    number: int
    category: Category
    title: str
    body: str
    author: str
    closed: bool
    answer_id: int | None
    answer_chosen_at: str
    answer_chosen_by: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class DiscussionComment:
    """``reply_to``: the top-level comment a reply answers (None for a top-level comment)."""

    id: int
    discussion_id: int
    reply_to: int | None
    author: str
    body: str
    created_at: str
    updated_at: str


def _category(r: Any) -> Category:
    return Category(r["id"], r["name"], r["slug"], r["emoji"], r["description"], bool(r["answerable"]))


def categories_of(sb: Sandbox, repo: Repo) -> list[Category]:
    return [
        _category(r)
        for r in sb.store.rows("SELECT * FROM discussion_categories WHERE repo_id = ? ORDER BY id", (repo.id,))
    ]


def add_category(sb: Sandbox, repo: Repo, name: str, emoji: str, description: str, answerable: bool) -> Category:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "category"
    cid = sb.store.insert(
        "discussion_categories",
        repo_id=repo.id,
        name=name,
        slug=slug,
        emoji=emoji,
        description=description,
        answerable=int(answerable),
    )
    return Category(cid, name, slug, emoji, description, answerable)


def _discussion(sb: Sandbox, r: Any) -> Discussion:
    cat = sb.store.row("SELECT * FROM discussion_categories WHERE id = ?", (r["category_id"],))
    assert cat is not None
    return Discussion(
        r["id"],
        r["repo_id"],
        r["number"],
        _category(cat),
        r["title"],
        r["body"],
        r["author"],
        bool(r["closed"]),
        r["answer_id"],
        r["answer_chosen_at"],
        r["answer_chosen_by"],
        r["created_at"],
        r["updated_at"],
    )


def discussions_of(sb: Sandbox, repo: Repo) -> list[Discussion]:
    rows = sb.store.rows("SELECT * FROM discussions WHERE repo_id = ? ORDER BY number", (repo.id,))
    return [_discussion(sb, r) for r in rows]


def add_discussion(
    sb: Sandbox,
    repo: Repo,
    category: Category,
    *,
    title: str,
    body: str,
    author: str,
    number: int | None = None,
    closed: bool = False,
) -> Discussion:
    """A new discussion, numbered after the repository's issues, pull requests and discussions (shared by worlds)."""
    now = sb.store.now()
    did = sb.store.insert(
        "discussions",
        repo_id=repo.id,
        number=number or sb.store.next_number(repo.id),
        category_id=category.id,
        title=title,
        body=body,
        author=author,
        closed=int(closed),
        created_at=now,
        updated_at=now,
    )
    row = sb.store.row("SELECT * FROM discussions WHERE id = ?", (did,))
    return _discussion(sb, row)


def add_comment(sb: Sandbox, d: Discussion, author: str, body: str, reply_to: int | None = None) -> DiscussionComment:
    now = sb.store.now()
    cid = sb.store.insert(
        "discussion_comments",
        discussion_id=d.id,
        reply_to=reply_to,
        author=author,
        body=body,
        created_at=now,
        updated_at=now,
    )
    sb.store.update("discussions", d.id, updated_at=now)
    return DiscussionComment(cid, d.id, reply_to, author, body, now, now)


def comments_of(sb: Sandbox, d: Discussion, reply_to: int | None = None) -> list[DiscussionComment]:
    """Top-level comments (``reply_to`` None) or the replies to one comment, oldest first."""
    if reply_to is None:
        rows = sb.store.rows(
            "SELECT * FROM discussion_comments WHERE discussion_id = ? AND reply_to IS NULL ORDER BY id", (d.id,)
        )
    else:
        rows = sb.store.rows("SELECT * FROM discussion_comments WHERE reply_to = ? ORDER BY id", (reply_to,))
    return [DiscussionComment(**dict(r)) for r in rows]


def mark_answer(sb: Sandbox, d: Discussion, comment: DiscussionComment, by: str) -> None:
    if not d.category.answerable:
        raise ToolError(
            f"422 Unprocessable Entity: discussion #{d.number} is in the category '{d.category.name}', which does "
            "not take answers (only answerable categories such as Q&A do)"
        )
    sb.store.update("discussions", d.id, answer_id=comment.id, answer_chosen_at=sb.store.now(), answer_chosen_by=by)


# -- addressing -------------------------------------------------------------------------------------


def _scope(sb: Sandbox, args: dict[str, Any]) -> Repo:
    """``owner``/``repo``, or the organisation's ``.github`` repository when ``repo`` is omitted (as upstream)."""
    owner, name = req_str(args, "owner"), opt_str(args, "repo") or ".github"
    try:
        repo = sb.store.repo(owner, name)
    except NotFound:
        repo = None
    if repo is None or not visible(sb, repo):
        raise ToolError(f"Could not resolve to a Repository with the name '{owner}/{name}'.")
    return repo


def _url(repo: Repo, d: Discussion) -> str:
    return f"{HTML_ROOT}/{repo.full_name}/discussions/{d.number}"


def _get(sb: Sandbox, repo: Repo, number: int) -> Discussion:
    r = sb.store.row("SELECT * FROM discussions WHERE repo_id = ? AND number = ?", (repo.id, number))
    if r is None:
        raise ToolError(f"Could not resolve to a Discussion with the number of {number}.")
    return _discussion(sb, r)


def _comment(sb: Sandbox, raw: str | None) -> tuple[Repo, Discussion, DiscussionComment]:
    if raw is None or not raw.strip():
        raise ToolError(
            "commentNodeID cannot be blank" if raw is not None else "missing required parameter: commentNodeID"
        )
    cid = parse_node_id("DC", raw)
    r = None if cid is None else sb.store.row("SELECT * FROM discussion_comments WHERE id = ?", (cid,))
    if r is None:
        raise ToolError(f"Could not resolve to a node with the global id of '{raw}'")
    comment = DiscussionComment(**dict(r))
    drow = sb.store.row("SELECT * FROM discussions WHERE id = ?", (comment.discussion_id,))
    d = _discussion(sb, drow)
    repo = sb.store.repo_by_id(d.repo_id)
    if not visible(sb, repo):
        raise ToolError(f"Could not resolve to a node with the global id of '{raw}'")
    return repo, d, comment


def _comment_ref(repo: Repo, d: Discussion, c: DiscussionComment) -> dict[str, str]:
    return {"id": node_id("DC", c.id), "url": f"{_url(repo, d)}#discussioncomment-{c.id}"}


def _page(items: list[Any], args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    start = decode_cursor(opt_str(args, "after"))
    per_page = opt_int(args, "perPage") or 30
    page = items[start : start + per_page]
    end = start + len(page)
    info = {
        "hasNextPage": end < len(items),
        "hasPreviousPage": start > 0,
        "startCursor": encode_cursor(start) if page else "",
        "endCursor": encode_cursor(end) if page else "",
    }
    return page, info


# -- reading ----------------------------------------------------------------------------------------


@tool("list_discussion_categories")
def list_discussion_categories(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _scope(sb, args)
    cats = categories_of(sb, repo)
    first = cats[:25]  # upstream asks for the first 25
    return {
        "categories": [{"id": node_id("DIC", c.id), "name": c.name} for c in first],
        "pageInfo": {
            "hasNextPage": len(cats) > len(first),
            "hasPreviousPage": False,
            "startCursor": encode_cursor(0) if first else "",
            "endCursor": encode_cursor(len(first)) if first else "",
        },
        "totalCount": len(cats),
    }


@tool("list_discussions")
def list_discussions(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _scope(sb, args)
    items = discussions_of(sb, repo)
    category = opt_str(args, "category")
    if category:
        cid = parse_node_id("DIC", category)
        if cid is None or cid not in {c.id for c in categories_of(sb, repo)}:
            raise ToolError(f"Could not resolve to a node with the global id of '{category}'")
        items = [d for d in items if d.category.id == cid]
    order_by, direction = opt_str(args, "orderBy"), opt_str(args, "direction")
    keys: dict[str, Callable[[Discussion], Any]] = {
        "CREATED_AT": lambda d: (d.created_at, d.number),
        "UPDATED_AT": lambda d: (d.updated_at, d.number),
    }
    # Ordering needs both; without them GitHub lists the most recently updated first.
    field, descending = ("UPDATED_AT", True) if not (order_by and direction) else (order_by, direction == "DESC")
    items.sort(key=keys[field], reverse=descending)
    page, info = _page(items, args)
    return {
        "discussions": [
            {
                "number": d.number,
                "title": d.title,
                "html_url": _url(repo, d),
                "created_at": d.created_at,
                "updated_at": d.updated_at,
                "user": {"login": d.author},
                "discussion_category": {"name": d.category.name},
            }
            for d in page
        ],
        "pageInfo": info,
        "totalCount": len(items),
    }


@tool("get_discussion")
def get_discussion(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _scope(sb, args)
    d = _get(sb, repo, req_int(args, "discussionNumber"))
    out: dict[str, Any] = {
        "number": d.number,
        "title": d.title,
        "body": d.body,
        "url": _url(repo, d),
        "closed": d.closed,
        "isAnswered": d.answer_id is not None,
        "createdAt": d.created_at,
        "category": {"name": d.category.name},
    }
    if d.answer_chosen_at:
        out["answerChosenAt"] = d.answer_chosen_at
    return out


def _comment_json(d: Discussion, c: DiscussionComment) -> dict[str, Any]:
    out: dict[str, Any] = {"id": node_id("DC", c.id), "body": c.body}
    if d.answer_id == c.id:
        out["isAnswer"] = True
    return out


@tool("get_discussion_comments")
def get_discussion_comments(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _scope(sb, args)
    d = _get(sb, repo, req_int(args, "discussionNumber"))
    top = comments_of(sb, d)
    page, info = _page(top, args)
    comments = []
    for c in page:
        item = _comment_json(d, c)
        if args.get("includeReplies"):
            replies = comments_of(sb, d, c.id)
            if replies:
                item["replies"] = [_comment_json(d, r) for r in replies[:100]]
                item["replyTotalCount"] = len(replies)
        comments.append(item)
    return {"comments": comments, "pageInfo": info, "totalCount": len(top)}


# -- writing ----------------------------------------------------------------------------------------


def _add(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _scope(sb, {"owner": req_str(args, "owner"), "repo": req_str(args, "repo")})
    d = _get(sb, repo, req_int(args, "discussionNumber"))
    return _comment_ref(repo, d, add_comment(sb, d, sb.me, req_str(args, "body")))


def _reply(sb: Sandbox, args: dict[str, Any]) -> object:
    raw = opt_str(args, "commentNodeID")
    _, d_of_comment, parent = _comment(sb, raw)
    repo = _scope(sb, {"owner": req_str(args, "owner"), "repo": req_str(args, "repo")})
    number = req_int(args, "discussionNumber")
    d = _get(sb, repo, number)
    if d.id != d_of_comment.id:
        raise ToolError(f"commentNodeID {raw!r} does not belong to discussion #{number} in {repo.full_name}")
    if parent.reply_to is not None:
        raise ToolError(
            f"commentNodeID {raw!r} is a reply; GitHub Discussions only support one level of nesting, so reply to "
            f"its top-level comment {node_id('DC', parent.reply_to)!r}"
        )
    return _comment_ref(repo, d, add_comment(sb, d, sb.me, req_str(args, "body"), reply_to=parent.id))


def _update(sb: Sandbox, args: dict[str, Any]) -> object:
    repo, d, c = _comment(sb, opt_str(args, "commentNodeID"))
    body = req_str(args, "body")
    if c.author.lower() != sb.me.lower() and not is_admin_of(sb, repo):
        raise ToolError(f"{sb.me} does not have the correct permissions to execute `UpdateDiscussionComment`")
    sb.store.update("discussion_comments", c.id, body=body, updated_at=sb.store.now())
    return _comment_ref(repo, d, c)


def _delete(sb: Sandbox, args: dict[str, Any]) -> object:
    repo, d, c = _comment(sb, opt_str(args, "commentNodeID"))
    if c.author.lower() != sb.me.lower() and not is_admin_of(sb, repo):
        raise ToolError(f"{sb.me} does not have the correct permissions to execute `DeleteDiscussionComment`")
    gone = [c.id] + [r.id for r in comments_of(sb, d, c.id)]
    if d.answer_id in gone:
        sb.store.update("discussions", d.id, answer_id=None, answer_chosen_at="", answer_chosen_by="")
    for cid in gone:
        sb.store.execute("DELETE FROM discussion_comments WHERE id = ?", (cid,))
    return _comment_ref(repo, d, c)


def _mark(sb: Sandbox, args: dict[str, Any]) -> object:
    repo, d, c = _comment(sb, opt_str(args, "commentNodeID"))
    if d.author.lower() != sb.me.lower() and not is_admin_of(sb, repo):
        raise ToolError(f"{sb.me} does not have the correct permissions to execute `MarkDiscussionCommentAsAnswer`")
    mark_answer(sb, d, c, sb.me)
    return {"discussionID": node_id("D", d.id), "discussionURL": _url(repo, d)}


def _unmark(sb: Sandbox, args: dict[str, Any]) -> object:
    raw = opt_str(args, "commentNodeID")
    repo, d, c = _comment(sb, raw)
    if d.answer_id != c.id:
        raise ToolError(f"422 Unprocessable Entity: comment {raw!r} is not the answer of discussion #{d.number}")
    if d.author.lower() != sb.me.lower() and not is_admin_of(sb, repo):
        raise ToolError(f"{sb.me} does not have the correct permissions to execute `UnmarkDiscussionCommentAsAnswer`")
    sb.store.update("discussions", d.id, answer_id=None, answer_chosen_at="", answer_chosen_by="")
    return {"discussionID": node_id("D", d.id), "discussionURL": _url(repo, d)}


_WRITERS: dict[str, Callable[[Sandbox, dict[str, Any]], object]] = {
    "add": _add,
    "reply": _reply,
    "update": _update,
    "delete": _delete,
    "mark_answer": _mark,
    "unmark_answer": _unmark,
}


@tool("discussion_comment_write")
def discussion_comment_write(sb: Sandbox, args: dict[str, Any]) -> object:
    return _WRITERS[req_str(args, "method")](sb, args)
