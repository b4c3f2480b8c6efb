"""projects_write: every method of the Projects write tool, on the tables ``projects.py`` reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import node_id, opt_int, opt_list, opt_str, parse_node_id, req_str
from nexus_agent.sandbox.github.handlers.projects import (
    Field,
    Item,
    Project,
    add_field,
    add_item,
    add_view,
    create_project,
    fields_of,
    find_field,
    find_item,
    get_project,
    issue_for_item,
    item_json,
    items_of,
    node_row,
    project_url,
    resolve_owner,
    set_value,
    status_update_json,
    view_json,
)

MAX_BATCH = 50
LAYOUTS = ("table", "board", "roadmap")


def _project(sb: Sandbox, args: dict[str, Any], what: str) -> Project:
    if opt_int(args, "project_number") is None:
        raise ToolError("missing required parameter: project_number")
    return get_project(sb, args, what)


def _date(value: str, key: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as e:
        raise ToolError(f"invalid {key} {value!r}: must be YYYY-MM-DD format") from e


# -- projects and fields ----------------------------------------------------------------------------


def _create_project(sb: Sandbox, args: dict[str, Any]) -> object:
    kind = opt_str(args, "owner_type")
    if not kind:
        raise ToolError("owner_type is required for create_project")
    owner = resolve_owner(sb, args, "get owner ID")
    title = opt_str(args, "title")
    if not title:
        raise ToolError("missing required parameter: title")
    mine = owner.login.lower() == sb.me.lower() or any(o.id == owner.id for o in sb.store.orgs_of(sb.me))
    if not mine:
        raise ToolError(f"failed to create project: {sb.me} cannot create projects for {owner.login}")
    p = create_project(sb, owner, title, sb.me)
    return {"id": node_id("PVT", p.id), "number": p.number, "title": p.title, "url": project_url(p)}


def _create_iteration_field(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "get project ID")
    name = req_str(args, "field_name")
    duration = opt_int(args, "iteration_duration")
    if duration is None:
        raise ToolError("missing required parameter: iteration_duration")
    start = _date(req_str(args, "start_date"), "start_date")
    given = opt_list(args, "iterations")
    iterations = []
    if given:
        for i, it in enumerate(given):
            if not str(it.get("title", "")).strip():
                raise ToolError(f"iterations[{i}]: title is required and must be a non-empty string")
            if not it.get("duration") or it["duration"] <= 0:
                raise ToolError(f"iterations[{i}]: duration is required and must be a positive number")
            day = _date(str(it.get("start_date", "")), f"iterations[{i}].start_date")
            iterations.append({"title": it["title"], "start_date": day.isoformat(), "duration": int(it["duration"])})
    else:
        # GitHub's default: three iterations of the given length, back to back from the start date.
        for i in range(3):
            day = start + timedelta(days=i * duration)
            iterations.append({"title": f"Iteration {i + 1}", "start_date": day.isoformat(), "duration": duration})
    try:
        f = add_field(sb, p, name, "iteration", iterations=iterations)
    except ToolError as e:
        raise ToolError(f"failed to create iteration field: {e}") from e
    return {
        "id": f.node_id,
        "name": f.name,
        "configuration": {
            "iterations": [{k: it[k] for k in ("id", "title", "start_date", "duration")} for it in f.iterations]
        },
    }


# -- items ------------------------------------------------------------------------------------------


def _add_item(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "add project item")
    kind = opt_str(args, "item_type")
    owner, name = opt_str(args, "item_owner"), opt_str(args, "item_repo")
    if not owner or not name:
        raise ToolError("missing required parameter: item_owner and item_repo are required for add_project_item")
    if kind == "issue":
        number = opt_int(args, "issue_number")
        if number is None:
            raise ToolError("issue_number is required when item_type is 'issue'")
    elif kind == "pull_request":
        number = opt_int(args, "pull_request_number")
        if number is None:
            raise ToolError("pull_request_number is required when item_type is 'pull_request'")
    else:
        raise ToolError("item_type must be either 'issue' or 'pull_request'")
    issue = issue_for_item(sb, owner, name, number, kind)
    item = add_item(sb, p, issue, sb.me)
    return {
        "id": node_id("PVTI", item.id),
        "message": f"Successfully added {kind} {owner}/{name}#{number} to project {p.owner.login}/{p.number}",
        "full_database_id": str(item.id),
        "item_id": item.id,
    }


def _item_by_issue(sb: Sandbox, p: Project, owner: str, name: str, number: int) -> Item:
    try:
        issue = issue_for_item(sb, owner, name, number, "issue")
    except ToolError:
        issue = issue_for_item(sb, owner, name, number, "pull_request")
    for item in items_of(sb, p):
        if item.issue_id == issue.id:
            return item
    raise ToolError(f"{owner}/{name}#{number} is not an item of project {p.owner.login}/{p.number}")


def _field_spec(sb: Sandbox, p: Project, spec: Any) -> tuple[Field, Any, bool]:
    """(field, value, value given by name) of ``updated_field``."""
    if spec is None:
        raise ToolError("missing required parameter: updated_field")
    if not isinstance(spec, dict):
        raise ToolError("updated_field must be an object")
    if "value" not in spec:
        raise ToolError("updated_field.value is required (null clears the field)")
    if "id" in spec:
        f = find_field(sb, p, field_id=int(spec["id"]))
        by_name = False
    else:
        f = find_field(sb, p, name=str(spec.get("name", "")))
        by_name = True
    if f is None:
        known = ", ".join(f"{x.name} ({x.id})" for x in fields_of(sb, p))
        raise ToolError(f"updated_field: no such field in project {p.number} (fields: {known})")
    return f, spec["value"], by_name


def _update_item(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "update project item")
    item_id = opt_int(args, "item_id")
    if item_id is not None:
        item = find_item(sb, p, item_id)
        if item is None:
            raise ToolError(f"failed to update a project item: 404 Not Found: project {p.number} has no item {item_id}")
    else:
        owner, name, number = opt_str(args, "item_owner"), opt_str(args, "item_repo"), opt_int(args, "issue_number")
        if not (owner and name and number):
            raise ToolError("provide either item_id, or item_owner + item_repo + issue_number")
        item = _item_by_issue(sb, p, owner, name, number)
    f, value, by_name = _field_spec(sb, p, args.get("updated_field"))
    set_value(sb, item, f, value, by_name=by_name)
    updated = find_item(sb, p, item.id)
    assert updated is not None
    return item_json(sb, p, updated, [f])


def _resolve_ref(sb: Sandbox, p: Project, ref: dict[str, Any]) -> Item:
    if "node_id" in ref:
        iid = parse_node_id("PVTI", str(ref["node_id"]))
        item = None if iid is None else find_item(sb, p, iid)
    elif "item_id" in ref:
        item = find_item(sb, p, int(ref["item_id"]))
    else:
        return _item_by_issue(sb, p, str(ref["item_owner"]), str(ref["item_repo"]), int(ref["issue_number"]))
    if item is None:
        raise ToolError(f"project {p.number} has no such item")
    return item


def _update_items(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "update project items")
    refs = args.get("items")
    if refs is None:
        raise ToolError("missing required parameter: items")
    if not refs:
        raise ToolError("items must contain at least one entry")
    if len(refs) > MAX_BATCH:
        raise ToolError(f"items exceeds maximum of {MAX_BATCH} entries per call (got {len(refs)})")
    f, value, by_name = _field_spec(sb, p, args.get("updated_field"))
    results: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    for i, ref in enumerate(refs):
        try:
            item = _resolve_ref(sb, p, ref)
        except ToolError as e:
            results.append(
                {"index": i, "status": "failed", "ref": ref, "error": {"code": "not_found", "message": str(e)}}
            )
            continue
        if item.id in seen:
            message = (
                f"items[{i}] targets the same project item as items[{seen[item.id]}]; each item may only be written "
                "once per call"
            )
            results.append(
                {"index": i, "status": "failed", "ref": ref, "error": {"code": "duplicate_target", "message": message}}
            )
            continue
        seen[item.id] = i
        try:
            set_value(sb, item, f, value, by_name=by_name)
        except ToolError as e:
            results.append(
                {"index": i, "status": "failed", "ref": ref, "error": {"code": "invalid_value", "message": str(e)}}
            )
            continue
        identity = {"node_id": node_id("PVTI", item.id), "full_database_id": str(item.id), "item_id": item.id}
        results.append({"index": i, "status": "succeeded", "item": identity})
    ok = sum(1 for r in results if r["status"] == "succeeded")
    response = {"total": len(results), "succeeded": ok, "failed": len(results) - ok, "unknown": 0, "results": results}
    if ok == 0:
        # As upstream: the per-item report, flagged as an error when nothing was written.
        raise ToolError(json.dumps(response, separators=(",", ":")))
    return response


def _delete_item(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "delete project item")
    item_id = opt_int(args, "item_id")
    if item_id is None:
        raise ToolError("missing required parameter: item_id")
    if find_item(sb, p, item_id) is None:
        raise ToolError(f"failed to delete a project item: 404 Not Found: project {p.number} has no item {item_id}")
    sb.store.execute("DELETE FROM project_item_values WHERE item_id = ?", (item_id,))
    sb.store.execute("DELETE FROM project_items WHERE id = ?", (item_id,))
    return "project item successfully deleted"


# -- status updates ---------------------------------------------------------------------------------


def create_status_update(
    sb: Sandbox, p: Project, *, body: str, status: str, start_date: str, target_date: str, creator: str
) -> Any:
    for key, value in (("start_date", start_date), ("target_date", target_date)):
        if value:
            _date(value, key)
    sid = sb.store.insert(
        "project_status_updates",
        project_id=p.id,
        body=body,
        status=status,
        start_date=start_date,
        target_date=target_date,
        creator=creator,
        created_at=sb.store.now(),
    )
    return sb.store.row("SELECT * FROM project_status_updates WHERE id = ?", (sid,))


def _create_status_update(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "create project status update")
    row = create_status_update(
        sb,
        p,
        body=opt_str(args, "body") or "",
        status=opt_str(args, "status") or "",
        start_date=opt_str(args, "start_date") or "",
        target_date=opt_str(args, "target_date") or "",
        creator=sb.me,
    )
    return status_update_json(sb, row)


# -- views ------------------------------------------------------------------------------------------


def _visible_fields(sb: Sandbox, p: Project, args: dict[str, Any], layout: str) -> list[int] | None:
    ids, names = opt_list(args, "visible_fields"), opt_list(args, "visible_field_names")
    if ids is not None and names is not None:
        raise ToolError("provide either 'visible_fields' or 'visible_field_names', not both")
    if ids is None and names is None:
        return None
    out = []
    for raw in ids if ids is not None else names or []:
        f = find_field(sb, p, field_id=int(raw)) if ids is not None and str(raw).isdigit() else None
        if names is not None:
            f = find_field(sb, p, name=str(raw))
        if f is None:
            raise ToolError(f"failed to resolve visible field {raw!r}: not a field of project {p.number}")
        out.append(f.id)
    if layout == "roadmap" and out:
        raise ToolError("visible fields are not supported for roadmap views")
    return out


def _create_view(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "create project view")
    name = (opt_str(args, "name") or "").strip()
    if not name:
        raise ToolError("name must not be empty")
    layout = opt_str(args, "layout")
    if layout not in LAYOUTS:
        raise ToolError("layout is required when creating a view (table, board or roadmap)")
    visible_ids = _visible_fields(sb, p, args, layout)
    vid = add_view(sb, p, name, layout, opt_str(args, "filter") or "", visible_ids)
    return view_json(sb.store.row("SELECT * FROM project_views WHERE id = ?", (vid,)))


def _view(sb: Sandbox, p: Project, args: dict[str, Any], what: str) -> Any:
    row = node_row(sb, "project_views", "PVTV", opt_str(args, "view_id"), "view_id", what)
    if row["project_id"] != p.id:
        raise ToolError(f"{what}: view {args['view_id']!r} does not belong to project {p.owner.login}/{p.number}")
    return row


def _update_view(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "update project view")
    row = _view(sb, p, args, "failed to update project view")
    keys = ("name", "layout", "filter", "visible_fields", "visible_field_names")
    if not any(k in args for k in keys):
        raise ToolError(
            "update_project_view requires at least one of name, layout, filter, visible_fields, or visible_field_names"
        )
    values: dict[str, object] = {}
    if "name" in args:
        name = (opt_str(args, "name") or "").strip()
        if not name:
            raise ToolError("name must not be empty")
        values["name"] = name
    layout = opt_str(args, "layout") or row["layout"]
    values["layout"] = layout
    if "filter" in args:
        values["filter"] = opt_str(args, "filter") or ""  # null clears it
    visible_ids = _visible_fields(sb, p, args, layout)
    if visible_ids is not None:
        values["visible_fields"] = json.dumps(visible_ids)
    elif layout == "roadmap" and json.loads(row["visible_fields"]):
        raise ToolError("visible fields are not supported for roadmap views")
    sb.store.update("project_views", row["id"], **values)
    return view_json(sb.store.row("SELECT * FROM project_views WHERE id = ?", (row["id"],)))


def _delete_view(sb: Sandbox, args: dict[str, Any]) -> object:
    p = _project(sb, args, "delete project view")
    row = _view(sb, p, args, "failed to delete project view")
    sb.store.execute("DELETE FROM project_views WHERE id = ?", (row["id"],))
    return {"deleted_view_id": node_id("PVTV", row["id"])}


_WRITERS: dict[str, Callable[[Sandbox, dict[str, Any]], object]] = {
    "add_project_item": _add_item,
    "update_project_item": _update_item,
    "update_project_items": _update_items,
    "delete_project_item": _delete_item,
    "create_project_status_update": _create_status_update,
    "create_project_view": _create_view,
    "update_project_view": _update_view,
    "delete_project_view": _delete_view,
    "create_project": _create_project,
    "create_iteration_field": _create_iteration_field,
}


@tool("projects_write")
def projects_write(sb: Sandbox, args: dict[str, Any]) -> object:
    return _WRITERS[req_str(args, "method")](sb, args)
