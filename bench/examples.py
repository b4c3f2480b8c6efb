"""Issue 54: what the servers' verified examples add, each use on its own, in one table.

    python bench/examples.py --parts ceiling,check --arms none,keys,arguments,all --json bench/results/examples.json
    python bench/examples.py --parts eval --arms none,all            # eval-args / eval-routing, github_dev + mixed_dev
    python bench/examples.py --parts latency --arms none,all         # the one-shot stages, prompt tokens added

Arms are ``AgentConfig.examples`` settings (``nexus_agent/examples/uses.py``): ``none`` (no examples anywhere),
``keys`` (routing keys only), ``arguments`` (argument writing only, the fixed set per tool and operation), ``all``
(every use: keys, the decision's examples, operations as choices, arguments, the next step, repair) and
``retrieved`` (all, with the argument writer's examples the closest to each request instead of a fixed set).

Parts:
- ``ceiling``: the identifier-given ceiling: the first ``--ceiling-n`` multi-step tune tasks with the number of the
  object each write acts on written into the request ("… (that is issue #7)": a perfect lookup), one step.
- ``check``: the multi-step task set's split ``--split`` (default check, 64 tasks; ``reworded``: 49 tune tasks
  asked in other words, ``data/eval/multistep/reworded.jsonl``), ``--max-steps`` calls
  (default 3): success, multi-step, single-call, absent targets with no write tried, claims of an unrun change,
  calls per task, p50 seconds (``bench/multistep.py``'s runner and checks). ``--steps-baseline N`` adds the ``all``
  arm at N steps (the loop-default question).
- ``eval``: ``eval-args`` and ``eval-routing`` on ``github_dev`` and ``mixed_dev`` (``--eval-limit`` items each).
- ``first-writes``: how each GitHub task's first write is routed (retrieval's first candidate, the routed
  choice), per arm: the first write is what a multi-step task rests on.
- ``latency``: ``bench/turn_latency.py --parts one-shot`` per arm: the stages' seconds and the argument prompt's
  tokens.
Writes ``OUT`` (JSON) and ``OUT`` with ``.md``; each part's rows are kept in ``OUT`` as they finish, so a later run
of another part adds to the same file.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from multistep import run_nexus, run_task, summarise

from nexus_agent.agent.api import AgentConfig, NexusAgent
from nexus_agent.evaluation.multistep import Task, Workspace, load_tasks
from nexus_agent.evaluation.stats import wilson_ci
from nexus_agent.examples.uses import ARMS
from nexus_agent.registry import IDENTIFIER

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "examples.json"
# what an identifier argument names, in the words the ceiling's hint uses
_KINDS = {"pull": "pull request", "issue": "issue"}


def identifier_given(task: Task) -> Task:
    """``task`` with the number of every object its writes act on written into the request, when an earlier gold
    call found it (``from``): "… (that is issue #7)". The rest of the task is unchanged."""
    hints = []
    for call in task.gold:
        for arg, _src, value in call.flows():
            if IDENTIFIER.search(arg.split(".")[-1]):
                kind = next((v for k, v in _KINDS.items() if k in arg.lower()), "issue")
                if call.tool in ("update_pull_request", "merge_pull_request") or "pull" in arg.lower():
                    kind = "pull request"
                hints.append(f"{kind} #{value}")
    if not hints:
        return task
    return task.model_copy(update={"request": f"{task.request} (that is {', '.join(dict.fromkeys(hints))})"})


async def run_tasks(
    tasks: list[Task],
    ws: Workspace,
    arm: str,
    max_steps: int,
    log: Any,
    label: str,
    extra_examples: dict[str, str],
) -> list[dict[str, Any]]:
    """Every task on fresh state with one agent of ``arm``; rows as bench/multistep.py writes them."""
    cfg_file = ws.root / "mcp.json"
    conf = ws.mcp_config()
    for server, path in extra_examples.items():  # development: a bank not yet shipped
        conf["mcpServers"][server]["examples"] = path
    cfg_file.write_text(json.dumps(conf))
    agent = NexusAgent.from_config(AgentConfig(config_file=cfg_file, yes=True, max_steps=max_steps, examples=arm))
    await agent.start()
    assert agent.hub is not None
    writes = {t.qualified_name for t in agent.hub.tools if not t.to_registry_tool().read_only_hint}
    rows = []
    runner = functools.partial(run_nexus, agent=agent)
    try:
        for t in tasks:
            row = await run_task(t, ws, runner, writes)
            rows.append(row)
            print(f"[{label} {arm}] {t.id}: ok={row['ok']} {row['seconds']:.0f}s calls={len(row['calls'])}", file=log)
            log.flush()
    finally:
        await agent.aclose()
    return rows


def task_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's measures over a run: success overall and by kind (with Wilson 95% intervals), absent targets
    with no write tried, claims of an unrun change, calls per task, p50."""
    s = summarise(rows)

    def rate(sel: list[dict[str, Any]], ok: Any = lambda r: r["ok"]) -> dict[str, Any]:
        k = sum(1 for r in sel if ok(r))
        lo, hi = wilson_ci(k, len(sel)) if sel else (0.0, 0.0)
        return {"k": k, "n": len(sel), "rate": k / len(sel) if sel else 0.0, "ci": [lo, hi]}

    absent = [r for r in rows if r["kind"] == "absent"]
    return {
        "success": rate(rows),
        "multi": rate([r for r in rows if r["kind"] == "multi"]),
        "single": rate([r for r in rows if r["kind"] == "single"]),
        "absent_no_write": rate(absent, lambda r: not r.get("tried_write")),
        "absent": rate(absent),
        "claims_unrun": s["claims_unrun"],
        "calls_per_task": s["calls_per_task"],
        "p50_s": s["p50_s"],
        "failures": s["failures"],
    }


