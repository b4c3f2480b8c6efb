"""GitHub Actions: workflows, their runs, jobs, artifacts and logs (actions_list, actions_get,
actions_run_trigger, get_job_logs), and the check runs pull_request_read reports for a head commit.

The sandbox has no runner: a run that a call starts or re-runs stays ``queued`` (its jobs too) until cancelled,
which is what GitHub shows before a runner picks the run up. Completed runs, their jobs, logs and artifacts come
from a world. A re-run is a new attempt: the run's ``run_attempt`` goes up and its jobs get new rows for that
attempt (``workflow_jobs_filter`` ``latest`` lists the last attempt's, ``all`` every attempt's), as on GitHub.

``run_workflow`` reads the workflow file at ``ref`` from git: a workflow without a ``workflow_dispatch`` trigger
is refused with GitHub's message, and the new run's jobs are the file's jobs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import GitError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    drop_empty,
    minimal_user,
    node_id,
    opt_int,
    opt_str,
    repo_of,
    req_str,
)
from nexus_agent.sandbox.github.store import Repo

ACTIVE = ("queued", "in_progress", "waiting", "requested", "pending")
FAILED = ("failure", "cancelled", "timed_out")
DEFAULT_PER_PAGE = 30


@dataclass(frozen=True)
class Workflow:
    id: int
    repo_id: int
    name: str
    path: str
    state: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class Run:
    id: int
    workflow_id: int
    repo_id: int
    run_number: int
    run_attempt: int
    event: str
    status: str
    conclusion: str
    head_branch: str
    head_sha: str
    actor: str
    triggering_actor: str
    display_title: str
    inputs: str
    logs_deleted: bool
    created_at: str
    updated_at: str
    run_started_at: str


@dataclass(frozen=True)
class Job:
    """``steps``: JSON list of ``{"name", "status", "conclusion"}``; ``log``: the job's plain-text log."""

    id: int
    run_id: int
    name: str
    status: str
    conclusion: str
    run_attempt: int
    steps: str
    log: str
    created_at: str
    started_at: str
    completed_at: str


def _run(r: Any) -> Run:
    d = dict(r)
    d["logs_deleted"] = bool(d["logs_deleted"])
    return Run(**d)


def workflows_of(sb: Sandbox, repo: Repo) -> list[Workflow]:
    rows = sb.store.rows("SELECT * FROM workflows WHERE repo_id = ? ORDER BY id", (repo.id,))
    return [Workflow(**dict(r)) for r in rows]


def runs_of(sb: Sandbox, repo: Repo) -> list[Run]:
    """Newest first."""
    rows = sb.store.rows("SELECT * FROM workflow_runs WHERE repo_id = ? ORDER BY id DESC", (repo.id,))
    return [_run(r) for r in rows]


def jobs_of(sb: Sandbox, run: Run, *, latest: bool = True) -> list[Job]:
    rows = sb.store.rows("SELECT * FROM workflow_jobs WHERE run_id = ? ORDER BY run_attempt, id", (run.id,))
    jobs = [Job(**dict(r)) for r in rows]
    return [j for j in jobs if j.run_attempt == run.run_attempt] if latest else jobs


# -- writing (shared by the tools and worlds) -------------------------------------------------------


def add_workflow(sb: Sandbox, repo: Repo, name: str, path: str, state: str = "active") -> Workflow:
    now = sb.store.now()
    wid = sb.store.insert(
        "workflows", repo_id=repo.id, name=name, path=path, state=state, created_at=now, updated_at=now
    )
    return Workflow(wid, repo.id, name, path, state, now, now)


def add_run(
    sb: Sandbox,
    repo: Repo,
    wf: Workflow,
    *,
    event: str,
    branch: str,
    sha: str,
    actor: str,
    status: str,
    conclusion: str,
    title: str,
    inputs: dict[str, Any] | None = None,
) -> Run:
    row = sb.store.row(
        "SELECT COALESCE(MAX(run_number), 0) + 1 AS n FROM workflow_runs WHERE workflow_id = ?", (wf.id,)
    )
    now = sb.store.now()
    rid = sb.store.insert(
        "workflow_runs",
        workflow_id=wf.id,
        repo_id=repo.id,
        run_number=int(row["n"]) if row else 1,
        event=event,
        status=status,
        conclusion=conclusion,
        head_branch=branch,
        head_sha=sha,
        actor=actor,
        triggering_actor=actor,
        display_title=title,
        inputs=json.dumps(inputs or {}),
        created_at=now,
        updated_at=now,
        run_started_at=now,
    )
    return _run(sb.store.row("SELECT * FROM workflow_runs WHERE id = ?", (rid,)))


