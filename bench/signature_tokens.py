"""Token counts of the compressed signature IR vs the full MCP schema, over every tool in the registry.

Tokenised with the target model's own tokenizer (Qwen2.5 via llama.cpp). Writes
``bench/results/signature_tokens.{json,md}``. Paper reference: median 19, p99 32 tokens for the IR.

    python bench/signature_tokens.py [--registry data/mcp-registry] [--model qwen0.5b]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np
from common import ROOT, SHARED

from nexus_agent.llm.model import LlamaModel
from nexus_agent.models import resolve
from nexus_agent.registry import load_registry
from nexus_agent.signature import SignatureOptions, full_schema_text, signature

VARIANTS = {
    "signature": SignatureOptions(),
    "signature+desc80": SignatureOptions(tool_desc_chars=80),
    "router_prompt_line": SignatureOptions(max_enum=6, max_nested_keys=2, max_params=8, tool_desc_chars=90),
}


def stats(xs: list[int]) -> dict[str, float]:
    a = np.asarray(xs, dtype=np.float64)
    return {
        "median": float(np.median(a)),
        "mean": float(a.mean()),
        "p90": float(np.percentile(a, 90)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
        "total": float(a.sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--registry", default=str(SHARED / "mcp-registry"))
    ap.add_argument("--model", default="qwen0.5b")
    args = ap.parse_args()
    reg = load_registry(args.registry)
    model = LlamaModel(resolve(args.model))
    tools = reg.profile(None)
    full = [len(model.tokenize(full_schema_text(t))) for t in tools]
    res = {"model": model.path.name, "n_tools": len(tools), "full_schema": stats(full), "variants": {}}
    for name, opts in VARIANTS.items():
        toks = [len(model.tokenize(signature(t, opts))) for t in tools]
        st = stats(toks)
        st["ratio_to_full_total"] = st["total"] / res["full_schema"]["total"]  # type: ignore[index]
        res["variants"][name] = st  # type: ignore[index]
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "signature_tokens.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        f"# Signature IR token counts ({res['n_tools']} tools, tokenizer of {res['model']})",
        "",
        "| form | median | mean | p90 | p99 | max | total | vs full |",
        "|---|---|---|---|---|---|---|---|",
    ]
    variants: dict[str, Any] = res["variants"]  # type: ignore[assignment]
    rows = [("full MCP schema (JSON)", res["full_schema"]), *variants.items()]
    for name, st in rows:
        ratio = st.get("ratio_to_full_total", 1.0)
        lines.append(
            f"| {name} | {st['median']:.0f} | {st['mean']:.1f} | {st['p90']:.0f} | {st['p99']:.0f} | "
            f"{st['max']:.0f} | {st['total']:.0f} | {ratio:.3f} |"
        )
    lines += ["", "Paper reference (IR): median 19, p99 32."]
    (out / "signature_tokens.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
