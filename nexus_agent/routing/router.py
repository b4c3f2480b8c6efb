"""The routing pipeline: retrieve a candidate pool (dense SLB + BM25, fused), gate on the margin, escalate the
low-confidence decisions to a reranker / LLM decision, and say ``no-tool`` when nothing fits.

Shapes and units: dense scores are approximate cosines in [-1, 1]; BM25 scores are divided by the query's best
BM25 score or by ``bm25_known_share`` × the summed idf of its terms that some tool has, whichever is larger
(``bm25_norm="known"``; ``"max"``: the best score alone; ``"idf"``: the summed idf of all its terms), so both
live in [0, 1] before the weighted fusion ``(1-w)·dense + w·bm25``. The margin is ``fused[top1] - fused[top2]``
in the same units; τ is calibrated on exactly that statistic.

The parts: :class:`ToolIndex` (the tools and what retrieval reads of them), :class:`Calibration` (τ, the relevance
floors, the exemplar test's vectors) and :class:`Router` (the decision), built by :func:`build_router`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from nexus_agent import defaults
from nexus_agent.engine import SIDECAR, Engine
from nexus_agent.registry import Tool
from nexus_agent.routing.calibration import Calibration
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.gate import Gate
from nexus_agent.routing.index import F32, EmbeddingCache, ToolIndex
from nexus_agent.routing.options import RouterConfig, RouterOptions
from nexus_agent.routing.query import for_retrieval, is_question, refers_back
from nexus_agent.routing.relevance import looks_like_no_tool
from nexus_agent.routing.rerank import create_reranker, reranker_class
from nexus_agent.routing.rerank.base import Reranker
from nexus_agent.routing.rerank.session import PrefixCachedLLM
from nexus_agent.routing.slb import SLB

__all__ = [
    "Candidate",
    "Decision",
    "RouteResult",
    "Router",
    "RouterConfig",
    "RouterOptions",
    "build_router",
    "create_decision",
]

Decision = Literal["auto", "escalated", "no-tool"]


@dataclass
class Candidate:
    key: str
    score: float
    dense: float
    lexical: float
    penalty: float = 0.0  # the question penalty already taken off ``score`` (RouterConfig.question_write_penalty)


@dataclass
class RouteResult:
    candidates: list[Candidate]
    decision: Decision
    tool: str | None  # qualified name, None for no-tool
    margin: float
    latency_ms: float
    rerank_scores: list[float] = field(default_factory=list)
    escalated: bool = False  # the gate sent it to the reranker (its outcome may still be no-tool)
    exemplar_similarity: float | None = None  # best cosine to a no-tool exemplar (None: exemplars off)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Router:
    """Route queries over a changing set of tools (see module docstring)."""

    def __init__(
        self,
        tools: Iterable[Tool],
        embedder: Embedder,
        cfg: RouterConfig | None = None,
        reranker: Reranker | None = None,
        synthetic: dict[str, list[str]] | None = None,
    ) -> None:
        cfg = cfg or RouterConfig()
        self.reranker = reranker
        self.index = ToolIndex(tools, embedder, cfg, synthetic)
        self.calibration = Calibration(self.index, cfg, self._margin)
        self._last_query: tuple[str, F32] | None = None

    # --- the parts, as callers knew them ---------------------------------------------------------------------

    @property
    def cfg(self) -> RouterConfig:
        return self.index.cfg

    @property
    def embedder(self) -> Embedder:
        return self.index.embedder

    @property
    def cache(self) -> EmbeddingCache:
        return self.index.cache

    @property
    def tools(self) -> dict[str, Tool]:
        return self.index.tools

    @property
    def slb(self) -> SLB:
        return self.index.slb

    @property
    def gate(self) -> Gate | None:
        return self.calibration.gate

    @property
    def min_dense(self) -> float | None:
        return self.calibration.min_dense

    def calibrate(self) -> dict[str, float]:
        """Calibrate τ (and the relevance floor) on registry-derived adversarial queries; cached on disk."""
        return self.calibration.calibrate()

    def add_tools(self, tools: Iterable[Tool]) -> None:
        self.index.add(tools)

    def remove_tools(self, names: Iterable[str]) -> None:
        self.index.remove(names)

    def replace_tools(self, tools: Iterable[Tool]) -> None:
        """Replace tools by qualified name (a changed description/schema re-embeds only those tools)."""
        self.index.replace(tools)

    # --- scoring -------------------------------------------------------------------------------------------

    def _fused(self, qvec: F32, query: str, mask: npt.NDArray[np.bool_] | None = None) -> tuple[F32, F32, F32]:
        """(fused, dense, lexical) per tool in ``slb.keys`` order; ``mask`` marks the tools routing may pick."""
        dense = self.slb.scores(qvec)
        if not self.cfg.hybrid:
            return dense, dense, np.zeros_like(dense)
        bm25 = self.index.bm25
        if self.cfg.bm25_norm == "idf":
            lexn = bm25.normalized_scores(query)
        else:
            lex = bm25.scores(query)
            # normalise by the best *eligible* tool: a strong lexical match outside the allowed subset must not
            # shrink the lexical evidence of every tool inside it
            pool = lex if mask is None else lex[mask]
            top = float(pool.max()) if len(pool) else 0.0
            if self.cfg.bm25_norm == "known":
                top = max(top, self.cfg.bm25_known_share * bm25.known_idf(query))
            lexn = lex / top if top > 0 else lex
        w = self.cfg.bm25_weight
        return ((1 - w) * dense + w * lexn).astype(np.float32), dense, lexn.astype(np.float32)

    def retrieve(self, query: str, allowed: set[str] | None = None, qvec: F32 | None = None) -> list[Candidate]:
        """All tools (or only ``allowed``), best first, with their scores."""
        asks = self.cfg.question_write_penalty > 0 and is_question(query)
        query = for_retrieval(query, self.cfg.expand)
        if qvec is None:
            qvec = self._embed_query(query)
        keys = self.slb.keys
        mask = None if allowed is None else self.index.mask(allowed)
        fused, dense, lex = self._fused(qvec, query, mask)
        penalty = self.cfg.question_write_penalty * self.index.writes if asks else np.zeros(len(keys))
        fused = (fused - penalty).astype(np.float32)
        idx = np.argsort(-fused, kind="stable")
        return [
            Candidate(keys[i], float(fused[i]), float(dense[i]), float(lex[i]), float(penalty[i]))
            for i in idx
            if mask is None or mask[i]
        ]

    def _confidence(self, cands: Sequence[Candidate]) -> tuple[float, bool]:
        """(margin, reordered) for ``cands`` from :meth:`retrieve`: the top-2 margin of the ranking *before* the
        question penalty, and whether the penalty put another tool first.

        The penalty may reorder, but not make a decision surer: with it in the margin, "what are the allowed
        values for Priority …?" lost its write-tool runner-up and went auto to a wrong read tool instead of to the
        LLM. So a question whose top tool the penalty replaced is escalated, and the gate reads retrieval's own
        confidence."""
        if len(cands) < 2:
            return float("inf"), False
        if not any(c.penalty for c in cands):
            return cands[0].score - cands[1].score, False
        # τ is calibrated on this same pre-penalty margin, so which tools declare writes does not move it
        raw = np.array([c.score + c.penalty for c in cands])
        order = np.argsort(-raw, kind="stable")
        return float(raw[order[0]] - raw[order[1]]), bool(order[0] != 0)

    def _margin(self, query: str, qvec: F32) -> float:
        """The gate's statistic for ``query`` over every tool (what :class:`Calibration` takes τ from)."""
        return self._confidence(self.retrieve(query, qvec=qvec))[0]

    def _embed_query(self, query: str) -> F32:
        # one-entry memo: evaluation asks for the same query's ranking twice (decision + dense recall)
        if self._last_query is None or self._last_query[0] != query:
            self._last_query = (query, self.embedder.embed_queries([query])[0])
        return self._last_query[1]

    # --- the decision --------------------------------------------------------------------------------------

    def route(self, query: str, history: Sequence[dict[str, str]] = (), allowed: set[str] | None = None) -> RouteResult:
        """Rank, gate, and (when escalated) rerank. ``allowed`` restricts routing to a subset of the tools."""
        gate, _ = self.calibration.ensure()  # calibrates on first use and after a tool change
        t0 = time.perf_counter()
        qvec = self._embed_query(for_retrieval(query, self.cfg.expand))
        cands = self.retrieve(query, allowed, qvec=qvec)
        margin, reordered = self._confidence(cands)
        pool = cands[: self.cfg.pool]
        if not cands:
            return RouteResult([], "no-tool", None, margin, (time.perf_counter() - t0) * 1e3)
        points_back = self.cfg.escalate_back_references and bool(history) and refers_back(query)
        escalate = self.cfg.always_escalate or (self.cfg.gate and (not gate.decide(margin) or points_back or reordered))
        best_dense = max(c.dense for c in pool)
        relevant = best_dense >= self.calibration.floor(allowed)
        ex_sim = None
        small_talk = False
        if self.cfg.exemplars:
            ex_sim, request_sim = self.calibration.nearest(qvec, allowed)
            small_talk = looks_like_no_tool(ex_sim, max(best_dense, request_sim))
            relevant = relevant and not small_talk
        # Below the floor nothing fits, and the LLM reranker, asked to choose among candidates, tends to choose
        # one anyway (docs/measurements.md#relevance). With history the request may lean on earlier turns ("open
        # a PR there") that the reranker sees and the embedding does not, so it decides; but not when the request
        # is small talk (nearer an exemplar): after a tool turn, a bare "good evening!" went to the reranker.
        if not escalate or self.reranker is None or small_talk or (not relevant and not history):
            decision: Decision = ("escalated" if escalate else "auto") if relevant else "no-tool"
            tool = cands[0].key if relevant else None
            ms = (time.perf_counter() - t0) * 1e3
            return RouteResult(pool, decision, tool, margin, ms, escalated=escalate, exemplar_similarity=ex_sim)
        res = self.reranker.rerank(query, [self.tools[c.key] for c in pool], history)
        decision = "escalated" if res.choice is not None else "no-tool"
        ms = (time.perf_counter() - t0) * 1e3
        return RouteResult(pool, decision, res.choice, margin, ms, res.scores, True, ex_sim)


