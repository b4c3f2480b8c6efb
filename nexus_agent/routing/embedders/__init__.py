"""Embedding backends for the SLB, one file each, all registered in :data:`EMBEDDERS`."""

from nexus_agent.routing.embedders.base import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    Embedder,
    create_embedder,
    register_embedder,
)

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "Embedder", "create_embedder", "register_embedder"]
