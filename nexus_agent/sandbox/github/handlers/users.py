"""Users, organisations and teams: get_me, search_users, search_orgs, get_teams, get_team_members."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    minimal_user,
    opt_str,
    paginate,
    parse_query,
    req_str,
    term_score,
    user_details,
)
from nexus_agent.sandbox.github.store import NotFound, User


@tool("get_me")
def get_me(sb: Sandbox, args: dict[str, Any]) -> object:
    user = sb.store.user(sb.me)
    return minimal_user(sb, user.login) | {"details": user_details(sb, user)}


def _search_accounts(sb: Sandbox, args: dict[str, Any], kind: str) -> object:
    q = parse_query(req_str(args, "query"))
    hits: list[tuple[int, User]] = []
    for user in sb.store.users(kind):
        text = " ".join((user.login, user.name, user.bio, user.company, user.location, user.email))
        if any(loc.lower() not in user.location.lower() for loc in q.values("location")):
            continue
        score = term_score(q.terms, text, require_all=True) if q.terms else 1
        if score:
            hits.append((score, user))
    sort = opt_str(args, "sort")
    if sort == "joined":
        hits.sort(key=lambda h: h[1].created_at, reverse=opt_str(args, "order") != "asc")
    elif sort == "repositories":
        counts = Counter(r.owner.lower() for r in sb.store.repos())
        hits.sort(key=lambda h: counts[h[1].login.lower()], reverse=opt_str(args, "order") != "asc")
    else:
        hits.sort(key=lambda h: (-h[0], h[1].login.lower()))
    items = [minimal_user(sb, u.login) for _, u in hits]
    return {"total_count": len(items), "incomplete_results": False, "items": paginate(items, args)}


@tool("search_users")
def search_users(sb: Sandbox, args: dict[str, Any]) -> object:
    return _search_accounts(sb, args, "User")


@tool("search_orgs")
def search_orgs(sb: Sandbox, args: dict[str, Any]) -> object:
    return _search_accounts(sb, args, "Organization")


@tool("get_teams")
def get_teams(sb: Sandbox, args: dict[str, Any]) -> object:
    login = opt_str(args, "user") or sb.me
    try:
        teams = sb.store.teams_of(login)
    except NotFound as e:
        raise ToolError(f"failed to get teams: 404 Not Found: user {login} does not exist") from e
    by_org: dict[str, list[dict[str, str]]] = {}
    for t in teams:
        by_org.setdefault(t.org, []).append({"name": t.name, "slug": t.slug, "description": t.description})
    return [{"org": org, "teams": ts} for org, ts in by_org.items()]


@tool("get_team_members")
def get_team_members(sb: Sandbox, args: dict[str, Any]) -> object:
    org, slug = req_str(args, "org"), req_str(args, "team_slug")
    try:
        return sb.store.team_members(org, slug)
    except NotFound as e:
        raise ToolError(f"failed to get team members: 404 Not Found: team {org}/{slug} does not exist") from e
