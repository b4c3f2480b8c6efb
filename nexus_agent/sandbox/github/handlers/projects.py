"""Projects (v2): projects of a user or organisation, their fields, items, views and status updates;
projects_get and projects_list (projects_write is in ``projects_write.py``).

A project has built-in fields (Title, Assignees, Status, Labels, Linked pull requests, Milestone, Repository,
Reviewers) and custom ones (text, number, date, single_select, iteration). An item is an issue, a pull request or
a draft issue; custom field values are stored per item as JSON (a single-select value is the option's id, an
iteration value the iteration's id). Built-in values are read from the item's issue. Numbers are per owner;
node ids: ``PVT_`` project, ``PVTI_`` item, ``PVTF_``/``PVTSSF_``/``PVTIF_`` fields, ``PVTV_`` view, ``PVTSU_``
status update.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    decode_cursor,
    drop_empty,
    encode_cursor,
    issue_by_id,
    issue_html_url,
    minimal_user,
    node_id,
    opt_int,
    opt_list,
    opt_str,
    parse_node_id,
    req_int,
    req_str,
)
from nexus_agent.sandbox.github.handlers.repos import visible
from nexus_agent.sandbox.github.store import Issue, NotFound, Repo, User

MAX_PER_PAGE = 50
CUSTOM_TYPES = ("text", "number", "date", "single_select", "iteration")
# Built-in fields GitHub gives every new project, in its order: (name, REST data_type).
BUILTIN_FIELDS = (
    ("Title", "title"),
    ("Assignees", "assignees"),
    ("Status", "single_select"),
    ("Labels", "labels"),
    ("Linked pull requests", "linked_pull_requests"),
    ("Milestone", "milestone"),
    ("Repository", "repository"),
    ("Reviewers", "reviewers"),
)
STATUS_OPTIONS = (("Todo", "GREEN"), ("In Progress", "YELLOW"), ("Done", "PURPLE"))
READ_ONLY_TYPES = frozenset(t for _, t in BUILTIN_FIELDS if t != "single_select")


@dataclass(frozen=True)
class Project:
    id: int
    owner: User
    number: int
    title: str
    short_description: str
    readme: str
    public: bool
    closed: bool
    closed_at: str
    creator: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class Field:
    """``options``: single-select ``{"id", "name", "color", "description"}``; ``iterations``: ``{"id", "title",
    "start_date", "duration"}``."""

    id: int
    project_id: int
    name: str
    data_type: str
    options: tuple[dict[str, Any], ...]
    iterations: tuple[dict[str, Any], ...]
    created_at: str
    updated_at: str

    @property
    def node_id(self) -> str:
        prefix = {"single_select": "PVTSSF", "iteration": "PVTIF"}.get(self.data_type, "PVTF")
        return node_id(prefix, self.id)


@dataclass(frozen=True)
class Item:
    id: int
    project_id: int
    content_type: str  # Issue, PullRequest, DraftIssue
    issue_id: int | None
    draft_title: str
    draft_body: str
    creator: str
    archived_at: str
    created_at: str
    updated_at: str


# -- reading the tables -----------------------------------------------------------------------------


def _project(sb: Sandbox, r: Any) -> Project:
    owner = sb.store.row("SELECT login FROM users WHERE id = ?", (r["owner_id"],))
    assert owner is not None
    return Project(
        r["id"],
        sb.store.user(owner["login"]),
        r["number"],
        r["title"],
        r["short_description"],
        r["readme"],
        bool(r["public"]),
        bool(r["closed"]),
        r["closed_at"],
        r["creator"],
        r["created_at"],
        r["updated_at"],
    )


def _field(r: Any) -> Field:
    config = json.loads(r["configuration"])
    return Field(
        r["id"],
        r["project_id"],
        r["name"],
        r["data_type"],
        tuple(json.loads(r["options"])),
        tuple(config.get("iterations", [])),
        r["created_at"],
        r["updated_at"],
    )


def can_see(sb: Sandbox, p: Project) -> bool:
    """Public projects, the user's own, and those of the user's organisations."""
    if p.public or p.owner.login.lower() == sb.me.lower():
        return True
    return any(o.id == p.owner.id for o in sb.store.orgs_of(sb.me))


def projects_of(sb: Sandbox, owner: User) -> list[Project]:
    rows = sb.store.rows("SELECT * FROM projects WHERE owner_id = ? ORDER BY number", (owner.id,))
    return [p for p in (_project(sb, r) for r in rows) if can_see(sb, p)]


def fields_of(sb: Sandbox, p: Project) -> list[Field]:
    return [_field(r) for r in sb.store.rows("SELECT * FROM project_fields WHERE project_id = ? ORDER BY id", (p.id,))]


def items_of(sb: Sandbox, p: Project) -> list[Item]:
    rows = sb.store.rows("SELECT * FROM project_items WHERE project_id = ? ORDER BY id", (p.id,))
    return [Item(**dict(r)) for r in rows]


def item_values(sb: Sandbox, item: Item) -> dict[int, Any]:
    """field id -> stored value (JSON-decoded) of the item's custom and Status fields."""
    rows = sb.store.rows("SELECT field_id, value FROM project_item_values WHERE item_id = ?", (item.id,))
    return {r["field_id"]: json.loads(r["value"]) for r in rows}


