"""Many conversations on one model: the radix arena's warm-prefix reuse against cold prefill, and its lookup
against llama-cpp-python's ``LlamaRAMCache``, measured in the same run.

**Sessions.** One engine (one model load) serves C conversations (``--convs``, default 2 and 8). Each has the same
system prompt (instructions plus the tool signatures of ``github_all``, cut to ``--prefix`` tokens, 2048 by
default) and a history of its own that grows turn by turn: a user request, then the model's reply (greedy,
``--reply-tokens``). The conversations are interleaved turn by turn, so every turn is a switch to another chat.
Each turn is one ``Engine.generate`` in the conversation's own lane; its TTFT is the time to the first sampled
token, and ``n_reused`` is how much of the prompt the arena already held (the lane's own slot, or a donor: the
first turn of a new conversation borrows the shared system prompt from another conversation's slot).

**Cold.** The same prompts (the last turn of the first ``--cold`` conversations of each C) run again after
``Engine.clear()``: the whole prompt is prefilled, as without the arena (one model per chat re-prefills its whole
history on every switch, or many models are loaded). ``warm_over_cold_ttft`` is the median of the paired ratios.

**Lookup.** A bare native ``RadixTree`` with 32 slots, each holding an 8K-token sequence (all share the system
prompt, then differ), answers ``match`` for a query that extends one of them; ``LlamaRAMCache`` holds the same 32
sequences as keys (its values are small placeholder states: a lookup never reads them) and answers
``_find_longest_prefix_key``, the linear scan its ``__getitem__`` and ``__contains__`` run. Both are timed on the
same queries, median µs per call, in this process; ``lookup_speedup`` is their ratio.

**Memory.** Resident set size (``/proc/self/status`` VmRSS) after the 1-conversation warm-up and after all C
conversations of the largest C: the model is loaded once.

usage: python bench/radix.py [--quick] [--model qwen0.5b] [--convs 2,8] [--turns 3] [--json OUT]
Writes bench/results/radix.{json,md} (and OUT when given); ``--quick`` runs 2 and 8 conversations × 2 turns with
2 cold samples (within 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from llama_cpp.llama import LlamaState
from llama_cpp.llama_cache import LlamaRAMCache

from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.native import RadixTree
from nexus_agent.registry import load_registry
from nexus_agent.signature import signature

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "radix"
SYSTEM = (
    "You are Nexus Agent, a careful assistant for a developer's GitHub work. You may call one of the tools below "
    "when a request needs it; otherwise answer briefly.\nTools:\n"
)
REQUESTS = [
    "list the open issues in acme/api labelled bug",
    "who reviewed the last pull request on acme/web?",
    "create a branch called fix-login from main in acme/api",
    "what changed in the latest release of acme/cli?",
    "star the repository octo-dev/dotfiles",
    "summarise the comments on issue 42 in acme/api",
    "search code for 'retry_policy' in acme",
    "close issue 17 in acme/web as not planned",
]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def system_prompt(engine: Engine, n_tokens: int) -> str:
    """The instructions plus tool signatures, cut at the line where ``n_tokens`` is first reached."""
    tools = load_registry(ROOT / "data" / "mcp-registry").profile("github_all")
    text = SYSTEM
    for t in tools:
        text += f"- {signature(t)}\n"
        if len(engine.model.tokenize(text)) >= n_tokens:
            break
    return text


def run_sessions(engine: Engine, system: str, n_convs: int, turns: int, reply_tokens: int) -> dict[str, Any]:
    """C conversations interleaved turn by turn; returns per-turn records and the last prompt of each."""
    lanes = [engine.open_lane() for _ in range(n_convs)]
    histories: list[list[dict[str, str]]] = [[{"role": "system", "content": system}] for _ in range(n_convs)]
    rows = []
    last: list[list[int]] = [[] for _ in range(n_convs)]
    for t in range(turns):
        for c in range(n_convs):
            req = f"{REQUESTS[(c + t) % len(REQUESTS)]} (chat {c}, turn {t})"
            histories[c].append({"role": "user", "content": req})
            prompt = engine.tokenize_chat(histories[c])
            gen = engine.generate(prompt, seq=lanes[c], max_tokens=reply_tokens)
            histories[c].append({"role": "assistant", "content": gen.text})
            last[c] = prompt
            rows.append({"conv": c, "turn": t, "prompt": len(prompt), "reused": gen.n_reused, "ttft_ms": gen.ttft_ms})
            print(
                f"  C={n_convs} conv {c} turn {t}: {len(prompt)} tokens, reused {gen.n_reused}, "
                f"TTFT {gen.ttft_ms:.0f} ms",
                flush=True,
            )
    return {"lanes": lanes, "rows": rows, "last": last}


def lookup_bench(n_slots: int, seq_len: int, shared: int, reps: int) -> dict[str, float]:
    """Median µs per longest-prefix lookup: the native tree against LlamaRAMCache, same sequences, same queries."""
    rng = np.random.default_rng(0)
    head = rng.integers(0, 150_000, shared, dtype=np.int32)
    seqs = [np.concatenate([head, rng.integers(0, 150_000, seq_len - shared, dtype=np.int32)]) for _ in range(n_slots)]
    tree = RadixTree(n_slots, seq_len + 64)
    cache = LlamaRAMCache(capacity_bytes=1 << 40)
    for s, seq in enumerate(seqs):
        tree.insert(s, seq)
        state = LlamaState(seq, np.zeros((0,), np.float32), len(seq), b"", 1, 0)
        cache[tuple(seq.tolist())] = state
    queries = []
    for i in range(8):  # the next turn of conversation i: its whole sequence plus a few new tokens
        queries.append(np.concatenate([seqs[i * (n_slots // 8)], rng.integers(0, 150_000, 32, dtype=np.int32)]))
    for q in queries:  # both answer the same slot
        slot, length = tree.match(q)
        key = cache._find_longest_prefix_key(tuple(q.tolist()))
        assert key is not None and length == seq_len and np.array_equal(np.asarray(key, np.int32), seqs[slot])

    def time_us(fn: Any, arg: Any, n: int) -> float:
        samples = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            fn(arg)
            samples.append((time.perf_counter_ns() - t0) / 1e3)
        return statistics.median(samples)

    tree_us = statistics.median(time_us(tree.match, q, reps) for q in queries)
    keys = [tuple(q.tolist()) for q in queries]  # the cache takes tuples; converting is not charged to it
    ram_us = statistics.median(time_us(cache._find_longest_prefix_key, k, max(3, reps // 200)) for k in keys)
    return {"lookup_us": tree_us, "ramcache_lookup_us": ram_us, "lookup_speedup": ram_us / tree_us}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 and 8 conversations, 2 turns, 2 cold samples")
    ap.add_argument("--model", default="qwen0.5b")
    ap.add_argument("--convs", default="2,4,8", help="comma-separated conversation counts")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--cold", type=int, default=4, help="cold samples per conversation count")
    ap.add_argument("--prefix", type=int, default=2048, help="tokens of the shared system prompt")
    ap.add_argument("--reply-tokens", type=int, default=8)
    ap.add_argument("--n-ctx", type=int, default=16384)
    ap.add_argument("--json", help="also write the summary here")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    if a.quick:
        a.convs, a.turns, a.cold = "2,8", 2, 2
    convs = [int(x) for x in a.convs.split(",")]

    t_start = time.perf_counter()
    print("lookup: 32 slots × 8192 tokens", flush=True)
    look = lookup_bench(32, 8192, 2048, 2000)
    print(
        f"  radix match {look['lookup_us']:.2f} µs, LlamaRAMCache {look['ramcache_lookup_us']:.0f} µs "
        f"({look['lookup_speedup']:.0f}×)",
        flush=True,
    )

    rss0 = rss_mib()
    engine = Engine(EngineConfig(model=a.model, n_ctx=a.n_ctx, n_batch=512))
    system = system_prompt(engine, a.prefix)
    n_system = len(engine.tokenize_chat([{"role": "system", "content": system}]))
    print(f"shared system prompt: {n_system} tokens", flush=True)
    # warm-up: one conversation alone (its first turn is the only cold one of the run)
    warm1 = run_sessions(engine, system, 1, 1, a.reply_tokens)
    rss1 = rss_mib()
    per_c: list[dict[str, Any]] = []
    rss_max = rss1
    for c in convs:
        print(f"{c} conversations, {a.turns} turns each, interleaved", flush=True)
        res = run_sessions(engine, system, c, a.turns, a.reply_tokens)
        rss_max = max(rss_max, rss_mib())
        rows = res["rows"]
        prompt_tokens = sum(r["prompt"] for r in rows)
        reused = sum(r["reused"] for r in rows)
        cold_rows = []
        for i in range(min(a.cold, c)):
            prompt = res["last"][i]
            warm_ttft = next(r["ttft_ms"] for r in reversed(rows) if r["conv"] == i)
            engine.clear()  # nothing cached: the whole prompt is prefilled, as a fresh model would
            gen = engine.generate(prompt, seq=res["lanes"][i], max_tokens=1, keep=False)
            assert gen.n_reused == 0
            cold_rows.append({"conv": i, "prompt": len(prompt), "warm_ms": warm_ttft, "cold_ms": gen.ttft_ms})
            print(
                f"  cold conv {i}: {len(prompt)} tokens, TTFT {gen.ttft_ms:.0f} ms (warm {warm_ttft:.0f} ms)",
                flush=True,
            )
        for lane in res["lanes"]:
            engine.close_lane(lane)
        ratios = [r["warm_ms"] / r["cold_ms"] for r in cold_rows]
        per_c.append(
            {
                "conversations": c,
                "turns": a.turns,
                "hit_rate": reused / prompt_tokens,
                "warm_ttft_ms_p50": statistics.median(r["ttft_ms"] for r in rows),
                "cold_ttft_ms_p50": statistics.median(r["cold_ms"] for r in cold_rows),
                "warm_over_cold_ttft": statistics.median(ratios),
                "rows": rows,
                "cold": cold_rows,
            }
        )
    stats = engine.arena.stats
    engine.close()
    largest = per_c[-1]
    summary = {
        "warm_over_cold_ttft": largest["warm_over_cold_ttft"],
        "lookup_us": look["lookup_us"],
        "ramcache_lookup_us": look["ramcache_lookup_us"],
        "hit_rate": largest["hit_rate"],
        "lookup_speedup": look["lookup_speedup"],
        "conversations": largest["conversations"],
        "shared_prefix_tokens": n_system,
        "rss_mib_before_model": rss0,
        "rss_mib_1_conversation": rss1,
        "rss_mib_max_conversations": rss_max,
        "model_loads": 1,
        "arena": vars(stats),
        "model": a.model,
        "machine": platform.machine(),
        "seconds": time.perf_counter() - t_start,
    }
    full = {"summary": summary, "per_conversations": per_c, "warmup": warm1["rows"], "args": vars(a)}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(full, indent=1) + "\n")
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1) + "\n")
    md = [
        f"# Radix arena: {a.model}, a {n_system}-token shared system prompt, conversations interleaved turn by turn",
        "",
        "| conversations | turns | hit rate | warm TTFT p50 (ms) | cold TTFT p50 (ms) | warm / cold (paired) |",
        "|---|---|---|---|---|---|",
    ]
    for r in per_c:
        md.append(
            f"| {r['conversations']} | {r['turns']} | {r['hit_rate']:.3f} | {r['warm_ttft_ms_p50']:.0f} | "
            f"{r['cold_ttft_ms_p50']:.0f} | {r['warm_over_cold_ttft']:.3f} |"
        )
    md += [
        "",
        "| lookup, 32 slots × 8192 tokens | µs per call (median) |",
        "|---|---|",
        f"| radix tree `match` | {look['lookup_us']:.2f} |",
        f"| `LlamaRAMCache` longest-prefix scan | {look['ramcache_lookup_us']:.0f} |",
        f"| ratio | {look['lookup_speedup']:.0f}× |",
        "",
        f"Resident memory: {rss0:.0f} MiB before the model, {rss1:.0f} MiB with 1 conversation, "
        f"{rss_max:.0f} MiB with up to {largest['conversations']} (one model load).",
    ]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    print(json.dumps(summary), file=sys.stderr if a.json else sys.stdout)


if __name__ == "__main__":
    main()
