"""Sub-issues: the parent/child hierarchy of issues (sub_issue_write, and what issue_read reports of it).

A child has at most one parent (``sub_issues.child_id`` is unique); a parent's children are ordered by
``position``. ``sub_issue_id`` is the issue's database id (``id`` in REST issues and in issue_write's answer),
not its number. As on GitHub, parent and child may be in different repositories of the same owner, a pull
request is never a sub-issue, and no issue can become its own ancestor.
"""

from __future__ import annotations

from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    get_issue,
    issue_by_id,
    issue_html_url,
    opt_int,
    repo_of,
    req_int,
    req_str,
    rest_issue,
)
from nexus_agent.sandbox.github.store import Issue, Repo

MAX_SUB_ISSUES = 100


def children(sb: Sandbox, parent: Issue) -> list[tuple[Repo, Issue]]:
    """The sub-issues of ``parent`` in their order."""
    rows = sb.store.rows("SELECT child_id FROM sub_issues WHERE parent_id = ? ORDER BY position", (parent.id,))
    return [found for r in rows if (found := issue_by_id(sb, r["child_id"])) is not None]


def parent_of(sb: Sandbox, child: Issue) -> tuple[Repo, Issue] | None:
    row = sb.store.row("SELECT parent_id FROM sub_issues WHERE child_id = ?", (child.id,))
    return None if row is None else issue_by_id(sb, row["parent_id"])