def resolve_owner(sb: Sandbox, args: dict[str, Any], what: str) -> User:
    """The project owner named by ``owner`` (and ``owner_type`` if given), or a 404 like the real server's."""
    login = req_str(args, "owner")
    user = sb.store.find_user(login)
    kind = opt_str(args, "owner_type")
    if user is None or (kind and (kind == "org") != (user.type == "Organization")):
        raise ToolError(f"failed to {what}: 404 Not Found: no {kind or 'user or organization'} {login!r}")
    return user


def get_project(sb: Sandbox, args: dict[str, Any], what: str) -> Project:
    owner = resolve_owner(sb, args, what)
    number = req_int(args, "project_number")
    row = sb.store.row("SELECT * FROM projects WHERE owner_id = ? AND number = ?", (owner.id, number))
    project = None if row is None else _project(sb, row)
    if project is None or not can_see(sb, project):
        raise ToolError(f"failed to {what}: 404 Not Found: {owner.login} has no project number {number}")
    return project


def find_field(sb: Sandbox, p: Project, *, field_id: int | None = None, name: str | None = None) -> Field | None:
    for f in fields_of(sb, p):
        if (field_id is not None and f.id == field_id) or (name is not None and f.name.lower() == name.lower()):
            return f
    return None


def find_item(sb: Sandbox, p: Project, item_id: int) -> Item | None:
    row = sb.store.row("SELECT * FROM project_items WHERE id = ? AND project_id = ?", (item_id, p.id))
    return None if row is None else Item(**dict(row))


# -- writing (shared by projects_write and worlds) --------------------------------------------------


def create_project(sb: Sandbox, owner: User, title: str, creator: str, **extra: object) -> Project:
    """A new project with GitHub's built-in fields and one table view ("View 1")."""
    row = sb.store.row("SELECT COALESCE(MAX(number), 0) + 1 AS n FROM projects WHERE owner_id = ?", (owner.id,))
    now = sb.store.now()
    pid = sb.store.insert(
        "projects",
        owner_id=owner.id,
        number=int(row["n"]) if row else 1,
        title=title,
        creator=creator,
        created_at=now,
        updated_at=now,
        **extra,
    )
    project = _project(sb, sb.store.row("SELECT * FROM projects WHERE id = ?", (pid,)))
    for name, data_type in BUILTIN_FIELDS:
        options = None
        if name == "Status":
            options = [{"name": n, "color": c, "description": ""} for n, c in STATUS_OPTIONS]
        add_field(sb, project, name, data_type, options=options)
    add_view(sb, project, "View 1", "table")
    return project


def option_id(field_id: int, index: int) -> str:
    """A single-select option's id: 8 hex digits, as GitHub's look (deterministic here)."""
    return f"{field_id * 97 + index:08x}"


