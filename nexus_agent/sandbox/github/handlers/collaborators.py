"""Repository collaborators: list_repository_collaborators.

Who has access to a repository: its owner (a user) or its organisation's members (admins as ``admin``, the others
with the organisation's base permission, ``read``), plus the collaborators added to it directly (the
``collaborators`` table, with their permission). ``affiliation``: ``direct`` is the directly added ones (and a
user repository's owner), ``outside`` the direct ones who are not members of the owning organisation, ``all``
everyone.
"""

from __future__ import annotations

from typing import Any

from nexus_agent.sandbox.github.context import Sandbox
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import DEFAULT_PER_PAGE, opt_int, opt_str, repo_of
from nexus_agent.sandbox.github.store import Repo

PERMISSIONS = ("read", "triage", "write", "maintain", "admin")
ORG_BASE_PERMISSION = "read"


def add_collaborator(sb: Sandbox, repo: Repo, login: str, permission: str) -> None:
    sb.store.execute(
        "INSERT OR REPLACE INTO collaborators(repo_id, login, permission) VALUES (?, ?, ?)",
        (repo.id, sb.store.user(login).login, permission),
    )


def collaborators(sb: Sandbox, repo: Repo, affiliation: str = "all") -> list[tuple[str, str]]:
    """(login, role name) pairs, by login."""
    owner = sb.store.user(repo.owner)
    members: dict[str, str] = {}
    if owner.type == "Organization":
        rows = sb.store.rows(
            "SELECT u.login, m.role FROM org_members m JOIN users u ON u.id = m.user_id WHERE m.org_id = ?",
            (owner.id,),
        )
        members = {r["login"]: "admin" if r["role"] == "admin" else ORG_BASE_PERMISSION for r in rows}
    direct = {
        r["login"]: r["permission"]
        for r in sb.store.rows("SELECT login, permission FROM collaborators WHERE repo_id = ?", (repo.id,))
    }
    if owner.type == "User":
        direct[owner.login] = "admin"
    if affiliation == "direct":
        chosen = direct
    elif affiliation == "outside":
        chosen = {k: v for k, v in direct.items() if k not in members and k != owner.login}
    else:
        chosen = dict(members)
        for login, perm in direct.items():
            # The higher of the two permissions wins.
            if PERMISSIONS.index(perm) > PERMISSIONS.index(chosen.get(login, "read")) or login not in chosen:
                chosen[login] = perm
    return sorted(chosen.items(), key=lambda kv: kv[0].lower())


@tool("list_repository_collaborators")
def list_repository_collaborators(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    people = collaborators(sb, repo, opt_str(args, "affiliation") or "all")
    page, per_page = opt_int(args, "page") or 1, opt_int(args, "perPage") or DEFAULT_PER_PAGE
    last = max(1, -(-len(people) // per_page))
    chunk = people[(page - 1) * per_page : page * per_page]
    items = [{"login": login, "id": sb.store.user(login).id, "role_name": role} for login, role in chunk]
    # go-github's Response page numbers: 0 when there is no such page.
    return {
        "items": items,
        "nextPage": page + 1 if page < last else 0,
        "prevPage": page - 1 if page > 1 else 0,
        "firstPage": 1 if page > 1 else 0,
        "lastPage": last if page < last else 0,
    }
