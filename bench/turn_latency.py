#!/usr/bin/env python3
"""Turn latency, stage by stage, before and after issue 43's changes, every arm in the same run.

Five parts (``--parts``, default all):

``one-shot``  ``nexus-agent run --mcp github --yes --json -p REQUEST`` as a new user runs it, one process per request
              and arm, each event timed from the process's start: start-up (route event minus the route's own
              latency), route, arguments (route → tool_call), tool (tool_call → tool_result), first answer token, end.
              Arms: ``before`` (``--no-head-cache --answer-view full``: heads decoded in-process, the answer reads the
              whole output) and ``after`` (the defaults). The head store is filled by one untimed ``after`` run
              first: its first-ever run decodes and stores the heads, as a before run would.
``session``   the Python API, one agent per request and arm: a first turn, ``--pause`` seconds (a user reading the
              answer), then each request as the second turn, stage by stage from the moment it is sent. Arms: heads
              off, the full view, ``warm_next`` off (the history is prefilled when the request comes, not between
              turns), all off (``before``), the defaults (``after``).
``answers``   the answer alone from the same tool outputs, whole vs compact view: first token and rows named.
``arguments`` argument writing alone (engine.generate under the schema grammar, qwen1.5b): llama.cpp's grammar-first
              chain (the grammar run over all 151,936 tokens every step) against the lazy check now shipped; the
              tokens must be equal.
``lookup``    prompt-lookup decoding (``EngineConfig.lookup`` k = 2, 4) against plain greedy decoding on the same
              argument and answer prompts: time, tokens equal, drafts kept/checked.

usage: python bench/turn_latency.py [--parts one-shot,session,answers,arguments,lookup] [--repeats 1] [--pause 8]
                                    [--requests auto,...] [--json OUT] [--baseline DIR] [--report]
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

# the fixed request set: one of each path a turn takes (the one-shot runs all but the follow-up, which needs a turn
# before it; the session runs each as the second turn after FIRST_TURN)
REQUESTS = {
    "auto": "list the open issues in acme/api",
    "escalated": "who should review the dark mode change in the web repo?",
    "judged": "what pull requests are waiting for my review?",
    "no-tool": "what is a pull request, in one sentence?",
    "follow-up": "who opened the first one?",
}
ONE_SHOT = {k: v for k, v in REQUESTS.items() if k != "follow-up"}
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
def one_shot_run(request: str, extra: list[str], root: Path = ROOT) -> dict[str, Any]:
    """One ``run -p`` process of the checkout at ``root``; seconds from its start to each stage."""
    exe = root / ".venv" / "bin" / "nexus-agent"
    cmd = [str(exe), "run", "--mcp", "github", "--yes", "--json", "-p", request, *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=root)
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
    return out | _stages_of(marks, route_ms)


def _stages_of(marks: dict[str, float], route_ms: float) -> dict[str, float]:
    """Stage durations (s) from the first time (s) each event type was seen; ``route_ms``: the route's own latency."""
    out = {"route": route_ms / 1000, "end": marks["end"]}
    if "tool_call" in marks:
        out["arguments"] = marks["tool_call"] - marks["route"]
    if "tool_result" in marks and "tool_call" in marks:
        out["tool"] = marks["tool_result"] - marks["tool_call"]
    if "first_token" in marks:
        out["first_token"] = marks["first_token"]
        prev = marks.get("tool_result", marks.get("tool_skipped", marks.get("route")))
        if prev is not None:
            out["answer_first_token"] = marks["first_token"] - prev
    return out


# one arm per change, off/on in the same run: both off, each off alone, both on (the defaults)
ARMS = {
    "before": ["--no-head-cache", "--answer-view", "full"],
    "no-heads": ["--no-head-cache"],
    "full-view": ["--answer-view", "full"],
    "no-examples": ["--examples", "none"],  # issue 54: no usage examples anywhere
    "after": [],
}
# ``--baseline DIR``: one more arm, a checkout of an earlier commit (its own .venv) run with its defaults
BASELINE: dict[str, Path] = {}


def part_one_shot(repeats: int) -> dict[str, Any]:
    print("one-shot: filling the head store (one untimed run per request)", flush=True)
    # every request once, untimed: the heads of the tools and operations they reach (their examples) are stored
    stored = [one_shot_run(req, []) for req in ONE_SHOT.values()]
    rows: list[dict[str, Any]] = []
    for r in range(repeats):
        for kind, req in ONE_SHOT.items():
            for arm, extra in ARMS.items():
                root = BASELINE.get(arm, ROOT)
                row = one_shot_run(req, extra, root) | {"kind": kind, "arm": arm, "repeat": r}
                print(f"  {arm:6s} {kind:9s} " + _fmt(row), flush=True)
                rows.append(row)
    return {"store_fill_run": stored, "runs": rows}