def add_field(
    sb: Sandbox,
    p: Project,
    name: str,
    data_type: str,
    *,
    options: list[dict[str, str]] | None = None,
    iterations: list[dict[str, Any]] | None = None,
) -> Field:
    if find_field(sb, p, name=name) is not None:
        raise ToolError(f"422 Unprocessable Entity: the project already has a field named {name!r}")
    now = sb.store.now()
    fid = sb.store.insert(
        "project_fields", project_id=p.id, name=name, data_type=data_type, created_at=now, updated_at=now
    )
    opts = [
        {
            "id": option_id(fid, i),
            "name": o["name"],
            "color": o.get("color", "GRAY"),
            "description": o.get("description", ""),
        }
        for i, o in enumerate(options or [])
    ]
    iters = [{"id": option_id(fid, 1000 + i), **it} for i, it in enumerate(iterations or [])]
    sb.store.update("project_fields", fid, options=json.dumps(opts), configuration=json.dumps({"iterations": iters}))
    found = find_field(sb, p, field_id=fid)
    assert found is not None
    return found


def add_item(
    sb: Sandbox, p: Project, issue: Issue | None, creator: str, draft_title: str = "", draft_body: str = ""
) -> Item:
    """Add an issue or pull request (or a draft issue, when ``issue`` is None); adding one twice returns the
    existing item, as GitHub's addProjectV2ItemById does."""
    if issue is not None:
        row = sb.store.row("SELECT * FROM project_items WHERE project_id = ? AND issue_id = ?", (p.id, issue.id))
        if row is not None:
            return Item(**dict(row))
    now = sb.store.now()
    kind = "DraftIssue" if issue is None else ("PullRequest" if issue.pull is not None else "Issue")
    iid = sb.store.insert(
        "project_items",
        project_id=p.id,
        content_type=kind,
        issue_id=None if issue is None else issue.id,
        draft_title=draft_title,
        draft_body=draft_body,
        creator=creator,
        created_at=now,
        updated_at=now,
    )
    sb.store.update("projects", p.id, updated_at=now)
    found = find_item(sb, p, iid)
    assert found is not None
    return found


def add_view(
    sb: Sandbox, p: Project, name: str, layout: str, filter_: str = "", visible: list[int] | None = None
) -> int:
    row = sb.store.row("SELECT COALESCE(MAX(number), 0) + 1 AS n FROM project_views WHERE project_id = ?", (p.id,))
    return sb.store.insert(
        "project_views",
        project_id=p.id,
        number=int(row["n"]) if row else 1,
        name=name,
        layout=layout,
        filter=filter_,
        visible_fields=json.dumps(visible or []),
    )


def set_value(sb: Sandbox, item: Item, field: Field, value: Any, *, by_name: bool) -> None:
    """Set (or with None clear) ``item``'s value of ``field``, checked against the field's type.

    ``by_name``: single-select values may be given as the option's name (else its id), iterations by title."""
    if field.data_type in READ_ONLY_TYPES:
        raise ToolError(
            f"422 Unprocessable Entity: the field {field.name!r} ({field.data_type}) follows the item's content and "
            "cannot be set on the project item"
        )
    if value is None:
        sb.store.execute("DELETE FROM project_item_values WHERE item_id = ? AND field_id = ?", (item.id, field.id))
        sb.store.update("project_items", item.id, updated_at=sb.store.now())
        return
    stored = _coerce(field, value, by_name=by_name)
    sb.store.execute(
        "INSERT OR REPLACE INTO project_item_values(item_id, field_id, value) VALUES (?, ?, ?)",
        (item.id, field.id, json.dumps(stored)),
    )
    sb.store.update("project_items", item.id, updated_at=sb.store.now())


def _coerce(field: Field, value: Any, *, by_name: bool) -> Any:
    bad = f"422 Unprocessable Entity: {value!r} is not a valid value for the {field.data_type} field {field.name!r}"
    if field.data_type == "number":
        if isinstance(value, bool):
            raise ToolError(bad)
        try:
            number = float(value)
        except (TypeError, ValueError) as e:
            raise ToolError(bad) from e
        return int(number) if number.is_integer() else number
    if field.data_type == "date":
        text = str(value)
        if len(text) != 10 or text[4] != "-" or text[7] != "-" or not text.replace("-", "").isdigit():
            raise ToolError(bad + " (a date is YYYY-MM-DD)")
        return text
    if field.data_type == "single_select":
        for o in field.options:
            if str(value) == o["id"] or (by_name and str(value).lower() == o["name"].lower()):
                return o["id"]
        names = ", ".join(f"{o['name']} ({o['id']})" for o in field.options)
        raise ToolError(f"{bad}; options: {names}")
    if field.data_type == "iteration":
        for it in field.iterations:
            if str(value) == it["id"] or str(value).lower() == str(it["title"]).lower():
                return it["id"]
        names = ", ".join(f"{it['title']} ({it['id']})" for it in field.iterations)
        raise ToolError(f"{bad}; iterations: {names}")
    return str(value)