async def part_tasks(a: argparse.Namespace, part: str, log: Any) -> dict[str, Any]:
    ws = Workspace(Path(tempfile.mkdtemp(prefix="nexus-examples-")))
    ws.build()
    if part == "ceiling":
        tasks = [t for t in load_tasks(split="tune") if t.kind == "multi"][: a.ceiling_n]
        tasks = [identifier_given(t) for t in tasks]
        runs = [(arm, 1) for arm in a.arms.split(",")]
    else:
        tasks = load_tasks(split=a.split)
        if a.ids:
            tasks = [t for t in tasks if t.id in a.ids.split(",")]
        tasks = tasks[: a.limit or None]
        runs = [(arm, a.max_steps) for arm in a.arms.split(",")]
        runs += [("all", n) for n in a.steps_baseline]
    filled = [t.filled(ws.values()) for t in tasks]
    out: dict[str, Any] = {}
    for arm, steps in runs:
        key = f"{arm}@{steps}"
        rows = await run_tasks(filled, ws, arm, steps, log, part, a.examples_file)
        out[key] = {"arm": arm, "max_steps": steps, "summary": task_summary(rows), "rows": rows}
    return out


def part_eval(a: argparse.Namespace) -> dict[str, Any]:
    """``eval-args`` and ``eval-routing`` per arm and set, through the CLI (each its own process and engine)."""
    exe = str(Path(sys.executable).parent / "nexus-agent")
    registry = str(ROOT / "data" / "mcp-registry")
    out: dict[str, Any] = {}
    for arm in a.arms.split(","):
        for name in ("github_dev", "mixed_dev"):
            ev = str(ROOT / "data" / "eval" / f"{name}.jsonl")
            for cmd in ("eval-args", "eval-routing"):
                dest = Path(tempfile.mkdtemp()) / "out.json"
                argv = [exe, cmd, "--eval", ev, "--registry", registry, "--examples", arm, "--json", str(dest)]
                argv += ["--limit", str(a.eval_limit)] if a.eval_limit else []
                t0 = time.perf_counter()
                subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
                res = json.loads(dest.read_text())
                out[f"{arm}/{name}/{cmd}"] = {
                    "summary": res.get("summary", res),
                    "seconds": round(time.perf_counter() - t0, 1),
                }
    return out


def part_latency(a: argparse.Namespace) -> dict[str, Any]:
    """``bench/turn_latency.py --parts one-shot`` with its arms ``after`` (every use of the examples, the defaults)
    and ``no-examples``, and ``--baseline`` (a checkout from before issue 54) when given."""
    dest = Path(tempfile.mkdtemp()) / "lat.json"
    argv = [sys.executable, str(ROOT / "bench" / "turn_latency.py"), "--parts", "one-shot"]
    argv += ["--arms", "after,no-examples", "--repeats", str(a.repeats), "--json", str(dest)]
    argv += ["--baseline", a.baseline] if a.baseline else []
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return dict(json.loads(dest.read_text()))


