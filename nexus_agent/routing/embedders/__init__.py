"""Embedding backends for the SLB, one file each, all registered in :data:`EMBEDDERS`."""

from nexus_agent.routing.embedders.base import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    Embedder,
    create_embedder,
    register_embedder,
)

# One module per backend; importing each runs its @register_embedder (none loads a model at import time).
from nexus_agent.routing.embedders import gemma, minilm, nomic, st  # noqa: F401  isort: skip

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "Embedder", "create_embedder", "register_embedder"]
