"""Repository alerts: code scanning, Dependabot, secret scanning, and code quality findings (all read-only).

Alerts are numbered per repository and kind. The sandbox runs no scanner, so alerts come from a world; their REST
shapes follow GitHub's (the fields a client reads, not every URL).
"""

from __future__ import annotations

from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    decode_cursor,
    encode_cursor,
    opt_int,
    opt_str,
    paginate,
    repo_of,
    req_int,
)
from nexus_agent.sandbox.github.store import Repo

# A code scanning rule's severity when the world gives a security severity instead (CodeQL's mapping).
RULE_SEVERITY = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}


def _alert_repo(sb: Sandbox, args: dict[str, Any], what: str) -> Repo:
    try:
        return repo_of(sb, args)
    except ToolError as e:
        raise ToolError(f"failed to {what}: {e}") from e


def _one(sb: Sandbox, table: str, repo: Repo, number: int, what: str) -> Any:
    row = sb.store.row(f"SELECT * FROM {table} WHERE repo_id = ? AND number = ?", (repo.id, number))
    if row is None:
        raise ToolError(f"failed to get {what}: 404 Not Found: no {what} number {number} in {repo.full_name}")
    return row


# -- code scanning ----------------------------------------------------------------------------------


def code_scanning_json(repo: Repo, r: Any) -> dict[str, Any]:
    api = f"{API_ROOT}/repos/{repo.full_name}/code-scanning/alerts/{r['number']}"
    state = r["state"]
    return {
        "number": r["number"],
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "url": api,
        "html_url": f"{HTML_ROOT}/{repo.full_name}/security/code-scanning/{r['number']}",
        "instances_url": f"{api}/instances",
        "state": state,
        "fixed_at": r["updated_at"] if state == "fixed" else None,
        "dismissed_at": r["updated_at"] if state == "dismissed" else None,
        "dismissed_reason": r["dismissed_reason"] or None,
        "rule": {
            "id": r["rule_id"],
            "severity": r["severity"],
            "security_severity_level": r["security_severity"] or None,
            "description": r["rule_description"],
            "name": r["rule_id"].rsplit("/", 1)[-1],
        },
        "tool": {"name": r["tool"], "guid": None, "version": None},
        "most_recent_instance": {
            "ref": r["ref"],
            "state": state,
            "message": {"text": r["message"]},
            "location": {"path": r["path"], "start_line": r["start_line"], "end_line": r["end_line"]},
        },
    }


@tool("get_code_scanning_alert")
def get_code_scanning_alert(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, "get alert")
    row = _one(sb, "code_scanning_alerts", repo, req_int(args, "alertNumber"), "code scanning alert")
    return code_scanning_json(repo, row)


@tool("list_code_scanning_alerts")
def list_code_scanning_alerts(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, "list alerts")
    rows = sb.store.rows("SELECT * FROM code_scanning_alerts WHERE repo_id = ? ORDER BY number DESC", (repo.id,))
    state = opt_str(args, "state") or "open"  # the documented default
    states = {"dismissed", "fixed"} if state == "closed" else {state}
    rows = [r for r in rows if r["state"] in states]
    severity = opt_str(args, "severity")
    if severity:
        rows = [r for r in rows if severity in (r["severity"], r["security_severity"])]
    tool_name = opt_str(args, "tool_name")
    if tool_name:
        rows = [r for r in rows if r["tool"].lower() == tool_name.lower()]
    ref = opt_str(args, "ref")
    if ref:
        full = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
        rows = [r for r in rows if r["ref"] == full]
    return [code_scanning_json(repo, r) for r in paginate(rows, args)]


# -- Dependabot -------------------------------------------------------------------------------------


def dependabot_json(repo: Repo, r: Any) -> dict[str, Any]:
    package = {"ecosystem": r["ecosystem"], "name": r["package"]}
    patched = {"identifier": r["patched_version"]} if r["patched_version"] else None
    vulnerability = {
        "package": package,
        "severity": r["severity"],
        "vulnerable_version_range": r["vulnerable_version_range"],
        "first_patched_version": patched,
    }
    identifiers = [{"type": "GHSA", "value": r["ghsa_id"]}]
    if r["cve_id"]:
        identifiers.append({"type": "CVE", "value": r["cve_id"]})
    state = r["state"]
    return {
        "number": r["number"],
        "state": state,
        "dependency": {"package": package, "manifest_path": r["manifest_path"], "scope": "runtime"},
        "security_advisory": {
            "ghsa_id": r["ghsa_id"],
            "cve_id": r["cve_id"] or None,
            "summary": r["summary"],
            "severity": r["severity"],
            "identifiers": identifiers,
            "vulnerabilities": [vulnerability],
        },
        "security_vulnerability": vulnerability,
        "url": f"{API_ROOT}/repos/{repo.full_name}/dependabot/alerts/{r['number']}",
        "html_url": f"{HTML_ROOT}/{repo.full_name}/security/dependabot/{r['number']}",
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "dismissed_at": r["updated_at"] if state == "dismissed" else None,
        "dismissed_reason": r["dismissed_reason"] or None,
        "fixed_at": r["updated_at"] if state == "fixed" else None,
        "auto_dismissed_at": r["updated_at"] if state == "auto_dismissed" else None,
    }


