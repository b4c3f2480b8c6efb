"""Stars: star_repository, unstar_repository, list_starred_repositories.

``repos.stars`` is the stargazer count GitHub reports (the acme seed and worlds set a baseline of stargazers the
sandbox does not name); the ``stars`` table holds the named stargazers, and starring or unstarring moves the count
with it.
"""

from __future__ import annotations

from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import minimal_repo, opt_str, paginate, repo_of
from nexus_agent.sandbox.github.handlers.repos import visible
from nexus_agent.sandbox.github.store import Repo


def star(sb: Sandbox, login: str, repo: Repo) -> bool:
    """``login`` stars ``repo``; False if it already had. Shared by worlds."""
    if sb.store.row("SELECT 1 FROM stars WHERE login = ? AND repo_id = ?", (login, repo.id)) is not None:
        return False
    sb.store.insert("stars", login=login, repo_id=repo.id, starred_at=sb.store.now())
    sb.store.execute("UPDATE repos SET stars = stars + 1 WHERE id = ?", (repo.id,))
    return True


def _visible_repo(sb: Sandbox, args: dict[str, Any], action: str) -> Repo:
    repo = repo_of(sb, args)
    if not visible(sb, repo):
        raise ToolError(f"failed to {action} repository {repo.full_name}: 404 Not Found")
    return repo


@tool("star_repository")
def star_repository(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _visible_repo(sb, args, "star")
    star(sb, sb.me, repo)  # starring twice is not an error on GitHub
    return f"Successfully starred repository {repo.full_name}"


@tool("unstar_repository")
def unstar_repository(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _visible_repo(sb, args, "unstar")
    if sb.store.row("SELECT 1 FROM stars WHERE login = ? AND repo_id = ?", (sb.me, repo.id)) is not None:
        sb.store.execute("DELETE FROM stars WHERE login = ? AND repo_id = ?", (sb.me, repo.id))
        sb.store.execute("UPDATE repos SET stars = MAX(stars - 1, 0) WHERE id = ?", (repo.id,))
    return f"Successfully unstarred repository {repo.full_name}"


@tool("list_starred_repositories")
def list_starred_repositories(sb: Sandbox, args: dict[str, Any]) -> object:
    login = opt_str(args, "username") or sb.me
    user = sb.store.find_user(login)
    if user is None:
        raise ToolError(f"failed to list starred repositories for user '{login}': 404 Not Found")
    rows = sb.store.rows("SELECT repo_id, starred_at FROM stars WHERE login = ? ORDER BY starred_at", (login,))
    starred = []
    for r in rows:
        repo = sb.store.repo_by_id(r["repo_id"])
        if visible(sb, repo):
            starred.append((r["starred_at"], repo))
    sort = opt_str(args, "sort") or "created"
    key = (lambda s: s[0]) if sort == "created" else (lambda s: s[1].updated_at)
    starred.sort(key=key, reverse=(opt_str(args, "direction") or "desc") == "desc")
    out = []
    for _, repo in paginate(starred, args):
        item = minimal_repo(sb, repo)
        # The starred listing's trimmed repository carries neither topics nor created_at.
        item.pop("topics", None)
        item.pop("created_at", None)
        out.append(item)
    return out
