"""GitHub Actions: workflows, runs, jobs, artifacts, logs and every actions_run_trigger method, through the real
server, checked on the store."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, store_of, world_session

DOCK = {"owner": "harbor-io", "repo": "dock"}


def _run(data: Path, run_id: int) -> dict[str, object]:
    with store_of(data) as st:
        row = st.row("SELECT status, conclusion, run_attempt, logs_deleted FROM workflow_runs WHERE id = ?", (run_id,))
        return dict(row)


def _jobs(data: Path, run_id: int) -> list[tuple[str, int, str, str]]:
    with store_of(data) as st:
        rows = st.rows(
            "SELECT name, run_attempt, status, conclusion FROM workflow_jobs WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [(r["name"], r["run_attempt"], r["status"], r["conclusion"]) for r in rows]


async def test_reading_workflows_runs_jobs_and_logs(harbor: Path) -> None:
    async with world_session(harbor) as s:
        flows = await call_ok(s, "actions_list", method="list_workflows", **DOCK)
        assert [(w["id"], w["name"], w["path"]) for w in flows["workflows"]] == [
            (1, "CI", ".github/workflows/ci.yml"),
            (2, "Deploy", ".github/workflows/deploy.yml"),
        ]
        runs = await call_ok(s, "actions_list", method="list_workflow_runs", **DOCK, resource_id="ci.yml")
        assert [(r["id"], r["status"], r.get("conclusion")) for r in runs["workflow_runs"]] == [
            (3, "in_progress", None),
            (2, "completed", "failure"),
            (1, "completed", "success"),
        ]
        failed = await call_ok(
            s,
            "actions_list",
            method="list_workflow_runs",
            **DOCK,
            workflow_runs_filter={"branch": "feat/login", "actor": "tomas-berg"},
        )
        assert [r["id"] for r in failed["workflow_runs"]] == [2] and failed["workflow_runs"][0]["pull_requests"] == [5]
        jobs = await call_ok(s, "actions_list", method="list_workflow_jobs", **DOCK, resource_id="2")
        assert [(j["name"], j["conclusion"]) for j in jobs["jobs"]["jobs"]] == [
            ("test", "failure"),
            ("lint", "success"),
        ]
        assert [st["conclusion"] for st in jobs["jobs"]["jobs"][0]["steps"]] == ["success", "failure"]
        artifacts = await call_ok(s, "actions_list", method="list_workflow_run_artifacts", **DOCK, resource_id="1")
        assert [(a["name"], a["size_in_bytes"]) for a in artifacts["artifacts"]] == [("coverage", 2048)]
        wf = await call_ok(s, "actions_get", method="get_workflow", **DOCK, resource_id="deploy.yml")
        assert wf["name"] == "Deploy"
        job = await call_ok(s, "actions_get", method="get_workflow_job", **DOCK, resource_id="3")
        assert job["name"] == "test" and job["run_id"] == 2
        usage = await call_ok(s, "actions_get", method="get_workflow_run_usage", **DOCK, resource_id="1")
        assert usage["billable"]["UBUNTU"]["jobs"] == 2 and usage["billable"]["UBUNTU"]["total_ms"] > 0
        logs_url = await call_ok(s, "actions_get", method="get_workflow_run_logs_url", **DOCK, resource_id="1")
        assert logs_url["message"] == "Workflow run logs are available for download"
        download = await call_ok(s, "actions_get", method="download_workflow_run_artifact", **DOCK, resource_id="1")
        assert download["artifact_id"] == 1
        err = await call_err(s, "actions_get", method="download_workflow_run_artifact", **DOCK, resource_id="2")
        assert "410" in err and "expired" in err
        content = await call_ok(
            s, "get_job_logs", **DOCK, run_id=2, failed_only=True, return_content=True, tail_lines=2
        )
        assert content["failed_jobs"] == 1 and content["total_jobs"] == 2
        assert content["logs"][0]["logs_content"] == "FAILED tests/test_app.py::test_login\n1 failed, 2 passed"
        single = await call_ok(s, "get_job_logs", **DOCK, job_id=4)
        assert single["message"] == "Job logs are available for download"
        checks = await call_ok(s, "pull_request_read", method="get_check_runs", **DOCK, pullNumber=5)
        assert [(c["name"], c["conclusion"]) for c in checks["check_runs"]] == [
            ("test", "failure"),
            ("lint", "success"),
        ]
        err = await call_err(s, "actions_get", method="get_workflow_run", **DOCK, resource_id="abc")
        assert err.startswith("invalid resource_id, must be an integer for method get_workflow_run")
        err = await call_err(s, "get_job_logs", **DOCK, failed_only=True)
        assert err == "run_id is required when failed_only is true"


async def test_run_trigger_methods(harbor: Path) -> None:
    async with world_session(harbor) as s:
        queued = await call_ok(
            s,
            "actions_run_trigger",
            method="run_workflow",
            **DOCK,
            workflow_id="ci.yml",
            ref="feat/login",
            inputs={"debug": "true"},
        )
        assert queued["message"] == "Workflow run has been queued" and queued["workflow_type"] == "workflow_file"
        with store_of(harbor) as st:
            new = st.row("SELECT id, event, status, head_branch, inputs FROM workflow_runs ORDER BY id DESC LIMIT 1")
        assert (new["event"], new["status"], new["head_branch"], new["inputs"]) == (
            "workflow_dispatch",
            "queued",
            "feat/login",
            '{"debug": "true"}',
        )
        assert [(name, status) for name, _, status, _ in _jobs(harbor, new["id"])] == [
            ("test", "queued"),
            ("lint", "queued"),
        ]
        err = await call_err(
            s, "actions_run_trigger", method="run_workflow", **DOCK, workflow_id="deploy.yml", ref="main"
        )
        assert "Workflow does not have 'workflow_dispatch' trigger" in err
        err = await call_err(s, "actions_run_trigger", method="run_workflow", **DOCK, workflow_id="ci.yml", ref="nope")
        assert "No ref found for: nope" in err

        cancelled = await call_ok(s, "actions_run_trigger", method="cancel_workflow_run", **DOCK, run_id=new["id"])
        assert cancelled["status_code"] == 202
        assert _run(harbor, new["id"])["conclusion"] == "cancelled"
        assert {c for *_, c in _jobs(harbor, new["id"])} == {"cancelled"}
        err = await call_err(s, "actions_run_trigger", method="cancel_workflow_run", **DOCK, run_id=1)
        assert "409" in err

        await call_ok(s, "actions_run_trigger", method="rerun_failed_jobs", **DOCK, run_id=2)
        assert _run(harbor, 2)["run_attempt"] == 2 and _run(harbor, 2)["status"] == "queued"
        assert [j for j in _jobs(harbor, 2) if j[1] == 2] == [
            ("test", 2, "queued", ""),
            ("lint", 2, "completed", "success"),
        ]
        latest = await call_ok(s, "actions_list", method="list_workflow_jobs", **DOCK, resource_id="2")
        every = await call_ok(
            s,
            "actions_list",
            method="list_workflow_jobs",
            **DOCK,
            resource_id="2",
            workflow_jobs_filter={"filter": "all"},
        )
        assert (latest["jobs"]["total_count"], every["jobs"]["total_count"]) == (2, 4)
        err = await call_err(s, "actions_run_trigger", method="rerun_failed_jobs", **DOCK, run_id=1)
        assert "no failed jobs" in err

        rerun = await call_ok(s, "actions_run_trigger", method="rerun_workflow_run", **DOCK, run_id=1)
        assert rerun["message"] == "Workflow run has been queued for re-run"
        assert _run(harbor, 1)["run_attempt"] == 2
        err = await call_err(s, "actions_run_trigger", method="rerun_workflow_run", **DOCK, run_id=3)
        assert "is still in_progress" in err

        await call_ok(s, "actions_run_trigger", method="cancel_workflow_run", **DOCK, run_id=1)
        deleted = await call_ok(s, "actions_run_trigger", method="delete_workflow_run_logs", **DOCK, run_id=1)
        assert deleted["message"] == "Workflow run logs have been deleted"
        assert _run(harbor, 1)["logs_deleted"] == 1
        err = await call_err(s, "get_job_logs", **DOCK, job_id=1)
        assert "410" in err
        err = await call_err(s, "actions_run_trigger", method="rerun_workflow_run", **DOCK)
        assert err == "missing required parameter: run_id"
