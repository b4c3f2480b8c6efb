#!/usr/bin/env python3
"""The routing decision with every candidate line spliced, under several compile contexts and repair budgets.

Escalated dev requests (retrieval alone escalates them; ``N`` spread over both dev sets). The LLM decision runs
without splicing, then per config twice (the first pass compiles missing blocks, the second is timed). A config is a
JSON object of ``SpliceConfig`` fields, plus ``ratio`` (a fixed repair fraction) and ``tag`` (its block folder under
``$NEXUS_HOME/atb-sweep``); the string ``LIST_CONTEXT`` in it stands for ``engine.blocks.LIST_CONTEXT``. Prints one
line per config: median decision time, its ratio to no splicing, the share of picks unchanged and the accuracy.

usage: python bench/splice_sweep.py 30 '{"tag":"ctx3","policy":"epic","context":"LIST_CONTEXT","ratio":0.25};{…}'
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import SHARED  # noqa: E402

from nexus_agent import defaults  # noqa: E402
from nexus_agent.backend import SIDECAR, LocalBackend, LocalDecider  # noqa: E402
from nexus_agent.backend.session import PrefixCachedLLM  # noqa: E402
from nexus_agent.engine.blocks import LIST_CONTEXT, SpliceConfig, Splicer  # noqa: E402
from nexus_agent.evaluation.routing import EvalItem, load_eval  # noqa: E402
from nexus_agent.paths import cache_dir  # noqa: E402
from nexus_agent.registry import Tool, load_registry  # noqa: E402
from nexus_agent.routing.embedders import create_embedder  # noqa: E402
from nexus_agent.routing.options import RouterOptions  # noqa: E402
from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker  # noqa: E402
from nexus_agent.routing.router import build_router  # noqa: E402
from nexus_agent.splice.repair import RepairSchedule  # noqa: E402

SETS = {"github_dev": "github_all", "mixed_dev": "desktop_all"}
Outcome = tuple[str | None, float, bool]  # (pick, ms, right)


def escalated(n: int) -> list[tuple[EvalItem, list[Tool]]]:
    reg = load_registry(SHARED / "mcp-registry")
    emb = create_embedder(defaults.EMBEDDER)
    work = []
    for name, profile in SETS.items():
        router = build_router(reg.profile(profile), RouterOptions(reranker="none"), embedder=emb)
        router.calibrate()
        for it in load_eval(SHARED / "eval" / f"{name}.jsonl", reg):
            res = router.route(it.query, it.history)
            if res.escalated and res.candidates:
                work.append((it, [router.tools[c.key] for c in res.candidates]))
    return work[:: max(1, len(work) // n)][:n]


def main() -> None:
    work = escalated(int(sys.argv[1]))
    llm = PrefixCachedLLM(LocalBackend.open(defaults.CHAT_MODEL).engine, SIDECAR)
    decision = LLMChoiceReranker(LocalDecider(lambda lane: llm))

    def run(splicer: Splicer | None) -> list[Outcome]:
        out = []
        for it, pool in work:
            llm.splicer = splicer
            llm.engine.truncate(llm.seq, decision.head_tokens)  # the head stays warm, as in the agent
            t0 = time.perf_counter()
            choice = decision.rerank(it.query, pool, it.history).choice
            out.append((choice, (time.perf_counter() - t0) * 1e3, choice in it.gold if it.gold else choice is None))
        return out

    base = run(None)
    off_ms = statistics.median(x[1] for x in base)
    print("off", off_ms, sum(x[2] for x in base) / len(base), flush=True)
    for spec in sys.argv[2].split(";"):
        kw = json.loads(spec.replace("LIST_CONTEXT", json.dumps(LIST_CONTEXT)[1:-1]))
        sched = RepairSchedule(ratio=kw.pop("ratio")) if "ratio" in kw else RepairSchedule()
        root = cache_dir("atb-sweep", kw.pop("tag", "x"))
        splicer = Splicer(llm.engine, SpliceConfig(mode="on", root=root, schedule=sched, **kw))
        run(splicer)  # compiles what is missing
        res = run(splicer)
        ms = statistics.median(x[1] for x in res)
        same = sum(a[0] == b[0] for a, b in zip(res, base, strict=True)) / len(base)
        acc = sum(x[2] for x in res) / len(res)
        print(f"{spec} p50 {ms:.0f} ratio {ms / off_ms:.2f} same {same:.3f} acc {acc:.3f}", flush=True)


if __name__ == "__main__":
    main()
