"""Copilot: assigning the coding agent to an issue, and requesting a Copilot code review of a pull request.

Assigning Copilot does what the agent's first minute does on GitHub: Copilot becomes an assignee, a branch
``copilot/fix-<issue>`` is made from ``base_ref`` with one empty "Initial plan" commit, and a draft pull request
"[WIP] <issue title>" that fixes the issue is opened by Copilot. No code is written afterwards (there is no agent
behind the sandbox), so the pull request stays a draft with that one commit. Assigning again is idempotent: the
existing pull request is reported. ``copilot_tasks`` records each assignment or suggestion with its context.

A world can turn Copilot off for a repository (``repo_settings.copilot = off``); the tools then answer with the
message the real server gives when Copilot is not an assignable actor.
"""

from __future__ import annotations

from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import ZERO_SHA, Signature
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    get_issue,
    get_pull,
    issue_html_url,
    opt_str,
    repo_of,
    req_int,
    req_str,
)
from nexus_agent.sandbox.github.handlers.pulls import open_pull
from nexus_agent.sandbox.github.store import Issue, Repo

COPILOT = "Copilot"  # the assignee and reviewer login GitHub shows for the agent
# The agent's commit identity on GitHub.
COPILOT_SIGNATURE = ("copilot-swe-agent[bot]", "198982749+Copilot@users.noreply.github.com")
UNAVAILABLE = (
    "copilot isn't available as an assignee for this issue. Please inform the user to visit "
    "https://docs.github.com/en/copilot/concepts/agents/cloud-agent/about-cloud-agent for more information."
)
PENDING_NOTE = (
    "The pull request may still be in progress. Once created, the PR number can be used to check job status, "
    "or check the issue timeline for updates."
)


def copilot_enabled(sb: Sandbox, repo: Repo) -> bool:
    row = sb.store.row("SELECT value FROM repo_settings WHERE repo_id = ? AND key = 'copilot'", (repo.id,))
    return row is None or row["value"] != "off"


def _existing_pull(sb: Sandbox, repo: Repo, issue: Issue) -> Issue | None:
    row = sb.store.row(
        "SELECT pull_issue_id FROM copilot_tasks WHERE issue_id = ? AND pull_issue_id IS NOT NULL ORDER BY id DESC",
        (issue.id,),
    )
    if row is None:
        return None
    found = sb.store.row("SELECT number FROM issues WHERE id = ?", (row["pull_issue_id"],))
    return None if found is None else sb.store.issue(repo.id, found["number"])


def _launch(sb: Sandbox, repo: Repo, issue: Issue, base_ref: str | None, instructions: str) -> Issue:
    """Assign Copilot and open its draft pull request (or return the one an earlier assignment opened)."""
    if COPILOT not in issue.assignees:
        sb.store.set_assignees(issue.id, [*issue.assignees, COPILOT])
    existing = _existing_pull(sb, repo, issue)
    if existing is not None:
        return existing
    git = sb.git(repo)
    base = base_ref or repo.default_branch
    base_sha = git.branch_sha(base)
    if base_sha is None:
        raise ToolError(f"422 Validation Failed: 'base_ref' {base!r} is not a branch of {repo.full_name}")
    branch = f"copilot/fix-{issue.number}"
    suffix = 1
    while git.branch_sha(branch) is not None:
        suffix += 1
        branch = f"copilot/fix-{issue.number}-{suffix}"
    git.set_ref(f"refs/heads/{branch}", base_sha, ZERO_SHA)
    agent = Signature(*COPILOT_SIGNATURE, sb.store.now())
    git.commit_changes(branch, {}, "Initial plan\n", agent)
    body = f"Fixes #{issue.number}" + (f"\n\n{instructions}" if instructions else "")
    pull = open_pull(
        sb, repo, title=f"[WIP] {issue.title}", body=body, head=branch, base=base, author=COPILOT, draft=True
    )
    sb.store.set_assignees(pull.id, [COPILOT, sb.me])
    return pull