# -- shapes -----------------------------------------------------------------------------------------


def project_url(p: Project) -> str:
    kind = "orgs" if p.owner.type == "Organization" else "users"
    return f"{HTML_ROOT}/{kind}/{p.owner.login}/projects/{p.number}"


def project_json(sb: Sandbox, p: Project) -> dict[str, Any]:
    """MinimalProject."""
    return drop_empty(
        {
            "id": p.id,
            "node_id": node_id("PVT", p.id),
            "owner": minimal_user(sb, p.owner.login),
            "creator": minimal_user(sb, p.creator),
            "title": p.title,
            "description": p.readme,
            "closed_at": p.closed_at,
            "created_at": p.created_at,
            "updated_at": p.updated_at,
            "number": p.number,
            "short_description": p.short_description,
            "owner_type": "org" if p.owner.type == "Organization" else "user",
        }
    ) | {"public": p.public}


def field_json(p: Project, f: Field) -> dict[str, Any]:
    """The REST project field."""
    kind = "orgs" if p.owner.type == "Organization" else "users"
    out: dict[str, Any] = {
        "id": f.id,
        "node_id": f.node_id,
        "name": f.name,
        "data_type": f.data_type,
        "project_url": f"{API_ROOT}/{kind}/{p.owner.login}/projectsV2/{p.number}",
        "created_at": f.created_at,
        "updated_at": f.updated_at,
    }
    if f.data_type == "single_select":
        out["options"] = [dict(o) for o in f.options]
    if f.data_type == "iteration":
        out["configuration"] = {"iterations": [dict(it) for it in f.iterations]}
    return out


def _content(sb: Sandbox, item: Item) -> tuple[Repo | None, Issue | None, dict[str, Any] | None]:
    if item.issue_id is None:
        content = drop_empty(
            {
                "id": item.id,
                "node_id": node_id("DI", item.id),
                "title": item.draft_title,
                "author": item.creator,
                "created_at": item.created_at,
                "updated_at": item.updated_at,
            }
        )
        return None, None, content
    found = issue_by_id(sb, item.issue_id)
    if found is None:
        return None, None, None
    repo, issue = found
    pull = issue.pull
    content = drop_empty(
        {
            "id": issue.id,
            "node_id": node_id("PR" if pull else "I", issue.id),
            "number": issue.number,
            "title": issue.title,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "html_url": issue_html_url(repo, issue),
            "repository": repo.full_name,
            "author": issue.author,
            "assignees": list(issue.assignees),
            "labels": [lb.name for lb in issue.labels],
            "comments": issue.comments,
            "draft": bool(pull and pull.draft),
            "merged": bool(pull and pull.merged),
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "merged_at": pull.merged_at if pull else "",
        }
    )
    return repo, issue, content


def field_value(sb: Sandbox, item: Item, f: Field, values: dict[int, Any]) -> Any:
    """The value of ``f`` for ``item`` in MinimalProjectItemFieldValue form (None when unset)."""
    repo, issue, content = _content(sb, item)
    if f.data_type == "title":
        return (content or {}).get("title")
    if f.data_type == "assignees":
        return list(issue.assignees) if issue else None
    if f.data_type == "labels":
        return [lb.name for lb in issue.labels] if issue else None
    if f.data_type == "repository":
        return repo.full_name if repo else None
    if f.data_type == "reviewers":
        return list(issue.pull.reviewers) if issue and issue.pull else None
    if f.data_type in ("milestone", "linked_pull_requests"):
        return None
    stored = values.get(f.id)
    if stored is None:
        return None
    if f.data_type == "single_select":
        o = next((o for o in f.options if o["id"] == stored), None)
        return None if o is None else {"id": o["id"], "name": o["name"], "color": o["color"]}
    if f.data_type == "iteration":
        it = next((it for it in f.iterations if it["id"] == stored), None)
        return None if it is None else {k: it[k] for k in ("id", "title", "start_date", "duration")}
    return stored


