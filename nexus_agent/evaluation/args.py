"""``eval-args``: routing plus argument generation on an eval set, checked BFCL-style, no tool execution.

A call is correct when the tool name is exact (or an accepted alternative), every required parameter is
present, no unknown parameter appears, the expected ``arguments`` match after normalisation, no ``arg_absent``
parameter appears (an optional value the request does not give), and every ``arg_contains`` substring appears
(case-insensitive). An item's ``now`` is the date its relative dates are read from. Items with ``history``
replay it as the earlier conversation, through the same pruned window the sidecar uses, so coreference is part of
what is measured; a dialogue's ``turns`` (``evaluation/dialogues.py``) are replayed through the agent's own
conversation record.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.turn import TurnRouter
from nexus_agent.backend import Backend
from nexus_agent.engine import Engine
from nexus_agent.evaluation.dialogues import DialogueTurn, conversation_of
from nexus_agent.evaluation.files import read_jsonl
from nexus_agent.evaluation.stats import percentile, wilson_ci
from nexus_agent.examples.uses import ExampleUses, example_uses
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import PreviousTurn


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return " ".join(v.strip().lower().split())
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, list):
        return sorted(json.dumps(_norm(x), sort_keys=True) for x in v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def values_match(expected: Any, got: Any) -> bool:
    """Expected values must match; for objects only the expected keys are compared (items list only what
    the request states)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(k in got and values_match(v, got[k]) for k, v in expected.items())
    if isinstance(expected, str) and isinstance(got, int | float) and not isinstance(got, bool):
        return _norm(expected) == _norm(str(got))
    return bool(_norm(expected) == _norm(got))


def check_arguments(tool: Tool, args: Mapping[str, Any], item: Mapping[str, Any]) -> list[str]:
    """Problems with ``args`` for eval ``item`` (empty list = correct)."""
    problems = []
    props = tool.input_schema.get("properties") or {}
    for req in tool.input_schema.get("required") or []:
        if req not in args:
            problems.append(f"missing required {req}")
    for k in args:
        if k not in props:
            problems.append(f"unknown parameter {k}")
    for k, v in (item.get("arguments") or {}).items():
        if k not in args:
            problems.append(f"missing {k}")
        elif not values_match(v, args[k]):
            problems.append(f"{k}={json.dumps(args[k])[:60]} expected {json.dumps(v)[:60]}")
    for k in item.get("arg_absent") or []:
        if k in args:
            problems.append(f"{k}={json.dumps(args[k])[:60]} not asked for")
    for k, subs in (item.get("arg_contains") or {}).items():
        text = json.dumps(args.get(k, ""), ensure_ascii=False).lower()
        for s in subs:
            if s.lower() not in text:
                problems.append(f"{k} lacks {s!r}")
    return problems


def today_of(item: Mapping[str, Any]) -> dt.date | None:
    """The date an item's relative dates are read from (its ``now``), or None for the date it is run on."""
    return dt.date.fromisoformat(item["now"]) if item.get("now") else None


def expected_names(item: Mapping[str, Any]) -> set[str]:
    """Qualified names accepted for ``item`` (``tool`` + ``server``, plus ``alt_tools``)."""
    server = item.get("server") or ""
    names = {f"{server}__{item['tool']}"} if item.get("tool") else set()
    for alt in item.get("alt_tools") or []:
        names.add(alt.replace("/", "__") if "/" in alt else f"{server}__{alt}")
    return names


@dataclass
class ItemResult:
    id: str
    expected: str | None
    routed: str | None
    route_ok: bool
    arguments: dict[str, Any] | None
    json_valid: bool
    args_ok: bool
    problems: list[str] = field(default_factory=list)
    latency_ms: float = 0.0  # routing + time to the first argument token
    decision: str = ""


