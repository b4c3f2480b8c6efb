#!/usr/bin/env python3
"""Turn latency, stage by stage, before and after issue 43's changes, every arm in the same run.

Four parts (``--parts``, default all):

``one-shot``  ``nexus-agent run --mcp github --yes --json -p REQUEST`` as a new user runs it, one process per request
              and arm, each event timed from the process's start: start-up (route event minus the route's own
              latency), route, arguments (route → tool_call), tool (tool_call → tool_result), first answer token, end.
              Arms: ``before`` (``--no-head-cache --answer-view full``: heads decoded in-process, the answer reads the
              whole output) and ``after`` (the defaults). The head store is filled by one untimed ``after`` run
              first: its first-ever run decodes and stores the heads, as a before run would.
``session``   the Python API, one agent per arm (``answer_view`` full vs compact), a warm-up turn, then list requests:
              the second-and-later turn's time to the first answer token and to the end, and the answer's coverage:
              the share of the listed rows (up to ``answer_items``) whose title or name the answer names.
``arguments`` argument writing alone (engine.generate under the schema grammar, qwen1.5b): llama.cpp's grammar-first
              chain (the grammar run over all 151,936 tokens every step) against the lazy check now shipped; the
              tokens must be equal.
``lookup``    prompt-lookup decoding (``EngineConfig.lookup`` k = 2, 4) against plain greedy decoding on the same
              argument and answer prompts: time, tokens equal, drafts kept/checked.

usage: python bench/turn_latency.py [--parts one-shot,session,arguments,lookup] [--repeats 1] [--json OUT]
Writes bench/results/turn_latency.json and .md (or OUT and OUT with .md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ONE_SHOT = {
    "auto": "list the open issues in acme/api",
    "escalated": "who should review the dark mode change in the web repo?",
    "no-tool": "what is a pull request, in one sentence?",
}
# list requests for the session part; the coverage check re-reads the call each one made
SESSION = [
    "list the open issues in acme/api",
    "list all pull requests in acme/api, open and closed",
    "which repositories does the acme organisation have?",
    "list the branches of acme/api",
    "show the recent commits in acme/api",
]
ARG_CASES = [
    ("list_issues", "list the open issues in acme/api"),
    ("create_issue", "open an issue in acme/web titled 'Dark mode flickers' with body 'Seen on Safari 17'"),
    ("search_issues", "find issues about rate limiting in acme/api"),
]


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def _stats(xs: list[float]) -> dict[str, float | None]:
    return {"p50": _pct(xs, 0.5), "p95": _pct(xs, 0.95), "n": len(xs)}


# ---- one-shot ------------------------------------------------------------------------------------------------
def one_shot_run(request: str, extra: list[str]) -> dict[str, Any]:
    """One ``run -p`` process; seconds from its start to each stage."""
    exe = ROOT / ".venv" / "bin" / "nexus-agent"
    cmd = [str(exe), "run", "--mcp", "github", "--yes", "--json", "-p", request, *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    marks: dict[str, float] = {}
    route_ms = 0.0
    decision = None
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter() - t0
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = ev.get("type")
        if kind == "route" and "route" not in marks:
            route_ms = float(ev.get("latency_ms", 0.0))
            decision = ev.get("decision")
        if kind == "token":
            kind = "first_token"
        marks.setdefault(kind, now)
    proc.wait()
    marks["end"] = time.perf_counter() - t0
    out: dict[str, Any] = {"request": request, "decision": decision, "rc": proc.returncode}
    if "route" in marks:
        out["startup"] = marks["route"] - route_ms / 1000
        out["route"] = route_ms / 1000
    if "tool_call" in marks:
        out["arguments"] = marks["tool_call"] - marks["route"]
    if "tool_result" in marks and "tool_call" in marks:
        out["tool"] = marks["tool_result"] - marks["tool_call"]
    if "first_token" in marks:
        out["first_token"] = marks["first_token"]
        prev = marks.get("tool_result", marks.get("tool_skipped", marks.get("route")))
        if prev is not None:
            out["answer_first_token"] = marks["first_token"] - prev
    out["end"] = marks["end"]
    return out


ARMS = {"before": ["--no-head-cache", "--answer-view", "full"], "after": []}


def part_one_shot(repeats: int) -> dict[str, Any]:
    print("one-shot: filling the head store (one untimed run)", flush=True)
    stored = one_shot_run(ONE_SHOT["escalated"], ARMS["after"])
    rows: list[dict[str, Any]] = []
    for r in range(repeats):
        for kind, req in ONE_SHOT.items():
            for arm, extra in ARMS.items():
                row = one_shot_run(req, extra) | {"kind": kind, "arm": arm, "repeat": r}
                print(f"  {arm:6s} {kind:9s} " + _fmt(row), flush=True)
                rows.append(row)
    return {"store_fill_run": stored, "runs": rows}


def _fmt(row: dict[str, Any]) -> str:
    keys = ("startup", "route", "arguments", "tool", "answer_first_token", "first_token", "end")
    return " ".join(f"{k}={row[k]:.1f}" for k in keys if isinstance(row.get(k), float))


# ---- session ---------------------------------------------------------------------------------------------------
async def _session(view: str, requests: list[str]) -> list[dict[str, Any]]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from nexus_agent.agent.api import AgentConfig, NexusAgent
    from nexus_agent.paths import nexus_home
    from nexus_agent.sandbox.github import sandbox_server_params

    agent = NexusAgent(AgentConfig(mcp=["github"], yes=True, answer_view=view))
    await agent.start()
    rows = []
    try:
        async for _ in agent.run("hi, I'm looking at the acme repositories today"):  # warm-up turn
            pass
        params = sandbox_server_params(nexus_home() / "sandbox" / "github")
        async with stdio_client(params) as (r, w), ClientSession(r, w) as direct:
            await direct.initialize()
            for req in requests:
                t = time.perf_counter()
                first = None
                call = None
                answer = ""
                async for ev in agent.run(req):
                    if ev.type == "token" and first is None:
                        first = time.perf_counter() - t
                    if ev.type == "tool_call":
                        call = (ev.name, ev.arguments)
                    if ev.type == "answer":
                        answer = ev.text
                end = time.perf_counter() - t
                names = await _listed(direct, call) if call else []
                shown = names[: agent.cfg.answer_items]
                named = [n for n in shown if n.lower() in answer.lower()]
                row = {
                    "request": req,
                    "view": view,
                    "tool": call[0] if call else None,
                    "first_token": first,
                    "end": end,
                    "rows": len(names),
                    "named": len(named),
                    "coverage": len(named) / len(shown) if shown else None,
                    "missing": [n for n in shown if n not in named],
                    "answer": answer,
                }
                print(
                    f"  {view:7s} {req[:40]:40s} first={first or 0:.1f} end={end:.1f} named {len(named)}/{len(shown)}"
                )
                rows.append(row)
    finally:
        await agent.aclose()
    return rows


async def _listed(session: Any, call: tuple[str, dict[str, Any]]) -> list[str]:
    """The titles/names of the rows the tool call returned (re-read from the sandbox; read-only calls)."""
    name, args = call
    res = await session.call_tool(name.split("__")[-1], args)
    text = "".join(getattr(c, "text", "") for c in res.content)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else []
    out = []
    for row in data if isinstance(data, list) else []:
        if isinstance(row, dict):
            for k in ("title", "name", "full_name", "tag_name"):
                if isinstance(row.get(k), str):
                    out.append(row[k])
                    break
            else:  # a commit: its message's first line
                msg = (row.get("commit") or {}).get("message") if isinstance(row.get("commit"), dict) else None
                if isinstance(msg, str) and msg:
                    out.append(msg.splitlines()[0])
    return out


def part_session() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for view in ("full", "compact"):
        out[view] = asyncio.run(_session(view, SESSION))
    return out


# ---- arguments and lookup --------------------------------------------------------------------------------------
def _engine(model: str) -> Any:
    from nexus_agent.engine import Engine, EngineConfig

    return Engine(EngineConfig(model=model, n_threads=2))


def _arg_prompts(eng: Any) -> list[tuple[str, list[int], str]]:
    from nexus_agent.agent.args import arg_prompt
    from nexus_agent.agent.schema import constraint_for
    from nexus_agent.registry import load_registry

    reg = load_registry(ROOT / "data" / "mcp-registry")
    out = []
    for name, req in ARG_CASES:
        view, msgs = arg_prompt(reg.find(name, "github"), req, [])
        out.append((name, eng.tokenize_chat(msgs), constraint_for(view).gbnf))
    return out


def _grammar_first_sampler() -> type:
    """llama.cpp's plain chain: the grammar over the whole vocabulary, then greedy (the sampler before issue 43)."""
    import llama_cpp.llama_cpp as L

    from nexus_agent.llm import sampling

    class GrammarFirst(sampling.Sampler):
        def __init__(self, model: Any, grammar: str | None = None, repeat_penalty: float = 1.0, **kw: Any) -> None:
            super().__init__(model, None, repeat_penalty=repeat_penalty)
            if grammar is not None:
                L.llama_sampler_free(self._chain)
                self._chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
                g = L.llama_sampler_init_grammar(model.vocab, grammar.encode(), b"root")
                L.llama_sampler_chain_add(self._chain, g)
                L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_greedy())

    return GrammarFirst


