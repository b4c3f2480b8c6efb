"""The eval-routing summary's decision time: the median over the requests that asked the LLM decision only."""

from __future__ import annotations

from nexus_agent.evaluation.routing import EvalItem, ItemResult, summarize
from nexus_agent.routing.router import Candidate, RouteResult


def _result(tool: str | None, decision_ms: float | None) -> ItemResult:
    cands = [Candidate("github__list_issues", 0.9, 0.9, 0.0)]
    res = RouteResult(cands, "escalated" if decision_ms else "auto", tool, 0.1, 10.0, decision_ms=decision_ms)
    res.escalated = decision_ms is not None
    return ItemResult(EvalItem("x", "q", {"github__list_issues"}), res, 0)


def test_decision_ms_p50_is_the_median_over_decided_requests() -> None:
    rows = [_result("github__list_issues", ms) for ms in (None, 100.0, 300.0, None, 200.0)]
    s = summarize(rows, pool=20)
    assert s["decision_ms_p50"] == 200.0 and s["n_decisions"] == 3


def test_decision_ms_p50_is_null_when_no_request_was_decided() -> None:
    s = summarize([_result("github__list_issues", None)], pool=20)
    assert s["decision_ms_p50"] is None and s["n_decisions"] == 0