@tool("get_dependabot_alert")
def get_dependabot_alert(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, "get alert")
    number = req_int(args, "alertNumber")
    row = _one(sb, "dependabot_alerts", repo, number, "dependabot alert")
    return dependabot_json(repo, row)


@tool("list_dependabot_alerts")
def list_dependabot_alerts(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, f"list alerts for repository '{opt_str(args, 'owner')}/{opt_str(args, 'repo')}'")
    rows = sb.store.rows("SELECT * FROM dependabot_alerts WHERE repo_id = ? ORDER BY number DESC", (repo.id,))
    state = opt_str(args, "state") or "open"
    rows = [r for r in rows if r["state"] == state]
    severity = opt_str(args, "severity")
    if severity:
        rows = [r for r in rows if r["severity"] == severity]
    start = decode_cursor(opt_str(args, "after"))
    per_page = opt_int(args, "perPage") or 30
    page = rows[start : start + per_page]
    end = start + len(page)
    info: dict[str, Any] = {"hasNextPage": end < len(rows), "hasPreviousPage": start > 0}
    if end < len(rows):
        info["nextCursor"] = encode_cursor(end)
    if start > 0:
        info["prevCursor"] = encode_cursor(max(0, start - per_page))
    return {"alerts": [dependabot_json(repo, r) for r in page], "pageInfo": info}


# -- secret scanning --------------------------------------------------------------------------------


def secret_json(repo: Repo, r: Any) -> dict[str, Any]:
    resolved = r["state"] == "resolved"
    return {
        "number": r["number"],
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "url": f"{API_ROOT}/repos/{repo.full_name}/secret-scanning/alerts/{r['number']}",
        "html_url": f"{HTML_ROOT}/{repo.full_name}/security/secret-scanning/{r['number']}",
        "locations_url": f"{API_ROOT}/repos/{repo.full_name}/secret-scanning/alerts/{r['number']}/locations",
        "state": r["state"],
        "resolution": r["resolution"] or None,
        "resolved_at": r["updated_at"] if resolved else None,
        "secret_type": r["secret_type"],
        "secret_type_display_name": r["secret_type_display_name"],
        "secret": r["secret"],
        "validity": r["validity"],
        "first_location_detected": {"path": r["path"], "start_line": r["line"], "end_line": r["line"]},
    }


@tool("get_secret_scanning_alert")
def get_secret_scanning_alert(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, "get alert")
    row = _one(sb, "secret_scanning_alerts", repo, req_int(args, "alertNumber"), "secret scanning alert")
    return secret_json(repo, row)


@tool("list_secret_scanning_alerts")
def list_secret_scanning_alerts(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, f"list alerts for repository '{opt_str(args, 'owner')}/{opt_str(args, 'repo')}'")
    rows = sb.store.rows("SELECT * FROM secret_scanning_alerts WHERE repo_id = ? ORDER BY number DESC", (repo.id,))
    state = opt_str(args, "state")
    if state:
        rows = [r for r in rows if r["state"] == state]
    resolution = opt_str(args, "resolution")
    if resolution:
        rows = [r for r in rows if r["resolution"] == resolution]
    types = {t.strip() for t in (opt_str(args, "secret_type") or "").split(",") if t.strip()}
    if types:
        rows = [r for r in rows if r["secret_type"] in types]
    return [secret_json(repo, r) for r in paginate(rows, args)]


# -- code quality -----------------------------------------------------------------------------------


@tool("get_code_quality_finding")
def get_code_quality_finding(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = _alert_repo(sb, args, "get finding")
    number = req_int(args, "findingNumber")
    r = _one(sb, "code_quality_findings", repo, number, "finding")
    return {
        "number": r["number"],
        "state": r["state"],
        "rule": {"id": r["rule_id"], "severity": r["severity"], "category": r["category"] or None},
        "message": {"text": r["message"]},
        "location": {"path": r["path"], "start_line": r["start_line"], "end_line": r["end_line"]},
        "created_at": r["created_at"],
        "url": f"{API_ROOT}/repos/{repo.full_name}/code-quality/findings/{r['number']}",
        "html_url": f"{HTML_ROOT}/{repo.full_name}/security/quality/{r['number']}",
    }