def part_arguments(model: str, repeats: int) -> dict[str, Any]:
    import nexus_agent.engine.engine as E
    from nexus_agent.engine import MAIN

    lazy = E.Sampler
    first = _grammar_first_sampler()
    eng = _engine(model)
    rows = []
    try:
        for name, toks, gbnf in _arg_prompts(eng):
            eng.generate(toks, MAIN, max_tokens=1, keep=False)  # the prompt cached: time the decoding only
            times: dict[str, list[float]] = {"grammar_first": [], "lazy": []}
            outs: dict[str, list[int]] = {}
            for _ in range(repeats):
                for arm, cls in (("grammar_first", first), ("lazy", lazy)):
                    E.Sampler = cls
                    gen = eng.generate(toks, MAIN, grammar=gbnf, max_tokens=128, keep=False)
                    times[arm].append(gen.total_ms / 1000)
                    outs[arm] = gen.tokens
            E.Sampler = lazy
            row = {
                "tool": name,
                "tokens": len(outs["lazy"]),
                "same_tokens": outs["lazy"] == outs["grammar_first"],
                "grammar_first_s": statistics.median(times["grammar_first"]),
                "lazy_s": statistics.median(times["lazy"]),
            }
            row["ratio"] = row["lazy_s"] / row["grammar_first_s"]
            print(f"  arguments {name}: {row}", flush=True)
            rows.append(row)
    finally:
        E.Sampler = lazy
        eng.close()
    return {"rows": rows}