def add_job(
    sb: Sandbox,
    run: Run,
    name: str,
    *,
    status: str,
    conclusion: str = "",
    steps: list[dict[str, str]] | None = None,
    log: str = "",
    attempt: int | None = None,
) -> Job:
    """A job of ``run`` (its current attempt unless ``attempt``); a completed job gets start and end times."""
    created = sb.store.now()
    started = sb.store.now() if status != "queued" else ""
    completed = sb.store.now() if status == "completed" else ""
    steps = steps or []
    jid = sb.store.insert(
        "workflow_jobs",
        run_id=run.id,
        name=name,
        status=status,
        conclusion=conclusion,
        run_attempt=attempt or run.run_attempt,
        steps=json.dumps(steps),
        log=log or _default_log(name, steps, conclusion),
        created_at=created,
        started_at=started,
        completed_at=completed,
    )
    row = sb.store.row("SELECT * FROM workflow_jobs WHERE id = ?", (jid,))
    assert row is not None
    return Job(**dict(row))


def _default_log(name: str, steps: list[dict[str, str]], conclusion: str) -> str:
    lines = [f"Job {name}"]
    for step in steps:
        lines += [f"##[group]{step['name']}", "##[endgroup]"]
        if step.get("conclusion") == "failure":
            lines.append(f"##[error]Step '{step['name']}' failed")
    if conclusion:
        lines.append(f"Job completed with conclusion: {conclusion}")
    return "\n".join(lines) + "\n"


def add_artifact(sb: Sandbox, run: Run, name: str, size: int, expired: bool = False) -> int:
    return sb.store.insert(
        "workflow_artifacts",
        run_id=run.id,
        name=name,
        size_in_bytes=size,
        expired=int(expired),
        created_at=sb.store.now(),
    )


# -- shapes -----------------------------------------------------------------------------------------


def workflow_json(repo: Repo, w: Workflow) -> dict[str, Any]:
    return {
        "id": w.id,
        "node_id": node_id("W", w.id),
        "name": w.name,
        "path": w.path,
        "state": w.state,
        "created_at": w.created_at,
        "updated_at": w.updated_at,
        "url": f"{API_ROOT}/repos/{repo.full_name}/actions/workflows/{w.id}",
        "html_url": f"{HTML_ROOT}/{repo.full_name}/blob/{repo.default_branch}/{w.path}",
        "badge_url": f"{HTML_ROOT}/{repo.full_name}/workflows/{w.name}/badge.svg",
    }


def _workflow_by_id(sb: Sandbox, workflow_id: int) -> Workflow:
    row = sb.store.row("SELECT * FROM workflows WHERE id = ?", (workflow_id,))
    assert row is not None  # a run's workflow exists
    return Workflow(**dict(row))


def run_json(sb: Sandbox, repo: Repo, run: Run) -> dict[str, Any]:
    """MinimalWorkflowRun."""
    wf = _workflow_by_id(sb, run.workflow_id)
    message = ""
    if run.head_sha:
        try:
            message = sb.git(repo).commit(run.head_sha).message
        except GitError:  # a world's run may name a commit the repository does not have
            message = ""
    pulls = [
        i.number
        for i in sb.store.issues(repo.id, pulls=True)
        if i.pull and i.state == "open" and i.pull.head_ref == run.head_branch
    ]
    return drop_empty(
        {
            "id": run.id,
            "name": wf.name,
            "display_title": run.display_title,
            "workflow_id": wf.id,
            "run_number": run.run_number,
            "run_attempt": run.run_attempt,
            "event": run.event,
            "status": run.status,
            "conclusion": run.conclusion,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
            "head_commit": {"message": message} if message else None,
            "path": wf.path,
            "html_url": f"{HTML_ROOT}/{repo.full_name}/actions/runs/{run.id}",
            "pull_requests": sorted(pulls),
            "actor": minimal_user(sb, run.actor),
            "triggering_actor": minimal_user(sb, run.triggering_actor),
            "created_at": run.created_at,
            "updated_at": run.updated_at,
            "run_started_at": run.run_started_at,
        }
    )