# --- the factory -----------------------------------------------------------------------------------------------


def create_decision(options: RouterOptions, engine: Engine | None = None) -> Reranker | None:
    """The reranker ``options`` name (None for ``"none"``). An LLM decision runs on ``engine``'s sidecar sequence
    when one is given (one model serves routing, arguments and answers), else on its own small engine."""
    name = options.reranker
    if name == "none":
        return None
    if not reranker_class(name).uses_llm:
        return create_reranker(name, model=options.reranker_model)
    if engine is not None:
        return create_reranker(name, llm=PrefixCachedLLM(engine=engine, seq=SIDECAR))
    return create_reranker(name, model=options.reranker_model or defaults.CHAT_MODEL, n_threads=options.threads)


def build_router(
    tools: Iterable[Tool],
    options: RouterOptions | None = None,
    engine: Engine | None = None,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    tuning: RouterConfig | None = None,
) -> Router:
    """A router over ``tools`` as ``options`` say (default ``RouterOptions()``); the decision as in
    :func:`create_decision`.

    ``embedder`` / ``reranker``: already loaded backends for ``options.embedder`` / ``options.reranker``, shared
    by several routers (the agent keeps one embedder per process; a benchmark one LLM for all its routers);
    ``reranker`` is not used when ``options.reranker`` is ``"none"``. ``tuning``: the pipeline knobs options do not
    cover (benchmarks' ablations); options' own knobs are set on it (:meth:`RouterOptions.config`).
    """
    options = options or RouterOptions()
    emb = embedder or create_embedder(options.embedder, options.embedder_model)
    if options.reranker == "none":
        reranker = None
    elif reranker is None:
        reranker = create_decision(options, engine)
    return Router(tools, emb, options.config(tuning), reranker)
