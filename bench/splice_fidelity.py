#!/usr/bin/env python3
"""Splice fidelity and TTFT: a compiled tool block spliced at depth n_past against a full text prefill.

The prompt is the routing decision's header H (system message, "Tools:"), n_past tokens of other candidate lines P,
the block S (a tool's full JSON schema, compiled once behind H) and a request Q. The reference decodes H+P+S+Q as
text; the spliced path reuses H+P, splices S re-anchored from m0 = |H| to |H|+n_past, re-decodes the tokens the
repair policy picks (a fraction r of S) and decodes Q. KL(reference || spliced) is averaged over Q's positions;
top1 is the share of Q's positions where both pick the same next token. n_past = 0 is the anchored case.

TTFT: ``ttft_prefill_ms`` decodes S+Q behind the cached H+P; ``ttft_splice_ms`` splices S, repairs and decodes Q
behind the same cached H+P (median of ``--reps``). ``policy = "default"`` rows use the shipped schedule and policy.

usage: python bench/splice_fidelity.py --model tiny|smollm2|qwen0.5b --depths 0,64,256,1024 --json OUT
Writes OUT (JSON), OUT with .md (table) and .png (KL against depth).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import SHARED  # noqa: E402

from atb_compiler.compile import decision_header  # noqa: E402
from nexus_agent.backend.session import PrefixCachedLLM  # noqa: E402
from nexus_agent.engine import SCRATCH, Engine, EngineConfig  # noqa: E402
from nexus_agent.engine.blocks import BlockStore  # noqa: E402
from nexus_agent.engine.splice import Placement, splice_prefill  # noqa: E402
from nexus_agent.registry import load_registry  # noqa: E402
from nexus_agent.routing.rerank.llm_choice import build_messages, candidate_line, candidate_lines  # noqa: E402
from nexus_agent.signature import full_schema_text  # noqa: E402
from nexus_agent.splice.repair import (  # noqa: E402
    DEFAULT_POLICY,
    PlacedBlock,
    RepairSchedule,
    plan_repair,
    repair_names,
    repair_policy,
)

SEQ = 1
BLOCK_TOOL = "github__create_pull_request"
REQUEST = "open a pull request from feature-x into main in acme/api, titled 'Add health check'"


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def kl_rows(ref: np.ndarray, test: np.ndarray) -> np.ndarray:
    lp, lq = log_softmax(ref), log_softmax(test)
    return (np.exp(lp) * (lp - lq)).sum(axis=-1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--depths", default="0,64,256,1024")
    ap.add_argument("--ratios", default="0,0.05,0.25,0.5,1", help="repair fractions compared at equal budget")
    ap.add_argument("--policies", default=",".join(repair_names()))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args()
    out = Path(args.json_out or ROOT / "bench" / "results" / f"splice_fidelity_{args.model}.json")
    depths = [int(x) for x in args.depths.split(",")]
    ratios = [float(x) for x in args.ratios.split(",")]
    policies = args.policies.split(",")

    reg = load_registry(SHARED / "mcp-registry")
    tools = reg.profile(None)
    tool = next(t for t in tools if t.qualified_name == BLOCK_TOOL)
    engine = Engine(EngineConfig(model=args.model, n_ctx=4096, n_batch=512, n_threads=args.threads))
    llm = PrefixCachedLLM(engine, SCRATCH)
    tok = engine.model.tokenize
    header = decision_header(llm, tool)
    body = tok(full_schema_text(tool) + "\n")
    filler: list[int] = []
    for t in tools:
        if t.qualified_name != BLOCK_TOOL:
            filler += tok(candidate_line(t, t.name, described=True))
        if len(filler) >= max(depths):
            break
    # Q: what follows the candidate list in a real decision prompt ("- none …", the request, the assistant turn)
    parts = llm.render_parts(build_messages(REQUEST, [tool], []), candidate_lines([tool]))
    tail = list(parts[-1].tokens)
    n_q = len(tail)
    with tempfile.TemporaryDirectory() as tmp:
        store = BlockStore(engine, Path(tmp))
        store.compile(header, [body])
        block = store.get(header, body)
        assert block is not None
        rows: list[dict[str, Any]] = []
        sched_default = RepairSchedule()
        for n_past in depths:
            prefix = header + filler[:n_past]
            tokens = prefix + body + tail
            engine.ctx.seq_rm(SCRATCH)
            ref = engine.ctx.decode(tokens, 0, seq=SCRATCH, n_logits=n_q)
            engine.ctx.seq_rm(SCRATCH)
            assert ref is not None
            place = Placement(len(prefix), block)
            pb = [PlacedBlock(place.start, place.n, place.delta, block.sensitivity)]

            def prefill_ms(prefix: list[int] = prefix) -> float:
                engine.truncate(SEQ, 0)
                engine.prefill(prefix, seq=SEQ, n_logits=0)
                t0 = time.perf_counter()
                engine.ctx.decode(body + tail, len(prefix), seq=SEQ, n_logits=1)
                return (time.perf_counter() - t0) * 1e3

            t_prefill = statistics.median(prefill_ms() for _ in range(args.reps))
            arms: list[tuple[str, float, RepairSchedule]] = [("default", sched_default.r(n_past), sched_default)]
            for r in ratios:
                for pol in policies if r > 0 else ["none"]:
                    arms.append((pol, r, RepairSchedule(ratio=r)))
            for pol, r, sched in arms:
                policy = repair_policy(DEFAULT_POLICY if pol in ("default", "none") else pol)
                repair = plan_repair(pb, sched, policy)
                times = []
                for _ in range(args.reps):  # timed as the prefill arm is: logits of the last token only
                    engine.truncate(SEQ, 0)
                    engine.prefill(prefix, seq=SEQ, n_logits=0)
                    t0 = time.perf_counter()
                    splice_prefill(engine, tokens, [place], repair, SEQ, n_logits=1)
                    times.append((time.perf_counter() - t0) * 1e3)
                engine.truncate(SEQ, 0)
                engine.prefill(prefix, seq=SEQ, n_logits=0)
                logits = splice_prefill(engine, tokens, [place], repair, SEQ, n_logits=n_q).logits
                assert logits is not None
                kls = kl_rows(ref, logits)
                rows.append(
                    {
                        "model": args.model,
                        "n_past": n_past,
                        "policy": pol,
                        "r": round(len(repair) / place.n, 4) if pol == "default" else r,
                        "anchored": n_past == 0,
                        "kl_mean": float(kls.mean()),
                        "top1": float(np.mean(ref.argmax(-1) == logits.argmax(-1))),
                        "ttft_splice_ms": statistics.median(times),
                        "ttft_prefill_ms": t_prefill,
                        "speedup": t_prefill / statistics.median(times),
                        "n_block": place.n,
                        "n_repaired": len(repair),
                    }
                )
                print(
                    f"{args.model} n_past={n_past:5d} {pol:10s} r={rows[-1]['r']:.3f} kl={kls.mean():.5f} "
                    f"top1={rows[-1]['top1']:.2f} splice={rows[-1]['ttft_splice_ms']:.1f}ms "
                    f"prefill={t_prefill:.1f}ms ({rows[-1]['speedup']:.2f}x)",
                    flush=True,
                )
    engine.close()
    meta = {"block_tokens": len(body), "header_tokens": len(header), "query_tokens": n_q, "threads": args.threads}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "meta": meta, "rows": rows}, indent=1) + "\n")
    write_md(out.with_suffix(".md"), args.model, meta, rows)
    plot(out.with_suffix(".png"), args.model, rows)
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}")


def write_md(path: Path, model: str, meta: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    lines = [
        f"# Splice fidelity: {model}",
        "",
        f"Block: {meta['block_tokens']} tokens (a full tool schema) compiled behind the {meta['header_tokens']}-token "
        f"decision header; query {meta['query_tokens']} tokens; {meta['threads']} threads. KL in nats, mean over "
        "the query positions; speedup = prefill / splice TTFT behind the same cached prefix.",
        "",
        "| n_past | policy | r | KL mean | top-1 agree | splice ms | prefill ms | speedup |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n_past']} | {r['policy']} | {r['r']:.3f} | {r['kl_mean']:.5f} | {r['top1']:.2f} | "
            f"{r['ttft_splice_ms']:.1f} | {r['ttft_prefill_ms']:.1f} | {r['speedup']:.2f}× |"
        )
    path.write_text("\n".join(lines) + "\n")


def plot(path: Path, model: str, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    series: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        key = r["policy"] if r["policy"] in ("default", "none") else f"{r['policy']} r={r['r']:g}"
        if r["policy"] in ("default", "none") or r["r"] in (0.25, 0.5):
            series.setdefault(key, []).append((max(r["n_past"], 1), max(r["kl_mean"], 1e-7)))
    for key, pts in sorted(series.items()):
        xs, ys = zip(*sorted(pts), strict=True)
        ax.plot(xs, ys, marker="o", label=key)
    ax.axhline(1e-2, color="grey", linestyle="--", linewidth=1, label="target 1e-2 nats")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n_past (tokens between the compile anchor and the splice; 1 = anchored)")
    ax.set_ylabel("KL(prefill || splice), nats")
    ax.set_title(f"Splice fidelity, {model}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
