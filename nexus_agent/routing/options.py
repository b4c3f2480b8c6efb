"""What configures a router: :class:`RouterConfig`, the pipeline's knobs in six frozen groups (retrieval, gate,
relevance, judge, follow-ups, examples; most of them measured, few of them user-facing), and :class:`RouterOptions`, the
user-facing choices the CLI, the agent and ``bench/`` pass.

``nexus_agent.routing.router.build_router`` turns options into a router.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from nexus_agent import defaults
from nexus_agent.examples.uses import ExampleUses
from nexus_agent.routing.docs import DocStyle
from nexus_agent.splice.mode import SpliceMode


class Relevance(StrEnum):
    """Whether a request needs a tool at all (``--relevance``, ``AgentConfig.relevance`` derive from this list):
    ``llm`` also asks the decision's model (routing/judge.py), ``exemplars`` uses the embedding tests alone
    (relevance.py)."""

    LLM = "llm"
    EXEMPLARS = "exemplars"


@dataclass(frozen=True)
class RetrievalConfig:
    """Dense + BM25 candidates (bench/results/routing_ablation.md)."""

    doc_style: DocStyle = "rich"
    synthetic: bool | None = None  # index synthetic example queries next to each tool; None: embedder's choice
    n_synthetic_indexed: int = 6  # the rest of each tool's synthetic queries are held out for calibration
    hybrid: bool = True  # fuse BM25 with dense
    bm25_weight: float = 0.3
    # "max": divide by the query's best BM25 score; "known": by the larger of the best score and
    # bm25_known_share × the summed idf of the query terms some tool has, so one weak match is not stretched to
    # full evidence; "idf": by the summed idf of all its terms (docs/measurements.md#bm25-normalisation).
    bm25_norm: Literal["max", "known", "idf"] = "known"
    bm25_known_share: float = 0.5  # about the score of a tool that has each known term once (BM25Index.known_idf)
    expand: bool = True  # spell out chat abbreviations (PR, repo, deps …) before retrieval
    # Subtracted from the fused score of tools that declare they change things (MCP readOnlyHint: false) when the
    # request is a question (query.is_question): embeddings tie the state a question asks about to the tool that
    # sets it. Tools that declare no hint are left alone; a question whose top tool the penalty replaced is
    # escalated, and the gate reads the margin before it (Router._confidence;
    # docs/measurements.md#question-penalty).
    question_write_penalty: float = 0.15
    pool: int = 20  # candidates handed to the reranker (docs/measurements.md#candidate-pool)


@dataclass(frozen=True)
class GateConfig:
    """When retrieval's top-1 is final and when the decision is asked."""

    enabled: bool = True  # False → never escalate (retrieval top-1 is final)
    always_escalate: bool = False  # True → every decision goes to the reranker
    # with history, a request that points back ("reopen it", query.refers_back) goes to the reranker, which sees
    # the history; retrieval sees only the request
    escalate_back_references: bool = True
    tau: float | None = None  # None → calibrate on adversarial pairs
    tau_percentile: float = 20.0


@dataclass(frozen=True)
class NoToolConfig:
    """The embedding tests that give a request no tool (relevance.py; docs/measurements.md#relevance)."""

    min_dense: float | None = None  # relevance floor on the best dense score; None → calibrate
    # The floor is this percentile of the no-tool exemplars' best dense scores; with the exemplar test beside it
    # a lower one turns away fewer tool requests.
    floor_percentile: float = 40.0
    # no tool when the request is closer to a no-tool exemplar than to any tool or tool request
    exemplars: bool = True
    own_requests: int = 8  # synthetic example requests per tool on the tool side of that test (0: documents only)


@dataclass(frozen=True)
class JudgeConfig:
    """The relevance judge (routing/judge.py): the decision's model is asked "does this need a tool?" before a tool
    is picked; below ``threshold`` (log-odds of yes over no) the request gets no tool
    (docs/measurements.md#relevance-judge)."""

    enabled: bool = True
    threshold: float = -0.9
    # which requests it is asked about: "always", or "no_object": not those that name a concrete object of the user's
    # (a URL, path, owner/repo, #N, an identifier: judge.names_concrete_object), which general knowledge cannot answer
    ask: Literal["always", "no_object"] = "no_object"


