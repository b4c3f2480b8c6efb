"""EmbeddingGemma-300M (``gemma``) against the tuned MiniLM (``minilm-tools``), retrieval only (issue 29, step 2).

One run measures, on both dev sets, at each set's own profile (``github_all`` / ``desktop_all``) and at N = 250
(profile ``desktop_all_plus_github``, a seeded subset of 250 tools per item that holds its gold tools, as
``bench/routing.py`` and ``eval-routing --n-tools 250`` draw it), every arm of ``--arms``:

* ``dense``: dense retrieval alone (``hybrid=False``), for each embedder of ``--embedders``;
* ``fused``: dense + BM25 fused exactly as the router does (``RouterConfig()``), for each embedder;
* ``mix``: ``gemma`` + ``minilm-tools`` + BM25: the two cosines averaged (``--mix-weight`` on gemma) through
  concatenated vectors, then BM25 fused as always;
* ``synthetic``: ``gemma`` with each tool's synthetic example requests indexed as extra rows (``synthetic=True``),
  fused.

Every router is built by ``common.calibrated_router`` (reranker ``none``; τ and the relevance floor calibrated on the
registry, never on eval data) and scored by ``nexus_agent.evaluation.routing.evaluate``: accuracy with its Wilson
95 % interval (retrieval's top-1 after the relevance floor), SLB top-1 / top-3 (dense ranking), recall@20 (the fused
pool an escalated request hands to the decision), τ, the escalation rate (what the gate would send to the LLM) and
the latency of ``route()`` per query on a warmed router (p50 / p95: query embedding, scan, BM25, gate). Beside them:
the query embedding alone per query (p50 / p95), the one-time cost of embedding the tool documents of the 317-tool
profile (and the synthetic arm's extra rows) with no cache, and per row the seconds to build, calibrate and warm its
router (``setup_s``: the first row of an embedder pays its cold caches, the exemplar test's tool requests among them).
Writes ``<out>.json`` and ``<out>.md`` (default ``bench/results/embedder_compare``).

    python bench/embedder_compare.py [--embedders minilm-tools,gemma] [--arms dense,fused,mix,synthetic]
                                     [--sets github_dev,mixed_dev] [--limit N] [--mix-weight 0.5] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import ROOT, SHARED, calibrated_router

from nexus_agent.evaluation.routing import EvalItem, evaluate, load_eval
from nexus_agent.evaluation.stats import percentile
from nexus_agent.registry import Registry, Tool, load_registry
from nexus_agent.routing.docs import tool_document
from nexus_agent.routing.embedders import Embedder, create_embedder
from nexus_agent.routing.embedders.base import Vectors
from nexus_agent.routing.index import EmbeddingCache
from nexus_agent.routing.options import RouterConfig
from nexus_agent.routing.query import for_retrieval
from nexus_agent.routing.slb import cache_path
from nexus_agent.routing.synth import queries_for

# set → (file under eval/, its own profile)
SETS = {"github_dev": ("github_dev.jsonl", "github_all"), "mixed_dev": ("mixed_dev.jsonl", "desktop_all")}
FULL_PROFILE = "desktop_all_plus_github"  # 317 tools: the pool the N = 250 subsets are drawn from
N_TOOLS = 250
ARMS: dict[str, dict[str, Any]] = {  # RouterOptions / RouterConfig knobs (common.split_knobs)
    "dense": {"hybrid": False},
    "fused": {},
    "mix": {},
    "synthetic": {"synthetic": True},
}
GEMMA, MINILM = "gemma", "minilm-tools"
WARM_UP = "list the open issues in acme/api"  # not an eval line; only warms a router before it is measured


class MixEmbedder(Embedder):
    """Two embedders as one. Their unit vectors ``a`` and ``b``, concatenated as ``[√w·a, √(1−w)·b]``, have unit norm
    and dot products ``w·cos_a + (1−w)·cos_b``: the SLB scans the weighted average of both cosines, and the router
    fuses BM25 on top as always.

    A batch (tool documents, the calibration's requests) goes through each embedder's own disk cache, shared with
    its own arms, so the mix re-embeds nothing they already did; a single text (a routed request) is embedded afresh,
    so the latency per query is what the mix would cost."""

    index_synthetic = False

    def __init__(self, a: Embedder, b: Embedder, weight: float) -> None:
        self.a, self.b, self.weight = a, b, weight
        self.name = f"{a.name}+{b.name}"
        self.dim = a.dim + b.dim
        self.model_id = f"{a.fingerprint()}|{b.fingerprint()}|{weight}"
        self._caches: tuple[EmbeddingCache, EmbeddingCache] | None = None

    def caches(self) -> tuple[EmbeddingCache, EmbeddingCache]:
        """The two embedders' disk caches, read on first use (after their own arms and costs wrote them)."""
        if self._caches is None:
            ca, cb = EmbeddingCache(self.a), EmbeddingCache(self.b)
            ca.load(cache_path(self.a.fingerprint(), "texts"))
            cb.load(cache_path(self.b.fingerprint(), "texts"))
            self._caches = (ca, cb)
        return self._caches

    def _embed(self, texts: Sequence[str]) -> Vectors:
        raise TypeError("MixEmbedder embeds through its two embedders (embed_documents / embed_queries)")

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        ca, cb = self.caches()
        return self._join(ca.documents(texts), cb.documents(texts))

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        if len(texts) == 1:
            return self._join(self.a.embed_queries(texts), self.b.embed_queries(texts))
        ca, cb = self.caches()
        return self._join(ca.queries(texts), cb.queries(texts))

    def _join(self, va: Vectors, vb: Vectors) -> Vectors:
        w = self.weight
        return np.concatenate([np.sqrt(w) * va, np.sqrt(1 - w) * vb], axis=1).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedders", default=f"{MINILM},{GEMMA}", help="the dense and fused arms' embedders")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"any of {', '.join(ARMS)} (mix, synthetic: gemma only)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--limit", type=int, default=None, help="first N items of each set")
    ap.add_argument("--mix-weight", type=float, default=0.5, help="mix arm: the weight of gemma's cosine")
    ap.add_argument("--threads", type=int, default=1, help="embedder threads (the router runs them on 1)")
    ap.add_argument("--seed", type=int, default=0, help="the N = 250 subsets")
    ap.add_argument("--registry", default=str(SHARED / "mcp-registry"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "embedder_compare"))
    args = ap.parse_args()
    arms = args.arms.split(",")
    unknown = set(arms) - ARMS.keys()
    if unknown:
        ap.error(f"unknown arms {sorted(unknown)}; known: {', '.join(ARMS)}")
    reg = load_registry(args.registry)
    sets = {s: load_eval(SHARED / "eval" / SETS[s][0], reg)[: args.limit] for s in args.sets.split(",")}
    loaded: dict[str, Embedder] = {}

    def embedder(name: str) -> Embedder:
        if name not in loaded:
            loaded[name] = create_embedder(name, n_threads=args.threads)
        return loaded[name]

    runs: list[tuple[str, str]] = [(e, a) for e in args.embedders.split(",") for a in arms if a in ("dense", "fused")]
    runs += [(GEMMA, a) for a in arms if a in ("mix", "synthetic")]
    full = reg.profile(FULL_PROFILE)
    rows: list[dict[str, Any]] = []
    costs: list[dict[str, Any]] = []
    embed_ms: dict[tuple[str, str], tuple[float, float]] = {}  # (embedder, set) → query embedding p50, p95
    for emb_name, arm in runs:
        if arm == "mix":
            emb: Embedder = MixEmbedder(embedder(GEMMA), embedder(MINILM), args.mix_weight)
        else:
            emb = embedder(emb_name)
        for what in ("documents", "synthetic rows") if arm == "synthetic" else ("documents",):
            if not any(c["embedder"] == emb.name and c["what"] == what for c in costs):
                costs.append(one_time_cost(emb, full, what, costs))
                print(json.dumps(costs[-1]), flush=True)
        for set_name, items in sets.items():
            if (emb.name, set_name) not in embed_ms:
                embed_ms[emb.name, set_name] = query_embed_ms(emb, items)
            for profile, n_tools in ((SETS[set_name][1], None), (FULL_PROFILE, N_TOOLS)):
                row = run(reg, emb, arm, set_name, items, profile, n_tools, args.seed, embed_ms[emb.name, set_name])
                rows.append(row)
                print(row_line(row), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"args": vars(args), "rows": rows, "costs": costs}, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(rows, costs, args))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


