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

import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from nexus_agent import defaults
from nexus_agent.backend import Backend, LocalBackend
from nexus_agent.examples import Example, ExampleSet, Usage
from nexus_agent.examples.keys import ArgKeys, arg_keys
from nexus_agent.registry import IDENTIFIER, OPERATION_PARAMS, OPERATION_SEP, OVERWRITES, Tool, split_key
from nexus_agent.routing.calibration import Calibration
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.examples import ExampleIndex
from nexus_agent.routing.followup import (
    CallSoFar,
    PreviousTurn,
    asks_for_change,
    changes_named,
    context_text,
    leans_on,
    names_own_object,
    resolve_name,
    siblings,
    steps_named,
    user_turns,
)
from nexus_agent.routing.index import F32, ToolIndex
from nexus_agent.routing.judge import RelevanceJudge, names_concrete_object
from nexus_agent.routing.options import RouterConfig, RouterOptions
from nexus_agent.routing.query import (
    OBJECT_REF,
    QUOTED,
    for_retrieval,
    is_question,
    kinds_named,
    names_local_path,
    names_repository,
    refers_back,
)
from nexus_agent.routing.relevance import looks_like_no_tool
from nexus_agent.routing.rerank import create_reranker, reranker_class
from nexus_agent.routing.rerank.base import Reranker
from nexus_agent.signature import mentioned, words

__all__ = [
    "Candidate",
    "Decision",
    "PreviousTurn",
    "RouteResult",
    "Router",
    "RouterConfig",
    "RouterOptions",
    "build_router",
    "create_decision",
    "create_judge",
]

log = logging.getLogger(__name__)

# "done": the next-step decision (:meth:`Router.next_step`) found the request carried out
Decision = Literal["auto", "escalated", "no-tool", "done"]
# candidates the next-step decision lists: fewer than a first decision's, since a request one call answers pays for
# this decision too (docs/agent-loop.md)
NEXT_STEP_POOL = 6
NEXT_STEP_EXAMPLES = 2  # multi-step examples the next-step decision reads


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
    decision_ms: float | None = None  # wall time of the reranker's decision (None: it was not asked)
    judge_log_odds: float | None = None  # the relevance judge's yes-over-no log-odds (None: it was not asked)
    judge_ms: float | None = None  # wall time of the relevance judge's call (None: it was not asked)
    operation: str | None = None  # the chosen operation of a consolidated tool (ExampleUses.operations)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Retrieved:
    """What :meth:`Router.route` decided locally, before the judge and the decision (the tools copied under the lock,
    so a tool-list change meanwhile cannot tear them)."""

    cands: list[Candidate]
    pool: list[Candidate]
    margin: float
    escalate: bool
    relevant: bool
    small_talk: bool
    ex_sim: float | None
    following: PreviousTurn | None
    judge_tools: list[Tool] | None
    pool_tools: list[Tool]


# a request about a label itself, not one put on an issue: it makes, renames, recolours, describes or deletes it
_LABEL_ITSELF = re.compile(
    r"\b(?:create|make|new|rename|renaming|colou?rs?|colou?red|description|describe|delete|deleting)\b", re.IGNORECASE
)


