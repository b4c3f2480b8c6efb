"""The remote engine against the in-process one, same model, same machine, in one run (issue 27).

**Server.** llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) on the same GGUF, started
by this script with ``--verbose True`` and, unless ``--no-cache``, its prompt cache on (``--cache True``: a prefix
seen in any earlier request is restored, not only the previous request's). That cache counts a state's KV bytes
against its 2 GiB but not the logits every state also holds when ``logits_all`` is on (the server's default, which
logprobs need): about 600 KB per prompt token on Qwen's vocabulary, so a long run grows without bound (the server
reached 23 GB and was killed here); long runs use ``--no-cache``. Its log gives, per request, how much of the
prompt it reused (``N prefix-match hit, remaining M``). It runs through ``bench/llama_server_timed.py``, which
also logs how long the server held each request (its own compute: template, grammar, prompt cache, llama.cpp, the
response).

**Accuracy.** ``eval-routing`` (the full pipeline, LLM decision and relevance judge) and ``eval-args`` (routing plus
arguments) on both dev sets at their own profiles (``github_dev`` at ``github_all``, ``mixed_dev`` at
``desktop_all``), the first ``--limit-routing`` / ``--limit-args`` items, once in-process and once through the
server. Greedy decoding both ways; the report counts the items whose pick (and arguments) differ, with Wilson CIs.

**Overhead.** A ``--turns``-turn session on the GitHub sandbox through the agent API, in-process and through the
server. Per turn: wall time; through the server also the sum of the server's own compute over the turn's requests
(its log), so ``overhead = client time of the turn's requests - the server's time holding them`` is what the remote
path adds (HTTP, JSON, the client), reported against the in-process turn's wall time.

**Prefix cache.** Across the session: prompt tokens the server reused / prompt tokens sent, from its log, and
``usage.prompt_tokens_details.cached_tokens`` where the server reports it (llama-cpp-python does not).

usage: python bench/remote_engine.py [--model qwen0.5b] [--limit-routing 50] [--limit-args 40] [--turns 10]
    [--quick] [--json OUT]
Writes bench/results/remote_engine.{json,md} (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nexus_agent.agent.api import AgentConfig, NexusAgent
from nexus_agent.agent.routing_adapter import AgentRouter
from nexus_agent.backend import Backend, LocalBackend, RemoteBackend, RemoteConfig
from nexus_agent.backend.llama_server import LlamaServer
from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.evaluation.args import load_items, run_eval
from nexus_agent.evaluation.routing import evaluate, load_eval
from nexus_agent.evaluation.stats import wilson_ci
from nexus_agent.models import resolve
from nexus_agent.registry import load_registry
from nexus_agent.routing.options import RouterOptions
from nexus_agent.routing.router import build_router

ROOT = Path(__file__).resolve().parents[1]
SETS = {"github_dev": "github_all", "mixed_dev": "desktop_all"}
SESSION = [
    "who am I on github?",
    "list the open issues in acme/api",
    "show me issue 1 there",
    "what is a rebase, in one sentence?",
    "list the branches of acme/api",
    "show the latest commits on main in acme/api",
    "search github for repositories about llama",
    "list open pull requests in acme/api",
    "thanks! what's 12 times 7?",
    "get the README.md file of acme/api",
]
_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
_TOTAL = re.compile(r"nexus-server-ms /v1/chat/completions ([\d.]+)")


def server_log_stats(text: str) -> dict[str, float]:
    """What the server's log says of a stretch of requests: its compute (ms), prompt tokens reused and sent."""
    hits = [(int(a), int(b)) for a, b in _HIT.findall(text)]
    return {
        "server_ms": sum(float(x) for x in _TOTAL.findall(text)),
        "reused": sum(a for a, _ in hits),
        "prompt": sum(a + b for a, b in hits),
        "requests": len(_TOTAL.findall(text)),
    }


def ci(k: int, n: int) -> list[float]:
    return [round(x, 3) for x in wilson_ci(k, n)]


def routing_arm(items: list[Any], tools: list[Any], backend: Backend) -> list[Any]:
    options = RouterOptions(splice="off")  # compiled blocks are local-only; both arms prefill text
    router = build_router(tools, options, backend)
    router.calibrate()
    _, rows = evaluate(router, items, [t.qualified_name for t in tools])
    return rows