@dataclass(frozen=True)
class FollowUpConfig:
    """Follow-ups (routing/followup.py; docs/measurements.md#follow-ups): a request with history and a cue word is
    also scored with the previous tool turn's request and tool (``context_weight`` of the average), the previous
    tool, its siblings and its server get a prior, and the first ``keep`` of tool + siblings join the pool."""

    enabled: bool = True
    context_weight: float = 0.5
    prior_tool: float = 0.1
    prior_sibling: float = 0.1
    prior_server: float = 0.05
    keep: int = 4
    pool: int = 0  # a follow-up's pool (0: the retrieval pool)
    escalate: bool = True  # a follow-up goes to the decision (False: the gate decides, on fused scores)
    hint: bool = True  # the decision is told which call the request follows (llm_choice.follow_up_hint)
    related_first: bool = True  # the previous tool and its siblings head the decision's list
    none_fallback: bool = True  # a follow-up the decision gives no tool keeps retrieval's top-1


@dataclass(frozen=True)
class RouterConfig:
    """Every knob of the pipeline, by stage (each group's docstring says what it tunes)."""

    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    no_tool: NoToolConfig = field(default_factory=NoToolConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    followups: FollowUpConfig = field(default_factory=FollowUpConfig)
    # which routing choices read the session's examples (nexus_agent/examples/uses.py)
    examples: ExampleUses = field(default_factory=ExampleUses)

    def tuned(self, **groups: dict[str, Any]) -> RouterConfig:
        """A copy with some knobs changed, by group: ``cfg.tuned(gate={"tau": 0.0}, followups={"keep": 2})``
        (benchmarks' ablation tables are written this way). A group or knob that does not exist is a TypeError."""
        names = {f.name for f in fields(self)}
        unknown = set(groups) - names
        if unknown:
            raise TypeError(
                f"RouterConfig has no group {', '.join(sorted(unknown))} (groups: {', '.join(sorted(names))})"
            )
        return replace(self, **{g: replace(getattr(self, g), **knobs) for g, knobs in groups.items()})


_CONFIG = RouterConfig()


class RouterOptions(BaseModel):
    """The user-facing choices: which backends, and the few pipeline knobs the CLI exposes (``RouterConfig``
    defaults). ``reranker="none"``: no decision after retrieval (an escalated request keeps retrieval's top-1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    embedder: str = defaults.EMBEDDER  # a name in nexus_agent.routing.embedders.EMBEDDERS
    embedder_model: str | None = None  # model name or path (the backend's default if None)
    reranker: str = defaults.RERANKER  # a name in nexus_agent.routing.rerank.RERANKERS, or "none"
    # an LLM decision's model (short name or GGUF path; defaults.CHAT_MODEL if None) or a cross-encoder's folder
    reranker_model: str | None = None
    pool: int = _CONFIG.retrieval.pool
    gate: bool = _CONFIG.gate.enabled
    synthetic: bool | None = _CONFIG.retrieval.synthetic
    hybrid: bool = _CONFIG.retrieval.hybrid
    threads: int = 2  # CPU threads of a standalone LLM decision (embedders run single-threaded: short inputs)
    # compiled tool blocks for the LLM decision's candidate lines (docs/atb-format.md)
    splice: SpliceMode = SpliceMode.AUTO
    # whether a request needs a tool at all; without an LLM decision (reranker "none" or a cross-encoder) only the
    # embedding tests run
    relevance: Relevance = Relevance.LLM

    def config(self, tuning: RouterConfig | None = None) -> RouterConfig:
        """``tuning`` (default ``RouterConfig()``) with these options' pipeline knobs set."""
        base = tuning or _CONFIG
        return base.tuned(
            retrieval={"pool": self.pool, "synthetic": self.synthetic, "hybrid": self.hybrid},
            gate={"enabled": self.gate},
            judge={"enabled": base.judge.enabled and self.relevance == Relevance.LLM},
        )
