"""Issue types and custom issue fields: defined per organisation, used by the organisation's repositories.

list_issue_types and list_issue_fields read them; issue_write sets an issue's ``type`` and ``issue_fields``;
issue_read and list_issues report them. A user-owned repository has neither (as on GitHub), nor has an
organisation that defines none (acme): issue_write then refuses ``type`` / ``issue_fields`` as it always did.

Field values are stored as text: numbers in their JSON spelling, dates as ``YYYY-MM-DD``, single-select values as
the option's name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import node_id, opt_str, req_str
from nexus_agent.sandbox.github.store import Issue, NotFound, Repo

DATA_TYPES = ("text", "number", "date", "single_select")
# The texts issue_write gave before issue types and fields existed in the sandbox; kept for owners that define none.
NO_TYPES = "issue types are not enabled for repositories in the Nexus offline GitHub sandbox"
NO_FIELDS = "'issue_fields' is not supported in the Nexus offline GitHub sandbox"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class IssueType:
    id: int
    name: str
    description: str
    color: str
    created_at: str


@dataclass(frozen=True)
class IssueField:
    """``options``: for single_select, ``{"name", "color", "description"}`` dicts in their order."""

    id: int
    name: str
    data_type: str
    description: str
    options: tuple[dict[str, str], ...]


def _org_id(sb: Sandbox, owner: str) -> int | None:
    user = sb.store.find_user(owner)
    return user.id if user is not None and user.type == "Organization" else None


def types_of(sb: Sandbox, owner: str) -> list[IssueType]:
    org = _org_id(sb, owner)
    rows = sb.store.rows("SELECT * FROM issue_types WHERE org_id = ? ORDER BY id", (org,)) if org else []
    return [IssueType(r["id"], r["name"], r["description"], r["color"], r["created_at"]) for r in rows]


def fields_of(sb: Sandbox, owner: str) -> list[IssueField]:
    org = _org_id(sb, owner)
    rows = sb.store.rows("SELECT * FROM issue_fields WHERE org_id = ? ORDER BY id", (org,)) if org else []
    return [
        IssueField(r["id"], r["name"], r["data_type"], r["description"], tuple(json.loads(r["options"]))) for r in rows
    ]


def add_type(sb: Sandbox, org: str, name: str, description: str = "", color: str = "gray") -> IssueType:
    org_id = _org_id(sb, org)
    if org_id is None:
        raise ToolError(f"404 Not Found: organization {org} does not exist")
    now = sb.store.now()
    tid = sb.store.insert("issue_types", org_id=org_id, name=name, description=description, color=color, created_at=now)
    return IssueType(tid, name, description, color, now)


def add_field(
    sb: Sandbox, org: str, name: str, data_type: str, description: str = "", options: list[dict[str, str]] | None = None
) -> IssueField:
    org_id = _org_id(sb, org)
    if org_id is None:
        raise ToolError(f"404 Not Found: organization {org} does not exist")
    opts = tuple(options or ())
    fid = sb.store.insert(
        "issue_fields", org_id=org_id, name=name, data_type=data_type, description=description, options=json.dumps(opts)
    )
    return IssueField(fid, name, data_type, description, opts)


# -- an issue's type and values ---------------------------------------------------------------------


def type_of(sb: Sandbox, issue: Issue) -> IssueType | None:
    r = sb.store.row(
        "SELECT t.* FROM issue_types t JOIN issue_type_of o ON o.type_id = t.id WHERE o.issue_id = ?", (issue.id,)
    )
    return None if r is None else IssueType(r["id"], r["name"], r["description"], r["color"], r["created_at"])


def set_type(sb: Sandbox, repo: Repo, issue: Issue, name: str | None) -> None:
    """Set (or with None remove) the type of ``issue``; the name must be one of the owner's types."""
    if name is None:
        sb.store.execute("DELETE FROM issue_type_of WHERE issue_id = ?", (issue.id,))
        return
    types = types_of(sb, repo.owner)
    if not types:
        raise ToolError(NO_TYPES)
    match = next((t for t in types if t.name.lower() == name.lower()), None)
    if match is None:
        names = ", ".join(t.name for t in types)
        raise ToolError(
            f"422 Validation Failed: 'type' {name!r} is not an issue type of {repo.owner} (one of: {names})"
        )
    sb.store.execute("INSERT OR REPLACE INTO issue_type_of VALUES (?, ?)", (issue.id, match.id))


def values_of(sb: Sandbox, issue: Issue) -> list[tuple[IssueField, str]]:
    rows = sb.store.rows(
        "SELECT f.*, v.value FROM issue_fields f JOIN issue_field_values v ON v.field_id = f.id "
        "WHERE v.issue_id = ? ORDER BY f.id",
        (issue.id,),
    )
    return [
        (IssueField(r["id"], r["name"], r["data_type"], r["description"], tuple(json.loads(r["options"]))), r["value"])
        for r in rows
    ]


