"""Issues, comments, reactions and labels: list/search/read/write, add_issue_comment, label tools."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nexus_agent.sandbox.github.context import HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import issue_fields, sub_issues, tool
from nexus_agent.sandbox.github.handlers.common import (
    decode_cursor,
    encode_cursor,
    get_issue,
    issue_html_url,
    matches_repo_scope,
    minimal_comment,
    minimal_issue,
    opt_int,
    opt_list,
    opt_str,
    paginate,
    parse_query,
    pick_fields,
    repo_of,
    req_int,
    req_str,
    rest_issue,
    term_score,
)
from nexus_agent.sandbox.github.handlers.repos import visible
from nexus_agent.sandbox.github.store import Issue, NotFound, Repo

# "closes #12", "Fixes acme/api#3", "resolved #4": GitHub's closing keywords in pull request bodies.
CLOSING_REF = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+(?:([\w.-]+/[\w.-]+))?#(\d+)", re.I)
DEFAULT_LABEL_COLOR = "ededed"


def closing_references(body: str, repo: Repo) -> list[tuple[str, int]]:
    """(full repo name, issue number) pairs a pull request body says it closes."""
    return [((m.group(1) or repo.full_name).lower(), int(m.group(2))) for m in CLOSING_REF.finditer(body)]


def _label_ids(sb: Sandbox, repo: Repo, names: list[str]) -> list[int]:
    """Label ids for ``names``; unknown labels are created (grey), as the GitHub issues API does."""
    ids = []
    for name in names:
        try:
            ids.append(sb.store.label(repo.id, name).id)
        except NotFound:
            ids.append(sb.store.add_label(repo.id, name, DEFAULT_LABEL_COLOR).id)
    return ids


def _check_assignees(sb: Sandbox, logins: list[str]) -> list[str]:
    for login in logins:
        if sb.store.find_user(login) is None or sb.store.user(login).type != "User":
            raise ToolError(f"422 Validation Failed: assignee '{login}' is not a user of this sandbox")
    return [sb.store.user(login).login for login in logins]


def _unsupported_fields(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> None:
    # The sandbox models no milestones; refusing is more honest than silently dropping the value. Issue types and
    # fields exist when the repository's organisation defines some (a world can); otherwise they are refused too.
    if args.get("milestone") is not None:
        raise ToolError("'milestone' is not supported in the Nexus offline GitHub sandbox")
    if args.get("issue_fields") is not None and not issue_fields.fields_of(sb, repo.owner):
        raise ToolError(issue_fields.NO_FIELDS)
    if args.get("type") is not None and not issue_fields.types_of(sb, repo.owner):
        raise ToolError(issue_fields.NO_TYPES)


def _type_and_fields(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> None:
    """issue_write's ``type`` (null removes it) and ``issue_fields``."""
    if "type" in args:
        issue_fields.set_type(sb, repo, issue, opt_str(args, "type"))
    if args.get("issue_fields") is not None:
        issue_fields.set_values(sb, repo, issue, opt_list(args, "issue_fields") or [])


def set_state(sb: Sandbox, issue: Issue, state: str, reason: str | None) -> None:
    """Open or close an issue (or pull request) with GitHub's bookkeeping of reason/closed_at/closed_by."""
    if state == issue.state:
        if reason and state == "closed":
            sb.store.update_issue(issue.id, state_reason=reason)
        return
    if state == "closed":
        sb.store.update_issue(
            issue.id, state="closed", state_reason=reason or "completed", closed_at=sb.store.now(), closed_by=sb.me
        )
    else:
        sb.store.update_issue(issue.id, state="open", state_reason="reopened", closed_at="", closed_by="")


# -- search (shared with search_pull_requests) ------------------------------------------------------