def _fmt(row: dict[str, Any]) -> str:
    keys = ("startup", "route", "arguments", "tool", "answer_first_token", "first_token", "end")
    return " ".join(f"{k}={row[k]:.1f}" for k in keys if isinstance(row.get(k), float))


# ---- session ---------------------------------------------------------------------------------------------------
async def _second_turn(cfg: dict[str, Any], first: str, request: str, pause: float) -> dict[str, Any]:
    """A new session (agent) per request: ``first`` as its first turn, ``pause`` seconds (a user reading the answer
    and typing), then ``request``, timed stage by stage from the moment it is sent."""
    from nexus_agent.agent.api import AgentConfig, NexusAgent

    agent = NexusAgent(AgentConfig(mcp=["github"], yes=True, **cfg))
    await agent.start()
    try:
        async for _ in agent.run(first):
            pass
        await asyncio.sleep(pause)
        t = time.perf_counter()
        marks: dict[str, float] = {}
        route_ms = 0.0
        decision = tool = None
        async for ev in agent.run(request):
            now = time.perf_counter() - t
            kind = "first_token" if ev.type == "token" else ev.type
            if kind == "route" and "route" not in marks:
                route_ms, decision, tool = ev.latency_ms, ev.decision, ev.tool
            marks.setdefault(kind, now)
        marks["end"] = time.perf_counter() - t
    finally:
        await agent.aclose()
    return {"decision": decision, "routed": tool} | _stages_of(marks, route_ms)


# the first turn of each session: a tool call, as in a working session; the follow-up's refers to it
FIRST_TURN = "list the open pull requests in acme/web"
SESSION_ARMS: dict[str, dict[str, Any]] = {
    "before": {"head_cache": False, "answer_view": "full", "warm_next": False},
    "no-heads": {"head_cache": False},
    "full-view": {"answer_view": "full"},
    "no-warm-next": {"warm_next": False},  # the history is prefilled when the next request comes, not before
    "after": {},
}


def part_session(repeats: int, pause: float, kinds: list[str]) -> dict[str, Any]:
    rows = []
    for r in range(repeats):
        for kind, req in REQUESTS.items():
            if kind not in kinds:
                continue
            for arm, cfg in SESSION_ARMS.items():
                row = asyncio.run(_second_turn(cfg, FIRST_TURN, req, pause)) | {"kind": kind, "arm": arm, "repeat": r}
                row["request"] = req
                print(f"  second turn {arm:9s} {kind:9s} " + _fmt(row), flush=True)
                rows.append(row)
    return {"first_turn": FIRST_TURN, "pause_s": pause, "runs": rows}


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


# ---- answers ---------------------------------------------------------------------------------------------------
ANSWER_CASES = [
    ("list the open issues in acme/api", "list_issues", {"owner": "acme", "repo": "api", "state": "OPEN"}),
    ("list the issues in acme/web", "list_issues", {"owner": "acme", "repo": "web"}),
    ("list all pull requests in acme/api", "list_pull_requests", {"owner": "acme", "repo": "api", "state": "all"}),
    ("which repositories does acme have?", "search_repositories", {"query": "org:acme"}),
    ("list the branches of acme/api", "list_branches", {"owner": "acme", "repo": "api"}),
    ("show the recent commits in acme/api", "list_commits", {"owner": "acme", "repo": "api"}),
    ("find the issues in acme/api", "search_issues", {"query": "repo:acme/api"}),
    ("who opened the open issues in acme/api?", "list_issues", {"owner": "acme", "repo": "api", "state": "OPEN"}),
]