class Router:
    """Route queries over a changing set of tools (see module docstring)."""

    def __init__(
        self,
        tools: Iterable[Tool],
        embedder: Embedder,
        cfg: RouterConfig | None = None,
        reranker: Reranker | None = None,
        synthetic: dict[str, list[str]] | None = None,
        judge: RelevanceJudge | None = None,
        examples: ExampleSet | None = None,
    ) -> None:
        cfg = cfg or RouterConfig()
        self.cfg = cfg
        # held for retrieval and tool-list changes; route() runs the judge and the decision outside it
        self.lock = threading.RLock()
        self.reranker = reranker
        self.judge = judge  # asked when cfg.judge.enabled (routing/judge.py)
        self.index = ToolIndex(tools, embedder, cfg, synthetic, examples)
        self.examples = ExampleIndex(self.index.examples, self.index.cache)
        self.calibration = Calibration(self.index, cfg, self._margin)
        self._last_query: tuple[str, F32] | None = None
        self._sibling_memo: dict[str, list[str]] = {}
        self._by_name: dict[str, Tool] | None = None
        self.index.on_change(self._sibling_memo.clear)  # a tools/list_changed diff may add or drop siblings
        self.index.on_change(self._forget_names)

    @property
    def tools(self) -> dict[str, Tool]:
        """Routing key -> tool, as the index holds them now: a tool's qualified name, or for one operation of a
        consolidated tool ``qualified#operation`` (``ExampleUses.operations``)."""
        return self.index.tools

    def by_name(self) -> dict[str, Tool]:
        """Qualified name -> a tool as the index holds it (for a consolidated tool, one of its operations: what a
        name from outside routing, a history's call or this turn's, stands for)."""
        if self._by_name is None:
            self._by_name = {}
            for t in self.tools.values():
                self._by_name.setdefault(t.qualified_name, t)
        return self._by_name

    def key_for(self, qualified: str, arguments: Mapping[str, Any] | None = None) -> str | None:
        """The routing key of a call of ``qualified`` with ``arguments`` (its operation's key for a consolidated
        tool), or None when routing does not hold the tool."""
        tool = self.by_name().get(qualified)
        if tool is None:
            return None
        if tool.operation is None:
            return tool.key
        # the operation tools fix their parameter to one value, so it no longer reads as the operation parameter
        # (``Tool.operation_param`` wants a choice): each name it may have is tried (measured: read through
        # ``operation_param``, an ``issue_write`` update came back as whichever operation ``by_name`` held, create,
        # and the loop wrote it again as a create)
        for param in sorted(OPERATION_PARAMS):
            key = f"{qualified}{OPERATION_SEP}{(arguments or {}).get(param)}"
            if key in self.tools:
                return key
        return tool.key

    def warm(self) -> None:
        """Hold the decision's and the relevance judge's stable heads in their lanes now (start-up), loaded from disk
        when a process decoded them before, so no request pays for them."""
        if self.reranker is not None:
            self.reranker.warm()
        if self.judge is not None and self.cfg.judge.enabled:
            self.judge.warm(list(self.tools.values()))

    def settle(self) -> None:
        """After a turn's answer: the decision's deferred work (compiling the tool blocks it found missing)."""
        if self.reranker is not None:
            self.reranker.settle()

    def _forget_names(self) -> None:
        self._by_name = None

    def object_params(self, qualified: str, operation: str | None = None) -> list[str]:
        """The identifier parameters (``IDENTIFIER``: ``issue_number``, ``pullNumber`` …) that name the existing
        object a call of ``qualified`` (of ``operation``) acts on: the required ones, and the ones its every example
        sets (an update's ``issue_number``, optional in a schema shared with create). Empty when it acts on none it
        must be told (a create, a search)."""
        with self.lock:
            tool = self.tools.get(f"{qualified}{OPERATION_SEP}{operation}") or self.by_name().get(qualified)
            if tool is None:
                return []
            props = tool.input_schema.get("properties") or {}
            always = self.index.examples.always_set(qualified, operation)
            named = [*(tool.input_schema.get("required") or []), *sorted(always)]
            return [k for k in dict.fromkeys(named) if k in props and IDENTIFIER.search(k)]

    def reads_before(self, qualified: str, operation: str | None = None) -> bool:
        """Whether a write of ``qualified`` reads what it acts on first, by its examples: a local tool
        (``ExampleIndex.path_tools``) that one of its multi-step examples calls after a read of its own server
        (``edit_file`` after ``read_text_file``, ``git_add`` after ``git_status``, ``git_checkout`` after
        ``git_branch``; not ``git_create_branch``, which no example reads before). Off with the examples' routing
        keys."""
        if not self.cfg.examples.keys or not len(self.examples):
            return False
        with self.lock:
            tool = self.by_name().get(qualified)
            if tool is None or tool.read_only_hint is True or qualified not in self.examples.path_tools:
                return False
            reads = {t.qualified_name for t in self.tools.values() if t.server == tool.server and t.read_only_hint}
            return self.examples.lookup_for(None, qualified, reads) is not None

    def in_place(self, qualified: str, params: Sequence[str]) -> str | None:
        """The write of ``qualified``'s server that changes part of what ``qualified`` would replace whole: a tool
        that takes every one of ``params`` (the object parameters it was called with: ``path``), whose description
        does not say it overwrites, and that a write reading first (:meth:`reads_before`) would be (``edit_file``
        for ``write_file``; not ``create_directory``, which no example reads before). None when there is no such
        tool, or more than one."""
        with self.lock:
            tool = self.by_name().get(qualified)
            if tool is None:
                return None
            found = [
                t.qualified_name
                for t in self.by_name().values()
                if t.server == tool.server
                and t.qualified_name != qualified
                and t.read_only_hint is not True
                and all(p in (t.input_schema.get("properties") or {}) for p in params)
                and not OVERWRITES.search(t.description)
            ]
        found = [q for q in found if self.reads_before(q)]
        return found[0] if len(found) == 1 else None

    def arg_keys(self, query: str, qualified: str, operation: str | None = None) -> ArgKeys | None:
        """The keys argument writing writes for ``query`` on ``qualified`` (``operation``), from its closest
        examples (:func:`~nexus_agent.examples.keys.arg_keys`); None when they are off or none is close."""
        uses = self.cfg.examples
        if uses.arg_keys_from > 1.0 or not len(self.examples):
            return None
        with self.lock:
            qvec = self.examples.vector(query)
            ranked = self.examples.scored(qvec, qualified, operation, uses.arg_keys_pool)
        return arg_keys(ranked, uses.arg_keys_from, uses.arg_keys_pool)

    def closest_examples(self, query: str, qualified: str, operation: str | None = None, k: int = 3) -> list[Usage]:
        """Up to ``k`` single-call examples of ``qualified`` (of ``operation``) closest to ``query``."""
        with self.lock:
            qvec = self.examples.vector(query) if len(self.examples) else None
            return self.examples.closest(qvec, qualified, operation, k)

    def _decision_examples(self, query: str, pool: Sequence[Tool]) -> list[str]:
        """For each of the decision's candidates, the request of its closest example, for the ``decision_examples``
        candidates whose closest example is closest to ``query`` ("" for the others, for one without examples, and
        for an operation whose line already shows that example); none when the decision's examples are off. Each
        costs its tokens on every decision that shows it (about 20), so only a few get one.

        Chosen by the example's closeness, not the candidate's place: measured on the multi-step tune tasks'
        first writes (qwen1.5b), the first four places gave 16/31 right decisions and the four closest examples
        18/31 ("mark it ready for review" found ``update_pull_request``, whose example "Mark … ready for review"
        had stood in no place that showed one)."""
        n = self.cfg.examples.decision_examples if self.cfg.examples.decision else 0
        if not n or not len(self.examples):
            return []
        with self.lock:
            qvec = self.examples.vector(query)
            best: list[tuple[str, float]] = []
            for t in pool:
                u = next(
                    (
                        u
                        for alone in (True, False)  # an example of this call alone first
                        for u in self.examples.closest(qvec, t.qualified_name, t.operation, 1, alone)
                        if u.request
                    ),
                    None,
                )
                if u is None or (t.operation is not None and u.request in t.description):
                    best.append(("", -1.0))
                elif self.cfg.examples.decision_examples_by == "position":
                    # the earlier rule: an operation's line shows only its fixed examples
                    best.append(("", -1.0) if t.operation is not None else (u.request, 0.0))
                else:
                    best.append((u.request, self.examples.similarity(qvec, u.request)))
        by_place = self.cfg.examples.decision_examples_by == "position"
        shown = set(range(n)) if by_place else set(sorted(range(len(pool)), key=lambda i: -best[i][1])[:n])
        return [best[i][0] if i in shown else "" for i in range(len(pool))]

    def calibrate(self) -> dict[str, float]:
        """Calibrate τ (and the relevance floor) on registry-derived adversarial queries; cached on disk."""
        with self.lock:
            return self.calibration.calibrate()

    def add_tools(self, tools: Iterable[Tool]) -> None:
        with self.lock:
            self.index.add(tools)

    def remove_tools(self, names: Iterable[str]) -> None:
        with self.lock:
            self.index.remove(names)

    def replace_tools(self, tools: Iterable[Tool]) -> None:
        """Replace tools by qualified name (a changed description/schema re-embeds only those tools)."""
        with self.lock:
            self.index.replace(tools)

    # --- scoring -------------------------------------------------------------------------------------------

    def _fused(self, qvec: F32, query: str, mask: npt.NDArray[np.bool_] | None = None) -> tuple[F32, F32, F32]:
        """(fused, dense, lexical) per tool in ``slb.keys`` order; ``mask`` marks the tools routing may pick."""
        dense = self.index.slb.scores(qvec)
        if not self.cfg.retrieval.hybrid:
            return dense, dense, np.zeros_like(dense)
        bm25 = self.index.bm25
        if self.cfg.retrieval.bm25_norm == "idf":
            lexn = bm25.normalized_scores(query)
        else:
            lex = bm25.scores(query)
            # normalise by the best *eligible* tool: a strong lexical match outside the allowed subset must not
            # shrink the lexical evidence of every tool inside it
            pool = lex if mask is None else lex[mask]
            top = float(pool.max()) if len(pool) else 0.0
            if self.cfg.retrieval.bm25_norm == "known":
                top = max(top, self.cfg.retrieval.bm25_known_share * bm25.known_idf(query))
            lexn = lex / top if top > 0 else lex
        w = self.cfg.retrieval.bm25_weight
        return ((1 - w) * dense + w * lexn).astype(np.float32), dense, lexn.astype(np.float32)

    def retrieve(
        self,
        query: str,
        allowed: set[str] | None = None,
        qvec: F32 | None = None,
        previous: PreviousTurn | None = None,
        history: Sequence[dict[str, str]] = (),
    ) -> list[Candidate]:
        """All tools (or only ``allowed``), best first, with their scores. ``previous``: the request is a
        follow-up of that tool turn (:mod:`nexus_agent.routing.followup`); its context and prior join the score."""
        asks = self.cfg.retrieval.question_write_penalty > 0 and is_question(query)
        raw_query = query
        query = for_retrieval(query, self.cfg.retrieval.expand)
        if qvec is None:
            qvec = self._embed_query(query)
        keys = self.index.slb.keys
        mask = None if allowed is None else self.index.mask(allowed)
        fused, dense, lex = self._fused(qvec, query, mask)
        if self.cfg.examples.keys and self.cfg.examples.match_weight > 0 and len(self.examples):
            fused = (fused + self._example_bonus(raw_query, fused, mask)).astype(np.float32)
        if previous is not None:
            fused = self._follow(fused, raw_query, previous, mask, history)
        penalty = self.cfg.retrieval.question_write_penalty * self.index.writes if asks else np.zeros(len(keys))
        fused = (fused - penalty).astype(np.float32)
        idx = np.argsort(-fused, kind="stable")
        return [
            Candidate(keys[i], float(fused[i]), float(dense[i]), float(lex[i]), float(penalty[i]))
            for i in idx
            if mask is None or mask[i]
        ]

    def _example_bonus(self, query: str, fused: F32, mask: npt.NDArray[np.bool_] | None) -> F32:
        """Per tool in ``slb.keys`` order: ``match_weight`` times the cosine of its closest example request to
        ``query`` (both masked), for the tools of the server of the best eligible tool by ``fused``; 0 elsewhere
        (``ExampleUses.match_weight``)."""
        keys = self.index.slb.keys
        eligible = fused if mask is None else np.where(mask, fused, -np.inf)
        server = self.tools[keys[int(np.argmax(eligible))]].server
        same = np.array([self.tools[k].server == server for k in keys], dtype=np.float32)
        scores = self.index.example_scores(self.examples.vector(query))
        return (self.cfg.examples.match_weight * scores * same).astype(np.float32)

    def _example_match(self, query: str, pool: Sequence[Candidate]) -> Candidate | None:
        """The candidate of ``pool`` that the request's closest example makes first, when that example is at least
        ``ExampleUses.match_auto`` close (masked requests): its first write, or its first call when it makes none.
        None when the examples say nothing that sure, or what they say is not in the pool.

        Why: on the multi-step tune tasks' first writes, the closest example at 0.65 or more named the right tool and
        operation 11 times in 11, where the LLM decision, shown the same candidates and examples, chose label_write
        for "add the bug label to #6" and assign_copilot_to_issue for "assign it to bob-kim"."""
        uses = self.cfg.examples
        if not (uses.keys and uses.match_auto <= 1 and pool and len(self.examples)):
            return None
        # the first candidate's server only (the one the examples' bonus raised): over the pool's servers, "make a
        # new branch … in GitLab project group/infra-live" went to GitHub's create_branch (mixed_dev)
        found = self.examples.nearest(self.examples.vector(query), {self.tools[pool[0].key].server})
        if found is None or found[1] < uses.match_auto:
            return None
        example = found[0]
        names = self.by_name()
        qualified = [f"{example.server}__{c.tool}" for c in example.calls]
        writes = [i for i, q in enumerate(qualified) if q in names and names[q].read_only_hint is not True]
        first = writes[0] if writes else 0
        key = self.key_for(qualified[first], example.calls[first].arguments)
        return next((c for c in pool if c.key == key), None)

    def _follow(
        self,
        fused: F32,
        query: str,
        previous: PreviousTurn,
        mask: npt.NDArray[np.bool_] | None,
        history: Sequence[dict[str, str]],
    ) -> F32:
        """``fused`` averaged with the context ranking and raised by the prior (module docstring of followup)."""
        cfg = self.cfg
        w = cfg.followups.context_weight
        if w > 0:
            ctx = for_retrieval(self.context_text(query, previous, history), cfg.retrieval.expand)
            ctx_fused, _, _ = self._fused(self.index.embedder.embed_queries([ctx])[0], ctx, mask)
            fused = ((1 - w) * fused + w * ctx_fused).astype(np.float32)
        return (fused + self._prior(previous)).astype(np.float32)

    def context_text(self, query: str, previous: PreviousTurn, history: Sequence[dict[str, str]]) -> str:
        """What a follow-up is also scored as: the request with the previous tool turn's (bench/followups.py
        overrides it with an LLM rewrite, which was measured and is off)."""
        return context_text(query, previous)

    def _prior(self, previous: PreviousTurn) -> F32:
        """Per tool in ``slb.keys`` order: the follow-up prior of the previous tool, its siblings, its server."""
        cfg = self.cfg
        keys = self.index.slb.keys
        prior = np.zeros(len(keys), dtype=np.float32)
        prev = self.by_name().get(split_key(previous.tool)[0])
        if prev is None:
            return prior
        related = set(self._siblings(prev))
        for i, k in enumerate(keys):
            q = self.tools[k].qualified_name
            if q == prev.qualified_name:
                prior[i] = cfg.followups.prior_tool
            elif q in related:
                prior[i] = cfg.followups.prior_sibling
            elif self.tools[k].server == prev.server:
                prior[i] = cfg.followups.prior_server
        return prior

    def _siblings(self, tool: Tool) -> list[str]:
        if tool.qualified_name not in self._sibling_memo:
            self._sibling_memo[tool.qualified_name] = list(dict.fromkeys(siblings(tool, self.tools.values())))
        return self._sibling_memo[tool.qualified_name]

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
            self._last_query = (query, self.index.embedder.embed_queries([query])[0])
        return self._last_query[1]

    # --- the decision --------------------------------------------------------------------------------------

    def previous_of(
        self, history: Sequence[dict[str, Any]], allowed: set[str] | None = None, max_turns: int = 4
    ) -> PreviousTurn | None:
        """The newest of the last ``max_turns`` user requests in ``history`` that led to a tool, with that tool:
        the one the messages after it name (tool calls, call notes), else the one retrieval picks for the request.
        A request that reads as small talk, or that no tool fits, is skipped; None when none is left. When the
        history records calls at all, a request without one called nothing ("thanks!")."""
        turns = user_turns(history)[:max_turns]
        recorded = any(named for _, named in turns)
        for request, named in turns:
            for name in reversed(named):
                if (qualified := resolve_name(name, self.by_name())) is not None:
                    return PreviousTurn(request, qualified)
            if recorded:
                continue
            # no record of any call: what routing would pick for that request, by the same relevance test
            text = for_retrieval(request, self.cfg.retrieval.expand)
            qvec = self.index.embedder.embed_queries([text])[0]
            cands = self.retrieve(request, allowed, qvec=qvec)
            if cands and self._relevance(qvec, cands[: self.cfg.retrieval.pool], allowed)[0]:
                return PreviousTurn(request, cands[0].key)
        return None

    def _relevance(
        self, qvec: F32, pool: Sequence[Candidate], allowed: set[str] | None
    ) -> tuple[bool, bool, float | None]:
        """(relevant, small talk, best cosine to a no-tool exemplar) for a request and its non-empty pool: relevant
        when the pool's best dense score reaches the floor and the request is not nearer an exemplar (small talk)
        than any tool or tool request (docs/measurements.md#relevance)."""
        best_dense = max(c.dense for c in pool)
        relevant = best_dense >= self.calibration.floor(allowed)
        if not self.cfg.no_tool.exemplars:
            return relevant, False, None
        ex_sim, request_sim = self.calibration.nearest(qvec, allowed)
        # Small talk is judged against the tools' own words, not their example requests: hundreds of example
        # requests share content words with requests no tool serves ("book a table for two" and "Add a table view
        # called Triage"), while a real request stays near its tool's own rows (ToolIndex.own_scores)
        own = self.index.own_scores(qvec)
        if allowed is not None:
            own = np.where(self.index.mask(allowed), own, -np.inf)
        own_best = float(own.max()) if len(own) else best_dense
        small_talk = looks_like_no_tool(ex_sim, max(own_best, request_sim))
        return relevant and not small_talk, small_talk, ex_sim

    def follow_up(self, query: str, history: Sequence[dict[str, str]], previous: PreviousTurn | None) -> bool:
        """Whether ``query`` is routed as a follow-up of ``previous`` (history, a cue word, the switch on)."""
        return (
            self.cfg.followups.enabled
            and previous is not None
            and bool(history)
            and split_key(previous.tool)[0] in self.by_name()
            and leans_on(query)
        )

    def route(
        self,
        query: str,
        history: Sequence[dict[str, str]] = (),
        allowed: set[str] | None = None,
        previous: PreviousTurn | None = None,
    ) -> RouteResult:
        """Rank, gate, and (when escalated) rerank. ``allowed`` restricts routing to a subset of the tools
        (qualified names); ``previous``: the last earlier turn that called a tool (see :meth:`follow_up`). The
        result's ``tool`` is a qualified name, with ``operation`` the chosen operation of a consolidated tool; its
        candidates are routing keys.

        Thread-safe: retrieval holds :attr:`lock`; the relevance judge and the decision run outside it, so the
        routing of concurrent turns overlaps on a remote engine (a local LLM is serialised by its engine)."""
        return _named(self._route(query, history, allowed, previous))

    def _route(
        self,
        query: str,
        history: Sequence[dict[str, str]],
        allowed: set[str] | None,
        previous: PreviousTurn | None,
    ) -> RouteResult:
        t0 = time.perf_counter()
        with self.lock:
            state = self._retrieve_for(query, history, allowed, previous)
        if isinstance(state, RouteResult):
            return state
        cands, pool, margin, escalate = state.cands, state.pool, state.margin, state.escalate
        relevant, small_talk, ex_sim, following = state.relevant, state.small_talk, state.ex_sim, state.following
        judge_tools = state.judge_tools
        judged = self.judge.judge(query, judge_tools) if self.judge is not None and judge_tools is not None else None
        odds, judge_ms = (judged.log_odds, judged.ms) if judged is not None else (None, None)

        def without_decision(decision: Decision, tool: str | None) -> RouteResult:
            """The result when no LLM decision is asked: retrieval's, or the relevance tests'."""
            ms = (time.perf_counter() - t0) * 1e3
            return RouteResult(
                pool,
                decision,
                tool,
                margin,
                ms,
                escalated=escalate,
                exemplar_similarity=ex_sim,
                judge_log_odds=odds,
                judge_ms=judge_ms,
            )

        if odds is not None and odds < self.cfg.judge.threshold:
            # the judge says general knowledge answers it: no tool, and no decision to wait for
            return without_decision("no-tool", None)
        # Below the floor nothing fits, and the LLM reranker, asked to choose among candidates, tends to choose
        # one anyway (docs/measurements.md#relevance). With history the request may lean on earlier turns ("open
        # a PR there") that the reranker sees and the embedding does not, so it decides; but not when the request
        # is small talk (nearer an exemplar): after a tool turn, a bare "good evening!" went to the reranker.
        if not escalate or self.reranker is None or small_talk or (not relevant and not history):
            decision: Decision = ("escalated" if escalate else "auto") if relevant else "no-tool"
            return without_decision(decision, cands[0].key if relevant else None)
        hint = following if self.cfg.followups.hint else None
        t_decide = time.perf_counter()
        examples = self._decision_examples(query, state.pool_tools)
        res = self.reranker.rerank(query, state.pool_tools, history, previous=hint, examples=examples)
        decision_ms = (time.perf_counter() - t_decide) * 1e3
        choice = res.choice
        if choice is None and following is not None and self.cfg.followups.none_fallback:
            # a follow-up that passed the small-talk test leans on a tool turn: "none" is the small model's doubt
            choice = pool[0].key
        decision = "escalated" if choice is not None else "no-tool"
        ms = (time.perf_counter() - t0) * 1e3
        return RouteResult(pool, decision, choice, margin, ms, res.scores, True, ex_sim, decision_ms, odds, judge_ms)

    def next_step(
        self, query: str, history: Sequence[dict[str, str]], calls: Sequence[CallSoFar], pool_size: int = NEXT_STEP_POOL
    ) -> RouteResult:
        """:meth:`_next_step`, its tool as a qualified name and an operation (as :meth:`route`)."""
        return _named(self._next_step(query, history, calls, pool_size))

    def _next_step(
        self, query: str, history: Sequence[dict[str, str]], calls: Sequence[CallSoFar], pool_size: int
    ) -> RouteResult:
        """After ``calls`` (the calls made so far for ``query``, in this turn): the next tool, or decision ``done``
        (tool None). The follow-up machinery over the last call: context retrieval and the prior on that tool and
        its siblings, which join the pool; then the LLM decision, with ``done`` in place of ``none``. Without an
        LLM decision a request gets one call.

        Not asked (done at once), when the last call did not fail: a request that asks for no change once its
        reads succeeded, and a request with as many successful writes as the changes and checks it names
        (:func:`steps_named`), so a request one call answers pays nothing for the loop. A write that succeeded is
        not offered again: the same write twice in one request was, when measured, a loop creating issue after
        issue. After a call that ran and failed, only tools declared read-only are offered. A first call refused
        for an identifier nobody gave comes as a failed call that did not run: the decision may look the object up
        first, and the write stays on offer."""
        t0 = time.perf_counter()
        last = calls[-1]
        planned = self._planned_step(query, calls)
        if planned is not None:
            return RouteResult([planned], "auto", planned.key, 0.0, (time.perf_counter() - t0) * 1e3)
        if self._looked_up_nothing(calls):
            # the change needed an object its lookup did not find: nothing more to do but say so (measured: asked
            # on, the decision went on to other writes, on other objects, for requests about objects that do not
            # exist)
            return RouteResult([], "done", None, 0.0, (time.perf_counter() - t0) * 1e3)
        # not offered again: a write that succeeded, and a tool whose call failed (measured: offered again, the
        # small model wrote the same arguments, and the repeated call only ended the loop)
        wrote = {split_key(c.tool)[0] for c in calls if c.wrote or (c.failed and c.ran)}
        if not last.failed and sum(c.wrote for c in calls) >= steps_named(query):
            return RouteResult([], "done", None, 0.0, (time.perf_counter() - t0) * 1e3)
        with self.lock:
            self.calibration.ensure()
            last_key = self.key_for(split_key(last.tool)[0], last.arguments)
            previous = PreviousTurn(query, last_key) if last_key is not None else None
            qvec = self._embed_query(for_retrieval(query, self.cfg.retrieval.expand))
            cands = self._in_scope(query, self.retrieve(query, qvec=qvec, previous=previous, history=history))
            cands = self._of_kind(query, cands)
            cands = [c for c in cands if self.tools[c.key].qualified_name not in wrote]
            if any(c.failed and c.ran for c in calls):
                # after a call that ran and failed, only tools that declare themselves read-only: measured, a failed
                # create_branch was followed under --yes by create_or_update_file and create_repository, writes to
                # objects the request never named; a lookup may still explain the failure, and the answer reports it
                cands = [c for c in cands if self.tools[c.key].read_only_hint is True]
            pool = self._said(query, cands[:pool_size])
            if previous is not None and split_key(previous.tool)[0] not in wrote and cands:
                pool = self._keep_related(pool, cands, previous)
            pool_tools = [self.tools[c.key] for c in pool]
        if self.reranker is None or not pool:
            return RouteResult(pool, "done", None, 0.0, (time.perf_counter() - t0) * 1e3)
        writes = [c for c in pool if self.tools[c.key].read_only_hint is not True]
        if last.wrote and writes and sum(c.wrote for c in calls) < changes_named(query):
            # a change made and another one named: the pool's write with the closest example is the next change,
            # without the decision. Measured on the multi-step tune tasks (qwen1.5b): after "Open an acme/web issue
            # 'Redirect old blog URLs'" ran, the decision read the new issue twice, with add_issue_comment first in the
            # pool, and the comment "and then mention the new issue's number" asked for was never made; after "Close the
            # … issue … as completed" it searched again, and "let bob-kim know in a comment on it" was not done
            return RouteResult(pool, "auto", self._closest_write(query, writes), 0.0, (time.perf_counter() - t0) * 1e3)
        t_decide = time.perf_counter()
        plans: list[Example] = []
        if self.cfg.examples.next_step and len(self.examples):
            servers = {t.server for t in pool_tools}
            with self.lock:
                qvec = self.examples.vector(query)
                plans = [ex for s in sorted(servers) for ex in self.examples.multi_step(qvec, s, NEXT_STEP_EXAMPLES)]
        res = self.reranker.next_step(query, pool_tools, calls, plans[:NEXT_STEP_EXAMPLES])
        decision_ms = (time.perf_counter() - t_decide) * 1e3
        ms = (time.perf_counter() - t0) * 1e3
        decision: Decision = "escalated" if res.choice is not None else "done"
        return RouteResult(pool, decision, res.choice, 0.0, ms, res.scores, True, decision_ms=decision_ms)

    def _closest_write(self, query: str, writes: Sequence[Candidate]) -> str:
        """Of the pool's ``writes`` (retrieval's order), the one with the example closest to ``query`` (any call of
        it, a later step of a multi-step example too); retrieval's first when none has an example. Measured on the
        tune split: after "Merge acme/api PR 6" ran, "then leave a comment on it" went to retrieval's first write,
        ``add_reply_to_pull_request_comment`` (0.855 against ``add_issue_comment``'s 0.824), which needs a review
        comment's id nobody gave."""
        if not len(self.examples):
            return writes[0].key
        with self.lock:
            qvec = self.examples.vector(query)
            best: tuple[float, str] | None = None
            for c in writes:
                tool = self.tools[c.key]
                top = self.examples.scored(qvec, tool.qualified_name, tool.operation, 1)
                if top and (best is None or top[0][1] > best[0]):
                    best = (top[0][1], c.key)
        return best[1] if best is not None else writes[0].key

    def _looked_up_nothing(self, calls: Sequence[CallSoFar]) -> bool:
        """The last call is a read that found nothing, made after a change that could not be made (refused for an
        identifier nobody gave, or run and failed), and no change has succeeded."""
        if len(calls) < 2 or any(c.wrote for c in calls):
            return False
        last, before = calls[-1], calls[-2]
        tool = self.by_name().get(split_key(last.tool)[0])
        wrote_before = self.by_name().get(split_key(before.tool)[0])
        return (
            tool is not None
            and tool.read_only_hint is True
            and last.ran
            and not last.failed
            and last.empty
            and wrote_before is not None
            and wrote_before.read_only_hint is not True
            and (not before.ran or before.failed)
        )

    def _planned_step(self, query: str, calls: Sequence[CallSoFar]) -> Candidate | None:
        """The fixed plan after a change that could not be made (refused for an identifier nobody gave, or run and
        failed): look its object up, then make the change again, once; no decision is asked for either step.

        The lookup is the read-only tool of the write's server, best retrieved for the request, that needs no
        identifier itself (it finds the object from the request's description: ``search_issues`` for "close the
        rate limiting issue", never ``issue_read``). Measured on the multi-step tune tasks: asked instead, the
        decision picked another write (``add_issue_comment`` after a refused ``add_reply_to_pull_request_comment``)
        or, after a search had found the issue, nothing, and the change the request asked for was never made.
        None when the plan has no step here: the decision goes on as before."""
        last = calls[-1]
        tool = self.by_name().get(split_key(last.tool)[0])
        if tool is None:
            return None
        failed_write = [
            i
            for i, c in enumerate(calls)
            if (not c.ran or c.failed)
            and (t := self.by_name().get(split_key(c.tool)[0])) is not None
            and t.read_only_hint is not True
        ]
        if not failed_write:
            return None
        attempts = sum(c.tool == calls[failed_write[-1]].tool for c in calls)
        if failed_write[-1] == len(calls) - 1 and len(failed_write) == 1 and attempts == 1:
            if last.ran and (first := self._prerequisite(tool, last.result)) is not None:
                return first
            if any(not c.failed and c.ran and not c.wrote for c in calls[:-1]):
                # it was looked up before it failed: the decision reads what was found. An earlier change is no
                # lookup ("create a folder …/2026-q2 and move the Q2 report into it": the folder made, the report
                # still to be found)
                return None
            with self.lock:
                allowed = {
                    k
                    for k, t in self.tools.items()
                    if t.server == tool.server and t.read_only_hint is True and not t.requires_identifier
                }
                # of the kind of object the request names (measured on the tune tasks: "close the pull request that
                # adds WebSocket support", which does not exist, was looked up with search_issues, which found an
                # issue about it, and that issue was closed)
                allowed = {c.key for c in self._of_kind(query, [Candidate(k, 0.0, 0.0, 0.0) for k in allowed])}
                # the one the closest example that makes this write finds its object with (measured: by retrieval
                # alone "assign the pagination bug to bob-kim" was looked up with list_issues, ten rows of which
                # none was the one described, where the examples search; and with every tool any example looked
                # up with, "mark the dark mode PR ready" went to get_team_members)
                names = {self.tools[k].qualified_name for k in allowed}
                # the identifiers the waiting write lacks, of its operation (a refused call keeps its method)
                key = self.key_for(split_key(last.tool)[0], last.arguments) or last.tool
                params = self.object_params(*split_key(key))
                shown = self.examples.lookup_for(self.examples.vector(query), tool.qualified_name, names, params)
                preferred = {k for k in allowed if self.tools[k].qualified_name == shown}
                qvec = self._embed_query(for_retrieval(query, self.cfg.retrieval.expand))
                found = self.retrieve(query, preferred or allowed, qvec=qvec) if allowed else []
            return found[0] if found else None
        before = calls[-2] if len(calls) >= 2 else None
        if (
            before is not None
            and failed_write[-1] == len(calls) - 2
            and attempts == 1
            and last.ran
            and not last.failed
            and (
                (tool.read_only_hint is True and not last.empty)
                or (
                    last.wrote
                    and (failed := self.by_name().get(split_key(before.tool)[0])) is not None
                    and (first := self._prerequisite(failed, before.result)) is not None
                    and first.key == self.key_for(tool.qualified_name)
                )
            )
        ):
            # the change again, now that its object was looked up, or the write it waited for was made (the same
            # operation of a consolidated tool)
            return Candidate(self.key_for(split_key(before.tool)[0], before.arguments) or before.tool, 1.0, 0.0, 0.0)
        return None

    def _prerequisite(self, failed: Tool, error: str) -> Candidate | None:
        """The write that a write which ran and failed waits for: a tool of its server, not read-only and with one
        operation, that the failure's ``error`` names and that the examples make before it
        (:meth:`ExampleIndex.made_before`). "No changes staged for commit. Use git_add to stage changes first":
        ``git_add``, which the git examples stage before a commit. Both are asked for: the error alone would let a
        tool's output pick the next write, and the examples alone cannot tell this failure from a missing object.

        Measured on the multi-step tune tasks (qwen1.5b): "Commit my changes to src/invoice.py" ran ``git_commit``,
        which failed for nothing staged; the plan looked it up with ``git_diff_staged`` (nothing staged, again), and
        the commit was never made."""
        with self.lock:
            before = self.examples.made_before(failed.qualified_name)
            for key, t in self.tools.items():
                if (
                    t.server == failed.server
                    and t.operation is None
                    and t.read_only_hint is not True
                    and t.qualified_name in before
                    and t.qualified_name != failed.qualified_name
                    and re.search(rf"(?<![\w-]){re.escape(t.name)}(?![\w-])", error)
                ):
                    return Candidate(key, 1.0, 0.0, 0.0)
        return None

    def _retrieve_for(
        self,
        query: str,
        history: Sequence[dict[str, str]],
        allowed: set[str] | None,
        previous: PreviousTurn | None,
    ) -> RouteResult | _Retrieved:
        """The local part of :meth:`route` (under :attr:`lock`): a final result when no candidate is left, else
        what the rest needs."""
        gate, _ = self.calibration.ensure()  # calibrates on first use and after a tool change
        t0 = time.perf_counter()
        qvec = self._embed_query(for_retrieval(query, self.cfg.retrieval.expand))
        if previous is None and self.cfg.followups.enabled and history and leans_on(query):
            previous = self.previous_of(history, allowed)  # a caller that kept no record of its calls
        following = previous if self.follow_up(query, history, previous) else None
        if following is not None and names_own_object(query):
            # it names its own object and retrieval alone is sure of it: it stands on its own (a cue word such as
            # "before" or "last" in "show the last 200 lines of /var/log/app.log" is no follow-up)
            margin, reordered = self._confidence(self.retrieve(query, allowed, qvec=qvec))
            if gate.decide(margin) and not reordered:
                following = None
        cands = self._in_scope(query, self.retrieve(query, allowed, qvec=qvec, previous=following, history=history))
        cands = _numbered(query, self._of_kind(query, cands), self.tools)
        margin, reordered = self._confidence(cands)
        pool = cands[: self.cfg.retrieval.pool]
        if not cands:
            return RouteResult([], "no-tool", None, margin, (time.perf_counter() - t0) * 1e3)
        if following is not None:
            pool = self._keep_related(cands[: self.cfg.followups.pool or self.cfg.retrieval.pool], cands, following)
        if following is None:  # a follow-up ("now issue 9") need not say again what the tool it follows is for
            pool = self._said(query, pool)
        points_back = self.cfg.gate.escalate_back_references and bool(history) and refers_back(query)
        points_back = points_back or (following is not None and self.cfg.followups.escalate)
        matched = self._example_match(query, pool) if following is None and not points_back else None
        if matched is not None:
            cands = [matched, *(c for c in cands if c is not matched)]
            pool = [matched, *(c for c in pool if c is not matched)]
        escalate = matched is None and (
            self.cfg.gate.always_escalate
            or (
                self.cfg.gate.enabled
                and (not gate.decide(margin) or points_back or reordered or self._writes_to_tell_apart(query, cands))
            )
        )
        relevant, small_talk, ex_sim = self._relevance(qvec, pool, allowed)
        if not relevant and (self._names_own_path(query, pool) or self._names_own_repository(query, pool)):
            # a file or a repository of the user's, which a tool it has can read and general knowledge cannot:
            # measured on the multi-step tune tasks (qwen1.5b), "Double the rice in my risotto recipe in /…/recipes"
            # was small talk; reworded tune requests ("Create branch feature/rate-limit-per-client in acme/api, based
            # on the rate limiting pull request's branch") were answered "I could not do it" with no call
            relevant, small_talk = True, False
        judge_tools = self._judge_tools(query, allowed) if relevant and following is None else None
        pool_tools = [self.tools[c.key] for c in pool]
        return _Retrieved(
            cands, pool, margin, escalate, relevant, small_talk, ex_sim, following, judge_tools, pool_tools
        )

    def _names_own_path(self, query: str, pool: Sequence[Candidate]) -> bool:
        """Whether ``query`` names a local path (:func:`names_local_path`) and ``pool`` holds a tool asked for with
        one (``ExampleIndex.path_tools``). Off without the examples' routing keys."""
        if not self.cfg.examples.keys or not len(self.examples) or not names_local_path(query):
            return False
        local = self.examples.path_tools
        return any(self.tools[c.key].qualified_name in local for c in pool)

    def _names_own_repository(self, query: str, pool: Sequence[Candidate]) -> bool:
        """Whether ``query`` asks for a change (:func:`asks_for_change`) in an ``owner/repo`` it names
        (:func:`names_repository`) and ``pool`` holds a tool that takes both ``owner`` and ``repo``."""
        if not asks_for_change(query) or not names_repository(query):
            return False
        return any({"owner", "repo"} <= set(self.tools[c.key].input_schema.get("properties") or {}) for c in pool)

    def _said(self, query: str, pool: list[Candidate]) -> list[Candidate]:
        """``pool`` without the tools named for something the request does not say (``ExampleSet.own_words``:
        ``assign_copilot_to_issue`` for "assign it to bob-kim"), unless that leaves none."""
        if not self.cfg.examples.keys or not len(self.examples):
            return pool
        own = self.examples.examples.own_words
        said = words(query)
        kept = [c for c in pool if all(mentioned({w}, said) for w in own.get(self.tools[c.key].qualified_name, ()))]
        return kept or pool

    def _in_scope(self, query: str, cands: list[Candidate]) -> list[Candidate]:
        """``cands`` less the tools of the other side when the request names one side only: a local path and no
        repository (:func:`names_repository`) keeps the tools asked for with a local path
        (``ExampleIndex.path_tools``: git's, the filesystem's); a repository and no local path keeps the others
        (GitHub's). Unless that leaves none; a request naming both (a GitHub file saved to a local path) keeps
        every tool.

        Measured on the multi-step tune tasks (qwen1.5b): "Create a branch named spike/pdf-export in /tmp/…/repo"
        went to GitHub's ``create_branch`` with the path's pieces as owner and repo, "commit only the modified file
        in /tmp/…/repo" to ``create_or_update_file``, and "create a branch chore/deps in acme/web from main" to
        git's ``git_create_branch`` with ``repo_path`` "acme/web"."""
        if not self.cfg.examples.keys or not len(self.examples):
            return cands
        path, repo = names_local_path(query), names_repository(query)
        if path == repo:
            return cands
        local = self.examples.path_tools
        kept = [c for c in cands if (self.tools[c.key].qualified_name in local) == path]
        return kept or cands

    def _of_kind(self, query: str, cands: list[Candidate]) -> list[Candidate]:
        """``cands`` less the tools for another kind of object than the request names: when it names one or more
        (``query.kinds_named``: issues, pull requests, discussions, gists, labels …), a tool every example request
        of which names a kind (``ExampleIndex.kinds``; an operation's own examples for a consolidated tool's) stays
        only if the request names one of those. A tool whose examples name no one kind throughout stays. Unless
        that leaves none.

        Measured on the multi-step tune tasks (qwen1.5b): "list the open pull requests in acme/api" went to
        ``list_issues``, every example of which asks for issues. And on reworded ones: "Add the 'good first issue'
        label to the health endpoint issue in acme/api" went to ``label_write`` (renaming the label to its own name),
        so a request that puts a label on an issue or pull request offers no write of labels alone."""
        if not self.cfg.examples.keys or not len(self.examples):
            return cands
        named = kinds_named(query)
        if not named:
            return cands
        kinds = self.examples.kinds

        # a label put on an issue or a pull request is a value, and the change is the issue's, unless the request
        # asks about the label itself (makes, renames, recolours or deletes it)
        label_is_value = {"label"} < named and not _LABEL_ITSELF.search(query)

        def fits(c: Candidate) -> bool:
            t = self.tools[c.key]
            need = kinds.get((t.qualified_name, t.operation)) or kinds.get((t.qualified_name, None))
            if label_is_value and need == {"label"} and t.read_only_hint is not True:
                return False
            return need is None or bool(need & named)

        return [c for c in cands if fits(c)] or cands

    def _writes_to_tell_apart(self, query: str, cands: Sequence[Candidate]) -> bool:
        """A request for a change whose first candidates hold several tools that may write
        (``ExampleUses.escalate_writes``)."""
        uses = self.cfg.examples
        if not uses.escalate_writes or not asks_for_change(query):
            return False
        return sum(self.tools[c.key].read_only_hint is not True for c in cands[: uses.write_pool]) >= 2

    def _judge_tools(self, query: str, allowed: set[str] | None) -> list[Tool] | None:
        """The tools the relevance judge is shown for a request retrieval would give a tool; None when it is not
        asked: no judge, switched off, or (``judge_ask="no_object"``) the request names an object of its own."""
        if self.judge is None or not self.cfg.judge.enabled:
            return None
        if self.cfg.judge.ask == "no_object" and names_concrete_object(query):
            return None
        if allowed is None:
            return list(self.tools.values())
        return [t for t in self.tools.values() if t.qualified_name in allowed or t.key in allowed]

    def _keep_related(self, pool: list[Candidate], cands: list[Candidate], previous: PreviousTurn) -> list[Candidate]:
        """``pool`` with the previous tool and its closest siblings in it (they replace the pool's tail): the
        decision can only pick what it is shown."""
        prev = self.by_name()[split_key(previous.tool)[0]]
        related = [prev.qualified_name, *self._siblings(prev)]
        want = related[: self.cfg.followups.keep]
        have = {c.key for c in pool}

        def name(c: Candidate) -> str:
            return self.tools[c.key].qualified_name

        extra = [c for c in cands if name(c) in want and c.key not in have]
        if extra:
            pool = pool[: max(0, len(pool) - len(extra))] + extra
        if self.cfg.followups.related_first:
            # listed first, so the decision reads them described (llm_choice describes the first ten)
            pool = [c for c in pool if name(c) in related] + [c for c in pool if name(c) not in related]
        return pool


