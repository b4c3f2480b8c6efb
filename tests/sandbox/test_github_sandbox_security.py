"""Code scanning, Dependabot and secret scanning alerts, code quality findings and security advisories (all
read-only), through the real server."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, world_session

DOCK = {"owner": "harbor-io", "repo": "dock"}


async def test_alerts(harbor: Path) -> None:
    async with world_session(harbor) as s:
        open_alerts = await call_ok(s, "list_code_scanning_alerts", **DOCK)
        assert [(a["number"], a["rule"]["id"]) for a in open_alerts] == [(1, "py/sql-injection")]
        closed = await call_ok(s, "list_code_scanning_alerts", **DOCK, state="closed")
        assert [a["state"] for a in closed] == ["fixed"]
        high = await call_ok(s, "list_code_scanning_alerts", **DOCK, severity="high", ref="main", tool_name="codeql")
        assert [a["number"] for a in high] == [1]
        one = await call_ok(s, "get_code_scanning_alert", **DOCK, alertNumber=1)
        assert one["most_recent_instance"]["location"] == {"path": "src/app.py", "start_line": 2, "end_line": 2}
        dependabot = await call_ok(s, "list_dependabot_alerts", **DOCK)
        assert [a["dependency"]["package"]["name"] for a in dependabot["alerts"]] == ["requests"]
        assert dependabot["pageInfo"] == {"hasNextPage": False, "hasPreviousPage": False}
        dismissed = await call_ok(s, "get_dependabot_alert", **DOCK, alertNumber=2)
        assert (dismissed["state"], dismissed["dismissed_reason"]) == ("dismissed", "tolerable_risk")
        secrets = await call_ok(s, "list_secret_scanning_alerts", **DOCK, secret_type="github_personal_access_token")
        assert [a["secret_type_display_name"] for a in secrets] == ["GitHub Personal Access Token"]
        assert await call_ok(s, "list_secret_scanning_alerts", **DOCK, state="resolved") == []
        finding = await call_ok(s, "get_code_quality_finding", **DOCK, findingNumber=1)
        assert (finding["rule"]["id"], finding["message"]["text"]) == ("py/too-complex", "Function is too complex")
        err = await call_err(s, "get_secret_scanning_alert", **DOCK, alertNumber=5)
        assert "404" in err
        err = await call_err(s, "get_code_scanning_alert", owner="harbor-io", repo="nope", alertNumber=1)
        assert err.startswith("failed to get alert: 404")


async def test_advisories(harbor: Path) -> None:
    async with world_session(harbor) as s:
        reviewed = await call_ok(s, "list_global_security_advisories")
        assert [a["ghsa_id"] for a in reviewed] == ["GHSA-j8r2-6x86-q33q"]
        malware = await call_ok(s, "list_global_security_advisories", type="malware", ecosystem="npm")
        assert [a["summary"] for a in malware] == ["Malicious package evil-dock"]
        by_package = await call_ok(s, "list_global_security_advisories", affects="requests@2.30.0", cwes=["200"])
        assert len(by_package) == 1
        dated = await call_ok(s, "list_global_security_advisories", published="2023-01-01..2023-12-31")
        assert len(dated) == 1
        assert await call_ok(s, "list_global_security_advisories", published=">2024-01-01") == []
        one = await call_ok(s, "get_global_security_advisory", ghsaId="GHSA-j8r2-6x86-q33q")
        assert one["cve_id"] == "CVE-2023-32681" and one["vulnerabilities"][0]["package"]["name"] == "requests"
        err = await call_err(s, "get_global_security_advisory", ghsaId="CVE-2023-32681")
        assert err.startswith("invalid ghsaId")
        repo = await call_ok(s, "list_repository_security_advisories", **DOCK, state="published")
        assert [(a["ghsa_id"], a["author"]["login"]) for a in repo] == [("GHSA-2222-3333-4444", "mira-sol")]
        org = await call_ok(
            s, "list_org_repository_security_advisories", org="harbor-io", sort="created", direction="asc"
        )
        assert [a["state"] for a in org] == ["published", "draft"]
        err = await call_err(s, "list_org_repository_security_advisories", org="mira-sol")
        assert "404" in err