def job_json(sb: Sandbox, repo: Repo, run: Run, job: Job, *, minimal: bool) -> dict[str, Any]:
    wf = _workflow_by_id(sb, run.workflow_id)
    steps = [
        drop_empty(
            {
                "name": s["name"],
                "status": s.get("status", job.status),
                "conclusion": s.get("conclusion", job.conclusion),
                "number": i,
                "started_at": job.started_at,
                "completed_at": job.completed_at,
            }
        )
        for i, s in enumerate(json.loads(job.steps), start=1)
    ]
    out = drop_empty(
        {
            "id": job.id,
            "run_id": run.id,
            "name": job.name,
            "workflow_name": wf.name,
            "status": job.status,
            "conclusion": job.conclusion,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
            "html_url": f"{HTML_ROOT}/{repo.full_name}/actions/runs/{run.id}/job/{job.id}",
            "run_attempt": job.run_attempt,
            "labels": ["ubuntu-latest"],
            "runner_name": "GitHub Actions 1" if job.started_at else "",
            "steps": steps,
            "created_at": job.created_at,
            "started_at": job.started_at,
            "completed_at": job.completed_at,
        }
    )
    if not minimal:
        out |= {
            "node_id": node_id("CR", job.id),
            "url": f"{API_ROOT}/repos/{repo.full_name}/actions/jobs/{job.id}",
            "run_url": f"{API_ROOT}/repos/{repo.full_name}/actions/runs/{run.id}",
            "check_run_url": f"{API_ROOT}/repos/{repo.full_name}/check-runs/{job.id}",
        }
    return out


def artifact_json(repo: Repo, run: Run, a: Any) -> dict[str, Any]:
    api = f"{API_ROOT}/repos/{repo.full_name}/actions/artifacts/{a['id']}"
    return {
        "id": a["id"],
        "node_id": node_id("MDg", a["id"]),
        "name": a["name"],
        "size_in_bytes": a["size_in_bytes"],
        "url": api,
        "archive_download_url": f"{api}/zip",
        "expired": bool(a["expired"]),
        "created_at": a["created_at"],
        "updated_at": a["created_at"],
        "workflow_run": {"id": run.id, "head_branch": run.head_branch, "head_sha": run.head_sha},
    }


def check_runs(sb: Sandbox, repo: Repo, sha: str) -> dict[str, Any]:
    """The check runs (Actions jobs of the runs' latest attempts) of commit ``sha``: pull_request_read's
    get_check_runs."""
    items = []
    for run in runs_of(sb, repo):
        if run.head_sha != sha:
            continue
        for job in jobs_of(sb, run):
            items.append(
                drop_empty(
                    {
                        "id": job.id,
                        "name": job.name,
                        "status": job.status,
                        "conclusion": job.conclusion,
                        "html_url": f"{HTML_ROOT}/{repo.full_name}/actions/runs/{run.id}/job/{job.id}",
                        "details_url": f"{HTML_ROOT}/{repo.full_name}/actions/runs/{run.id}/job/{job.id}",
                        "started_at": job.started_at,
                        "completed_at": job.completed_at,
                    }
                )
            )
    return {"total_count": len(items), "check_runs": items}


# -- addressing -------------------------------------------------------------------------------------


def _numeric(value: str | None, method: str) -> int:
    if not value:
        raise ToolError(f"missing required parameter for method {method}: resource_id")
    try:
        return int(value)
    except ValueError as e:
        raise ToolError(f"invalid resource_id, must be an integer for method {method}: {e}") from e


def find_workflow(sb: Sandbox, repo: Repo, ref: str, what: str) -> Workflow:
    """A workflow by numeric id, file name (``ci.yml``) or path (``.github/workflows/ci.yml``)."""
    for w in workflows_of(sb, repo):
        if ref in (str(w.id), w.path, w.path.rsplit("/", 1)[-1]):
            return w
    raise ToolError(f"failed to {what}: 404 Not Found: no workflow {ref!r} in {repo.full_name}")


