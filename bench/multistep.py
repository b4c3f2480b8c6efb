"""Multi-step tasks (data/eval/multistep/): the Nexus agent against a llama-cpp-python tool loop, same model, same run.

    python bench/multistep.py --split tune --arms nexus,llama_cpp --json bench/results/multistep_tune.json [--limit N]
    python bench/multistep.py --reclassify bench/results/multistep_tune.json   # failure classes again, in place

Each task runs on fresh server state (``Workspace.reset``); success = every state and answer check holds and nothing
outside ``allowed_writes`` changed. Arms:
- ``nexus``: ``NexusAgent`` with ``yes=True`` (writes run without asking), a fresh chat per task; ``max_steps`` is
  passed only when ``AgentConfig`` has it.
- ``llama_cpp``: ``Llama(chat_format="chatml-function-calling")`` on the same GGUF, the retrieval's top 20 tools for the
  request in its prompt, calls through the same MCP servers, results fed back, up to ``--max-steps`` calls.
Writes ``OUT`` (JSON) and ``OUT`` with ``.md`` (table per arm and kind, failure classes).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from nexus_agent.agent.api import AgentConfig, NexusAgent
from nexus_agent.agent.claims import claims_change
from nexus_agent.evaluation.multistep import Task, Workspace, evaluate, load_tasks, result_text
from nexus_agent.evaluation.stats import percentile
from nexus_agent.mcp import MCPConfig, MultiServerClient

ROOT = Path(__file__).resolve().parents[1]
OBJECT_ARGS = {"owner", "repo", "issue_number", "pullNumber", "path", "source", "name", "branch", "branch_name"}
# an answer that says something was changed (the runtime's own test: the turn asks it too)
claims_write = claims_change


def qualified(name: str, task: Task) -> str:
    """A call's tool as ``server__tool``: the nexus events name the tool and its server apart (rows written before
    this was fixed hold the bare name; every task talks to one server)."""
    return name if "__" in name else f"{task.servers[0]}__{name}"


def classify(task: Task, calls: list[dict[str, Any]], answer: str, ok: bool, writes: set[str]) -> list[str]:
    """Failure classes of one run (empty when it succeeded)."""
    if ok:
        return []
    out = []
    calls = [c | {"name": qualified(c["name"], task)} for c in calls]
    done_writes = [c for c in calls if c["name"] in writes and not c["is_error"]]
    if claims_write(answer) and not done_writes:
        out.append("claims unrun action")
    keys = [(c["name"], json.dumps(c["arguments"], sort_keys=True)) for c in calls]
    if len(keys) != len(set(keys)):
        out.append("looped")
    if any(c.get("refused") for c in calls):
        out.append("refused")
    gold_tools = {g.qualified for g in task.gold}
    gold_writes = [g for g in task.gold if g.qualified in writes]
    if any(c["name"] not in gold_tools for c in calls):
        out.append("wrong tool")
    for g in gold_writes:
        same = [c for c in done_writes if c["name"] == g.qualified]
        if not same:
            continue
        obj = {k: v for k, v in g.arguments.items() if k in OBJECT_ARGS}
        if not any(all(c["arguments"].get(k) == v for k, v in obj.items()) for c in same):
            out.append("wrong object")
        else:
            out.append("wrong value")
    if task.kind != "absent" and len(calls) < len(task.gold) and not out:
        out.append("stopped early")
    if task.kind == "absent" and done_writes:
        out.append("wrote on absent target")
    return sorted(set(out)) or ["other"]


def _name(server: str, tool: str) -> str:
    return f"{server}__{tool}" if server else tool


async def run_nexus(task: Task, agent: NexusAgent) -> tuple[list[dict[str, Any]], str]:
    chat = agent.open_chat()
    calls: list[dict[str, Any]] = []
    answer = ""
    decision = ""  # how the step's tool was chosen (auto, escalated, planned…): read when a task fails
    try:
        async for ev in chat.run(task.request):
            if ev.type == "route":
                decision = ev.decision
            elif ev.type == "tool_call":
                calls.append(
                    {"name": _name(ev.server, ev.name), "arguments": ev.arguments, "is_error": False, "route": decision}
                )
            elif ev.type == "tool_result" and calls:
                calls[-1]["is_error"] = ev.is_error
            elif ev.type == "tool_skipped":
                calls.append(
                    {
                        "name": _name(ev.server, ev.name),
                        "arguments": {},
                        "is_error": True,
                        "refused": True,
                        "route": decision,
                    }
                )
            elif ev.type == "answer":
                answer = ev.text
            elif ev.type == "error":
                answer = answer or f"[error {ev.stage}: {ev.message}]"
    finally:
        chat.close()
    return calls, answer


class LlamaLoop:
    """The baseline: chatml-function-calling in a tool loop, top-20 retrieved tools in the prompt."""

    def __init__(self, hub: MultiServerClient, max_steps: int) -> None:
        from llama_cpp import Llama

        from nexus_agent.models.store import resolve
        from nexus_agent.routing.options import RouterOptions
        from nexus_agent.routing.router import build_router

        self.hub, self.max_steps = hub, max_steps
        self.tools = {t.qualified_name: t for t in hub.tools}
        self.router = build_router([t.to_registry_tool() for t in hub.tools], RouterOptions(reranker="none"))
        self.llm = Llama(
            model_path=str(resolve("qwen1.5b", fetch=False)),
            chat_format="chatml-function-calling",
            n_ctx=8192,
            n_threads=2,
            verbose=False,
        )

    async def run(self, task: Task) -> tuple[list[dict[str, Any]], str]:
        top = [c.key for c in self.router.retrieve(task.request)[:20]]
        tools = [
            {
                "type": "function",
                "function": {
                    "name": q,
                    "description": self.tools[q].description[:300],
                    "parameters": self.tools[q].input_schema,
                },
            }
            for q in top
        ]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a helpful assistant. Use the tools to carry out the request."},
            {"role": "user", "content": task.request},
        ]
        calls: list[dict[str, Any]] = []
        for _ in range(self.max_steps + 1):
            try:
                out = await asyncio.to_thread(
                    self.llm.create_chat_completion, messages=messages, tools=tools, tool_choice="auto", max_tokens=384
                )
            except ValueError as e:  # the prompt outgrew the 8K context (20 schemas and the results so far)
                return calls, f"[error: {e}]"
            msg = out["choices"][0]["message"]
            tcs = msg.get("tool_calls") or []
            if not tcs or len(calls) >= self.max_steps:
                return calls, msg.get("content") or ""
            messages.append({"role": "assistant", "content": None, "tool_calls": tcs})
            for tc in tcs:
                name = tc["function"]["name"]
                try:
                    args = json.loads(tc["function"]["arguments"] or "{}")
                    res = await self.hub.call_tool(name, args)
                    text, err = result_text(res)[:4000], res.is_error
                except Exception as e:  # a made-up tool name or bad JSON is the model's failure, fed back
                    args, text, err = {}, f"error: {e}", True
                calls.append({"name": name, "arguments": args, "is_error": err})
                messages.append({"role": "tool", "tool_call_id": tc.get("id", name), "name": name, "content": text})
        return calls, ""


async def run_task(t: Task, ws: Workspace, runner: Any, writes: set[str]) -> dict[str, Any]:
    """One task on fresh state: its row (calls, answer, the checks' outcome, failure classes, seconds)."""
    ws.reset()
    t0 = time.perf_counter()
    calls, answer = await runner(t)
    secs = time.perf_counter() - t0
    outcome = evaluate(t, ws, answer=answer)
    return {
        "id": t.id,
        "kind": t.kind,
        "servers": t.servers,
        "ok": outcome.ok,
        "seconds": round(secs, 2),
        "calls": calls,
        "answer": answer,
        "failed_checks": outcome.failed,
        "extra_writes": outcome.extra_writes,
        "failures": classify(t, calls, answer, outcome.ok, writes),
        "wrote": any(c["name"] in writes and not c["is_error"] for c in calls),
        # a write the policy refused (tool_skipped) was not tried: only one that was sent
        "tried_write": any(c["name"] in writes and not c.get("refused") for c in calls),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    secs = [r["seconds"] for r in rows]
    return {
        "n": len(rows),
        "success": sum(r["ok"] for r in rows) / max(1, len(rows)),
        "calls_per_task": sum(len(r["calls"]) for r in rows) / max(1, len(rows)),
        "p50_s": percentile(secs, 50) if secs else 0.0,
        "p95_s": percentile(secs, 95) if secs else 0.0,
        "failures": dict(Counter(f for r in rows for f in r["failures"])),
        "claims_unrun": sum("claims unrun action" in r["failures"] for r in rows),
        # the time target compares tasks by the calls they made (a 2-call task's p50 against a 1-call task's)
        "p50_s_by_calls": {
            str(n): percentile([r["seconds"] for r in rows if len(r["calls"]) == n], 50)
            for n in sorted({len(r["calls"]) for r in rows})
        },
    }


async def reclassify(path: Path) -> dict[str, Any]:
    """A stored report's failure classes and summary again, with today's :func:`classify` (the servers are started
    only to list their tools, for which of them write)."""
    report = json.loads(path.read_text())
    ws = Workspace(Path(tempfile.mkdtemp(prefix="nexus-multistep-")))
    ws.build()
    hub = MultiServerClient.from_config(MCPConfig(servers=dict(ws.server_configs())))
    await hub.start()
    try:
        writes = {t.qualified_name for t in hub.tools if not t.to_registry_tool().read_only_hint}
    finally:
        await hub.aclose()
    tasks = {t.id: t for t in load_tasks()}
    for rs in report["rows"].values():
        for r in rs:
            r["failures"] = classify(tasks[r["id"]], r["calls"], r["answer"], r["ok"], writes)
    report["summary"] = _summary(report["rows"])
    return report


def _summary(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        arm: {
            "all": summarise(rs),
            **{k: summarise([r for r in rs if r["kind"] == k]) for k in ("multi", "single", "absent")},
        }
        for arm, rs in rows.items()
    }


async def main_async(a: argparse.Namespace) -> dict[str, Any]:
    ids = set(a.ids.split(",")) if a.ids else None
    tasks = [
        t
        for t in load_tasks(split=a.split)
        if (not a.kind or t.kind in a.kind.split(",")) and (ids is None or t.id in ids)
    ][: a.limit or None]
    ws = Workspace(Path(tempfile.mkdtemp(prefix="nexus-multistep-")))
    ws.build()
    filled = [t.filled(ws.values()) for t in tasks]
    rows: dict[str, list[dict[str, Any]]] = {}
    partial = Path(a.out).with_suffix(".partial.json")
    partial.parent.mkdir(parents=True, exist_ok=True)
    for arm in a.arms.split(","):
        rows[arm] = []
        if arm == "nexus":
            cfg_file = ws.root / "mcp.json"
            cfg_file.write_text(json.dumps(ws.mcp_config()))
            extra = {"max_steps": a.max_steps} if "max_steps" in AgentConfig.model_fields else {}
            agent = NexusAgent.from_config(AgentConfig(config_file=cfg_file, yes=True, **extra))
            await agent.start()
            assert agent.hub is not None
            writes = {t.qualified_name for t in agent.hub.tools if not t.to_registry_tool().read_only_hint}
            runner: Any = functools.partial(run_nexus, agent=agent)
            closer: Any = agent.aclose
        else:
            hub = MultiServerClient.from_config(MCPConfig(servers=dict(ws.server_configs())))
            await hub.start()
            loop = await asyncio.to_thread(LlamaLoop, hub, a.max_steps)
            writes = {t.qualified_name for t in hub.tools if not t.to_registry_tool().read_only_hint}
            runner, closer = loop.run, hub.aclose
        try:
            for t in filled:
                row = await run_task(t, ws, runner, writes)
                rows[arm].append(row)
                print(
                    f"[{arm}] {t.id}: ok={row['ok']} {row['seconds']:.0f}s calls={len(row['calls'])} {row['failures']}",
                    flush=True,
                )
                # the rows so far, so that a run stopped part-way keeps what it measured
                partial.write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1) + "\n")
        finally:
            await closer()
    return {"args": vars(a), "summary": _summary(rows), "rows": rows}