def run(
    reg: Registry,
    emb: Embedder,
    arm: str,
    set_name: str,
    items: Sequence[EvalItem],
    profile: str,
    n_tools: int | None,
    seed: int,
    embed_ms: tuple[float, float],
) -> dict[str, Any]:
    """One row: a calibrated retrieval-only router over ``profile`` with the arm's knobs, scored on ``items``."""
    t0 = time.monotonic()
    router, keys, calib = calibrated_router(reg, profile, emb, ARMS[arm])
    # the first request builds what routing derives lazily (BM25, the exemplar test's tool requests, the floors);
    # route one outside the measurement, so the latency per query is a warm router's
    router.route(WARM_UP)
    t1 = time.monotonic()
    s, _ = evaluate(router, items, keys, n_tools=n_tools, seed=seed)
    return {
        "embedder": emb.name,
        "arm": arm,
        "set": set_name,
        "profile": profile,
        "n_tools": n_tools or len(keys),
        **s,
        "recall_at_20": s["candidate_recall"],  # pool = 20 (RouterConfig.pool): the fused candidates' recall
        "tau": calib["tau"],
        "embed_ms_p50": embed_ms[0],
        "embed_ms_p95": embed_ms[1],
        # building, calibrating and warming the router: the first row of an embedder pays its cold caches (the tool
        # documents, the exemplar test's tool requests); later rows and runs read them from $NEXUS_HOME/slb
        "setup_s": t1 - t0,
        "eval_s": time.monotonic() - t1,
    }