def _find_run(sb: Sandbox, repo: Repo, run_id: int, what: str) -> Run:
    row = sb.store.row("SELECT * FROM workflow_runs WHERE id = ? AND repo_id = ?", (run_id, repo.id))
    if row is None:
        raise ToolError(f"failed to {what}: 404 Not Found: no workflow run {run_id} in {repo.full_name}")
    return _run(row)


def _find_job(sb: Sandbox, repo: Repo, job_id: int, what: str) -> tuple[Run, Job]:
    row = sb.store.row(
        "SELECT j.* FROM workflow_jobs j JOIN workflow_runs r ON r.id = j.run_id WHERE j.id = ? AND r.repo_id = ?",
        (job_id, repo.id),
    )
    if row is None:
        raise ToolError(f"failed to {what}: 404 Not Found: no workflow job {job_id} in {repo.full_name}")
    job = Job(**dict(row))
    return _find_run(sb, repo, job.run_id, what), job


def _page(items: list[Any], args: dict[str, Any]) -> list[Any]:
    page, per_page = opt_int(args, "page") or 1, opt_int(args, "per_page") or DEFAULT_PER_PAGE
    return items[(page - 1) * per_page : page * per_page]


# -- actions_list -----------------------------------------------------------------------------------


def _list_workflows(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    flows = workflows_of(sb, repo)
    return {"total_count": len(flows), "workflows": [workflow_json(repo, w) for w in _page(flows, args)]}


def _list_runs(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    runs = runs_of(sb, repo)
    resource = opt_str(args, "resource_id")
    if resource:
        wf = find_workflow(sb, repo, resource, "list workflow runs")
        runs = [r for r in runs if r.workflow_id == wf.id]
    flt = args.get("workflow_runs_filter") or {}
    if flt.get("actor"):
        runs = [r for r in runs if r.actor.lower() == str(flt["actor"]).lower()]
    if flt.get("branch"):
        runs = [r for r in runs if r.head_branch == flt["branch"]]
    if flt.get("event"):
        runs = [r for r in runs if r.event == flt["event"]]
    if flt.get("status"):
        # GitHub's status filter also takes a conclusion; the tool offers only statuses.
        runs = [r for r in runs if flt["status"] in (r.status, r.conclusion)]
    return {"total_count": len(runs), "workflow_runs": [run_json(sb, repo, r) for r in _page(runs, args)]}


def _list_jobs(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    run = _find_run(sb, repo, _numeric(opt_str(args, "resource_id"), "list_workflow_jobs"), "list workflow jobs")
    latest = ((args.get("workflow_jobs_filter") or {}).get("filter") or "latest") == "latest"
    jobs = jobs_of(sb, run, latest=latest)
    items = [job_json(sb, repo, run, j, minimal=True) for j in _page(jobs, args)]
    return {"jobs": {"total_count": len(jobs), "jobs": items}}


def _list_artifacts(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    run_id = _numeric(opt_str(args, "resource_id"), "list_workflow_run_artifacts")
    run = _find_run(sb, repo, run_id, "list workflow run artifacts")
    rows = sb.store.rows("SELECT * FROM workflow_artifacts WHERE run_id = ? ORDER BY id", (run.id,))
    return {"total_count": len(rows), "artifacts": [artifact_json(repo, run, a) for a in _page(rows, args)]}


_LISTERS: dict[str, Callable[[Sandbox, Repo, dict[str, Any]], object]] = {
    "list_workflows": _list_workflows,
    "list_workflow_runs": _list_runs,
    "list_workflow_jobs": _list_jobs,
    "list_workflow_run_artifacts": _list_artifacts,
}


@tool("actions_list")
def actions_list(sb: Sandbox, args: dict[str, Any]) -> object:
    return _LISTERS[req_str(args, "method")](sb, repo_of(sb, args), args)


# -- actions_get ------------------------------------------------------------------------------------


def _duration_ms(start: str, end: str) -> int:
    if not start or not end:
        return 0
    parse = datetime.fromisoformat
    return int((parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))).total_seconds() * 1000)


def _get(sb: Sandbox, repo: Repo, method: str, resource: str) -> object:
    if method == "get_workflow":
        return workflow_json(repo, find_workflow(sb, repo, resource, "get workflow"))
    number = _numeric(resource, method)
    if method == "get_workflow_job":
        run, job = _find_job(sb, repo, number, "get workflow job")
        return job_json(sb, repo, run, job, minimal=False)
    if method == "download_workflow_run_artifact":
        a = sb.store.row(
            "SELECT a.* FROM workflow_artifacts a JOIN workflow_runs r ON r.id = a.run_id "
            "WHERE a.id = ? AND r.repo_id = ?",
            (number, repo.id),
        )
        if a is None:
            raise ToolError(
                f"failed to get artifact download URL: 404 Not Found: no artifact {number} in {repo.full_name}"
            )
        if a["expired"]:
            raise ToolError(f"failed to get artifact download URL: 410 Gone: artifact {number} has expired")
        return {
            "download_url": f"https://pipelines.actions.githubusercontent.com/sandbox/{repo.full_name}/artifacts/{number}.zip",
            "message": "Artifact is available for download",
            "note": "The download_url provides a download link for the artifact as a ZIP archive. The link is "
            "temporary and expires after a short time.",
            "artifact_id": number,
        }
    what = {
        "get_workflow_run": "get workflow run",
        "get_workflow_run_usage": "get workflow run usage",
        "get_workflow_run_logs_url": "get workflow run logs",
    }[method]
    run = _find_run(sb, repo, number, what)
    if method == "get_workflow_run":
        return run_json(sb, repo, run)
    if method == "get_workflow_run_usage":
        jobs = jobs_of(sb, run)
        runs = [{"job_id": j.id, "duration_ms": _duration_ms(j.started_at, j.completed_at)} for j in jobs]
        total = sum(r["duration_ms"] for r in runs)
        return {
            "billable": {"UBUNTU": {"total_ms": total, "jobs": len(jobs), "job_runs": runs}},
            "run_duration_ms": _duration_ms(run.run_started_at, run.updated_at) if run.status == "completed" else 0,
        }
    if run.logs_deleted:
        raise ToolError(f"failed to get workflow run logs: 410 Gone: the logs of workflow run {run.id} were deleted")
    if run.status != "completed":
        raise ToolError(f"failed to get workflow run logs: 404 Not Found: workflow run {run.id} has not finished")
    return {
        "logs_url": f"https://pipelines.actions.githubusercontent.com/sandbox/{repo.full_name}/runs/{run.id}/logs.zip",
        "message": "Workflow run logs are available for download",
        "note": "The logs_url provides a download link for the complete workflow run logs as a ZIP archive. You can "
        "download this archive to extract and examine individual job logs.",
        "warning": "This downloads ALL logs as a ZIP file which can be large and expensive. For debugging failed "
        "jobs, consider using get_job_logs with failed_only=true and run_id instead.",
        "optimization_tip": "Use: get_job_logs with parameters {run_id: "
        f"{run.id}, failed_only: true}} for more efficient failed job debugging",
    }


@tool("actions_get")
def actions_get(sb: Sandbox, args: dict[str, Any]) -> object:
    return _get(sb, repo_of(sb, args), req_str(args, "method"), req_str(args, "resource_id"))


# -- logs -------------------------------------------------------------------------------------------


def _job_logs(sb: Sandbox, repo: Repo, run: Run, job: Job, args: dict[str, Any], *, named: bool) -> dict[str, Any]:
    if run.logs_deleted:
        raise ToolError(f"failed to get job logs for job {job.id}: 410 Gone: the logs of run {run.id} were deleted")
    if job.status != "completed":
        raise ToolError(f"failed to get job logs for job {job.id}: 404 Not Found: job {job.id} has not finished")
    out: dict[str, Any] = {"job_id": job.id}
    if named:
        out["job_name"] = job.name
    if args.get("return_content"):
        tail = opt_int(args, "tail_lines") or 500
        lines = job.log.splitlines()
        out |= {
            "logs_content": "\n".join(lines[-tail:] if tail > 0 else lines),
            "message": "Job logs content retrieved successfully",
            "original_length": len(lines),
        }
    else:
        out |= {
            "logs_url": f"https://pipelines.actions.githubusercontent.com/sandbox/{repo.full_name}/jobs/{job.id}/logs",
            "message": "Job logs are available for download",
            "note": "The logs_url provides a download link for the individual job logs in plain text format. Use "
            "return_content=true to get the actual log content.",
        }
    return out


@tool("get_job_logs")
def get_job_logs(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    job_id, run_id, failed_only = opt_int(args, "job_id"), opt_int(args, "run_id"), bool(args.get("failed_only"))
    if failed_only and not run_id:
        raise ToolError("run_id is required when failed_only is true")
    if not failed_only and not job_id:
        raise ToolError("job_id is required when failed_only is false")
    if failed_only and run_id:
        run = _find_run(sb, repo, run_id, "list workflow jobs")
        jobs = jobs_of(sb, run)
        failed = [j for j in jobs if j.conclusion == "failure"]
        if not failed:
            return {
                "message": "No failed jobs found in this workflow run",
                "run_id": run.id,
                "total_jobs": len(jobs),
                "failed_jobs": 0,
            }
        logs = []
        for j in failed:
            try:
                logs.append(_job_logs(sb, repo, run, j, args, named=True))
            except ToolError as e:
                logs.append({"job_id": j.id, "job_name": j.name, "error": str(e)})
        content = bool(args.get("return_content"))
        return {
            "message": f"Retrieved logs for {len(failed)} failed jobs",
            "run_id": run.id,
            "total_jobs": len(jobs),
            "failed_jobs": len(failed),
            "logs": logs,
            "return_format": {"content": content, "urls": not content},
        }
    run, job = _find_job(sb, repo, int(job_id or 0), "get job logs")
    return _job_logs(sb, repo, run, job, args, named=False)


# -- actions_run_trigger ----------------------------------------------------------------------------

_JOB_KEY = re.compile(r"^(\s+)([A-Za-z_][\w-]*):\s*$")


def workflow_jobs(text: str) -> list[str]:
    """Job names of a workflow file: each job's ``name:`` or else its id (a line-based reading of the YAML)."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if re.match(r"^jobs:\s*$", line))
    except StopIteration:
        return []
    names: list[str] = []
    indent: str | None = None
    for line in lines[start + 1 :]:
        if line.strip() and not line.startswith((" ", "\t")):
            break  # the next top-level key
        m = _JOB_KEY.match(line)
        if m and (indent is None or m.group(1) == indent):
            indent = m.group(1)
            names.append(m.group(2))
        elif indent is not None and names and re.match(rf"^{indent}\s+name:\s*(.+)$", line):
            named = re.match(rf"^{indent}\s+name:\s*(.+)$", line)
            assert named is not None
            names[-1] = named.group(1).strip().strip("'\"")
    return names


def _run_workflow(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    workflow_ref, ref = opt_str(args, "workflow_id"), opt_str(args, "ref")
    if not workflow_ref:
        raise ToolError("workflow_id is required for run_workflow action")
    if not ref:
        raise ToolError("ref is required for run_workflow action")
    wf = find_workflow(sb, repo, workflow_ref, "run workflow")
    git = sb.git(repo)
    sha = git.resolve(f"refs/heads/{ref}") or git.resolve(f"refs/tags/{ref}")
    if sha is None:
        raise ToolError(f"failed to run workflow: 422 Unprocessable Entity: No ref found for: {ref}")
    entry = git.entry(sha, wf.path)
    if entry is None:
        raise ToolError(f"failed to run workflow: 404 Not Found: {wf.path} does not exist at {ref}")
    text = git.read_blob(entry.sha).decode("utf-8", errors="replace")
    if "workflow_dispatch" not in text:
        raise ToolError(
            "failed to run workflow: 422 Unprocessable Entity: Workflow does not have 'workflow_dispatch' trigger"
        )
    if wf.state != "active":
        raise ToolError(f"failed to run workflow: 422 Unprocessable Entity: workflow {wf.name!r} is {wf.state}")
    inputs = args.get("inputs") or {}
    branch = ref if git.branch_sha(ref) else ""
    run = add_run(
        sb,
        repo,
        wf,
        event="workflow_dispatch",
        branch=branch,
        sha=sha,
        actor=sb.me,
        status="queued",
        conclusion="",
        title=wf.name,
        inputs=inputs,
    )
    for name in workflow_jobs(text) or ["build"]:
        add_job(sb, run, name, status="queued")
    return {
        "message": "Workflow run has been queued",
        "workflow_type": "workflow_id" if workflow_ref.isdigit() else "workflow_file",
        "workflow_id": workflow_ref,
        "ref": ref,
        "inputs": inputs,
        "status": "204 No Content",
        "status_code": 204,
    }


def _new_attempt(sb: Sandbox, run: Run, requeue: Callable[[Job], bool]) -> None:
    """Start attempt ``run_attempt + 1``: jobs ``requeue`` picks are queued again, the others keep their results."""
    old = jobs_of(sb, run)
    now = sb.store.now()
    sb.store.update(
        "workflow_runs",
        run.id,
        run_attempt=run.run_attempt + 1,
        status="queued",
        conclusion="",
        updated_at=now,
        run_started_at=now,
    )
    fresh = _run(sb.store.row("SELECT * FROM workflow_runs WHERE id = ?", (run.id,)))
    for j in old:
        steps = json.loads(j.steps)
        if requeue(j):
            add_job(sb, fresh, j.name, status="queued", steps=[{"name": s["name"]} for s in steps])
        else:
            add_job(sb, fresh, j.name, status=j.status, conclusion=j.conclusion, steps=steps, log=j.log)


def _rerun(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    run = _find_run(sb, repo, _run_id(args), "rerun workflow run")
    if run.status != "completed":
        raise ToolError(f"failed to rerun workflow run: 403 Forbidden: workflow run {run.id} is still {run.status}")
    _new_attempt(sb, run, lambda j: True)
    return _trigger_result("Workflow run has been queued for re-run", run, "201 Created", 201)


def _rerun_failed(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    run = _find_run(sb, repo, _run_id(args), "rerun failed jobs")
    if run.status != "completed":
        raise ToolError(f"failed to rerun failed jobs: 403 Forbidden: workflow run {run.id} is still {run.status}")
    if not any(j.conclusion in FAILED for j in jobs_of(sb, run)):
        raise ToolError(
            f"failed to rerun failed jobs: 422 Unprocessable Entity: workflow run {run.id} has no failed jobs"
        )
    _new_attempt(sb, run, lambda j: j.conclusion in FAILED)
    return _trigger_result("Failed jobs have been queued for re-run", run, "201 Created", 201)


def _cancel(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    run = _find_run(sb, repo, _run_id(args), "cancel workflow run")
    if run.status not in ACTIVE:
        raise ToolError(
            f"failed to cancel workflow run: 409 Conflict: Cannot cancel a workflow run that is {run.status}."
        )
    now = sb.store.now()
    for j in jobs_of(sb, run):
        if j.status != "completed":
            sb.store.update("workflow_jobs", j.id, status="completed", conclusion="cancelled", completed_at=now)
    sb.store.update("workflow_runs", run.id, status="completed", conclusion="cancelled", updated_at=now)
    return _trigger_result("Workflow run has been cancelled", run, "202 Accepted", 202)


def _delete_logs(sb: Sandbox, repo: Repo, args: dict[str, Any]) -> object:
    run = _find_run(sb, repo, _run_id(args), "delete workflow run logs")
    if run.status != "completed":
        raise ToolError(
            f"failed to delete workflow run logs: 500 Internal Server Error: workflow run {run.id} is still running"
        )
    sb.store.update("workflow_runs", run.id, logs_deleted=1)
    sb.store.execute("UPDATE workflow_jobs SET log = '' WHERE run_id = ?", (run.id,))
    return _trigger_result("Workflow run logs have been deleted", run, "204 No Content", 204)


def _run_id(args: dict[str, Any]) -> int:
    run_id = opt_int(args, "run_id")
    if run_id is None:
        raise ToolError("missing required parameter: run_id")
    return run_id


def _trigger_result(message: str, run: Run, status: str, code: int) -> dict[str, Any]:
    return {"message": message, "run_id": run.id, "status": status, "status_code": code}


_TRIGGERS: dict[str, Callable[[Sandbox, Repo, dict[str, Any]], object]] = {
    "run_workflow": _run_workflow,
    "rerun_workflow_run": _rerun,
    "rerun_failed_jobs": _rerun_failed,
    "cancel_workflow_run": _cancel,
    "delete_workflow_run_logs": _delete_logs,
}


@tool("actions_run_trigger")
def actions_run_trigger(sb: Sandbox, args: dict[str, Any]) -> object:
    return _TRIGGERS[req_str(args, "method")](sb, repo_of(sb, args), args)