def part_lookup(model: str, repeats: int) -> dict[str, Any]:
    from nexus_agent.agent.prompts import SYSTEM_MAIN
    from nexus_agent.agent.view import answer_view
    from nexus_agent.engine import MAIN

    eng = _engine(model)
    rows = []
    issues = [
        {"number": n, "title": t, "state": "open"}
        for n, t in enumerate(
            ["Rate limiting returns 500 instead of 429", "Health endpoint ignores the DB", "Docs: default port"], 1
        )
    ]
    answer_msgs = [
        {"role": "system", "content": SYSTEM_MAIN},
        {"role": "user", "content": "list the open issues in acme/api"},
        {"role": "user", "content": "Tool list_issues returned:\n" + answer_view(json.dumps(issues), "list").text},
    ]
    try:
        cases = [(n, t, g) for n, t, g in _arg_prompts(eng)] + [("answer", eng.tokenize_chat(answer_msgs), None)]
        for name, toks, gbnf in cases:
            eng.generate(toks, MAIN, max_tokens=1, keep=False)
            res: dict[str, Any] = {"case": name}
            ref = None
            for k in (0, 2, 4):
                ts = []
                for _ in range(repeats):
                    gen = eng.generate(toks, MAIN, grammar=gbnf, max_tokens=96, keep=False, lookup=k)
                    ts.append(gen.total_ms / 1000)
                ref = gen.tokens if k == 0 else ref
                res[f"k{k}_s"] = statistics.median(ts)
                res[f"k{k}_same"] = gen.tokens == ref
                res[f"k{k}_kept"] = f"{eng.drafts.kept}/{eng.drafts.checked}"
            res["tokens"] = len(ref or [])
            res["k4_ratio"] = res["k4_s"] / res["k0_s"]
            print(f"  lookup {res}", flush=True)
            rows.append(res)
    finally:
        eng.close()
    return {"rows": rows}


