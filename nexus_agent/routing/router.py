"""The routing pipeline: retrieve a candidate pool (dense SLB + BM25, fused), gate on the margin, escalate the
low-confidence decisions to a reranker / LLM decision, and say ``no-tool`` when nothing fits.

Shapes and units: dense scores are approximate cosines in [-1, 1]; BM25 scores are divided by the query's best
BM25 score or by ``bm25_known_share`` × the summed idf of its terms that some tool has, whichever is larger
(``bm25_norm="known"``; ``"max"``: the best score alone; ``"idf"``: the summed idf of all its terms), so both
live in [0, 1] before the weighted fusion ``(1-w)·dense + w·bm25``. The margin is ``fused[top1] - fused[top2]``
in the same units; τ is calibrated on exactly that statistic.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from nexus_agent.registry import Tool
from nexus_agent.routing.docs import DocConfig, DocStyle, tool_document
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.gate import Gate, adversarial_pairs, calibrate_tau
from nexus_agent.routing.lexical import BM25Index
from nexus_agent.routing.query import expand_query, is_question, refers_back
from nexus_agent.routing.relevance import best_similarity, looks_like_no_tool, no_tool_exemplars
from nexus_agent.routing.rerank.base import Reranker
from nexus_agent.routing.slb import SLB, cache_path
from nexus_agent.routing.synth import queries_for
from nexus_agent.routing.trie import NameTrie
from nexus_agent.signature import first_sentence

Decision = Literal["auto", "escalated", "no-tool"]
F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class RouterConfig:
    """Every knob measured in the ablation (bench/results/routing_ablation.md)."""

    doc_style: DocStyle = "rich"
    synthetic: bool | None = None  # index synthetic example queries next to each tool; None: embedder's choice
    n_synthetic_indexed: int = 6  # the rest of each tool's synthetic queries are held out for calibration
    hybrid: bool = True  # fuse BM25 with dense
    bm25_weight: float = 0.3
    # "max": divide by the query's best BM25 score (measured better recall than "idf": names and repositories in
    # a request dilute the idf sum). But "max" stretches one weak match to 1: in "is there a newer version of
    # hashicorp/terraform than 1.9?" only create_or_update_file shares a word ("version"), and its bm25 of 1.0
    # outweighed the dense ranking. "known": divide by the larger of the best score and bm25_known_share × the
    # summed idf of the query terms some tool has; share 0.5 is about the score of a tool that has each of them
    # once (BM25Index.known_idf).
    # Retrieval only (bench/results/bm25_norm.md), share 0.5 vs "max": github_dev / mixed_dev at their own
    # profiles 0.590 / 0.736 vs 0.582 / 0.701, at N = 250 0.537 / 0.741 vs 0.530 / 0.707; share 1.0 gained more
    # on mixed_dev but lost github_dev items at N ≥ 86 and escalated more (0.30 / 0.37 at the own profiles).
    bm25_norm: Literal["max", "known", "idf"] = "known"
    bm25_known_share: float = 0.5
    pool: int = 20  # candidates handed to the reranker (recall@15 0.86 vs @20 0.93 on github_dev, minilm)
    gate: bool = True  # False → never escalate (retrieval top-1 is final)
    always_escalate: bool = False  # True → every decision goes to the reranker
    # with history, a request that points back ("reopen it", query.refers_back) goes to the reranker, which sees
    # the history; retrieval sees only the request
    escalate_back_references: bool = True
    tau: float | None = None  # None → calibrate on adversarial pairs
    tau_percentile: float = 20.0
    min_dense: float | None = None  # relevance floor on the best dense score; None → calibrate
    # The floor is this percentile of the no-tool exemplars' best dense scores. It was the 60th while the floor
    # was the only relevance signal; with the exemplar test (relevance.py) the 40th turns away fewer tool
    # requests (github_dev 0.7% vs 4.5% at github_all, 6.7% vs 8.2% at N = 10) for about the same false tool
    # calls (bench/results/relevance.md).
    floor_percentile: float = 40.0
    expand: bool = True  # spell out chat abbreviations (PR, repo, deps …) before retrieval
    # Subtracted from the fused score of tools that declare they change things (MCP readOnlyHint: false) when the
    # request is a question (query.is_question). Embeddings tie the state a question asks about to the tool that
    # sets it: "is acme/api#12 still open?" went to update_pull_request (auto, margin 0.098), and in an agent
    # session with --yes a question then ran a write. Tools that declare no hint are left alone (google-maps and
    # slack declare none, and their reads are questions too). The penalty reorders; a question whose top tool it
    # replaced is escalated, and the gate reads the margin before it (Router._confidence). Retrieval only, own
    # profiles, penalty 0.15 vs none: github_dev 0.597 vs 0.590, mixed_dev 0.736 either way, no-tool false tool
    # calls 0.078 either way at github_all and 0.234 vs 0.266 at desktop_all, escalation 0.269 vs 0.246 and
    # 0.356 vs 0.351 (0.10 lost an item on mixed_dev).
    question_write_penalty: float = 0.15
    # no tool when the request is closer to a no-tool exemplar than to any tool or tool request (relevance.py)
    exemplars: bool = True
    own_requests: int = 8  # synthetic example requests per tool on the tool side of that test (0: documents only)


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


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


_QUERY_KEY = "\x00query\x00"  # marks query-side texts in the shared text → vector memo


class EmbeddingCache:
    """Text → unit vector memo for one embedder, so adding tools or re-sampling subsets never re-embeds."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._docs: dict[str, F32] = {}
        self._dirty = False  # entries added since the last load/save

    def documents(self, texts: Sequence[str]) -> F32:
        """Unit vectors ``[len(texts), dim]`` of tool-side texts."""
        return self._memo(list(texts), "", self.embedder.embed_documents)

    def queries(self, texts: Sequence[str]) -> F32:
        """Like :meth:`documents` for query-side texts (an asymmetric embedder gives them another prefix)."""
        return self._memo(list(texts), _QUERY_KEY, self.embedder.embed_queries)

    def _memo(self, texts: list[str], tag: str, embed: Callable[[Sequence[str]], F32]) -> F32:
        keys = [tag + t for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._docs))
        if missing:
            self._docs.update(zip(missing, embed([k[len(tag) :] for k in missing]), strict=True))
            self._dirty = True
        if not keys:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self._docs[k] for k in keys])

    def load(self, path: Any) -> None:
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                for t, v in zip(z["texts"], z["vectors"], strict=True):
                    self._docs[str(t)] = v

    def save(self, path: Any) -> None:
        # the file holds every vector of the registry (tens of MB): rewrite it only when something was added
        if not self._dirty and path.exists():
            return
        texts = list(self._docs)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(
                f,
                texts=np.array(texts, dtype=str),
                vectors=np.stack([self._docs[t] for t in texts]) if texts else np.zeros((0, 1)),
            )
        tmp.replace(path)
        self._dirty = False


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
        self.cfg = cfg or RouterConfig()
        self.embedder = embedder
        self.index_synthetic = embedder.index_synthetic if self.cfg.synthetic is None else self.cfg.synthetic
        self.reranker = reranker
        self.cache = EmbeddingCache(embedder)
        self._cache_file = cache_path(embedder.fingerprint(), "texts")
        self.cache.load(self._cache_file)
        self.tools: dict[str, Tool] = {}
        self.trie = NameTrie()
        self._synthetic_override = synthetic
        self._synth: dict[str, list[str]] = {}
        self.slb = SLB(dim=embedder.dim)
        self._bm25: BM25Index | None = None
        self._last_query: tuple[str, F32] | None = None
        self.gate: Gate | None = None
        self.min_dense: float | None = self.cfg.min_dense
        self._neg_scores: F32 | None = None  # [no-tool exemplar, tool] dense scores, for the relevance floors
        self._exemplars: F32 | None = None  # [n_exemplars, dim] unit rows
        # the tool side of the exemplar test: unit rows [n, dim] and the index in slb.keys of each row's tool
        self._requests: tuple[F32, npt.NDArray[np.intp]] | None = None
        self._writes: npt.NDArray[np.bool_] | None = None  # over slb.keys: the tool declares readOnlyHint false
        self._load_initial(list(tools))

    # --- registry changes (MCP tools/list_changed diffs) -------------------------------------------------

    def _texts(self, tool: Tool) -> list[str]:
        texts = [tool_document(tool, DocConfig(style=self.cfg.doc_style))]
        if self.index_synthetic:
            texts += self._synth.get(tool.qualified_name, [])[: self.cfg.n_synthetic_indexed]
        return texts

    def _load_synthetic(self, tools: Sequence[Tool]) -> None:
        if self._synthetic_override is not None:
            self._synth.update({t.qualified_name: self._synthetic_override.get(t.qualified_name, []) for t in tools})
        else:
            self._synth.update(queries_for(tools))

    def _load_initial(self, tools: list[Tool]) -> None:
        """Start-up: the SLB comes from its cache file (keyed by embedder + registry/text hash) when present."""
        self._load_synthetic(tools)
        for t in tools:
            self.tools[t.qualified_name] = t
            self.trie.insert(t.qualified_name)
        path = cache_path(self.embedder.fingerprint(), self.slb_content_key())
        if path.exists():
            try:
                slb, meta = SLB.load(path)
                if set(slb.keys) == set(self.tools) and meta.get("embedder") == self.embedder.fingerprint():
                    self.slb = slb
                    return
            except (OSError, ValueError, KeyError):
                pass  # a corrupt or stale cache file is rebuilt below
        for t in tools:
            del self.tools[t.qualified_name]
            self.trie.remove(t.qualified_name)
        self.add_tools(tools)
        self.slb.save(path, {"embedder": self.embedder.fingerprint(), "tools": len(self.tools)})

    def add_tools(self, tools: Iterable[Tool]) -> None:
        new = [t for t in tools if t.qualified_name not in self.tools]
        if not new:
            return
        self._load_synthetic(new)
        for t in new:
            self.tools[t.qualified_name] = t
            self.trie.insert(t.qualified_name)
        texts = {t.qualified_name: self._texts(t) for t in new}
        flat = [x for v in texts.values() for x in v]
        vecs = self.cache.documents(flat)
        i = 0
        for k, v in texts.items():
            self.slb.add(k, vecs[i : i + len(v)])
            i += len(v)
        self.cache.save(self._cache_file)
        self._invalidate()

    def remove_tools(self, names: Iterable[str]) -> None:
        for n in names:
            if n in self.tools:
                del self.tools[n]
                self.trie.remove(n)
                self.slb.remove(n)
        self._invalidate()

    def replace_tools(self, tools: Iterable[Tool]) -> None:
        """Replace tools by qualified name (a changed description/schema re-embeds only those tools)."""
        tools = list(tools)
        self.remove_tools([t.qualified_name for t in tools if t.qualified_name in self.tools])
        self.add_tools(tools)

    def _invalidate(self) -> None:
        self._bm25 = None
        if self.cfg.tau is None:
            self.gate = None
        if self.cfg.min_dense is None:
            self.min_dense = None
        self._neg_scores = None
        self._requests = None
        self._writes = None

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            keys = self.slb.keys
            docs = [tool_document(self.tools[k], DocConfig(style=self.cfg.doc_style)) for k in keys]
            self._bm25 = BM25Index(keys, docs)
        return self._bm25

    @property
    def writes(self) -> npt.NDArray[np.bool_]:
        """Boolean mask over ``slb.keys``: the tool declares that it changes things (readOnlyHint false)."""
        if self._writes is None:
            keys = self.slb.keys
            self._writes = np.fromiter((self.tools[k].declares_write for k in keys), np.bool_, len(keys))
        return self._writes

    # --- scoring -------------------------------------------------------------------------------------------

    def _fused(self, qvec: F32, query: str, mask: npt.NDArray[np.bool_] | None = None) -> tuple[F32, F32, F32]:
        """(fused, dense, lexical) per tool in ``slb.keys`` order; ``mask`` marks the tools routing may pick."""
        dense = self.slb.scores(qvec)
        if not self.cfg.hybrid:
            return dense, dense, np.zeros_like(dense)
        if self.cfg.bm25_norm == "idf":
            lexn = self.bm25.normalized_scores(query)
        else:
            lex = self.bm25.scores(query)
            # normalise by the best *eligible* tool: a strong lexical match outside the allowed subset must not
            # shrink the lexical evidence of every tool inside it
            pool = lex if mask is None else lex[mask]
            top = float(pool.max()) if len(pool) else 0.0
            if self.cfg.bm25_norm == "known":
                top = max(top, self.cfg.bm25_known_share * self.bm25.known_idf(query))
            lexn = lex / top if top > 0 else lex
        w = self.cfg.bm25_weight
        return ((1 - w) * dense + w * lexn).astype(np.float32), dense, lexn.astype(np.float32)

    def retrieve(self, query: str, allowed: set[str] | None = None, qvec: F32 | None = None) -> list[Candidate]:
        """All tools (or only ``allowed``), best first, with their scores."""
        asks = self.cfg.question_write_penalty > 0 and is_question(query)
        query = self._expand(query)
        if qvec is None:
            qvec = self._embed_query(query)
        keys = self.slb.keys
        mask = None if allowed is None else self._allowed_mask(allowed)
        fused, dense, lex = self._fused(qvec, query, mask)
        penalty = self.cfg.question_write_penalty * self.writes if asks else np.zeros(len(keys))
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

    def _allowed_mask(self, allowed: set[str]) -> npt.NDArray[np.bool_]:
        """Boolean mask over ``slb.keys``: True for the tools in ``allowed``."""
        keys = self.slb.keys
        return np.fromiter((k in allowed for k in keys), dtype=np.bool_, count=len(keys))

    def _expand(self, query: str) -> str:
        """The query as retrieval sees it (abbreviations and entity kinds spelled out, when configured)."""
        return expand_query(query) if self.cfg.expand else query

    def _embed_query(self, query: str) -> F32:
        # one-entry memo: evaluation asks for the same query's ranking twice (decision + dense recall)
        if self._last_query is None or self._last_query[0] != query:
            self._last_query = (query, self.embedder.embed_queries([query])[0])
        return self._last_query[1]

    # --- calibration ---------------------------------------------------------------------------------------

    def _calibration_queries(self) -> list[str]:
        keys = self.slb.keys
        docs = [tool_document(self.tools[k], DocConfig(style=self.cfg.doc_style)) for k in keys]
        vecs = self.cache.documents(docs)
        out: list[str] = []
        for a, _b in adversarial_pairs(vecs):
            held = self._synth.get(keys[a], [])[self.cfg.n_synthetic_indexed :]
            out += held or [first_sentence(self.tools[keys[a]].description)]
        return [q for q in out if q.strip()]

    def calibrate(self) -> dict[str, float]:
        """Calibrate τ (and the relevance floor) on registry-derived adversarial queries; cached on disk."""
        # the exemplars' text is part of the key: editing them moves the floor
        cfg = json.dumps(asdict(self.cfg), sort_keys=True) + "\n".join(no_tool_exemplars())
        key = f"{self.slb_content_key()}-{_digest(cfg)}"
        path = cache_path(self.embedder.fingerprint(), key, ".calib.json")
        if path.exists():
            data = json.loads(path.read_text())
        else:
            queries = self._calibration_queries()
            qv = self.embedder.embed_queries(queries)

            def margins(qs: Sequence[str]) -> list[float]:
                out = []
                for q, v in zip(qs, qv, strict=True):
                    out.append(self._confidence(self.retrieve(q, qvec=v))[0])
                return out

            tau, ms = calibrate_tau(margins, queries, self.cfg.tau_percentile)
            # Relevance floor: a percentile of the best-dense scores of generic requests that need no tool (package
            # data, written for calibration only). Tool requests rarely score that low, and the no-tool
            # requests above the floor usually have a small margin, so they escalate and the reranker can
            # still answer "none".
            data = {
                "tau": tau,
                "min_dense": self._floor_over(np.ones(len(self.slb.keys), dtype=np.bool_)),
                "n_queries": len(queries),
                "margin_p50": float(np.median(ms)),
            }
            path.write_text(json.dumps(data, indent=1))
        if self.cfg.tau is None:
            self.gate = Gate(float(data["tau"]))
        if self.cfg.min_dense is None:
            self.min_dense = float(data["min_dense"])
        return {k: float(v) for k, v in data.items()}

    def _subset_floor(self, allowed: set[str]) -> float:
        """The relevance floor as if the router held only ``allowed``: the same statistic as :meth:`calibrate`,
        taken over the subset. With 10 tools the best match of a generic request is much weaker than with 300,
        so the whole-registry floor would turn real requests into "no tool" (measured: 24 of 134 github_dev
        items at N=10)."""
        return self._floor_over(self._allowed_mask(allowed))

    def _floor_over(self, mask: npt.NDArray[np.bool_]) -> float:
        """``floor_percentile`` of the no-tool exemplars' best dense score among the tools in
        ``mask`` (over ``slb.keys``); +inf when the mask is empty (nothing can fit)."""
        if self._neg_scores is None:
            self._neg_scores = np.stack([self.slb.scores(v) for v in self.exemplar_vectors()])  # [query, tool]
        if not mask.any():
            return float("inf")
        return float(np.percentile(self._neg_scores[:, mask].max(axis=1), self.cfg.floor_percentile))

    def exemplar_vectors(self) -> F32:
        """The no-tool exemplars, embedded as queries: ``[n_exemplars, dim]``."""
        if self._exemplars is None:
            # memoised on disk like the tool requests, so a start-up does not re-embed them
            self._exemplars = self.cache.queries(no_tool_exemplars())
            self.cache.save(self._cache_file)
        return self._exemplars

    def tool_requests(self) -> tuple[F32, npt.NDArray[np.intp]]:
        """The tool side of the exemplar test: each tool's first ``own_requests`` synthetic requests and its
        description's first sentence, embedded as queries (memoised on disk), as ``([n, dim], owners [n])``;
        ``owners`` index ``slb.keys``, so an allowed-tools mask selects rows by ``mask[owners]``."""
        if self._requests is None:
            texts: list[str] = []
            owners: list[int] = []
            for i, k in enumerate(self.slb.keys):
                t = self.tools[k]
                own = [*self._synth.get(k, [])[: self.cfg.own_requests], first_sentence(t.description) or t.name]
                own = [self._expand(q) for q in own]
                texts += own
                owners += [i] * len(own)
            vecs = self.cache.queries(texts)
            self.cache.save(self._cache_file)
            self._requests = (vecs, np.array(owners, dtype=np.intp))
        return self._requests

    def slb_content_key(self) -> str:
        # every text the SLB holds (and the held-out calibration queries) determines the cache content
        blob = "\n".join(
            f"{k}:{t.content_hash()}:{self._texts(t)}:{self._synth.get(k, [])}" for k, t in sorted(self.tools.items())
        )
        return _digest(blob)

    # --- the decision --------------------------------------------------------------------------------------

    def route(self, query: str, history: Sequence[dict[str, str]] = (), allowed: set[str] | None = None) -> RouteResult:
        """Rank, gate, and (when escalated) rerank. ``allowed`` restricts routing to a subset of the tools."""
        if self.gate is None and self.cfg.tau is not None:
            self.gate = Gate(self.cfg.tau)
        if self.gate is None or self.min_dense is None:
            self.calibrate()
        assert self.gate is not None
        t0 = time.perf_counter()
        qvec = self._embed_query(self._expand(query))
        cands = self.retrieve(query, allowed, qvec=qvec)
        margin, reordered = self._confidence(cands)
        pool = cands[: self.cfg.pool]
        if not cands:
            return RouteResult([], "no-tool", None, margin, (time.perf_counter() - t0) * 1e3)
        points_back = self.cfg.escalate_back_references and bool(history) and refers_back(query)
        escalate = self.cfg.always_escalate or (
            self.cfg.gate and (not self.gate.decide(margin) or points_back or reordered)
        )
        floor = self.min_dense if allowed is None or self.cfg.min_dense is not None else self._subset_floor(allowed)
        best_dense = max(c.dense for c in pool)
        relevant = floor is None or best_dense >= floor
        ex_sim = None
        small_talk = False
        if self.cfg.exemplars:
            ex_sim = best_similarity(self.exemplar_vectors(), qvec)
            reqs, owners = self.tool_requests()
            if allowed is not None:
                reqs = reqs[self._allowed_mask(allowed)[owners]]
            small_talk = looks_like_no_tool(ex_sim, max(best_dense, best_similarity(reqs, qvec)))
            relevant = relevant and not small_talk
        # Below the floor nothing fits, and the LLM reranker, asked to choose among candidates, tends to choose
        # one anyway (no-tool false positives 0.47 vs 0.41 without it). With history the request may lean on
        # earlier turns ("open a PR there") that the reranker sees and the embedding does not, so it decides;
        # but not when the request is small talk (nearer an exemplar): after a tool turn, a bare "good evening!"
        # went to the reranker, which picked get_me. No history item of the dev sets is small talk by this test.
        if not escalate or self.reranker is None or small_talk or (not relevant and not history):
            decision: Decision = ("escalated" if escalate else "auto") if relevant else "no-tool"
            tool = cands[0].key if relevant else None
            ms = (time.perf_counter() - t0) * 1e3
            return RouteResult(pool, decision, tool, margin, ms, escalated=escalate, exemplar_similarity=ex_sim)
        res = self.reranker.rerank(query, [self.tools[c.key] for c in pool], history)
        decision = "escalated" if res.choice is not None else "no-tool"
        ms = (time.perf_counter() - t0) * 1e3
        return RouteResult(pool, decision, res.choice, margin, ms, res.scores, True, ex_sim)