def query_embed_ms(emb: Embedder, items: Sequence[EvalItem]) -> tuple[float, float]:
    """(p50, p95) ms of embedding one request, as the router does (expanded, alone)."""
    ms = []
    for it in items:
        text = for_retrieval(it.query, RouterConfig().retrieval.expand)
        t0 = time.perf_counter()
        emb.embed_queries([text])
        ms.append((time.perf_counter() - t0) * 1e3)
    return percentile(ms, 50), percentile(ms, 95)


def one_time_cost(emb: Embedder, tools: Sequence[Tool], what: str, costs: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds to embed, with no cache, what an index of ``tools`` holds: each tool's document, or (``what`` =
    "synthetic rows") its indexed synthetic requests. What a first start pays before the SLB file exists.

    The vectors go into the embedder's disk cache, so the routers after this do not embed the same texts again.
    The mix embeds through its two embedders: its cost is theirs, added up."""
    if isinstance(emb, MixEmbedder):
        parts = [one_time_cost(e, tools, what, costs) for e in (emb.a, emb.b)]
        costs += [p for p in parts if p not in costs]
        seconds = sum(p["seconds"] for p in parts)
        n = parts[0]["texts"]
    else:
        done = next((c for c in costs if c["embedder"] == emb.name and c["what"] == what), None)
        if done is not None:
            return done
        if what == "documents":
            texts = [tool_document(t) for t in tools]
        else:
            synthetic = queries_for(tools)
            k = RouterConfig().retrieval.n_synthetic_indexed
            texts = [q for t in tools for q in synthetic.get(t.qualified_name, [])[:k]]
        cold = EmbeddingCache(emb)  # empty: every text is embedded
        t0 = time.perf_counter()
        cold.documents(texts)
        seconds = time.perf_counter() - t0
        path = cache_path(emb.fingerprint(), "texts")
        cold.load(path)  # merged with what the disk cache already holds, then written back
        cold.save(path)
        n = len(texts)
    return {
        "embedder": emb.name,
        "what": what,
        "profile": FULL_PROFILE,
        "texts": n,
        "seconds": seconds,
        "ms_per_text": 1e3 * seconds / max(1, n),
    }


def row_line(r: dict[str, Any]) -> str:
    lo, hi = r["accuracy_ci95"]
    return (
        f"{r['embedder']:18} {r['arm']:9} {r['set']:10} N={r['n_tools']:3} acc={r['accuracy']:.3f} "
        f"[{lo:.3f},{hi:.3f}] top1={r['slb_top1']:.3f} top3={r['slb_top3']:.3f} R@20={r['recall_at_20']:.3f} "
        f"tau={r['tau']:.3f} esc={r['escalation_rate']:.2f} p50={r['latency_ms_p50']:.1f}ms "
        f"p95={r['latency_ms_p95']:.1f}ms embed p50={r['embed_ms_p50']:.1f}ms"
    )


def markdown(rows: list[dict[str, Any]], costs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# Routing embedders: gemma (EmbeddingGemma-300M Q8_0) vs minilm-tools, retrieval only",
        "",
        f"`python bench/embedder_compare.py --embedders {args.embedders} --arms {args.arms} --sets {args.sets}"
        + (f" --limit {args.limit}" if args.limit else "")
        + f"` (seed {args.seed}, mix weight {args.mix_weight}, {args.threads} embedder thread(s)). Reranker none:"
        " accuracy is retrieval's top-1 after the relevance floor; escalation is the share the gate would send to the"
        " LLM; recall@20 is the fused pool's. Own profiles: github_dev → github_all (86 tools), mixed_dev →"
        f" desktop_all (231); N = {N_TOOLS}: {FULL_PROFILE}, a seeded subset per item. Latency: `route()` per query"
        " (embedding, scan, BM25, gate); embed: the query embedding alone.",
        "",
        "| embedder | arm | set | N | n | accuracy [95% CI] | top-1 | top-3 | recall@20 | τ | escalation | "
        "p50 ms | p95 ms | embed p50 / p95 ms | setup s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["accuracy_ci95"]
        lines.append(
            f"| {r['embedder']} | {r['arm']} | {r['set']} | {r['n_tools']} | {r['n']} | {r['accuracy']:.3f} "
            f"[{lo:.3f}, {hi:.3f}] | {r['slb_top1']:.3f} | {r['slb_top3']:.3f} | {r['recall_at_20']:.3f} | "
            f"{r['tau']:.3f} | {r['escalation_rate']:.2f} | {r['latency_ms_p50']:.1f} | {r['latency_ms_p95']:.1f} | "
            f"{r['embed_ms_p50']:.1f} / {r['embed_ms_p95']:.1f} | {r['setup_s']:.0f} |"
        )
    lines += [
        "",
        f"One-time cost: embedding the texts of the {FULL_PROFILE} index once, no cache.",
        "",
        "| embedder | what | texts | seconds | ms per text |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {c['embedder']} | {c['what']} | {c['texts']} | {c['seconds']:.1f} | {c['ms_per_text']:.1f} |" for c in costs
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
