"""What the agent does with requests that need no tool, end to end, under ``--yes`` (the user opted out of
confirmations, so a tool that routing picks and the arguments allow would run).

Each request of ``tests/routing/data/no_tool_queries.jsonl`` is one fresh turn of a real agent (llama.cpp model,
real router, the GitHub sandbox MCP server over stdio with its own data folder per arm, since a write may run).
Outcomes: ``answered`` (no tool ran, a plain answer), ``tool ran`` (a false tool call that executed), ``held``
(a tool was picked and not run: confirmation refused or arguments refused; the turn ends with an error).

Arms: ``agent`` as shipped, and ``before question holds``: the same agent with the request never read as a
question by the turn policy (``policy.is_question`` → False), which is the turn before a question routed to a tool that
declares a write was held for a yes or answered without it. Only requests where the two can differ (a question
routed to such a tool) are re-run in the second arm; the rest take the first arm's outcome, which is the same by
construction (that code path reads nothing else). Writes ``bench/results/agent_relevance.{json,md}``.

    python bench/agent_relevance.py [--model qwen0.5b] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from common import NO_TOOL, ROOT, SHARED

import nexus_agent.agent.policy as policy
from nexus_agent.agent.api import AgentConfig, SyncNexusAgent
from nexus_agent.agent.history import Conversation
from nexus_agent.registry import load_registry
from nexus_agent.routing.query import is_question
from nexus_agent.sandbox.github import sandbox_mcp_config


def _config(d: Path) -> Path:
    path = d / "mcp.json"
    path.write_text(json.dumps(sandbox_mcp_config(d / "gh")))
    return path


def _outcome(events: list[Any]) -> tuple[str, str | None, str]:
    """(outcome, routed tool, detail) of one turn's events."""
    routed = events[0].tool if events and events[0].type == "route" else None
    if any(e.type == "tool_result" for e in events):
        return "tool ran", routed, ""
    last = events[-1] if events else None
    if last is not None and last.type == "error":
        return "held", routed, f"{last.stage}: {last.message[:80]}"
    return "answered", routed, (last.text[:80] if last is not None and last.type == "answer" else "")


def run_arm(model: str, queries: list[str], writes: set[str]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        agent = SyncNexusAgent(AgentConfig(model=model, config_file=_config(Path(d)), n_ctx=4096, yes=True))
        try:
            for q in queries:
                agent.agent.conversation = Conversation()  # every request is a fresh session
                t0 = time.perf_counter()
                events = agent.run(q)
                outcome, routed, detail = _outcome(events)
                rows.append(
                    {
                        "query": q,
                        "outcome": outcome,
                        "routed": routed,
                        "question_to_write": is_question(q) and routed in writes,
                        "detail": detail,
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
        finally:
            agent.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen0.5b")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "agent_relevance"))
    args = ap.parse_args()
    queries = [json.loads(line)["query"] for line in NO_TOOL.read_text().splitlines() if line.strip()]
    queries = queries[: args.limit] if args.limit else queries
    reg = load_registry(SHARED / "mcp-registry")
    writes = {t.qualified_name for t in reg.profile(None) if t.declares_write}
    after = run_arm(args.model, queries, writes)
    redo = [r["query"] for r in after if r["question_to_write"]]
    real = policy.is_question
    policy.is_question = lambda q: False  # the policy before question holds
    try:
        changed = {r["query"]: r for r in run_arm(args.model, redo, writes)} if redo else {}
    finally:
        policy.is_question = real
    before = [changed.get(r["query"], r) for r in after]
    arms = {"agent": after, "before question holds": before}
    summary = {
        name: {k: sum(r["outcome"] == k for r in rows) for k in ("answered", "tool ran", "held")}
        for name, rows in arms.items()
    }
    out = Path(args.out)
    out.with_suffix(".json").write_text(
        json.dumps({"args": vars(args), "n": len(queries), "summary": summary, "arms": arms}, indent=1) + "\n"
    )
    lines = [
        "# Agent on requests that need no tool (`--yes`, GitHub sandbox)",
        "",
        f"{len(queries)} requests from `tests/routing/data/no_tool_queries.jsonl`, model `{args.model}`, one run.",
        "",
        "| arm | answered | tool ran | held (error) |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {s['answered']} | {s['tool ran']} | {s['held']} |" for a, s in summary.items()]
    lines += ["", "Requests whose outcome differs between the arms:", ""]
    for a, b in zip(after, before, strict=True):
        if a["outcome"] != b["outcome"]:
            lines.append(f"- {a['query']!r} → `{a['routed']}`: {b['outcome']} → {a['outcome']}")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