def search(sb: Sandbox, args: dict[str, Any], *, pulls: bool, natural: bool) -> dict[str, Any]:
    """Issue-search over issues (``pulls=False``) or pull requests.

    ``natural`` ranks by how many query words occur (search_issues is documented as natural-language);
    otherwise every free word must occur, as in GitHub's issue search syntax.
    """
    q = parse_query(req_str(args, "query"))
    owner, name = opt_str(args, "owner"), opt_str(args, "repo")
    is_values = {v.lower() for v in q.values("is")}
    states = {v.lower() for v in q.values("state")} | (is_values & {"open", "closed"})
    # "@me" is the authenticated user, as on GitHub.
    authors = [sb.me if v == "@me" else v for v in q.values("author")]
    assignees = [sb.me if v == "@me" else v for v in q.values("assignee")]
    hits: list[tuple[int, Repo, Issue]] = []
    for repo in sb.store.repos():
        if not visible(sb, repo) or not matches_repo_scope(repo, q, owner, name):
            continue
        for issue in sb.store.issues(repo.id, pulls=pulls):
            if states and issue.state not in states:
                continue
            if "merged" in is_values and not (issue.pull and issue.pull.merged):
                continue
            if "unmerged" in is_values and issue.pull and issue.pull.merged:
                continue
            if "draft" in is_values and not (issue.pull and issue.pull.draft):
                continue
            label_names = {lb.name.lower() for lb in issue.labels}
            if any(v.lower() not in label_names for v in q.values("label")):
                continue
            if any(v.lower() in label_names for v in q.negated("label")):
                continue
            if any(v.lower() != issue.author.lower() for v in authors):
                continue
            if any(v.lower() not in {a.lower() for a in issue.assignees} for v in assignees):
                continue
            if pulls and issue.pull:
                if any(v != issue.pull.base_ref for v in q.values("base")):
                    continue
                if any(v != issue.pull.head_ref for v in q.values("head")):
                    continue
            in_fields = {v.lower() for v in q.values("in")} or {"title", "body"}
            text = " ".join(
                [issue.title if "title" in in_fields else "", issue.body if "body" in in_fields else ""]
                + ([c.body for c in sb.store.comments(issue.id)] if "comments" in in_fields else [])
            )
            score = term_score(q.terms, text, require_all=not natural) if q.terms else 1
            if score:
                hits.append((score, repo, issue))
    sort, desc = opt_str(args, "sort"), opt_str(args, "order") != "asc"
    keys: dict[str, Callable[[tuple[int, Repo, Issue]], Any]] = {
        "created": lambda h: h[2].created_at,
        "updated": lambda h: h[2].updated_at,
        "comments": lambda h: h[2].comments,
        "reactions": lambda h: sum(h[2].reactions.values()),
        "interactions": lambda h: h[2].comments + sum(h[2].reactions.values()),
    }
    if sort in keys:
        hits.sort(key=keys[sort], reverse=desc)
    elif sort and sort.startswith("reactions-"):
        kind = sort.removeprefix("reactions-")
        hits.sort(key=lambda h: h[2].reactions.get(kind, 0), reverse=desc)
    else:
        hits.sort(key=lambda h: (-h[0], h[2].created_at), reverse=False)
    fields = opt_list(args, "fields")
    items = [pick_fields(rest_issue(sb, r, i), fields) for _, r, i in paginate(hits, args)]
    return {"total_count": len(hits), "incomplete_results": False, "items": items}


@tool("search_issues")
def search_issues(sb: Sandbox, args: dict[str, Any]) -> object:
    return search(sb, args, pulls=False, natural=True)


# -- listing and reading ----------------------------------------------------------------------------


def _list_item(sb: Sandbox, issue: Issue) -> dict[str, Any]:
    """The GraphQL-fragment issue shape list_issues returns (state upper-case, user login only)."""
    out: dict[str, Any] = {
        "number": issue.number,
        "title": issue.title,
        "body": issue.body,
        "state": issue.state.upper(),
        "user": {"login": issue.author},
        "labels": [lb.name for lb in issue.labels],
        "assignees": list(issue.assignees),
        "comments": issue.comments,
        "created_at": issue.created_at,
        "updated_at": issue.updated_at,
    }
    out["field_values"] = issue_fields.graphql_values(sb, issue)
    return {k: v for k, v in out.items() if v not in ("", [], None)}