async def _outputs() -> list[tuple[str, str, dict[str, Any], str, list[str]]]:
    """Each answer case's tool output from the sandbox, with the titles/names of its rows."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from nexus_agent.paths import nexus_home
    from nexus_agent.sandbox.github import sandbox_server_params

    out = []
    async with (
        stdio_client(sandbox_server_params(nexus_home() / "sandbox" / "github")) as (r, w),
        ClientSession(r, w) as s,
    ):
        await s.initialize()
        for req, name, args in ANSWER_CASES:
            res = await s.call_tool(name, args)
            text = "".join(getattr(c, "text", "") for c in res.content)
            out.append((req, name, args, text, await _listed(s, (name, args))))
    return out


def part_answers(model: str) -> dict[str, Any]:
    """The answer to the same tool output through each view (the prompt the turn builds; greedy, as the agent)."""
    from nexus_agent.agent.prompts import SYSTEM_MAIN, TOOL_DATA
    from nexus_agent.agent.view import answer_view, whole
    from nexus_agent.engine import MAIN

    cases = asyncio.run(_outputs())
    eng = _engine(model)
    rows = []
    try:
        eng.generate(eng.tokenize_chat([{"role": "system", "content": SYSTEM_MAIN}]), MAIN, max_tokens=1, keep=False)
        for req, name, args, text, names in cases:
            for view in ("full", "compact"):
                data = whole(text) if view == "full" else answer_view(text, req).text
                user = TOOL_DATA.format(request=req, tool=name, args=json.dumps(args), data=data)
                msgs = [{"role": "system", "content": SYSTEM_MAIN}, {"role": "user", "content": user}]
                prompt = eng.tokenize_chat(msgs)
                gen = eng.generate(prompt, MAIN, max_tokens=384, repeat_penalty=1.1, keep=False)
                named = [n for n in names if n.lower() in gen.text.lower()]
                row = {
                    "request": req,
                    "view": view,
                    "prompt_tokens": len(prompt),
                    "first_token": gen.ttft_ms / 1000,
                    "end": gen.total_ms / 1000,
                    "rows": len(names),
                    "named": len(named),
                    "missing": [n for n in names if n not in named],
                    "answer": gen.text,
                }
                print(
                    f"  answers {view:7s} {req[:40]:40s} prompt={len(prompt)} first={row['first_token']:.1f} "
                    f"end={row['end']:.1f} {len(named)}/{len(names)}",
                    flush=True,
                )
                rows.append(row)
    finally:
        eng.close()
    return {"rows": rows}


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


def _arms(res: dict[str, Any], part: str) -> list[str]:
    """A part's arms in the order they ran (before, each change off alone, after, then any baseline)."""
    return list(dict.fromkeys(r["arm"] for r in res[part]["runs"]))


def _stages(res: dict[str, Any], part: str, kinds: list[str], s: dict[str, Any]) -> None:
    """p50/p95 of each stage per request kind and arm, and each arm's end-to-end p50 as a ratio to ``before``."""
    for kind in kinds:
        for arm in _arms(res, part):
            rows = [r for r in res[part]["runs"] if r["kind"] == kind and r["arm"] == arm]
            s[f"{part}.{kind}.{arm}"] = {st: _stats([r[st] for r in rows if st in r]) for st in STAGES}
        base = s[f"{part}.{kind}.before"]["end"]["p50"]
        for arm in _arms(res, part):
            m = s[f"{part}.{kind}.{arm}"]["end"]["p50"]
            s[f"{part}.{kind}.{arm}"]["end_vs_before"] = m / base if m and base else None


def _kinds(res: dict[str, Any], part: str, kinds: list[str]) -> list[str]:
    """The request kinds a part ran (``--requests`` may have left some out), in the fixed order."""
    ran = {r["kind"] for r in res[part]["runs"]}
    return [k for k in kinds if k in ran]


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    if "one_shot" in res:
        _stages(res, "one_shot", _kinds(res, "one_shot", list(ONE_SHOT)), s)
    if "session" in res:
        _stages(res, "session", _kinds(res, "session", list(REQUESTS)), s)
    if "answers" in res:
        for view in ("full", "compact"):
            rows = [r for r in res["answers"]["rows"] if r["view"] == view]
            s[f"answers.{view}"] = {
                "prompt_tokens": _stats([r["prompt_tokens"] for r in rows]),
                "first_token": _stats([r["first_token"] for r in rows]),
                "end": _stats([r["end"] for r in rows]),
                "named": sum(r["named"] for r in rows),
                "rows": sum(r["rows"] for r in rows),
            }
        f, c = s["answers.full"]["first_token"]["p50"], s["answers.compact"]["first_token"]["p50"]
        s["answers.first_token_ratio"] = c / f if c and f else None
    return s


