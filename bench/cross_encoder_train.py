"""Listwise fine-tune of all-MiniLM-L6-v2 as a cross-encoder on the router's tuning set, then int8 ONNX export.

Standalone (torch, transformers, onnx; the build venv of nexus_agent/training/minilm_tools.py), called by
``bench/cross_encoder.py``. Data come from tool definitions only: each anchor request of
``routing/data/tuning_set.json`` is scored against its own tool's document and ``group - 1`` negatives, of which
``group - 2`` are its tool's nearest neighbours by the base model's document embedding (the near-duplicates the
router confuses) and one is random; softmax cross-entropy over the group. The head is mean pooling + a linear
layer. Output: ``model.onnx`` (input_ids, attention_mask, token_type_ids → score ``[batch]``), ``tokenizer.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any


def main() -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--anchors", type=int, default=4, help="anchors per step (step = anchors × group pairs)")
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--neighbours", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    torch.use_deterministic_algorithms(True)
    rng = random.Random(a.seed)
    tools: dict[str, Any] = json.loads(a.data.read_text(encoding="utf-8"))["tools"]
    keys = sorted(tools)
    tok = AutoTokenizer.from_pretrained(str(a.base))
    bert = AutoModel.from_pretrained(str(a.base))

    class CrossEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert
            self.head = torch.nn.Linear(384, 1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            h = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state  # [B, T, 384]
            m = attention_mask.unsqueeze(-1).float()
            return self.head((h * m).sum(1) / m.sum(1).clamp(min=1e-9)).squeeze(-1)  # [B]

    model = CrossEncoder()
    t0 = time.monotonic()
    with torch.no_grad():  # near-duplicate neighbours by the base model's document embeddings
        vecs = []
        for s in range(0, len(keys), 64):
            enc = tok(
                [tools[k]["doc"] for k in keys[s : s + 64]],
                truncation=True,
                max_length=128,
                padding=True,
                return_tensors="pt",
            )
            h = bert(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            vecs.append(torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1))
        v = torch.cat(vecs)
        sims = v @ v.T
        sims.fill_diagonal_(-2.0)
        near = {k: [keys[j] for j in torch.argsort(-sims[i])[: a.neighbours].tolist()] for i, k in enumerate(keys)}
    pairs = [(k, q) for k in keys for q in tools[k]["anchors"]]
    rng.shuffle(pairs)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    warm = max(1, a.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (a.steps - s) / a.steps)
    )
    model.train()
    losses: list[float] = []
    nxt = 0
    for step in range(a.steps):
        qs, ds = [], []
        for _ in range(a.anchors):
            k, q = pairs[nxt % len(pairs)]
            nxt += 1
            negs = [*rng.sample(near[k], a.group - 2), rng.choice([x for x in keys if x != k])]
            for d in (k, *negs):
                qs.append(q)
                ds.append(tools[d]["doc"])
        enc = tok(qs, ds, truncation="only_second", max_length=a.max_len, padding=True, return_tensors="pt")
        logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).view(a.anchors, a.group)
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(a.anchors, dtype=torch.long))
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        if step % 50 == 0 or step == a.steps - 1:
            avg = sum(losses[-50:]) / len(losses[-50:])
            print(f"[ce] step {step + 1}/{a.steps} loss {avg:.3f} ({time.monotonic() - t0:.0f} s)", flush=True)
    model.eval()
    a.out.mkdir(parents=True, exist_ok=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    enc = tok(["a request", "a longer request"], ["a tool", "another tool document"], padding=True, return_tensors="pt")
    fp32 = a.out / "model_fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model,
            tuple(enc[n] for n in names),
            str(fp32),
            input_names=names,
            output_names=["score"],
            dynamic_axes={**{n: {0: "batch", 1: "seq"} for n in names}, "score": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(str(fp32), str(a.out / "model.onnx"), weight_type=QuantType.QInt8)
    fp32.unlink()
    shutil.copy(a.base / "tokenizer.json", a.out / "tokenizer.json")
    (a.out / "manifest.json").write_text(
        json.dumps(
            {
                **{k: str(v) for k, v in vars(a).items()},
                "train_seconds": round(time.monotonic() - t0, 1),
                "final_loss_avg50": sum(losses[-50:]) / len(losses[-50:]),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