def summary(sb: Sandbox, parent: Issue) -> dict[str, int] | None:
    """``sub_issues_summary``: how many children, how many closed, and the percentage; None without children."""
    kids = children(sb, parent)
    if not kids:
        return None
    done = sum(1 for _, c in kids if c.state == "closed")
    return {"total": len(kids), "completed": done, "percent_completed": done * 100 // len(kids)}


def issue_ref(repo: Repo, issue: Issue) -> dict[str, Any]:
    """MinimalIssueRef: the compact parent reference (GraphQL states are upper case)."""
    return {
        "number": issue.number,
        "title": issue.title,
        "state": issue.state.upper(),
        "url": issue_html_url(repo, issue),
        "repository": repo.full_name,
    }


def link(sb: Sandbox, parent: Issue, child: Issue, *, replace_parent: bool = False) -> None:
    """Make ``child`` the last sub-issue of ``parent`` (shared by the tool and worlds); ToolError if not allowed."""
    pr = get_repo_of(sb, parent)
    cr = get_repo_of(sb, child)
    where = f"{cr.full_name}#{child.number}"
    if child.pull is not None:
        raise ToolError(f"422 Validation Failed: {where} is a pull request and cannot be a sub-issue")
    if child.id == parent.id:
        raise ToolError("422 Validation Failed: an issue cannot be a sub-issue of itself")
    if pr.owner.lower() != cr.owner.lower():
        raise ToolError(
            f"422 Validation Failed: the sub-issue must belong to the same repository owner as the parent ({pr.owner})"
        )
    ancestor = parent_of(sb, parent)
    while ancestor is not None:
        if ancestor[1].id == child.id:
            raise ToolError(f"422 Validation Failed: {where} is an ancestor of the parent issue")
        ancestor = parent_of(sb, ancestor[1])
    current = parent_of(sb, child)
    if current is not None:
        if current[1].id == parent.id:
            raise ToolError(f"422 Validation Failed: {where} is already a sub-issue of this issue")
        if not replace_parent:
            raise ToolError(
                f"422 Validation Failed: {where} already has a parent issue "
                f"({current[0].full_name}#{current[1].number}); pass replace_parent: true to move it"
            )
        sb.store.execute("DELETE FROM sub_issues WHERE child_id = ?", (child.id,))
    if len(children(sb, parent)) >= MAX_SUB_ISSUES:
        raise ToolError(f"422 Validation Failed: an issue can have at most {MAX_SUB_ISSUES} sub-issues")
    row = sb.store.row("SELECT COALESCE(MAX(position), 0) + 1 AS n FROM sub_issues WHERE parent_id = ?", (parent.id,))
    sb.store.insert("sub_issues", parent_id=parent.id, child_id=child.id, position=int(row["n"]) if row else 1)


def get_repo_of(sb: Sandbox, issue: Issue) -> Repo:
    found = issue_by_id(sb, issue.id)
    assert found is not None  # the issue was just read from the store
    return found[0]


def _parent_json(sb: Sandbox, repo: Repo, parent: Issue) -> dict[str, Any]:
    issue = sb.store.issue(repo.id, parent.number)
    return rest_issue(sb, repo, issue) | {"sub_issues_summary": summary(sb, issue) or _EMPTY_SUMMARY}


_EMPTY_SUMMARY = {"total": 0, "completed": 0, "percent_completed": 0}


def _child(sb: Sandbox, sub_issue_id: int) -> tuple[Repo, Issue]:
    found = issue_by_id(sb, sub_issue_id)
    if found is None:
        raise ToolError(
            f"404 Not Found: no issue has the id {sub_issue_id} (sub_issue_id is the issue's id, not its number)"
        )
    return found


def _add(sb: Sandbox, repo: Repo, parent: Issue, args: dict[str, Any]) -> object:
    _, child = _child(sb, req_int(args, "sub_issue_id"))
    try:
        link(sb, parent, child, replace_parent=bool(args.get("replace_parent", False)))
    except ToolError as e:
        raise ToolError(f"failed to add sub-issue: {e}") from e
    return _parent_json(sb, repo, parent)


def _remove(sb: Sandbox, repo: Repo, parent: Issue, args: dict[str, Any]) -> object:
    child_repo, child = _child(sb, req_int(args, "sub_issue_id"))
    current = parent_of(sb, child)
    if current is None or current[1].id != parent.id:
        raise ToolError(
            f"failed to remove sub-issue: 404 Not Found: {child_repo.full_name}#{child.number} is not a sub-issue "
            f"of {repo.full_name}#{parent.number}"
        )
    sb.store.execute("DELETE FROM sub_issues WHERE child_id = ?", (child.id,))
    return _parent_json(sb, repo, parent)


def _reprioritize(sb: Sandbox, repo: Repo, parent: Issue, args: dict[str, Any]) -> object:
    after, before = opt_int(args, "after_id"), opt_int(args, "before_id")
    if not after and not before:
        raise ToolError("either after_id or before_id must be specified")
    if after and before:
        raise ToolError("only one of after_id or before_id should be specified, not both")
    order = [c.id for _, c in children(sb, parent)]
    moved = req_int(args, "sub_issue_id")
    anchor = int(after or before or 0)
    for which, value in (("sub_issue_id", moved), ("after_id" if after else "before_id", anchor)):
        if value not in order:
            raise ToolError(
                f"failed to reprioritize sub-issue: 422 Validation Failed: '{which}' {value} is not a sub-issue "
                f"of {repo.full_name}#{parent.number}"
            )
    if moved == anchor:
        raise ToolError(
            "failed to reprioritize sub-issue: 422 Validation Failed: an issue cannot be placed next to itself"
        )
    order.remove(moved)
    at = order.index(anchor) + (1 if after else 0)
    order.insert(at, moved)
    for position, child_id in enumerate(order, start=1):
        sb.store.execute("UPDATE sub_issues SET position = ? WHERE child_id = ?", (position, child_id))
    return _parent_json(sb, repo, parent)


_METHODS = {"add": _add, "remove": _remove, "reprioritize": _reprioritize}


@tool("sub_issue_write")
def sub_issue_write(sb: Sandbox, args: dict[str, Any]) -> object:
    method = req_str(args, "method").lower()
    if method not in _METHODS:
        raise ToolError(f"unknown method: {method} (one of add, remove, reprioritize)")
    repo = repo_of(sb, args)
    parent = get_issue(sb, repo, req_int(args, "issue_number"))
    if parent.pull is not None:
        raise ToolError(f"422 Validation Failed: {repo.full_name}#{parent.number} is a pull request, not an issue")
    return _METHODS[method](sb, repo, parent, args)