def part_first_writes(a: argparse.Namespace, log: Any) -> dict[str, Any]:
    """The routing of each GitHub task's first write, with no earlier call: for every multi-step and single-call
    task of ``--split`` on the GitHub server alone, the first gold call whose tool may write; retrieval's first
    candidate and the routed choice (the LLM decision where it is asked), per arm. What the loop's first write
    rests on, at a fraction of a task's cost (one routing per task, no arguments, no calls)."""
    from nexus_agent.agent.routing_adapter import AgentRouter
    from nexus_agent.backend import LocalBackend
    from nexus_agent.engine import Engine, EngineConfig
    from nexus_agent.examples import gather
    from nexus_agent.examples.uses import example_uses
    from nexus_agent.registry import tool_from_mcp
    from nexus_agent.routing.options import RouterOptions
    from nexus_agent.sandbox.github.tools import ToolCatalog

    tools = [tool_from_mcp(d, "github") for d in ToolCatalog.load().definitions.values()]
    writes = {t.name for t in tools if t.read_only_hint is not True}
    tasks = [
        t
        for t in load_tasks(split=a.split)
        if t.servers == ["github"] and t.kind != "absent" and any(g.tool in writes for g in t.gold)
    ]
    engine = Engine(EngineConfig(n_ctx=4096))
    out: dict[str, Any] = {}
    try:
        for arm in a.arms.split(","):
            uses = example_uses(arm)
            bank = gather(tools, {}, lambda line: None) if uses.any else None
            router = AgentRouter.create(tools, RouterOptions(), LocalBackend(engine), bank, uses).router
            rows = []
            for t in tasks:
                g = next(g for g in t.gold if g.tool in writes)
                op = g.arguments.get("method")
                gold = f"{g.tool}.{op}" if isinstance(op, str) else g.tool
                top = router.retrieve(t.request)[0].key.split("__", 1)[1].replace("#", ".")
                res = router.route(t.request)
                chose = None
                if res.tool is not None:
                    chose = res.tool.split("__", 1)[1] + (f".{res.operation}" if res.operation else "")
                rows.append({"id": t.id, "gold": gold, "retrieval": top, "routed": chose, "decision": res.decision})
                print(f"[first-writes {arm}] {t.id}: gold={gold} routed={chose} ({res.decision})", file=log)
                log.flush()
            n = len(rows)
            out[arm] = {
                "arm": arm,
                "n": n,
                "retrieval_top1": sum(r["retrieval"] == r["gold"] for r in rows),
                "routed": sum(r["routed"] == r["gold"] for r in rows),
                "rows": rows,
            }
    finally:
        engine.close()
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Examples (issue 54): each use on its own", ""]
    for part in ("ceiling", "check"):
        runs = report.get(part)
        if not runs:
            continue
        title = (
            "Identifier-given ceiling (first multi-step tune tasks, the object's number in the request, one step)"
            if part == "ceiling"
            else f"Multi-step task set, split {report['args'].get('split', 'check')}"
        )
        lines += [f"## {title}", ""]
        lines += [
            "| arm | max steps | success | multi-step | single-call | absent, no write | claims unrun | calls/task "
            "| p50 s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in runs.values():
            s = r["summary"]

            def cell(x: dict[str, Any]) -> str:
                return f"{x['k']}/{x['n']} ({x['rate']:.2f})" if x["n"] else "–"

            lines.append(
                f"| {r['arm']} | {r['max_steps']} | {cell(s['success'])} | {cell(s['multi'])} | {cell(s['single'])} "
                f"| {cell(s['absent_no_write'])} | {s['claims_unrun']} | {s['calls_per_task']:.1f} | {s['p50_s']:.0f} |"
            )
        lines.append("")
    if report.get("first-writes"):
        lines += [
            f"## First writes, split {report['args'].get('split', 'check')} (GitHub tasks, the first gold write)",
            "",
            "| arm | tasks | retrieval's first candidate | routed (the decision where asked) |",
            "|---|---|---|---|",
        ]
        for r in report["first-writes"].values():
            lines.append(f"| {r['arm']} | {r['n']} | {r['retrieval_top1']} | {r['routed']} |")
        lines.append("")
    if report.get("eval"):
        lines += ["## eval-args / eval-routing", "", "| arm / set / command | summary |", "|---|---|"]
        for k, v in report["eval"].items():
            keep = {
                m: round(x, 3)
                for m, x in v["summary"].items()
                if isinstance(x, float) and m in ("accuracy", "routing", "args_given_routed", "e2e", "json_valid")
            }
            lines.append(f"| {k} | {keep} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="ceiling,check")
    ap.add_argument("--arms", default="none,keys,arguments,all")
    ap.add_argument("--split", default="check", choices=["tune", "check", "reworded"])
    ap.add_argument("--ids", default="")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=3)
    ap.add_argument("--steps-baseline", type=lambda s: [int(x) for x in s.split(",") if x], default=[])
    ap.add_argument("--ceiling-n", type=int, default=16)
    ap.add_argument("--eval-limit", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2, help="latency: runs of each request and arm")
    ap.add_argument("--baseline", default="", help="latency: a checkout from before this issue, set up (its .venv)")
    ap.add_argument("--json", dest="out", default=str(OUT))
    ap.add_argument("--log", default="", help="also print progress to this file")
    ap.add_argument(
        "--examples-file",
        type=lambda s: dict(x.split("=", 1) for x in s.split(",") if x),
        default={},
        help='SERVER=PATH,…: an examples file for a server, as its config entry\'s "examples" (a bank in development)',
    )
    a = ap.parse_args()
    for arm in a.arms.split(","):
        if arm not in ARMS:
            ap.error(f"unknown arm {arm!r}; known: {', '.join(ARMS)}")
    out = Path(a.out)
    report: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    report["args"] = vars(a)
    log = open(a.log, "a") if a.log else sys.stdout  # noqa: SIM115 - closed at exit
    for part in a.parts.split(","):
        if part in ("ceiling", "check"):
            got = asyncio.run(part_tasks(a, part, log))
        elif part == "eval":
            got = part_eval(a)
        elif part == "latency":
            got = part_latency(a)
        elif part == "first-writes":
            got = part_first_writes(a, log)
        else:
            ap.error(f"unknown part {part!r}")
        report.setdefault(part, {}).update(got)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n")
        out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