def accuracy(a: str, set_name: str, limit: int, model: str, server: LlamaServer, engine: Engine) -> dict[str, Any]:
    reg = load_registry(ROOT / "data" / "mcp-registry")
    profile = SETS[set_name]
    tools = reg.profile(profile)
    path = ROOT / "data" / "eval" / f"{set_name}.jsonl"
    remote = RemoteBackend(RemoteConfig(url=server.url, model=model, timeout_s=600))
    out: dict[str, Any] = {"set": set_name, "profile": profile, "eval": a}
    t0 = time.perf_counter()
    if a == "eval-routing":
        items = load_eval(path, reg)[:limit]
        local_rows = routing_arm(items, tools, LocalBackend(engine))
        t1 = time.perf_counter()
        remote_rows = routing_arm(items, tools, remote)
        t2 = time.perf_counter()
        picks = [
            (x.result.tool, y.result.tool, x.correct, y.correct) for x, y in zip(local_rows, remote_rows, strict=True)
        ]
        differ = [x.item.query for x, y in zip(local_rows, remote_rows, strict=True) if x.result.tool != y.result.tool]
        args_differ = 0
    else:
        items = [it for it in load_items(path) if it.get("profile", profile) == profile][:limit]
        lr = AgentRouter.create(tools, RouterOptions(splice="off"), LocalBackend(engine))
        _, local_res = run_eval(items, tools, lr, LocalBackend(engine))
        t1 = time.perf_counter()
        rr = AgentRouter.create(tools, RouterOptions(), remote)
        _, remote_res = run_eval(items, tools, rr, remote)
        t2 = time.perf_counter()
        picks = [
            (x.routed, y.routed, x.route_ok and x.args_ok, y.route_ok and y.args_ok)
            for x, y in zip(local_res, remote_res, strict=True)
        ]
        differ = [x.id for x, y in zip(local_res, remote_res, strict=True) if x.routed != y.routed]
        args_differ_ids = [
            {"id": x.id, "in_process": x.arguments, "remote": y.arguments}
            for x, y in zip(local_res, remote_res, strict=True)
            if x.routed == y.routed and x.arguments != y.arguments
        ]
        args_differ = len(args_differ_ids)
        out["args_differ_items"] = args_differ_ids
    n = len(picks)
    k_local = sum(1 for p in picks if p[2])
    k_remote = sum(1 for p in picks if p[3])
    out.update(
        n=n,
        in_process=round(k_local / n, 3),
        in_process_ci95=ci(k_local, n),
        remote=round(k_remote / n, 3),
        remote_ci95=ci(k_remote, n),
        picks_differ=len(differ),
        differ=differ,
        args_differ=args_differ,
        outcome_differs=sum(1 for p in picks if p[2] != p[3]),
        in_process_s=round(t1 - t0, 1),
        remote_s=round(t2 - t1, 1),
        capabilities=remote.capabilities().summary(),
    )
    remote.close()
    print(json.dumps({k: v for k, v in out.items() if k != "differ"}), flush=True)
    return out


