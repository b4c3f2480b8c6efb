"""Routing evaluation over ``data/eval/*.jsonl``-format files.

Each line: ``query``, ``tool`` (bare name, or null for a request that needs no tool), ``server``, optional
``alt_tools`` (bare names or ``server/tool``) and ``history``. With ``n_tools`` the router sees, per item, a
seeded random subset of the profile that always contains the expected tool and its alternatives.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from nexus_agent.evaluation.files import read_jsonl
from nexus_agent.evaluation.stats import percentile, wilson_ci
from nexus_agent.registry import Registry, split_key
from nexus_agent.routing.router import Router, RouteResult


class EvalLine(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = ""
    query: str
    tool: str | None = None
    server: str | None = None
    alt_tools: list[str] | None = None
    history: list[dict[str, Any]] | None = None
    split: str | None = None  # "tune" or "check" (evaluation/splits.py)


@dataclass
class EvalItem:
    id: str
    query: str
    gold: set[str]  # acceptable qualified names; empty → no tool expected
    history: list[dict[str, str]] = field(default_factory=list)


def load_eval(path: Path, registry: Registry, split: str | None = None) -> list[EvalItem]:
    """The eval set's lines (only ``split``'s when given), with gold tools resolved in ``registry``; an item
    without ``id`` is ``line<N>``. :class:`ValueError` when ``split`` is given and no line carries it."""
    items = []
    for lineno, raw in read_jsonl(path):
        line = EvalLine.model_validate(raw)
        if split is not None and line.split != split:
            continue
        gold: set[str] = set()
        if line.tool is not None:
            gold.add(registry.find(line.tool, line.server).qualified_name)
            for alt in line.alt_tools or []:
                gold.add(registry.find(alt, line.server).qualified_name)
        hist = [{"role": str(h.get("role", "user")), "content": str(h.get("content", ""))} for h in line.history or []]
        items.append(EvalItem(line.id or f"line{lineno}", line.query, gold, hist))
    if split is not None and not items:
        raise ValueError(f"{path}: no line has split {split!r}")
    return items


def sample_allowed(profile: Sequence[str], item: EvalItem, n_tools: int | None, rng: random.Random) -> set[str] | None:
    """The tool subset of size ``n_tools`` (expected + alternatives + random distractors); None = whole profile."""
    if n_tools is None or n_tools >= len(profile):
        return None
    keep = [k for k in profile if k in item.gold]
    others = [k for k in profile if k not in item.gold]
    return set(keep) | set(rng.sample(others, max(0, min(len(others), n_tools - len(keep)))))


@dataclass
class ItemResult:
    item: EvalItem
    result: RouteResult
    dense_rank: int | None  # 0-based rank of the best gold tool by dense score alone; None if absent/no gold

    @property
    def correct(self) -> bool:
        if not self.item.gold:
            return self.result.tool is None
        return self.result.tool in self.item.gold

    @property
    def gold_in_pool(self) -> bool:
        """An expected tool is among the candidates handed to the final decision."""
        return any(split_key(c.key)[0] in self.item.gold for c in self.result.candidates)


def evaluate(
    router: Router, items: Sequence[EvalItem], profile: Sequence[str], n_tools: int | None = None, seed: int = 0
) -> tuple[dict[str, Any], list[ItemResult]]:
    """Route every item; returns (summary with the acceptance keys, per-item results)."""
    rng = random.Random(seed)
    results = []
    for it in items:
        allowed = sample_allowed(profile, it, n_tools, rng)
        if allowed is None:
            allowed = set(profile)
        res = router.route(it.query, it.history, allowed=allowed)
        # SLB recall is measured on the dense ranking alone (the pool's fused order is what the reranker sees).
        dense_order = list(
            dict.fromkeys(
                split_key(c.key)[0] for c in sorted(router.retrieve(it.query, allowed), key=lambda c: -c.dense)
            )
        )
        rank = next((i for i, k in enumerate(dense_order) if k in it.gold), None) if it.gold else None
        results.append(ItemResult(it, res, rank))
    return summarize(results, router.cfg.retrieval.pool), results


def summarize(results: Sequence[ItemResult], pool: int) -> dict[str, Any]:
    n = len(results)
    ok = sum(r.correct for r in results)
    tool_items = [r for r in results if r.item.gold]
    none_items = [r for r in results if not r.item.gold]
    lat = [r.result.latency_ms for r in results]
    lat_auto = [r.result.latency_ms for r in results if not r.result.escalated]
    decided = [r.result.decision_ms for r in results if r.result.decision_ms is not None]
    nt = max(1, len(tool_items))
    out: dict[str, Any] = {
        "n": n,
        "accuracy": ok / n if n else float("nan"),
        "accuracy_ci95": list(wilson_ci(ok, n)),
        "slb_top1": sum(r.dense_rank is not None and r.dense_rank < 1 for r in tool_items) / nt,
        "slb_top3": sum(r.dense_rank is not None and r.dense_rank < 3 for r in tool_items) / nt,
        "candidate_recall": sum(r.gold_in_pool for r in tool_items) / nt,
        "escalation_rate": sum(r.result.escalated for r in results) / n if n else float("nan"),
        "latency_ms_p50": percentile(lat, 50),
        "latency_ms_p95": percentile(lat, 95),
        "latency_ms_p50_auto": percentile(lat_auto, 50),
        # median wall time of the LLM decision over the requests that asked it (None when none did)
        "decision_ms_p50": percentile(decided, 50) if decided else None,
        "n_decisions": len(decided),
        "pool": pool,
    }
    if none_items:
        out["no_tool_false_positive_rate"] = sum(r.result.tool is not None for r in none_items) / len(none_items)
        out["n_no_tool"] = len(none_items)
    if tool_items:
        # the other side of relevance: a request that needs a tool, answered with none
        out["tool_turned_away_rate"] = sum(r.result.tool is None for r in tool_items) / len(tool_items)
    judged = [r.result.judge_ms for r in results if r.result.judge_ms is not None]
    # the relevance judge (routing/judge.py): how often it was asked, and its median wall time when it was
    out["n_judged"] = len(judged)
    out["judge_ms_p50"] = percentile(judged, 50) if judged else None
    out["judge_rate_tool"] = sum(r.result.judge_ms is not None for r in tool_items) / nt if tool_items else None
    # The most a perfect final decision could score with this retrieval and gate: items the gate keeps
    # final count as they are, an escalated item counts as right whenever its gold tool is in the pool
    # (or it needs none). The gap to `accuracy` is the decision's; the rest is retrieval's and the gate's.
    out["accuracy_ceiling"] = (
        sum((not r.item.gold or r.gold_in_pool) if r.result.escalated else r.correct for r in results) / n
        if n
        else float("nan")
    )
    if tool_items:
        out["tool_accuracy"] = sum(r.correct for r in tool_items) / len(tool_items)
        kept = [r for r in tool_items if not r.result.escalated]
        out["accuracy_auto"] = sum(r.correct for r in kept) / len(kept) if kept else float("nan")
        esc = [r for r in tool_items if r.result.escalated]
        out["accuracy_escalated"] = sum(r.correct for r in esc) / len(esc) if esc else float("nan")
        # what the escalated items would have scored with retrieval top-1 alone (does escalation help?)
        out["accuracy_escalated_if_top1"] = (
            sum(split_key(r.result.candidates[0].key)[0] in r.item.gold for r in esc if r.result.candidates) / len(esc)
            if esc
            else float("nan")
        )
    return out


def summary_line(s: dict[str, Any]) -> str:
    lo, hi = s["accuracy_ci95"]
    line = (
        f"n={s['n']} accuracy={s['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] slb_top1={s['slb_top1']:.3f} "
        f"slb_top3={s['slb_top3']:.3f} recall@{s['pool']}={s['candidate_recall']:.3f} "
        f"escalation={s['escalation_rate']:.3f} p50={s['latency_ms_p50']:.1f}ms p95={s['latency_ms_p95']:.1f}ms"
    )
    if "no_tool_false_positive_rate" in s:
        line += f" no_tool_fp={s['no_tool_false_positive_rate']:.3f}"
    if "tool_turned_away_rate" in s:
        line += f" turned_away={s['tool_turned_away_rate']:.3f}"
    if s.get("judge_ms_p50") is not None:
        line += f" judged={s['n_judged']} judge_p50={s['judge_ms_p50']:.0f}ms"
    return line + f" ceiling={s['accuracy_ceiling']:.3f}"
