"""Security advisories: the global advisory database and repository security advisories (read-only).

One table holds both: a global advisory has no repository and a ``type`` (reviewed, malware, unreviewed); a
repository advisory belongs to a repository and has a ``state`` (triage, draft, published, closed).
``vulnerabilities`` is a JSON list of ``{"ecosystem", "package", "vulnerable_version_range", "patched_versions"}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import minimal_user, opt_list, opt_str, repo_of, req_str
from nexus_agent.sandbox.github.handlers.repos import visible
from nexus_agent.sandbox.github.store import Repo

GHSA = re.compile(r"^GHSA(-[23456789cfghjmpqrvwx]{4}){3}$")
_RANGE = re.compile(r"^(>=|<=|>|<)?(\d{4}-\d{2}-\d{2}(?:T[\d:]+Z?)?)$")


def _vulnerabilities(r: Any) -> list[dict[str, Any]]:
    out = []
    for v in json.loads(r["vulnerabilities"]):
        out.append(
            {
                "package": {"ecosystem": v["ecosystem"], "name": v["package"]},
                "vulnerable_version_range": v.get("vulnerable_version_range", ""),
                "patched_versions": v.get("patched_versions", ""),
                "first_patched_version": v.get("patched_versions") or None,
                "vulnerable_functions": [],
            }
        )
    return out


def _identifiers(r: Any) -> list[dict[str, str]]:
    ids = [{"value": r["ghsa_id"], "type": "GHSA"}]
    if r["cve_id"]:
        ids.append({"value": r["cve_id"], "type": "CVE"})
    return ids


def global_json(r: Any) -> dict[str, Any]:
    cwes = json.loads(r["cwes"])
    return {
        "ghsa_id": r["ghsa_id"],
        "cve_id": r["cve_id"] or None,
        "url": f"{API_ROOT}/advisories/{r['ghsa_id']}",
        "html_url": f"{HTML_ROOT}/advisories/{r['ghsa_id']}",
        "repository_advisory_url": None,
        "summary": r["summary"],
        "description": r["description"],
        "type": r["type"],
        "severity": r["severity"],
        "identifiers": _identifiers(r),
        "references": [f"{HTML_ROOT}/advisories/{r['ghsa_id']}"],
        "published_at": r["published_at"],
        "updated_at": r["updated_at"],
        "github_reviewed_at": r["published_at"] if r["type"] == "reviewed" else None,
        "withdrawn_at": r["withdrawn_at"] or None,
        "vulnerabilities": _vulnerabilities(r),
        "cwes": [{"cwe_id": c, "name": ""} for c in cwes],
        "credits": [],
    }


def repository_json(sb: Sandbox, repo: Repo, r: Any) -> dict[str, Any]:
    cwes = json.loads(r["cwes"])
    return {
        "ghsa_id": r["ghsa_id"],
        "cve_id": r["cve_id"] or None,
        "url": f"{API_ROOT}/repos/{repo.full_name}/security-advisories/{r['ghsa_id']}",
        "html_url": f"{HTML_ROOT}/{repo.full_name}/security/advisories/{r['ghsa_id']}",
        "summary": r["summary"],
        "description": r["description"],
        "severity": r["severity"],
        "author": minimal_user(sb, r["author"]) if r["author"] else None,
        "identifiers": _identifiers(r),
        "state": r["state"],
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "published_at": r["published_at"] or None,
        "closed_at": r["updated_at"] if r["state"] == "closed" else None,
        "withdrawn_at": r["withdrawn_at"] or None,
        "vulnerabilities": _vulnerabilities(r),
        "cwe_ids": cwes,
        "cwes": [{"cwe_id": c, "name": ""} for c in cwes],
    }


def _date_filter(value: str, stamp: str, key: str) -> bool:
    """GitHub's date filters: ``2024-01-01``, ``>=2024-01-01``, ``2024-01-01..2024-06-30`` (inclusive)."""
    if not stamp:
        return False
    if ".." in value:
        lo, _, hi = value.partition("..")
        return (lo in ("", "*") or stamp[: len(lo)] >= lo) and (hi in ("", "*") or stamp[: len(hi)] <= hi)
    m = _RANGE.match(value)
    if m is None:
        raise ToolError(f"invalid {key}: {value!r} is not a date, a comparison like >=2024-01-01 or a range A..B")
    op, day = m.group(1) or "=", m.group(2)
    head = stamp[: len(day)]
    return {"=": head == day, ">=": head >= day, "<=": head <= day, ">": head > day, "<": head < day}[op]