def item_json(sb: Sandbox, p: Project, item: Item, fields: list[Field] | None) -> dict[str, Any]:
    """MinimalProjectItem; ``fields``: the fields whose values to include (None: only Title, as upstream)."""
    _, _, content = _content(sb, item)
    chosen = fields if fields is not None else [f for f in fields_of(sb, p) if f.data_type == "title"]
    values = item_values(sb, item)
    out = drop_empty(
        {
            "id": item.id,
            "node_id": node_id("PVTI", item.id),
            "content_type": item.content_type,
            "content": content,
            "fields": [
                drop_empty(
                    {"id": f.id, "name": f.name, "data_type": f.data_type, "value": field_value(sb, item, f, values)}
                )
                for f in chosen
            ],
            "archived_at": item.archived_at,
            "created_at": item.created_at,
            "updated_at": item.updated_at,
            "creator": item.creator,
        }
    )
    return out


def view_json(r: Any) -> dict[str, Any]:
    """MinimalProjectView."""
    return {
        "id": node_id("PVTV", r["id"]),
        "number": r["number"],
        "name": r["name"],
        "layout": r["layout"],
        "filter": r["filter"],
        "visible_fields": json.loads(r["visible_fields"]),
    }


def status_update_json(sb: Sandbox, r: Any) -> dict[str, Any]:
    """MinimalProjectStatusUpdate."""
    return drop_empty(
        {
            "id": node_id("PVTSU", r["id"]),
            "body": r["body"],
            "status": r["status"],
            "created_at": r["created_at"],
            "start_date": r["start_date"],
            "target_date": r["target_date"],
            "creator": {"login": r["creator"]},
        }
    )


# -- item filtering ---------------------------------------------------------------------------------


def _matches(sb: Sandbox, p: Project, item: Item, query: str) -> bool:
    """GitHub's project filter syntax, the common part: ``is:issue|pr|draft|open|closed|merged``, ``label:``,
    ``assignee:`` (``@me``), ``repo:``, ``no:<field>``, ``<field>:<value>`` for any field, ``-`` negation, and
    free words matched in the title."""
    try:
        tokens = shlex.split(query)
    except ValueError:
        tokens = query.split()
    fields = {f.name.lower(): f for f in fields_of(sb, p)}
    values = item_values(sb, item)
    _, issue, content = _content(sb, item)
    for token in tokens:
        negate = token.startswith("-")
        key, sep, wanted = token.lstrip("-").partition(":")
        if not sep:
            ok = key.lower() in str((content or {}).get("title", "")).lower()
        else:
            ok = _qualifier(sb, item, issue, fields, values, key.lower(), wanted)
        if ok == negate:
            return False
    return True


def _qualifier(
    sb: Sandbox,
    item: Item,
    issue: Issue | None,
    fields: dict[str, Field],
    values: dict[int, Any],
    key: str,
    wanted: str,
) -> bool:
    wanted_l = wanted.lower()
    if key == "is":
        checks: dict[str, Callable[[], bool]] = {
            "issue": lambda: item.content_type == "Issue",
            "pr": lambda: item.content_type == "PullRequest",
            "draft": lambda: item.content_type == "DraftIssue",
            "open": lambda: issue is not None and issue.state == "open",
            "closed": lambda: issue is not None and issue.state == "closed",
            "merged": lambda: bool(issue and issue.pull and issue.pull.merged),
            "archived": lambda: bool(item.archived_at),
        }
        return checks.get(wanted_l, lambda: False)()
    if key == "assignee":
        login = sb.me if wanted_l == "@me" else wanted
        return issue is not None and login.lower() in {a.lower() for a in issue.assignees}
    if key == "label":
        return issue is not None and wanted_l in {lb.name.lower() for lb in issue.labels}
    if key == "repo":
        found = issue_by_id(sb, item.issue_id) if item.issue_id else None
        return found is not None and found[0].full_name.lower() == wanted_l
    if key == "no":
        f = fields.get(wanted_l)
        return f is not None and field_value(sb, item, f, values) in (None, [], "")
    f = fields.get(key)
    if f is None:
        return False
    value = field_value(sb, item, f, values)
    if isinstance(value, dict):
        value = value.get("name") or value.get("title")
    if isinstance(value, list):
        return wanted_l in {str(v).lower() for v in value}
    return value is not None and str(value).lower() == wanted_l