# ---- report ----------------------------------------------------------------------------------------------------
STAGES = ("startup", "route", "arguments", "tool", "answer_first_token", "first_token", "end")


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    if "one_shot" in res:
        for kind in ONE_SHOT:
            for arm in ARMS:
                rows = [r for r in res["one_shot"]["runs"] if r["kind"] == kind and r["arm"] == arm]
                s[f"one_shot.{kind}.{arm}"] = {st: _stats([r[st] for r in rows if st in r]) for st in STAGES}
            b, a = s[f"one_shot.{kind}.before"]["end"]["p50"], s[f"one_shot.{kind}.after"]["end"]["p50"]
            s[f"one_shot.{kind}.end_ratio"] = a / b if a and b else None
    if "session" in res:
        for view, rows in res["session"].items():
            cov = [r["coverage"] for r in rows if r["coverage"] is not None]
            s[f"session.{view}"] = {
                "first_token": _stats([r["first_token"] for r in rows if r["first_token"] is not None]),
                "end": _stats([r["end"] for r in rows]),
                "coverage_mean": statistics.mean(cov) if cov else None,
            }
    return s


def markdown(res: dict[str, Any], s: dict[str, Any]) -> str:
    out = ["# Turn latency (bench/turn_latency.py)", "", f"model {res['model']}, {res['date']}", ""]
    if "one_shot" in res:
        out += ["## One-shot `run -p` (seconds from process start; p50)", ""]
        out += ["| request | arm | " + " | ".join(STAGES) + " |", "|---|---|" + "---|" * len(STAGES)]
        for kind in ONE_SHOT:
            for arm in ARMS:
                st = s[f"one_shot.{kind}.{arm}"]
                cells = [f"{st[k]['p50']:.1f}" if st[k]["p50"] is not None else "" for k in STAGES]
                out.append(f"| {kind} | {arm} | " + " | ".join(cells) + " |")
            r = s[f"one_shot.{kind}.end_ratio"]
            out.append(f"| {kind} | after/before end | " + (f"**{r:.2f}×**" if r else "") + " |" + " |" * 6)
        out.append("")
    if "session" in res:
        out += ["## Later turns of a session (API; seconds from the request)", ""]
        out += ["| view | first token p50 | end p50 | rows named (mean coverage) |", "|---|---|---|---|"]
        for view in res["session"]:
            st = s[f"session.{view}"]
            cov = st["coverage_mean"]
            out.append(
                f"| {view} | {st['first_token']['p50']:.1f} | {st['end']['p50']:.1f} | "
                + (f"{cov:.2f}" if cov is not None else "")
                + " |"
            )
        out.append("")
        out += ["| request | view | first token | end | named/rows |", "|---|---|---|---|---|"]
        for view, rows in res["session"].items():
            for r in rows:
                out.append(
                    f"| {r['request']} | {view} | {r['first_token'] or 0:.1f} | {r['end']:.1f} | "
                    f"{r['named']}/{min(r['rows'], 20)} |"
                )
        out.append("")
    if "arguments" in res:
        out += ["## Arguments: grammar-first chain vs lazy grammar check (s, median)", ""]
        out += ["| tool | tokens | grammar-first | lazy | ratio | same tokens |", "|---|---|---|---|---|---|"]
        for r in res["arguments"]["rows"]:
            out.append(
                f"| {r['tool']} | {r['tokens']} | {r['grammar_first_s']:.2f} | {r['lazy_s']:.2f} | "
                f"{r['ratio']:.2f}× | {r['same_tokens']} |"
            )
        out.append("")
    if "lookup" in res:
        out += ["## Prompt lookup vs plain greedy decoding (s, median)", ""]
        out += [
            "| case | tokens | k=0 | k=2 | k=4 | k=4/k=0 | kept/checked k=4 | same |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in res["lookup"]["rows"]:
            out.append(
                f"| {r['case']} | {r['tokens']} | {r['k0_s']:.2f} | {r['k2_s']:.2f} | {r['k4_s']:.2f} | "
                f"{r['k4_ratio']:.2f}× | {r['k4_kept']} | {r['k2_same'] and r['k4_same']} |"
            )
        out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="one-shot,session,arguments,lookup")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--model", default="qwen1.5b")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "turn_latency.json"))
    a = ap.parse_args()
    parts = a.parts.split(",")
    out = Path(a.json)
    res: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}  # parts not run now are kept
    res |= {"model": a.model, "date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count()}
    if "arguments" in parts:
        res["arguments"] = part_arguments(a.model, max(a.repeats, 2))
    if "lookup" in parts:
        res["lookup"] = part_lookup(a.model, a.repeats)
    if "one-shot" in parts:
        res["one_shot"] = part_one_shot(a.repeats)
    if "session" in parts:
        res["session"] = part_session()
    res["summary"] = summarize(res)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str))
    out.with_suffix(".md").write_text(markdown(res, res["summary"]))
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