def _numbered(query: str, cands: list[Candidate], tools: Mapping[str, Tool]) -> list[Candidate]:
    """``cands`` less the tools that take no number for their object (no integer identifier parameter:
    ``label_write``), when the request names its object by one (``#6``): such a tool cannot act on it. Unless that
    leaves none. For the first routing only: a later step may make something else from what the numbered object
    gave (a branch from pull request #5's head).

    Measured on the multi-step tune tasks (qwen1.5b): "Add the bug label to acme/web #6." went to ``label_write``
    create, which failed for want of a colour. On the routing and multi-step sets, every request that names a
    ``#N`` has a gold call that takes one."""
    # outside quotes: "Post 'Fixed in #6' on the login issue" names no object by number
    if not OBJECT_REF.search(QUOTED.sub(" ", query)):
        return cands
    kept = [c for c in cands if _takes_number(tools[c.key])]
    return kept or cands


def _takes_number(tool: Tool) -> bool:
    """Whether ``tool`` has an integer identifier parameter (``issue_number``, ``pullNumber``)."""
    props = tool.input_schema.get("properties") or {}
    return any(IDENTIFIER.search(k) and p.get("type") in ("integer", "number") for k, p in props.items())


def _named(res: RouteResult) -> RouteResult:
    """``res`` with its tool's routing key split into the qualified name and the operation."""
    if res.tool is not None:
        res.tool, res.operation = split_key(res.tool)
    return res