def _record(sb: Sandbox, issue: Issue, kind: str, args: dict[str, Any], pull: Issue | None) -> None:
    sb.store.insert(
        "copilot_tasks",
        issue_id=issue.id,
        kind=kind,
        base_ref=opt_str(args, "base_ref") or "",
        custom_instructions=opt_str(args, "custom_instructions") or "",
        rationale=opt_str(args, "rationale") or "",
        confidence=opt_str(args, "confidence") or "",
        pull_issue_id=None if pull is None else pull.id,
        created_at=sb.store.now(),
    )


def _issue_for_copilot(sb: Sandbox, args: dict[str, Any]) -> tuple[Repo, Issue]:
    repo = repo_of(sb, args)
    issue = get_issue(sb, repo, req_int(args, "issue_number"))
    if issue.pull is not None:
        raise ToolError(f"422 Validation Failed: {repo.full_name}#{issue.number} is a pull request, not an issue")
    if not copilot_enabled(sb, repo):
        raise ToolError(UNAVAILABLE)
    return repo, issue


def _result(repo: Repo, issue: Issue, pull: Issue) -> dict[str, Any]:
    return {
        "message": "successfully assigned copilot to issue - pull request created",
        "issue_number": issue.number,
        "issue_url": issue_html_url(repo, issue),
        "owner": repo.owner,
        "repo": repo.name,
        "pull_request": {
            "number": pull.number,
            "url": issue_html_url(repo, pull),
            "title": pull.title,
            "state": pull.state.upper(),
        },
    }


@tool("assign_copilot_to_issue")
def assign_copilot_to_issue(sb: Sandbox, args: dict[str, Any]) -> object:
    repo, issue = _issue_for_copilot(sb, args)
    pull = _launch(sb, repo, issue, opt_str(args, "base_ref"), opt_str(args, "custom_instructions") or "")
    _record(sb, issue, "assignment", args, pull)
    return _result(repo, issue, pull)


@tool("assign_copilot_to_issue_with_intent")
def assign_copilot_to_issue_with_intent(sb: Sandbox, args: dict[str, Any]) -> object:
    rationale = req_str(args, "rationale").strip()
    if not rationale:
        raise ToolError("rationale is required")
    if len(rationale) > 280:
        raise ToolError("rationale must be 280 characters or less")
    confidence = req_str(args, "confidence").strip().upper()
    if confidence not in ("LOW", "MEDIUM", "HIGH"):
        raise ToolError("confidence must be one of: LOW, MEDIUM, HIGH")
    repo, issue = _issue_for_copilot(sb, args)
    if args.get("is_suggestion"):
        # A pending intent: nothing is launched and nobody is assigned until someone approves it.
        _record(sb, issue, "suggestion", args, None)
        return {
            "issue_number": issue.number,
            "issue_url": issue_html_url(repo, issue),
            "owner": repo.owner,
            "repo": repo.name,
            "is_suggestion": True,
            "message": "recorded pending copilot assignment suggestion",
        }
    pull = _launch(sb, repo, issue, opt_str(args, "base_ref"), opt_str(args, "custom_instructions") or "")
    _record(sb, issue, "assignment", args, pull)
    return _result(repo, issue, pull) | {"is_suggestion": False}


@tool("request_copilot_review")
def request_copilot_review(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue, _ = get_pull(sb, repo, req_int(args, "pullNumber"))
    if not copilot_enabled(sb, repo):
        raise ToolError(
            "failed to request copilot review: 422 Unprocessable Entity: Copilot code review is not enabled for "
            f"{repo.full_name}"
        )
    if issue.state != "open":
        raise ToolError(
            f"failed to request copilot review: 422 Unprocessable Entity: pull request #{issue.number} is closed"
        )
    sb.store.set_reviewers(issue.id, [COPILOT])
    # The real tool answers with an empty text on success.
    return ""
