"""What the router calibrates on the registry itself (never on evaluation data), cached on disk per tool set:

* τ, the gate's margin threshold (``gate.calibrate_tau`` over the adversarial pairs' held-out queries);
* the relevance floor: a percentile of the no-tool exemplars' best dense score, over the whole registry or over
  the subset of tools a request may pick;
* the two sides of the exemplar test (``relevance.py``): the no-tool exemplars and each tool's own requests, as
  query vectors.

Everything derived from the tool set is dropped when the :class:`ToolIndex` changes, and computed again on use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict

import numpy as np
import numpy.typing as npt

from nexus_agent.examples.operations import without_examples
from nexus_agent.routing.gate import Gate, adversarial_pairs, calibrate_tau
from nexus_agent.routing.index import F32, Mask, ToolIndex, digest
from nexus_agent.routing.options import RouterConfig
from nexus_agent.routing.query import for_retrieval
from nexus_agent.routing.relevance import best_similarity, no_tool_exemplars
from nexus_agent.routing.slb import cache_path
from nexus_agent.signature import first_sentence

Margin = Callable[[str, F32], float]
"""The router's gate statistic for one query and its vector (``Router._margin``): what τ is a percentile of."""


class Calibration:
    """τ, the relevance floors and the exemplar test's vectors over one :class:`ToolIndex`."""

    def __init__(self, index: ToolIndex, cfg: RouterConfig, margin: Margin) -> None:
        self.index = index
        self.cfg = cfg
        self._margin = margin
        self._data: dict[str, float] | None = None  # the calibration of the current tool set (calibrate())
        self._neg_scores: F32 | None = None  # [no-tool exemplar, tool] dense scores, for the relevance floors
        self._exemplars: F32 | None = None  # [n_exemplars, dim] unit rows (no tool involved: kept across changes)
        # the tool side of the exemplar test: unit rows [n, dim] and the index in slb.keys of each row's tool
        self._requests: tuple[F32, npt.NDArray[np.intp]] | None = None
        index.on_change(self._reset)

    def _reset(self) -> None:
        self._data = None
        self._neg_scores = None
        self._requests = None

    # --- τ and the whole-registry floor ---------------------------------------------------------------------

    @property
    def gate(self) -> Gate | None:
        """``cfg.tau``'s gate, else the calibrated one; None until :meth:`calibrate` (and after a tool change)."""
        if self.cfg.gate.tau is not None:
            return Gate(self.cfg.gate.tau)
        return None if self._data is None else Gate(float(self._data["tau"]))

    @property
    def min_dense(self) -> float | None:
        """``cfg.min_dense``, else the calibrated whole-registry floor; None until :meth:`calibrate`."""
        if self.cfg.no_tool.min_dense is not None:
            return self.cfg.no_tool.min_dense
        return None if self._data is None else float(self._data["min_dense"])

    def ensure(self) -> tuple[Gate, float]:
        """(gate, whole-registry floor), calibrating first when a value is neither configured nor calibrated for
        the current tool set: the one place routing calibrates lazily."""
        gate, floor = self.gate, self.min_dense
        if gate is None or floor is None:
            self.calibrate()
            gate, floor = self.gate, self.min_dense
        assert gate is not None and floor is not None
        return gate, floor

    def calibrate(self) -> dict[str, float]:
        """Calibrate τ (and the relevance floor) on registry-derived adversarial queries; cached on disk."""
        # the exemplars' text is part of the key: editing them moves the floor
        cfg = json.dumps(asdict(self.cfg), sort_keys=True) + "\n".join(no_tool_exemplars())
        key = f"{self.index.content_key()}-{digest(cfg)}"
        path = cache_path(self.index.embedder.fingerprint(), key, ".calib.json")
        if path.exists():
            data = json.loads(path.read_text())
        else:
            queries = self._queries()
            qv = self.index.embedder.embed_queries(queries)

            def margins(qs: Sequence[str]) -> list[float]:
                return [self._margin(q, v) for q, v in zip(qs, qv, strict=True)]

            tau, ms = calibrate_tau(margins, queries, self.cfg.gate.tau_percentile)
            # Relevance floor: a percentile of the best-dense scores of generic requests that need no tool (package
            # data, written for calibration only). Tool requests rarely score that low, and the no-tool
            # requests above the floor usually have a small margin, so they escalate and the reranker can
            # still answer "none".
            data = {
                "tau": tau,
                "min_dense": self._floor_over(np.ones(len(self.index.slb.keys), dtype=np.bool_)),
                "n_queries": len(queries),
                "margin_p50": float(np.median(ms)),
            }
            path.write_text(json.dumps(data, indent=1))
        self._data = {k: float(v) for k, v in data.items()}
        return dict(self._data)

    def _queries(self) -> list[str]:
        """The adversarial pairs' queries: each first tool's held-out synthetic requests, or its description's
        first sentence."""
        keys = self.index.slb.keys
        vecs = self.index.cache.documents([self.index.document(k) for k in keys])
        out: list[str] = []
        for a, _b in adversarial_pairs(vecs):
            held = self.index.synthetic_of(keys[a])[self.cfg.retrieval.n_synthetic_indexed :]
            out += held or [first_sentence(self.index.tools[keys[a]].description)]
        return [q for q in out if q.strip()]

    # --- the floor of a subset ------------------------------------------------------------------------------

    def floor(self, allowed: set[str] | None = None) -> float:
        """The relevance floor for a request that may pick ``allowed`` (None: every tool); calibrates if needed."""
        whole = self.ensure()[1]
        return whole if allowed is None or self.cfg.no_tool.min_dense is not None else self.subset_floor(allowed)

    def subset_floor(self, allowed: set[str]) -> float:
        """The relevance floor as if the router held only ``allowed``: the same statistic as :meth:`calibrate`,
        taken over the subset. With 10 tools the best match of a generic request is much weaker than with 300,
        so the whole-registry floor would turn real requests into "no tool" (docs/measurements.md#relevance)."""
        return self._floor_over(self.index.mask(allowed))

    def _floor_over(self, mask: Mask) -> float:
        """``floor_percentile`` of the no-tool exemplars' best dense score among the tools in
        ``mask`` (over ``slb.keys``); +inf when the mask is empty (nothing can fit)."""
        if self._neg_scores is None:
            self._neg_scores = np.stack([self.index.slb.scores(v) for v in self.exemplar_vectors()])  # [query, tool]
        if not mask.any():
            return float("inf")
        return float(np.percentile(self._neg_scores[:, mask].max(axis=1), self.cfg.no_tool.floor_percentile))

    # --- the exemplar test's two sides ------------------------------------------------------------------------

    def exemplar_vectors(self) -> F32:
        """The no-tool exemplars, embedded as queries: ``[n_exemplars, dim]``."""
        if self._exemplars is None:
            # memoised on disk like the tool requests, so a start-up does not re-embed them
            self._exemplars = self.index.cache.queries(no_tool_exemplars())
            self.index.cache.save(self.index.cache_file)
        return self._exemplars

    def tool_requests(self) -> tuple[F32, npt.NDArray[np.intp]]:
        """The tool side of the exemplar test: each tool's first ``own_requests`` synthetic requests and its
        description's first sentence, embedded as queries (memoised on disk), as ``([n, dim], owners [n])``;
        ``owners`` index ``slb.keys``, so an allowed-tools mask selects rows by ``mask[owners]``."""
        if self._requests is None:
            texts: list[str] = []
            owners: list[int] = []
            for i, k in enumerate(self.index.slb.keys):
                t = self.index.tools[k]
                # not the example requests (nor an operation's description that quotes them): the relevance tests
                # read the tools' own words (ToolIndex.own_scores)
                own = [
                    *self.index.synthetic_of(k)[: self.cfg.no_tool.own_requests],
                    first_sentence(without_examples(t)) or t.name,
                ]
                own = [for_retrieval(q, self.cfg.retrieval.expand) for q in own]
                texts += own
                owners += [i] * len(own)
            vecs = self.index.cache.queries(texts)
            self.index.cache.save(self.index.cache_file)
            self._requests = (vecs, np.array(owners, dtype=np.intp))
        return self._requests

    def nearest(self, qvec: F32, allowed: set[str] | None = None) -> tuple[float, float]:
        """(best cosine of ``qvec`` to a no-tool exemplar, best cosine to a request of a tool in ``allowed``)."""
        ex_sim = best_similarity(self.exemplar_vectors(), qvec)
        reqs, owners = self.tool_requests()
        if allowed is not None:
            reqs = reqs[self.index.mask(allowed)[owners]]
        return ex_sim, best_similarity(reqs, qvec)