def markdown(report: dict[str, Any]) -> str:
    a = report["args"]
    lines = [
        f"# Multi-step tasks, split {a['split']}" + (f" (first {a['limit']})" if a["limit"] else ""),
        "",
        f"`python bench/multistep.py --split {a['split']} --arms {a['arms']} --max-steps {a['max_steps']}"
        + (f" --limit {a['limit']}" if a["limit"] else "")
        + (f" --kind {a['kind']}" if a.get("kind") else "")
        + (f" --ids {a['ids']}" if a.get("ids") else "")
        + "`",
        "",
        "| arm | kind | n | success | calls/task | p50 s | p95 s | claims unrun | failure classes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, by_kind in report["summary"].items():
        for kind, s in by_kind.items():
            if not s["n"]:
                continue
            fails = ", ".join(f"{k} {v}" for k, v in sorted(s["failures"].items()))
            lines.append(
                f"| {arm} | {kind} | {s['n']} | {s['success']:.2f} | {s['calls_per_task']:.1f} | {s['p50_s']:.0f} | "
                f"{s['p95_s']:.0f} | {s['claims_unrun']} | {fails} |"
            )
    for arm, by_kind in report["summary"].items():
        by = by_kind.get("all", {}).get("p50_s_by_calls") or {}
        if "1" in by and "2" in by:
            lines.append(
                f"\n{arm}: p50 of the tasks that made 1 call {by['1']:.0f} s, 2 calls {by['2']:.0f} s "
                f"({by['2'] / max(by['1'], 1e-9):.2f}×)"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reclassify", help="a stored report: its failure classes again, rewritten in place (JSON, md)")
    ap.add_argument("--split", choices=["tune", "check"])
    ap.add_argument("--arms", default="nexus,llama_cpp")
    ap.add_argument("--json", dest="out", default=str(ROOT / "bench" / "results" / "multistep.json"))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--kind", default="", help="only tasks of these kinds (multi,single,absent; default: all)")
    ap.add_argument("--ids", default="", help="only these task ids (comma-separated)")
    ap.add_argument("--max-steps", type=int, default=4)
    a = ap.parse_args()
    if a.reclassify:
        a.out = a.reclassify
        report = asyncio.run(reclassify(Path(a.reclassify)))
    elif a.split is None:
        ap.error("--split is required (or --reclassify FILE)")
    else:
        report = asyncio.run(main_async(a))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