def markdown(res: dict[str, Any], s: dict[str, Any]) -> str:
    out = ["# Turn latency (bench/turn_latency.py)", "", f"model {res['model']}, {res['date']}", ""]
    titles = {
        "one_shot": "## One-shot `run -p` (seconds from the process's start; p50 of each stage)",
        "session": (
            f"## The second turn of a session (API; seconds from the request; first turn: {FIRST_TURN!r}, then "
            f"{res.get('session', {}).get('pause_s', 0):g} s before the request)"
        ),
    }
    for part, kinds in (("one_shot", list(ONE_SHOT)), ("session", list(REQUESTS))):
        if part not in res:
            continue
        kinds = _kinds(res, part, kinds)
        out += [titles[part], ""]
        cols = [c for c in STAGES if part == "one_shot" or c != "startup"]
        out += ["| request | arm | path | " + " | ".join(cols) + " | end / before |", "|---" * (len(cols) + 4) + "|"]
        for kind in kinds:
            for arm in _arms(res, part):
                st = s[f"{part}.{kind}.{arm}"]
                row = next((r for r in res[part]["runs"] if r["kind"] == kind and r["arm"] == arm), None)
                if row is None:  # an arm this run did not have (the one-shot baseline)
                    continue
                cells = [f"{st[k]['p50']:.1f}" if st[k]["p50"] is not None else "" for k in cols]
                ratio = st["end_vs_before"]
                out.append(
                    f"| {kind} | {arm} | {row.get('decision')} | "
                    + " | ".join(cells)
                    + (f" | **{ratio:.2f}×** |" if ratio else " | |")
                )
        out.append("")
    if "answers" in res:
        out += ["## Answers from the same tool output: whole output vs compact view (s; rows named / rows)", ""]
        out += ["| request | view | prompt tokens | first token | end | named |", "|---|---|---|---|---|---|"]
        for r in res["answers"]["rows"]:
            out.append(
                f"| {r['request']} | {r['view']} | {r['prompt_tokens']} | {r['first_token']:.1f} | {r['end']:.1f} | "
                f"{r['named']}/{r['rows']} |"
            )
        for view in ("full", "compact"):
            st = s[f"answers.{view}"]
            out.append(
                f"| **all** | {view} | {st['prompt_tokens']['p50']} (p50) | {st['first_token']['p50']:.1f} (p50) | "
                f"{st['end']['p50']:.1f} (p50) | {st['named']}/{st['rows']} |"
            )
        r = s["answers.first_token_ratio"]
        out += ["", f"First token, compact/full (p50): {r:.2f}×" if r else "", ""]
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
    ap.add_argument("--parts", default="one-shot,session,answers,arguments,lookup")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--requests", default=",".join(REQUESTS), help="session: which of the requests (their kinds)")
    ap.add_argument(
        "--pause", type=float, default=8.0, help="session: seconds between the first answer and the second request"
    )
    ap.add_argument("--model", default="qwen1.5b")
    ap.add_argument("--report", action="store_true", help="only rewrite the summary and the markdown from --json")
    ap.add_argument("--baseline", help="a checkout of an earlier commit, set up (its .venv): a third one-shot arm")
    ap.add_argument("--arms", default="", help="one-shot: only these arms (comma-separated; default: all)")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "turn_latency.json"))
    a = ap.parse_args()
    parts = a.parts.split(",")
    if a.arms:
        for name in [k for k in ARMS if k not in a.arms.split(",")]:
            del ARMS[name]
    if a.baseline:
        base = Path(a.baseline).resolve()
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=base, capture_output=True, text=True)
        name = f"main@{rev.stdout.strip()}"
        ARMS[name] = []
        BASELINE[name] = base
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}  # parts not run now are kept
    if not a.report:
        res |= {"model": a.model, "date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count()}
        _run(res, parts, a, out)
    res["summary"] = summarize(res)
    out.write_text(json.dumps(res, indent=1, default=str))
    out.with_suffix(".md").write_text(markdown(res, res["summary"]))
    print(out.with_suffix(".md").read_text())


def _run(res: dict[str, Any], parts: list[str], a: argparse.Namespace, out: Path) -> None:
    """The ``parts`` asked for; the JSON is written after each, so a later failure loses nothing measured."""
    if "arguments" in parts:
        res["arguments"] = part_arguments(a.model, max(a.repeats, 2))
        out.write_text(json.dumps(res, indent=1, default=str))
    if "lookup" in parts:
        res["lookup"] = part_lookup(a.model, a.repeats)
        out.write_text(json.dumps(res, indent=1, default=str))
    if "answers" in parts:
        res["answers"] = part_answers(a.model)
        out.write_text(json.dumps(res, indent=1, default=str))
    if "one-shot" in parts:
        res["one_shot"] = part_one_shot(a.repeats)
        out.write_text(json.dumps(res, indent=1, default=str))
    if "session" in parts:
        res["session"] = part_session(a.repeats, a.pause, a.requests.split(","))
        out.write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