def replay(item: Mapping[str, Any], window_turns: int = 4) -> tuple[list[dict[str, str]], PreviousTurn | None]:
    """The window and previous tool turn the agent would route ``item``'s request with: a dialogue's ``turns``
    are replayed through the agent's conversation (surrogates, call notes); plain ``history`` messages are the
    window as given, and the router finds the previous tool turn in them itself."""
    if item.get("turns"):
        convo = conversation_of([DialogueTurn.model_validate(t) for t in item["turns"]])
        return convo.window(window_turns), convo.previous_tool_turn(window_turns)
    return list(item.get("history") or [])[-2 * window_turns :], None


def run_eval(
    items: list[dict[str, Any]],
    profile_tools: list[Tool],
    router: TurnRouter,
    engine: Engine | Backend,
    window_turns: int = 4,
    uses: ExampleUses | None = None,
) -> tuple[dict[str, Any], list[ItemResult]]:
    """Route and write arguments for every item, on the local ``engine`` or any backend (a remote server); the
    argument writer shows the examples ``uses`` asks for (default: none) and keeps routing's chosen operation, as the
    agent does."""
    uses = uses or example_uses("none")
    tools = {t.qualified_name: t for t in profile_tools}
    writer = ArgumentWriter(engine)
    results: list[ItemResult] = []
    for item in items:
        window, previous = replay(item, window_turns)
        t0 = time.perf_counter()
        route = router.route_turn(item["query"], window, previous)
        route_ms = (time.perf_counter() - t0) * 1000
        accepted = expected_names(item)
        route_ok = (route.tool in accepted) if accepted else route.tool is None
        res = ItemResult(
            id=str(item.get("id")),
            expected=next(iter(sorted(accepted)), None),
            routed=route.tool,
            route_ok=route_ok,
            arguments=None,
            json_valid=False,
            args_ok=False,
            latency_ms=route_ms,
            decision=route.decision,
        )
        if route.tool is not None and route.tool in tools:
            shown = router.examples_for(item["query"], route.tool, route.operation, uses.with_history(bool(window)))
            ar = writer.write(
                tools[route.tool],
                item["query"],
                window,
                today_of(item),
                examples=shown,
                operation=route.operation,
                keys=router.arg_keys(item["query"], route.tool, route.operation),
            )
            res.json_valid = ar.json_valid
            res.arguments = ar.arguments
            res.latency_ms = route_ms + ar.ttft_ms
            if route_ok and item.get("tool"):
                if ar.arguments is None:
                    res.problems = [f"invalid arguments: {ar.schema_error}"]
                else:
                    res.problems = check_arguments(tools[route.tool], ar.arguments, item)
                res.args_ok = not res.problems
        elif route_ok:
            res.args_ok = True  # correctly declined a no-tool request
        results.append(res)
        router.after_turn()  # as the agent does once its answer is out (untimed)
    return summarise(results), results


def summarise(results: list[ItemResult]) -> dict[str, Any]:
    n = len(results)
    routed_ok = [r for r in results if r.route_ok]
    e2e = sum(1 for r in results if r.route_ok and r.args_ok)
    called = [r for r in results if r.routed is not None]
    lat = [r.latency_ms for r in results if r.routed is not None] or [0.0]
    return {
        "n": n,
        "routing_accuracy": len(routed_ok) / n if n else 0.0,
        "arg_accuracy_on_routed": (sum(1 for r in routed_ok if r.args_ok) / len(routed_ok)) if routed_ok else 0.0,
        "end_to_end_accuracy": e2e / n if n else 0.0,
        "end_to_end_accuracy_ci95": list(wilson_ci(e2e, n)),
        "json_valid_rate": (sum(1 for r in called if r.json_valid) / len(called)) if called else 0.0,
        "latency_ms_p50": percentile(lat, 50),
        "latency_ms_p95": percentile(lat, 95),
    }


def load_items(path: Path) -> list[dict[str, Any]]:
    """The eval set's lines as dicts (the fields above); :class:`ValueError` names a line that is not JSON."""
    return [item for _, item in read_jsonl(path)]


def to_json(summary: dict[str, Any], results: list[ItemResult]) -> dict[str, Any]:
    """The report: the summary's keys plus ``items``, one dict per :class:`ItemResult`."""
    return {**summary, "items": [asdict(r) for r in results]}
