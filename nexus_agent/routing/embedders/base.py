"""The embedder interface and its single registry.

An embedder maps texts to L2-normalised float32 vectors, shape ``[n, dim]``. Documents (tools) and queries
go through separate methods because some models (nomic) are asymmetric and need a different prefix for each.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from nexus_agent import defaults

Vectors = npt.NDArray[np.float32]


class Embedder(ABC):
    """Base class; subclasses register themselves with :func:`register_embedder`."""

    name: str = ""
    dim: int = 0
    # Which weights: two models behind one backend (stock vs fine-tuned MiniLM) must not share SLB caches.
    model_id: str = ""
    # Whether the router should index each tool's synthetic example requests as extra rows (see RouterConfig)
    index_synthetic: bool = True

    @abstractmethod
    def _embed(self, texts: Sequence[str]) -> Vectors:
        """Raw embeddings, shape ``[len(texts), dim]`` (normalised by the caller)."""

    def document_prefix(self) -> str:
        return ""

    def query_prefix(self) -> str:
        return ""

    def fingerprint(self) -> str:
        """Identifies model + prefixes; part of the SLB cache key so a model change re-embeds the registry."""
        return f"{self.name}:{self.model_id}:{self.dim}:{self.document_prefix()}|{self.query_prefix()}"

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._normalised([self.document_prefix() + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._normalised([self.query_prefix() + t for t in texts])

    def _normalised(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        v = np.asarray(self._embed(texts), dtype=np.float32)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return (v / np.maximum(norms, 1e-12)).astype(np.float32)


# Chosen by measurement on data/eval (bench/results/routing_ablation.md): the MiniLM fine-tuned on
# registry tool data beats stock MiniLM and nomic on both dev sets.
DEFAULT_EMBEDDER = defaults.EMBEDDER


def weights_id(path: Path) -> str:
    """Identity of a weights file for :attr:`Embedder.model_id`: name, size and modification time. Size alone is
    not enough: a retrained int8 ONNX of the same architecture has exactly the same size. A copy of the same
    weights gets a new mtime, which costs one re-embedding, never a stale cache."""
    st = path.stat()
    return f"{path.name}:{st.st_size}:{st.st_mtime_ns}"


E = TypeVar("E", bound=type[Embedder])
EMBEDDERS: dict[str, Callable[..., Embedder]] = {}


def register_embedder(name: str) -> Callable[[E], E]:
    """Class decorator: make the backend available under ``name`` to the CLI, bench and tests."""

    def deco(cls: E) -> E:
        cls.name = name
        EMBEDDERS[name] = cls
        return cls

    return deco


def create_embedder(name: str, model: str | None = None, **kwargs: object) -> Embedder:
    """Instantiate a registered backend; ``model`` is a short model name or path (backend default if None)."""
    if name not in EMBEDDERS:
        raise KeyError(f"unknown embedder {name!r} (known: {', '.join(sorted(EMBEDDERS))})")
    return EMBEDDERS[name](model=model, **kwargs)