def coerce(field: IssueField, value: object) -> str:
    """A value given for ``field`` as its stored text, or a 422 ToolError naming the field and what it accepts."""
    text = str(value).strip()
    if field.data_type == "number":
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is None or isinstance(value, bool):
            raise ToolError(f"422 Validation Failed: field {field.name!r} takes a number, not {value!r}")
        return json.dumps(int(number) if number.is_integer() else number)
    if field.data_type == "date":
        if not _DATE.match(text):
            raise ToolError(f"422 Validation Failed: field {field.name!r} takes a date as YYYY-MM-DD, not {value!r}")
        return text
    if field.data_type == "single_select":
        option = next((o for o in field.options if o["name"].lower() == text.lower()), None)
        if option is None:
            names = ", ".join(o["name"] for o in field.options)
            raise ToolError(
                f"422 Validation Failed: {text!r} is not an option of field {field.name!r} (one of: {names})"
            )
        return option["name"]
    return str(value)


def set_values(sb: Sandbox, repo: Repo, issue: Issue, items: list[dict[str, Any]]) -> None:
    """Apply issue_write's ``issue_fields``: each item sets one field (value or option name) or clears it."""
    fields = {f.name.lower(): f for f in fields_of(sb, repo.owner)}
    if not fields:
        raise ToolError(NO_FIELDS)
    for i, item in enumerate(items):
        name = str(item.get("field_name", ""))
        given = [k for k in ("value", "field_option_name") if item.get(k) is not None] + (
            ["delete"] if item.get("delete") else []
        )
        if len(given) != 1:
            raise ToolError(
                f"invalid argument 'issue_fields.{i}': give exactly one of 'value', 'field_option_name' or "
                "'delete: true'"
            )
        field = fields.get(name.lower())
        if field is None:
            raise ToolError(
                f"invalid argument 'issue_fields.{i}.field_name': {name!r} is not an issue field of {repo.owner} "
                f"(one of: {', '.join(f.name for f in fields.values())})"
            )
        if given[0] == "delete":
            sb.store.execute("DELETE FROM issue_field_values WHERE issue_id = ? AND field_id = ?", (issue.id, field.id))
            continue
        if given[0] == "field_option_name" and field.data_type != "single_select":
            raise ToolError(f"invalid argument 'issue_fields.{i}': field {field.name!r} has no options; use 'value'")
        value = coerce(field, item[given[0]])
        sb.store.execute("INSERT OR REPLACE INTO issue_field_values VALUES (?, ?, ?)", (issue.id, field.id, value))


def rest_values(sb: Sandbox, issue: Issue) -> list[dict[str, Any]]:
    """``issue_field_values`` of a REST issue (MinimalIssueFieldValue)."""
    out = []
    for field, value in values_of(sb, issue):
        item: dict[str, Any] = {
            "issue_field_id": field.id,
            "node_id": node_id("IFV", field.id * 1_000_000 + issue.id),
            "data_type": field.data_type,
            "value": json.loads(value) if field.data_type == "number" else value,
        }
        if field.data_type == "single_select":
            index = next(i for i, o in enumerate(field.options) if o["name"] == value)
            option = field.options[index]
            item["single_select_option"] = {"id": index + 1, "name": option["name"], "color": option["color"]}
        out.append(item)
    return out


def graphql_values(sb: Sandbox, issue: Issue) -> list[dict[str, str]]:
    """``field_values`` of list_issues items (MinimalFieldValue: field name and value as text)."""
    return [{"field": f.name, "value": v} for f, v in values_of(sb, issue)]


# -- tools ------------------------------------------------------------------------------------------


def _owner_scope(sb: Sandbox, args: dict[str, Any], what: str) -> str:
    """The organisation whose definitions apply: the repository's owner, or ``owner`` itself without ``repo``."""
    owner, name = req_str(args, "owner"), opt_str(args, "repo")
    if name:
        try:
            return sb.store.repo(owner, name).owner
        except NotFound as e:
            raise ToolError(f"failed to list {what}: 404 Not Found: repository {owner}/{name} does not exist") from e
    if _org_id(sb, owner) is None:
        raise ToolError(f"failed to list {what}: 404 Not Found: organization {owner} does not exist")
    return owner


@tool("list_issue_types")
def list_issue_types(sb: Sandbox, args: dict[str, Any]) -> object:
    owner = _owner_scope(sb, args, "issue types")
    return [
        {
            "id": t.id,
            "node_id": node_id("IT", t.id),
            "name": t.name,
            "description": t.description,
            "color": t.color,
            "created_at": t.created_at,
            "updated_at": t.created_at,
            "is_enabled": True,
        }
        for t in types_of(sb, owner)
    ]


@tool("list_issue_fields")
def list_issue_fields(sb: Sandbox, args: dict[str, Any]) -> object:
    owner = _owner_scope(sb, args, "issue fields")
    out = []
    for f in fields_of(sb, owner):
        item: dict[str, Any] = {
            "id": node_id("IF", f.id),
            "full_database_id": f.id,
            "name": f.name,
            "description": f.description,
            "data_type": f.data_type.upper(),
            "visibility": "ALL",
        }
        if not f.description:
            del item["description"]
        if f.data_type == "single_select":
            item["options"] = [
                {k: v for k, v in (("id", node_id("IFO", f.id * 1000 + i)), *o.items()) if v} | {"priority": i}
                for i, o in enumerate(f.options, start=1)
            ]
        out.append(item)
    return out
