"""Trial of a project-trained MiniLM cross-encoder as the router's final decision (not shipped: it lost).

Trains ``bench/cross_encoder_train.py`` in the routing fine-tune's build venv on the shipped tuning set (tool
definitions only), then, on each dev set at its own profile, lets it pick among the router's pool of 20 (retrieval
only) and compares with the fused retrieval top-1 measured in the same run: on every item, and only on the
items the gate escalates. Writes ``bench/results/cross_encoder.{json,md}``; the LLM decision's numbers for the
escalated items are in ``bench/results/eval_routing_*.json``.

    python bench/cross_encoder.py [--steps 600] [--model-dir DIR (skip training)]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import ROOT, SHARED

from nexus_agent.evaluation.routing import load_eval
from nexus_agent.models import resolve
from nexus_agent.paths import cache_dir
from nexus_agent.registry import load_registry
from nexus_agent.routing.docs import tool_document
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.query import expand_query
from nexus_agent.routing.rerank.base import history_text
from nexus_agent.routing.router import RouterOptions, build_router
from nexus_agent.training.dataset import DEFAULT_SET
from nexus_agent.training.minilm_tools import build_venv

SETS = {"github_dev": ("github_dev.jsonl", "github_all"), "mixed_dev": ("mixed_dev.jsonl", "desktop_all")}


class OnnxCrossEncoder:
    """Scores (request, tool document) pairs with the exported model: one float per pair, higher = better."""

    def __init__(self, folder: Path, max_len: int = 256) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(max_len)
        self.tok.enable_padding()

    def scores(self, query: str, docs: list[str]) -> np.ndarray:
        enc = self.tok.encode_batch([(query, d) for d in docs])
        feeds = {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
        }
        return np.asarray(self.session.run(None, feeds)[0], dtype=np.float32)


def train(out: Path, steps: int, threads: int) -> None:
    cmd = [
        str(build_venv()),
        str(Path(__file__).with_name("cross_encoder_train.py")),
        "--data",
        str(DEFAULT_SET),
        "--base",
        str(resolve("minilm-fp32")),
        "--out",
        str(out),
        "--steps",
        str(steps),
        "--threads",
        str(threads),
    ]
    # HF_HUB_OFFLINE: transformers must only read the local base model folder
    subprocess.run(cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-dir", type=Path, default=None, help="an already trained model (skips training)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "cross_encoder"))
    args = ap.parse_args()
    folder = args.model_dir or cache_dir("bench") / f"cross-encoder-{args.steps}"
    if not args.model_dir:
        train(folder, args.steps, args.threads)
    # what the model was trained with comes from its own manifest, also when --model-dir reuses it
    manifest = json.loads((folder / "manifest.json").read_text())
    train_s, steps = float(manifest["train_seconds"]), int(manifest["steps"])
    ce = OnnxCrossEncoder(folder)
    reg = load_registry(SHARED / "mcp-registry")
    emb = create_embedder("minilm-tools")
    rows: list[dict[str, Any]] = []
    for set_name, (fname, prof) in SETS.items():
        retrieval = RouterOptions(embedder="minilm-tools", reranker="none")
        router = build_router(reg.profile(prof), retrieval, embedder=emb)
        router.calibrate()
        assert router.calibration.gate is not None
        items = [it for it in load_eval(SHARED / "eval" / fname, reg) if it.gold]
        hit = {"fused_top1": 0, "ce_top1": 0, "ce_on_escalated": 0, "in_pool": 0}
        esc = esc_fused = esc_ce = 0
        lat: list[float] = []
        for it in items:
            pool = router.retrieve(it.query)[: router.cfg.retrieval.pool]
            ctx = history_text(it.history, max_messages=1)
            q = f"{ctx}\n{expand_query(it.query)}" if ctx else expand_query(it.query)
            t0 = time.perf_counter()
            s = ce.scores(q, [tool_document(router.tools[c.key]) for c in pool])
            lat.append((time.perf_counter() - t0) * 1e3)
            pick = pool[int(np.argmax(s))].key
            escalated = not router.calibration.gate.decide(pool[0].score - pool[1].score)
            hit["fused_top1"] += pool[0].key in it.gold
            hit["ce_top1"] += pick in it.gold
            hit["ce_on_escalated"] += (pick if escalated else pool[0].key) in it.gold
            hit["in_pool"] += any(c.key in it.gold for c in pool)
            esc += escalated
            esc_fused += escalated and pool[0].key in it.gold
            esc_ce += escalated and pick in it.gold
        n = len(items)
        row = {
            "set": set_name,
            "profile": prof,
            "n": n,
            **{k: v / n for k, v in hit.items()},
            "n_escalated": esc,
            "escalated_fused": esc_fused / max(1, esc),
            "escalated_ce": esc_ce / max(1, esc),
            "ce_ms_p50": float(np.median(lat)),
            "ce_vs_fused": hit["ce_top1"] / max(1, hit["fused_top1"]),
            "train_s": train_s,
            "steps": steps,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.with_suffix(".json").write_text(
        json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=1) + "\n"
    )
    lines = [
        "# MiniLM cross-encoder trained on tool definitions, as the final decision over the pool of 20",
        "",
        f"`python bench/cross_encoder.py --steps {steps}`; training {train_s:.0f} s on this machine. "
        "Accuracy of the tool picked (dev sets at their own profiles, tool requests only).",
        "",
        "| set | n | fused top-1 | cross-encoder top-1 | ratio | cross-encoder on escalated only | escalated: "
        "fused / cross-encoder | recall@20 | ms per decision (p50) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['n']} | {r['fused_top1']:.3f} | {r['ce_top1']:.3f} | {r['ce_vs_fused']:.2f}× | "
            f"{r['ce_on_escalated']:.3f} | {r['escalated_fused']:.3f} / {r['escalated_ce']:.3f} "
            f"(n={r['n_escalated']}) | {r['in_pool']:.3f} | {r['ce_ms_p50']:.0f} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