def _filter_by_fields(sb: Sandbox, repo: Repo, issues: list[Issue], filters: list[dict[str, Any]]) -> list[Issue]:
    """Issues whose values match every ``field_filters`` entry (the value coerced to the field's type)."""
    fields = {f.name.lower(): f for f in issue_fields.fields_of(sb, repo.owner)}
    wanted: list[tuple[int, str]] = []
    for i, flt in enumerate(filters):
        field = fields.get(str(flt.get("field_name", "")).lower())
        if field is None:
            raise ToolError(
                f"invalid argument 'field_filters.{i}.field_name': {flt.get('field_name')!r} is not an issue field "
                f"of {repo.owner} (one of: {', '.join(f.name for f in fields.values())})"
            )
        wanted.append((field.id, issue_fields.coerce(field, flt.get("value", ""))))
    out = []
    for issue in issues:
        have = {f.id: v for f, v in issue_fields.values_of(sb, issue)}
        if all(have.get(fid) == value for fid, value in wanted):
            out.append(issue)
    return out


@tool("list_issues")
def list_issues(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    filters = opt_list(args, "field_filters") or []
    if filters and not issue_fields.fields_of(sb, repo.owner):
        raise ToolError("'field_filters' is not supported: the Nexus offline GitHub sandbox has no custom issue fields")
    if bool(args.get("orderBy")) != bool(args.get("direction")):
        raise ToolError("invalid arguments: 'orderBy' and 'direction' must be given together")
    issues = sb.store.issues(repo.id, pulls=False)
    state = opt_str(args, "state")
    if state:
        issues = [i for i in issues if i.state == state.lower()]
    labels = {x.lower() for x in opt_list(args, "labels") or []}
    if labels:
        issues = [i for i in issues if labels & {lb.name.lower() for lb in i.labels}]
    since = opt_str(args, "since")
    if since:
        issues = [i for i in issues if i.updated_at >= since]
    if filters:
        issues = _filter_by_fields(sb, repo, issues, filters)
    order_by = opt_str(args, "orderBy") or "CREATED_AT"
    key: dict[str, Callable[[Issue], Any]] = {
        "CREATED_AT": lambda i: (i.created_at, i.number),
        "UPDATED_AT": lambda i: (i.updated_at, i.number),
        "COMMENTS": lambda i: (i.comments, i.number),
    }
    issues.sort(key=key[order_by], reverse=(opt_str(args, "direction") or "DESC") == "DESC")
    start = decode_cursor(opt_str(args, "after"))
    per_page = opt_int(args, "perPage") or 30
    page = issues[start : start + per_page]
    end = start + len(page)
    fields = opt_list(args, "fields")
    return {
        "issues": [pick_fields(_list_item(sb, i), fields) for i in page],
        "totalCount": len(issues),
        "pageInfo": {
            "hasNextPage": end < len(issues),
            "hasPreviousPage": start > 0,
            "startCursor": encode_cursor(start) if page else "",
            "endCursor": encode_cursor(end) if page else "",
        },
    }


def _closed_by_pulls(sb: Sandbox, repo: Repo, issue: Issue) -> dict[str, Any]:
    refs = []
    for pr in sb.store.issues(repo.id, pulls=True):
        if (repo.full_name.lower(), issue.number) in closing_references(pr.body, repo):
            state = "MERGED" if pr.pull and pr.pull.merged else pr.state.upper()
            refs.append(
                {
                    "number": pr.number,
                    "title": pr.title,
                    "state": state,
                    "url": issue_html_url(repo, pr),
                    "repository": repo.full_name,
                }
            )
    return {"total_count": len(refs), "references": refs[:5]}


def _read_get(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    out = minimal_issue(sb, repo, issue)
    kind = issue_fields.type_of(sb, issue)
    if kind is not None:
        out["issue_type"] = kind.name
    values = issue_fields.rest_values(sb, issue)
    if values:
        out["issue_field_values"] = values
    parent = sub_issues.parent_of(sb, issue)
    summary = sub_issues.summary(sb, issue)
    out["has_parent"] = parent is not None
    out["has_children"] = summary is not None
    if parent is not None:
        out["parent"] = sub_issues.issue_ref(*parent)
    if summary is not None:
        out["sub_issues_summary"] = summary
    out["closed_by_pull_requests"] = _closed_by_pulls(sb, repo, issue)
    return out


def _read_comments(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    return [minimal_comment(sb, repo, issue, c) for c in paginate(sb.store.comments(issue.id), args)]


def _read_sub_issues(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    return [rest_issue(sb, r, i) for r, i in paginate(sub_issues.children(sb, issue), args)]


def _read_parent(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    parent = sub_issues.parent_of(sb, issue)
    if parent is None:
        raise ToolError(f"404 Not Found: {repo.full_name}#{issue.number} has no parent issue")
    return {"parent": sub_issues.issue_ref(*parent)}


def _read_labels(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    labels = [{"id": lb.id, "name": lb.name, "color": lb.color, "description": lb.description} for lb in issue.labels]
    return {"labels": labels, "totalCount": len(labels)}


_READERS: dict[str, Callable[[Sandbox, Repo, Issue, dict[str, Any]], object]] = {
    "get": _read_get,
    "get_comments": _read_comments,
    "get_sub_issues": _read_sub_issues,
    "get_parent": _read_parent,
    "get_labels": _read_labels,
}


@tool("issue_read")
def issue_read(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue = get_issue(sb, repo, req_int(args, "issue_number"))
    return _READERS[req_str(args, "method")](sb, repo, issue, args)


# -- writing ----------------------------------------------------------------------------------------


def _write_create(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    title = opt_str(args, "title")
    if not title:
        raise ToolError("missing required parameter: title (required when method is 'create')")
    assignees = _check_assignees(sb, opt_list(args, "assignees") or [])
    issue = sb.store.create_issue(repo.id, title=title, body=opt_str(args, "body") or "", author=sb.me)
    sb.store.set_issue_labels(issue.id, _label_ids(sb, repo, opt_list(args, "labels") or []))
    sb.store.set_assignees(issue.id, assignees)
    _type_and_fields(sb, repo, issue, args)
    if opt_str(args, "state") == "closed":
        set_state(sb, issue, "closed", opt_str(args, "state_reason"))
    return {"id": str(issue.id), "url": issue_html_url(repo, issue)}


def _write_update(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    number = opt_int(args, "issue_number")
    if number is None:
        raise ToolError("missing required parameter: issue_number (required when method is 'update')")
    issue = get_issue(sb, repo, number)
    values: dict[str, object] = {}
    if "title" in args:
        if not opt_str(args, "title"):
            raise ToolError("invalid argument 'title': must not be empty")
        values["title"] = opt_str(args, "title")
    if "body" in args:
        values["body"] = opt_str(args, "body") or ""
    if values:
        sb.store.update_issue(issue.id, **values)
    if args.get("labels") is not None:
        sb.store.set_issue_labels(issue.id, _label_ids(sb, repo, opt_list(args, "labels") or []))
    if args.get("assignees") is not None:
        sb.store.set_assignees(issue.id, _check_assignees(sb, opt_list(args, "assignees") or []))
    _type_and_fields(sb, repo, issue, args)
    state, reason = opt_str(args, "state"), opt_str(args, "state_reason")
    if reason == "duplicate" and state == "closed":
        dup = opt_int(args, "duplicate_of")
        if dup is None:
            raise ToolError("missing required parameter: duplicate_of (required when state_reason is 'duplicate')")
        get_issue(sb, repo, dup)
        sb.store.add_comment(issue.id, sb.me, f"Duplicate of #{dup}")
    if state:
        if state == "open" and issue.pull is not None and issue.pull.merged:
            raise ToolError(f"422 Validation Failed: pull request #{issue.number} is merged and cannot be reopened")
        set_state(sb, sb.store.issue(repo.id, issue.number), state, reason)
    issue = sb.store.issue(repo.id, issue.number)
    return {"id": str(issue.id), "url": issue_html_url(repo, issue)}


_WRITERS: dict[str, Callable[[Sandbox, Repo, dict[str, Any]], object]] = {
    "create": _write_create,
    "update": _write_update,
}


@tool("issue_write")
def issue_write(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    _unsupported_fields(sb, repo, args)
    return _WRITERS[req_str(args, "method")](sb, repo, args)


@tool("add_issue_comment")
def add_issue_comment(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue = get_issue(sb, repo, req_int(args, "issue_number"))
    body, reaction, comment_id = opt_str(args, "body"), opt_str(args, "reaction"), opt_int(args, "comment_id")
    if not body and not reaction:
        raise ToolError("missing required parameter: at least one of 'body' or 'reaction' is required")
    if comment_id is not None and body:
        raise ToolError("invalid arguments: 'comment_id' cannot be combined with 'body' (reactions only)")
    if comment_id is not None and not reaction:
        raise ToolError("missing required parameter: 'reaction' is required with 'comment_id'")
    out: dict[str, Any] = {}
    if body:
        c = sb.store.add_comment(issue.id, sb.me, body)
        out = {"id": str(c.id), "url": f"{issue_html_url(repo, issue)}#issuecomment-{c.id}"}
    if reaction:
        target = 0
        if comment_id is not None:
            try:
                target = sb.store.comment(issue.id, comment_id).id
            except NotFound as e:
                raise ToolError(
                    f"404 Not Found: comment {comment_id} does not exist on {repo.full_name}#{issue.number}"
                ) from e
        rid = sb.store.add_reaction(issue.id, target, sb.me, reaction)
        reaction_json = {"id": rid, "content": reaction, "user": {"login": sb.me}}
        if body:
            out["reaction"] = reaction_json
        else:
            out = reaction_json
    return out


# -- labels -----------------------------------------------------------------------------------------


def _label_json(label_id: int, name: str, color: str, description: str) -> dict[str, Any]:
    return {"id": label_id, "name": name, "color": color, "description": description}


@tool("list_label")
def list_label(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    labels = [_label_json(lb.id, lb.name, lb.color, lb.description) for lb, _n in sb.store.labels(repo.id)]
    return {"labels": labels, "totalCount": len(labels)}


@tool("get_label")
def get_label(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    name = req_str(args, "name")
    try:
        lb = sb.store.label(repo.id, name)
    except NotFound as e:
        raise ToolError(f"404 Not Found: label '{name}' does not exist in {repo.full_name}") from e
    return _label_json(lb.id, lb.name, lb.color, lb.description)


@tool("label_write")
def label_write(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    method, name = req_str(args, "method"), req_str(args, "name")
    color = opt_str(args, "color")
    if color is not None and not re.fullmatch(r"[0-9a-fA-F]{6}", color):
        raise ToolError(f"invalid argument 'color': {color!r} is not a 6-digit hex colour without '#'")
    if method == "create":
        if color is None:
            raise ToolError("missing required parameter: color (required when method is 'create')")
        try:
            sb.store.label(repo.id, name)
        except NotFound:
            lb = sb.store.add_label(repo.id, name, color.lower(), opt_str(args, "description") or "")
            return _label_json(lb.id, lb.name, lb.color, lb.description)
        raise ToolError(f"422 Validation Failed: label '{name}' already exists in {repo.full_name}")
    try:
        lb = sb.store.label(repo.id, name)
    except NotFound as e:
        raise ToolError(f"404 Not Found: label '{name}' does not exist in {repo.full_name}") from e
    if method == "delete":
        sb.store.delete_label(lb.id)
        return {"message": f"label '{lb.name}' deleted", "url": f"{HTML_ROOT}/{repo.full_name}/labels"}
    new = (
        opt_str(args, "new_name") or lb.name,
        (color or lb.color).lower(),
        lb.description if args.get("description") is None else str(args["description"]),
    )
    sb.store.update_label(lb.id, name=new[0], color=new[1], description=new[2])
    return _label_json(lb.id, *new)