def settled_log(server: LlamaServer, n_requests: int, timeout_s: float = 15.0) -> str:
    """The server's log once it holds a timing line for each of the client's ``n_requests`` chat requests: the server
    prints a request's line after its last byte, which can be after the client has moved on, so reading the log at
    once could give a turn's last request to the next turn."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = server.log.read_text(errors="replace")
        if len(_TOTAL.findall(text)) >= n_requests or time.monotonic() > deadline:
            return text


def _turn_part(text: str, first: int, last: int) -> str:
    """The log from the ``first``-th timing line's request to the ``last``-th's line (request lines are counted by
    their timing lines; the prefix-match line of a request comes before its timing line)."""
    ends = [m.end() for m in _TOTAL.finditer(text)]
    start = ends[first - 1] if first > 0 else 0
    return text[start : ends[last - 1]] if last > first else ""


async def session(turns: list[str], cfg: AgentConfig, server: LlamaServer | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    base = 0  # timing lines already in the log (the accuracy arms' requests); the last one lands ms after its reply
    if server is not None:
        await asyncio.sleep(2.0)
        base = len(_TOTAL.findall(server.log.read_text(errors="replace")))
    async with NexusAgent.from_config(cfg, confirm=lambda *a: True) as agent:
        backend = agent.backend
        for q in turns:
            n0 = len(backend.usage) if isinstance(backend, RemoteBackend) else 0
            t0 = time.perf_counter()
            events = [ev async for ev in agent.run(q)]
            wall = (time.perf_counter() - t0) * 1e3
            route = next((e for e in events if e.type == "route"), None)
            row: dict[str, Any] = {
                "query": q,
                "wall_ms": round(wall, 1),
                "tool": getattr(route, "tool", None),
                "route_ms": round(getattr(route, "latency_ms", 0.0), 1),
                "errors": [e.message for e in events if e.type == "error"],
            }
            if server is not None:
                assert isinstance(backend, RemoteBackend)
                # every chat request this client completed (the start-up probe's too) has one timing line
                n1 = len(backend.usage)
                text = settled_log(server, base + n1)
                row.update(server_log_stats(_turn_part(text, base + n0, base + n1)))
                done = backend.usage[n0:n1]
                row["client_ms"] = round(sum(u.ms for u in done), 1)
                row["cached_reported"] = [u.cached_tokens for u in done]
            rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen0.5b")
    ap.add_argument("--limit-routing", type=int, default=50)
    ap.add_argument("--limit-args", type=int, default=40)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--sets", default="github_dev,mixed_dev")
    ap.add_argument("--quick", action="store_true", help="8 items per arm, 4 turns")
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--carry",
        default=None,
        help="JSON lines of accuracy rows an earlier run printed (one per line): listed first, marked carried",
    )
    ap.add_argument("--no-cache", action="store_true", help="the server without its prompt cache (see docstring)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "remote_engine"), help="<out>.json and .md")
    a = ap.parse_args()
    if a.quick:
        a.limit_routing = a.limit_args = 8
        a.turns = 4
    path = resolve(a.model)
    log = Path(tempfile.mkdtemp(prefix="nexus-remote-bench-")) / "server.log"
    t_start = time.perf_counter()
    result: dict[str, Any] = {"args": vars(a), "accuracy": [], "session": {}}
    if a.carry:
        rows = [json.loads(x) for x in Path(a.carry).read_text().splitlines() if x.strip()]
        result["accuracy"] = [{**r, "carried": True} for r in rows]
    launcher = [sys.executable, str(ROOT / "bench" / "llama_server_timed.py")]
    with LlamaServer(path, a.model, log, cache=not a.no_cache, verbose=True, launcher=launcher) as server:
        engine = Engine(EngineConfig(model=a.model, n_ctx=8192))
        try:
            for set_name in a.sets.split(","):
                result["accuracy"].append(accuracy("eval-routing", set_name, a.limit_routing, a.model, server, engine))
                result["accuracy"].append(accuracy("eval-args", set_name, a.limit_args, a.model, server, engine))
        finally:
            engine.close()
        base = dict(mcp=["github"], yes=True)
        local = asyncio.run(session(SESSION[: a.turns], AgentConfig(model=a.model, **base), None))
        remote = asyncio.run(session(SESSION[: a.turns], AgentConfig(engine=server.url, model=a.model, **base), server))
    per_turn = []
    for lo, re_ in zip(local, remote, strict=True):
        # what the remote path adds: its wall time less the server's compute and the local work both paths do
        # (retrieval and tools: the remote turn's wall time less its requests' client time)
        local_work = re_["wall_ms"] - re_["client_ms"]
        overhead = re_["client_ms"] - re_["server_ms"]
        per_turn.append(
            {
                "query": lo["query"],
                "in_process_ms": lo["wall_ms"],
                "remote_ms": re_["wall_ms"],
                "server_ms": re_["server_ms"],
                "local_work_ms": round(local_work, 1),
                "overhead_ms": round(overhead, 1),
                "overhead_share": round(overhead / lo["wall_ms"], 4) if lo["wall_ms"] else None,
                "same_tool": lo["tool"] == re_["tool"],
                "prefix_reused": re_["reused"],
                "prompt_tokens": re_["prompt"],
                "requests": re_["requests"],
                "errors": lo["errors"] + re_["errors"],
            }
        )
    shares = [t["overhead_share"] for t in per_turn if t["overhead_share"] is not None]
    reused = sum(t["prefix_reused"] for t in per_turn)
    sent = sum(t["prompt_tokens"] for t in per_turn)
    result["session"] = {
        "turns": per_turn,
        "overhead_share_median": round(statistics.median(shares), 4) if shares else None,
        "overhead_share_max": round(max(shares), 4) if shares else None,
        "overhead_ms_median": round(statistics.median(t["overhead_ms"] for t in per_turn), 1),
        "prefix_reused_share": round(reused / sent, 3) if sent else None,
        "cached_tokens_reported": any(c is not None for r in remote for c in r.get("cached_reported", [])),
        "remote_over_in_process_wall": round(
            sum(t["remote_ms"] for t in per_turn) / sum(t["in_process_ms"] for t in per_turn), 3
        ),
    }
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    out = Path(a.out)
    text = json.dumps(result, indent=1) + "\n"
    Path(f"{out}.json").write_text(text)  # not with_suffix: "remote_engine_qwen1.5b" has a dot
    if a.json:
        Path(a.json).write_text(text)
    Path(f"{out}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(r: dict[str, Any]) -> str:
    lines = [
        f"# Remote engine vs in-process ({r['args']['model']}, llama-cpp-python server, {r['seconds']:.0f} s)",
        "",
        "| eval | set | n | in-process [CI] | remote [CI] | picks differ | args differ | outcome differs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in r["accuracy"]:
        lines.append(
            f"| {x['eval']} | {x['set']} | {x['n']} | {x['in_process']:.3f} {x['in_process_ci95']} | "
            f"{x['remote']:.3f} {x['remote_ci95']} | {x['picks_differ']} | {x['args_differ']} | "
            f"{x['outcome_differs']} |"
        )
    s = r["session"]
    lines += [
        "",
        f"Session of {len(s['turns'])} turns: overhead (client time less server compute) / in-process turn: median "
        f"{s['overhead_share_median']}, max {s['overhead_share_max']}; prompt tokens the server reused "
        f"{s['prefix_reused_share']}; cached_tokens reported: {s['cached_tokens_reported']}; remote / in-process "
        f"wall {s['remote_over_in_process_wall']}",
        "",
        "| turn | in-process ms | remote ms | server ms | overhead ms | overhead share | reused / prompt tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, t in enumerate(s["turns"]):
        lines.append(
            f"| {i + 1} | {t['in_process_ms']:.0f} | {t['remote_ms']:.0f} | {t['server_ms']:.0f} | "
            f"{t['overhead_ms']:.0f} | {t['overhead_share']} | {t['prefix_reused']} / {t['prompt_tokens']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