def _affects(value: str, r: Any) -> bool:
    wanted = [a.strip().split("@", 1)[0].lower() for a in value.split(",") if a.strip()]
    names = {v["package"].lower() for v in json.loads(r["vulnerabilities"])}
    return any(w in names for w in wanted)


@tool("list_global_security_advisories")
def list_global_security_advisories(sb: Sandbox, args: dict[str, Any]) -> object:
    ghsa = opt_str(args, "ghsaId")
    if ghsa and not GHSA.match(ghsa):
        raise ToolError(f"invalid ghsaId: {ghsa!r} is not of the form GHSA-xxxx-xxxx-xxxx")
    rows = sb.store.rows("SELECT * FROM advisories WHERE repo_id IS NULL ORDER BY published_at DESC, id DESC")
    kind = opt_str(args, "type") or "reviewed"
    rows = [r for r in rows if r["type"] == kind]
    if ghsa:
        rows = [r for r in rows if r["ghsa_id"] == ghsa]
    for key, column in (("cveId", "cve_id"), ("severity", "severity")):
        value = opt_str(args, key)
        if value:
            rows = [r for r in rows if r[column].lower() == value.lower()]
    eco = opt_str(args, "ecosystem")
    if eco:
        rows = [r for r in rows if any(v["ecosystem"] == eco for v in json.loads(r["vulnerabilities"]))]
    cwes = {c.upper().removeprefix("CWE-") for c in opt_list(args, "cwes") or []}
    if cwes:
        rows = [r for r in rows if cwes & {c.upper().removeprefix("CWE-") for c in json.loads(r["cwes"])}]
    if args.get("isWithdrawn") is not None:
        rows = [r for r in rows if bool(r["withdrawn_at"]) == bool(args["isWithdrawn"])]
    affects = opt_str(args, "affects")
    if affects:
        rows = [r for r in rows if _affects(affects, r)]
    for key, column in (("published", "published_at"), ("updated", "updated_at")):
        value = opt_str(args, key)
        if value:
            rows = [r for r in rows if _date_filter(value, r[column], key)]
    modified = opt_str(args, "modified")
    if modified:
        rows = [
            r
            for r in rows
            if _date_filter(modified, r["published_at"], "modified")
            or _date_filter(modified, r["updated_at"], "modified")
        ]
    return [global_json(r) for r in rows]


@tool("get_global_security_advisory")
def get_global_security_advisory(sb: Sandbox, args: dict[str, Any]) -> object:
    ghsa = req_str(args, "ghsaId").strip()
    if not GHSA.match(ghsa):
        raise ToolError(f"invalid ghsaId: {ghsa!r} is not of the form GHSA-xxxx-xxxx-xxxx")
    row = sb.store.row("SELECT * FROM advisories WHERE repo_id IS NULL AND ghsa_id = ?", (ghsa,))
    if row is None:
        raise ToolError(f"failed to get advisory: 404 Not Found: no global advisory {ghsa}")
    return global_json(row)


def _sorted_repository_advisories(sb: Sandbox, repos: list[Repo], args: dict[str, Any]) -> list[dict[str, Any]]:
    by_id = {r.id: r for r in repos}
    marks = ",".join("?" * len(by_id))
    rows = sb.store.rows(f"SELECT * FROM advisories WHERE repo_id IN ({marks})", list(by_id)) if by_id else []
    state = opt_str(args, "state")
    if state:
        rows = [r for r in rows if r["state"] == state]
    column = {"created": "created_at", "updated": "updated_at", "published": "published_at"}[
        opt_str(args, "sort") or "created"
    ]
    rows.sort(key=lambda r: (r[column], r["id"]), reverse=(opt_str(args, "direction") or "desc") == "desc")
    return [repository_json(sb, by_id[r["repo_id"]], r) for r in rows]


@tool("list_repository_security_advisories")
def list_repository_security_advisories(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    return _sorted_repository_advisories(sb, [repo], args)


@tool("list_org_repository_security_advisories")
def list_org_repository_security_advisories(sb: Sandbox, args: dict[str, Any]) -> object:
    org = req_str(args, "org")
    user = sb.store.find_user(org)
    if user is None or user.type != "Organization":
        raise ToolError(f"failed to list organization repository advisories: 404 Not Found: organization {org}")
    repos = [r for r in sb.store.repos() if r.owner.lower() == org.lower() and visible(sb, r)]
    return _sorted_repository_advisories(sb, repos, args)