# --- the factory -----------------------------------------------------------------------------------------------


def create_decision(options: RouterOptions, backend: Backend | None = None) -> Reranker | None:
    """The reranker ``options`` name (None for ``"none"``). An LLM decision asks ``backend``'s decider (the agent's
    engine or server: one model serves routing, arguments and answers), or, without one, an engine of its own."""
    name = options.reranker
    if name == "none":
        return None
    if not reranker_class(name).uses_llm:
        return create_reranker(name, model=options.reranker_model)
    if backend is None:
        backend = LocalBackend.open(options.reranker_model or defaults.CHAT_MODEL, options.threads)
    return create_reranker(name, decider=backend.decider(options.splice))


def create_judge(reranker: Reranker | None) -> RelevanceJudge | None:
    """The relevance judge on an LLM decision's decider (in a lane of its own, so its pinned instructions and the
    decision's pinned head do not evict each other); None without an LLM decision."""
    if reranker is None or reranker.decider is None:
        return None
    try:
        return RelevanceJudge(reranker.decider)
    except ValueError as e:  # a vocabulary without one-token answers: the embedding tests decide alone
        log.warning("relevance judge off (%s): %s", reranker.decider.label, e)
        return None


def build_router(
    tools: Iterable[Tool],
    options: RouterOptions | None = None,
    backend: Backend | None = None,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    tuning: RouterConfig | None = None,
    examples: ExampleSet | None = None,
) -> Router:
    """The one way to make a router: over ``tools``, as ``options`` say (default ``RouterOptions()``); the decision
    as in :func:`create_decision`, on ``backend`` (the agent's local engine or its server; None: an engine of the
    decision's own when it needs a model). Retrieval always runs here.

    ``embedder`` / ``reranker``: already loaded backends for ``options.embedder`` / ``options.reranker``, shared
    by several routers (the agent keeps one embedder per process; a benchmark one LLM for all its routers);
    ``reranker`` is not used when ``options.reranker`` is ``"none"``. ``tuning``: the pipeline knobs options do not
    cover (benchmarks' ablations); options' own knobs are set on it (:meth:`RouterOptions.config`). ``examples``:
    the session's examples (``nexus_agent/examples``), used as ``tuning.examples`` says.
    """
    options = options or RouterOptions()
    emb = embedder or create_embedder(options.embedder, options.embedder_model)
    if options.reranker == "none":
        reranker = None
    elif reranker is None:
        reranker = create_decision(options, backend)
    cfg = options.config(tuning)
    judge = create_judge(reranker) if cfg.judge.enabled else None
    return Router(tools, emb, cfg, reranker, judge=judge, examples=examples)
