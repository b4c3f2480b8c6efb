"""The tool set as retrieval sees it: each tool's texts, their vectors in the SLB, BM25 over the tool documents,
and the synthetic example requests, kept current through add / remove / replace (MCP ``tools/list_changed``).

Everything derived from the tool set (BM25, the writes mask here; τ, the floors and the tool requests in
:class:`nexus_agent.routing.calibration.Calibration`) is dropped when it changes: the index calls its listeners
from one place, :meth:`ToolIndex._changed`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from nexus_agent.examples import ExampleSet
from nexus_agent.examples.operations import operation_tools
from nexus_agent.registry import Tool
from nexus_agent.routing.docs import DocConfig, tool_document
from nexus_agent.routing.embedders.base import Embedder
from nexus_agent.routing.lexical import BM25Index
from nexus_agent.routing.options import RouterConfig
from nexus_agent.routing.query import masked
from nexus_agent.routing.slb import SLB, cache_path
from nexus_agent.routing.synth import queries_for

F32 = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]


def digest(text: str) -> str:
    """The short content hash in cache file names (10 hex digits of sha256)."""
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

    def load(self, path: Path) -> None:
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                for t, v in zip(z["texts"], z["vectors"], strict=True):
                    self._docs[str(t)] = v

    def save(self, path: Path) -> None:
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


class ToolIndex:
    """The tools, their SLB rows (tool document plus, when indexed, synthetic requests), BM25 and the writes mask.

    Per-tool arrays (:attr:`writes`, :meth:`mask`, BM25 scores, ``slb.scores``) are over ``slb.keys``, in that order.
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        embedder: Embedder,
        cfg: RouterConfig,
        synthetic: dict[str, list[str]] | None = None,
        examples: ExampleSet | None = None,
    ) -> None:
        self.cfg = cfg
        self.embedder = embedder
        self.examples = examples or ExampleSet()
        self.index_synthetic = embedder.index_synthetic if cfg.retrieval.synthetic is None else cfg.retrieval.synthetic
        self.cache = EmbeddingCache(embedder)
        self.cache_file = cache_path(embedder.fingerprint(), "texts")
        self.cache.load(self.cache_file)
        self.tools: dict[str, Tool] = {}
        self._synthetic_override = synthetic
        self.synthetic: dict[str, list[str]] = {}  # qualified name → its synthetic example requests
        self.slb = SLB(dim=embedder.dim)
        self._bm25: BM25Index | None = None
        self._writes: Mask | None = None
        self._keyed: tuple[npt.NDArray[np.intp], F32] | None = None  # example_scores' rows: (owner per row, vectors)
        self._listeners: list[Callable[[], None]] = []
        self._load_initial(list(tools))

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every change of the tool set (to drop what was derived from it)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        self._bm25 = None
        self._writes = None
        self._keyed = None
        for listener in self._listeners:
            listener()

    # --- registry changes (MCP tools/list_changed diffs) -------------------------------------------------

    def document(self, key: str) -> str:
        """The tool's document: what BM25 indexes, the first SLB row, the calibration's adversarial pairs."""
        return self._document(self.tools[key])

    def _document(self, tool: Tool) -> str:
        return tool_document(tool, DocConfig(style=self.cfg.retrieval.doc_style))

    def synthetic_of(self, key: str) -> list[str]:
        """The synthetic example requests of the tool behind a routing key (of the whole consolidated tool for one
        of its operations)."""
        return self.synthetic.get(self.tools[key].qualified_name, [])

    def example_requests(self, key: str) -> list[str]:
        """The requests of the verified examples whose first call is this key's tool (and operation)."""
        tool = self.tools[key]
        usages = self.examples.usages(tool.qualified_name, tool.operation)
        return list(dict.fromkeys(u.request for u in usages if u.index == 0 and u.request))

    def _texts(self, tool: Tool) -> list[str]:
        texts = [self._document(tool)]
        if self.index_synthetic and tool.operation is None:
            # a consolidated tool's synthetic requests mix its operations: they key the tool, not one operation
            texts += self.synthetic.get(tool.qualified_name, [])[: self.cfg.retrieval.n_synthetic_indexed]
        return texts + self.keying_requests(tool.key)

    def keying_requests(self, key: str) -> list[str]:
        """The example requests that key this routing key (its last SLB rows, and BM25 words): an example's request
        is a request this tool (operation) was verified to serve first. An operation is always keyed by its own;
        a whole tool only with ``examples.keys`` on."""
        if not (self.cfg.examples.keys or self.tools[key].operation is not None):
            return []
        return self.example_requests(key)

    def example_scores(self, qvec: F32) -> F32:
        """Per routing key in ``slb.keys`` order, the best cosine between ``qvec`` (a request's masked vector,
        :meth:`ExampleIndex.vector`) and the masked requests that key it (:meth:`keying_requests`); 0 for a key
        that none keys. Query-side vectors on both sides: an example's request is a request."""
        keys = self.slb.keys
        if self._keyed is None:
            rows = [(i, masked(r)) for i, k in enumerate(keys) for r in self.keying_requests(k)]
            owner = np.array([i for i, _ in rows], dtype=np.intp)
            self._keyed = (owner, self.cache.queries([t for _, t in rows]))
        owners, vecs = self._keyed
        out = np.zeros(len(keys), dtype=np.float32)
        if len(owners):
            np.maximum.at(out, owners, (vecs @ qvec).astype(np.float32))
        return out

    def _expand(self, tools: Iterable[Tool]) -> list[Tool]:
        """What is ranked: each operation of a consolidated tool on its own (``ExampleUses.operations``), the
        other tools as they are."""
        if not self.cfg.examples.operations:
            return list(tools)
        return [v for t in tools for v in operation_tools(t, self.examples)]

    def _load_synthetic(self, tools: Sequence[Tool]) -> None:
        if self._synthetic_override is not None:
            self.synthetic.update({t.qualified_name: self._synthetic_override.get(t.qualified_name, []) for t in tools})
        else:
            self.synthetic.update(queries_for(tools))

    def _load_initial(self, tools: list[Tool]) -> None:
        """Start-up: the SLB comes from its cache file (keyed by embedder + registry/text hash) when present."""
        self._load_synthetic(tools)
        tools = self._expand(tools)
        for t in tools:
            self.tools[t.key] = t
        path = cache_path(self.embedder.fingerprint(), self.content_key())
        if path.exists():
            try:
                slb, meta = SLB.load(path)
                if set(slb.keys) == set(self.tools) and meta.get("embedder") == self.embedder.fingerprint():
                    self.slb = slb
                    return
            except (OSError, ValueError, KeyError):
                pass  # a corrupt or stale cache file is rebuilt below
        for t in tools:
            del self.tools[t.key]
        self._add(tools)
        self.slb.save(path, {"embedder": self.embedder.fingerprint(), "tools": len(self.tools)})

    def add(self, tools: Iterable[Tool]) -> None:
        """Index the tools not indexed yet (by qualified name); the others are left as they are."""
        tools = list(tools)
        self._load_synthetic(tools)
        self._add(self._expand(tools))

    def _add(self, expanded: list[Tool]) -> None:
        new = [t for t in expanded if t.key not in self.tools]
        if not new:
            return
        for t in new:
            self.tools[t.key] = t
        texts = {t.key: self._texts(t) for t in new}
        flat = [x for v in texts.values() for x in v]
        vecs = self.cache.documents(flat)
        i = 0
        for k, v in texts.items():
            self.slb.add(k, vecs[i : i + len(v)])
            i += len(v)
        self.cache.save(self.cache_file)
        self._changed()

    def remove(self, names: Iterable[str]) -> None:
        """Drop tools by qualified name (every operation of a consolidated one) or by routing key."""
        names = set(names)
        gone = [k for k, t in self.tools.items() if k in names or t.qualified_name in names]
        for k in gone:
            del self.tools[k]
            self.slb.remove(k)
        if gone:
            self._changed()

    def replace(self, tools: Iterable[Tool]) -> None:
        """Replace tools by qualified name (a changed description/schema re-embeds only those tools)."""
        tools = list(tools)
        self.remove([t.qualified_name for t in tools if t.qualified_name in self.tools])
        self.add(tools)

    def content_key(self) -> str:
        """Hash of every text the SLB holds (and the held-out calibration queries): the cache files' key."""
        blob = "\n".join(
            f"{k}:{t.content_hash()}:{self._texts(t)}:{self.synthetic.get(k, [])}"
            for k, t in sorted(self.tools.items())
        )
        return digest(blob)

    # --- what retrieval reads ------------------------------------------------------------------------------

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            keys = self.slb.keys
            self._bm25 = BM25Index(keys, [self._lexical_document(k) for k in keys])
        return self._bm25

    def _lexical_document(self, key: str) -> str:
        """What BM25 reads of a tool: its document, and its examples' requests where they key it ("thumbs up",
        "tag … as" are words of requests, not of schemas)."""
        return "\n".join([self.document(key), *self.keying_requests(key)])

    @property
    def writes(self) -> Mask:
        """Boolean mask over ``slb.keys``: the tool declares that it changes things (readOnlyHint false)."""
        if self._writes is None:
            keys = self.slb.keys
            self._writes = np.fromiter((self.tools[k].declares_write for k in keys), np.bool_, len(keys))
        return self._writes

    def own_scores(self, query: F32) -> F32:
        """Per-key score over the key's own rows only (its document and synthetic requests, not the requests of
        its examples), float32 ``[len(slb)]`` in ``slb.keys`` order: the tool side of the small-talk test
        (``Router._relevance``). ``query``: float32 ``[dim]``, unit norm."""
        rs = self.slb.row_scores(query)
        keys = self.slb.keys
        out = np.full(len(keys), -np.inf, dtype=np.float32)
        for i, k in enumerate(keys):
            rows = self.slb.row_ids(k)
            own = rows[: max(1, len(rows) - len(self.keying_requests(k)))]  # the keying requests are the last rows
            out[i] = rs[own].max()
        return out

    def mask(self, allowed: set[str]) -> Mask:
        """Boolean mask over ``slb.keys``: True for the tools in ``allowed`` (qualified names: every operation of a
        consolidated tool; or routing keys)."""
        keys = self.slb.keys
        return np.fromiter(
            (k in allowed or self.tools[k].qualified_name in allowed for k in keys), dtype=np.bool_, count=len(keys)
        )