# -- pagination -------------------------------------------------------------------------------------


def page(items: list[Any], args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """``per_page`` (max 50) with ``after``/``before`` cursors; GitHub Projects' pageInfo shape."""
    per_page = min(opt_int(args, "per_page") or MAX_PER_PAGE, MAX_PER_PAGE)
    if opt_str(args, "after") and opt_str(args, "before"):
        raise ToolError("provide either 'after' or 'before', not both")
    if opt_str(args, "before"):
        end = decode_cursor(opt_str(args, "before"))
        start = max(0, end - per_page)
    else:
        start = decode_cursor(opt_str(args, "after"))
    chunk = items[start : start + per_page]
    end = start + len(chunk)
    info: dict[str, Any] = {"hasNextPage": end < len(items), "hasPreviousPage": start > 0}
    if end < len(items):
        info["nextCursor"] = encode_cursor(end)
    if start > 0:
        info["prevCursor"] = encode_cursor(start)
    return chunk, info


def chosen_fields(sb: Sandbox, p: Project, args: dict[str, Any]) -> list[Field] | None:
    """The fields ``fields`` (ids) or ``field_names`` ask for; None when neither is given."""
    ids, names = opt_list(args, "fields"), opt_list(args, "field_names")
    if ids and names:
        raise ToolError("provide either 'fields' or 'field_names', not both")
    if ids:
        out = []
        for raw in ids:
            f = find_field(sb, p, field_id=int(raw)) if str(raw).isdigit() else None
            if f is None:
                raise ToolError(f"invalid argument 'fields': {raw!r} is not a field id of project {p.number}")
            out.append(f)
        return out
    if names:
        out = []
        for name in names:
            f = find_field(sb, p, name=str(name))
            if f is None:
                known = ", ".join(x.name for x in fields_of(sb, p))
                raise ToolError(f"invalid argument 'field_names': no field named {name!r} (fields: {known})")
            out.append(f)
        return out
    return None


# -- projects_list ----------------------------------------------------------------------------------


def _list_projects(sb: Sandbox, args: dict[str, Any]) -> object:
    owner = resolve_owner(sb, args, f"list projects for owner '{req_str(args, 'owner')}'")
    projects = projects_of(sb, owner)
    for token in (opt_str(args, "query") or "").split():
        if token == "is:open":
            projects = [p for p in projects if not p.closed]
        elif token == "is:closed":
            projects = [p for p in projects if p.closed]
        else:
            projects = [p for p in projects if token.lower() in p.title.lower()]
    chunk, info = page(projects, args)
    return {"projects": [project_json(sb, p) for p in chunk], "pageInfo": info}


def _list_fields(sb: Sandbox, args: dict[str, Any]) -> object:
    p = get_project(sb, args, "list project fields")
    chunk, info = page(fields_of(sb, p), args)
    return {"fields": [field_json(p, f) for f in chunk], "pageInfo": info}


def _list_items(sb: Sandbox, args: dict[str, Any]) -> object:
    p = get_project(sb, args, "list project items")
    fields = chosen_fields(sb, p, args)
    items = items_of(sb, p)
    query = opt_str(args, "query")
    if query:
        items = [i for i in items if _matches(sb, p, i, query)]
    chunk, info = page(items, args)
    return {"items": [item_json(sb, p, i, fields) for i in chunk], "pageInfo": info}


def _list_status_updates(sb: Sandbox, args: dict[str, Any]) -> object:
    p = get_project(sb, args, "list project status updates")
    rows = sb.store.rows("SELECT * FROM project_status_updates WHERE project_id = ? ORDER BY id DESC", (p.id,))
    chunk, info = page(rows, args)
    return {"statusUpdates": [status_update_json(sb, r) for r in chunk], "pageInfo": info}


def _list_views(sb: Sandbox, args: dict[str, Any]) -> object:
    p = get_project(sb, args, "list project views")
    rows = sb.store.rows("SELECT * FROM project_views WHERE project_id = ? ORDER BY number", (p.id,))
    chunk, info = page(rows, args)
    return {"views": [view_json(r) for r in chunk], "pageInfo": info}


_LISTERS: dict[str, Callable[[Sandbox, dict[str, Any]], object]] = {
    "list_projects": _list_projects,
    "list_project_fields": _list_fields,
    "list_project_items": _list_items,
    "list_project_status_updates": _list_status_updates,
    "list_project_views": _list_views,
}


@tool("projects_list")
def projects_list(sb: Sandbox, args: dict[str, Any]) -> object:
    return _LISTERS[req_str(args, "method")](sb, args)


# -- projects_get -----------------------------------------------------------------------------------


def node_row(sb: Sandbox, table: str, prefix: str, raw: str | None, key: str, what: str) -> Any:
    """The row of ``table`` a node id names, if its project is visible; the real server's error otherwise."""
    if not raw:
        raise ToolError(f"missing required parameter: {key}")
    row_id = parse_node_id(prefix, raw)
    row = None if row_id is None else sb.store.row(f"SELECT * FROM {table} WHERE id = ?", (row_id,))
    project = None
    if row is not None:
        prow = sb.store.row("SELECT * FROM projects WHERE id = ?", (row["project_id"],))
        project = None if prow is None else _project(sb, prow)
    if row is None or project is None or not can_see(sb, project):
        raise ToolError(
            f"{what}: node is not a {'ProjectV2View' if prefix == 'PVTV' else 'ProjectV2StatusUpdate'} or was not found"
        )
    return row


def _get(sb: Sandbox, args: dict[str, Any]) -> object:
    method = req_str(args, "method")
    if method == "get_project_status_update":
        row = node_row(
            sb,
            "project_status_updates",
            "PVTSU",
            opt_str(args, "status_update_id"),
            "status_update_id",
            "failed to get project status update",
        )
        return status_update_json(sb, row)
    if method == "get_project_view":
        row = node_row(sb, "project_views", "PVTV", opt_str(args, "view_id"), "view_id", "failed to get project view")
        return view_json(row)
    if opt_str(args, "owner") is None:
        raise ToolError("missing required parameter: owner")
    if method == "get_project":
        return project_json(sb, get_project(sb, args, "get project"))
    if method == "get_project_field":
        p = get_project(sb, args, "get project field")
        f = find_field(sb, p, field_id=req_int(args, "field_id"))
        if f is None:
            raise ToolError(
                f"failed to get project field: 404 Not Found: project {p.number} has no field {args['field_id']}"
            )
        return field_json(p, f)
    p = get_project(sb, args, "get project item")
    item = find_item(sb, p, req_int(args, "item_id"))
    if item is None:
        raise ToolError(f"failed to get project item: 404 Not Found: project {p.number} has no item {args['item_id']}")
    return item_json(sb, p, item, chosen_fields(sb, p, args))


@tool("projects_get")
def projects_get(sb: Sandbox, args: dict[str, Any]) -> object:
    return _get(sb, args)


def issue_for_item(sb: Sandbox, owner: str, name: str, number: int, kind: str) -> Issue:
    """The issue (``kind`` "issue") or pull request ``owner/name#number`` an item refers to."""
    try:
        repo = sb.store.repo(owner, name)
    except NotFound as e:
        raise ToolError(f"failed to resolve {kind}: repository {owner}/{name} not found") from e
    if not visible(sb, repo):
        raise ToolError(f"failed to resolve {kind}: repository {owner}/{name} not found")
    row = sb.store.row("SELECT number FROM issues WHERE repo_id = ? AND number = ?", (repo.id, number))
    issue = None if row is None else sb.store.issue(repo.id, number)
    if issue is None or (kind == "pull_request") != (issue.pull is not None):
        raise ToolError(f"failed to resolve {kind}: {owner}/{name}#{number} is not a {kind.replace('_', ' ')}")
    return issue
