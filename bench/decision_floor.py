#!/usr/bin/env python3
"""The numerical floor of "same pick": the routing decision twice without splicing, the second time with its prompt
decoded in two batches (cut where the first candidate line ends, as an anchored splice cuts it).

llama.cpp's quantised matmuls round differently for other batch shapes (docs/measurements.md#compiled-tool-blocks),
so the same tokens decoded in another split give logits a few 1e-3 nats apart; an escalated decision is close by
construction, and that alone flips some picks. Any comparison of picks (a splice, prefix reuse) has this floor under it.

usage: python bench/decision_floor.py [--n 30] [--out bench/results/decision_floor]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from splice_sweep import escalated  # noqa: E402

from nexus_agent import defaults  # noqa: E402
from nexus_agent.backend import SIDECAR, LocalBackend, LocalDecider  # noqa: E402
from nexus_agent.backend.session import PrefixCachedLLM  # noqa: E402
from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker  # noqa: E402


class SplitLLM(PrefixCachedLLM):
    """Prefills a segmented prompt in two decode calls: through the first spliceable segment, then the rest."""

    split = False

    def logits_after_parts(self, parts: Any) -> Any:
        if self.split:
            first = next((i for i, p in enumerate(parts) if p.splice), None)
            if first is not None:
                head = [t for p in parts[: first + 1] for t in p.tokens]
                self.engine.prefill(head, seq=self.seq, n_logits=0)
        return self.logits_after([t for p in parts for t in p.tokens])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30, help="escalated requests, spread over both dev sets")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "decision_floor"))
    args = ap.parse_args()
    work = escalated(args.n)
    llm = SplitLLM(LocalBackend.open(defaults.CHAT_MODEL).engine, SIDECAR)
    decision = LLMChoiceReranker(LocalDecider(lambda lane: llm))
    picks: dict[bool, list[str | None]] = {False: [], True: []}
    for it, pool in work:
        for split in (False, True):
            llm.split = split
            llm.engine.truncate(llm.seq, decision.head_tokens)  # the head stays warm, as in the agent
            picks[split].append(decision.rerank(it.query, pool, it.history).choice)
    same = sum(a == b for a, b in zip(picks[False], picks[True], strict=True)) / len(work)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"n": len(work), "same_pick": same, "picks": picks[True]}))
    line = f"decision twice without splicing, one batch vs two: same pick on {same:.3f} of {len(work)} escalated"
    out.with_suffix(".md").write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
