"""nomic-embed-text-v1.5 (GGUF) through llama.cpp's embedding mode, with its asymmetric task prefixes."""

from __future__ import annotations

from nexus_agent.routing.embedders.base import register_embedder
from nexus_agent.routing.embedders.gguf import GGUFEmbedder


@register_embedder("nomic")
class NomicEmbedder(GGUFEmbedder):
    default_model = "nomic"
    max_tokens = 512  # nomic was trained on <=512-token passages; longer tool docs are cut

    def document_prefix(self) -> str:
        return "search_document: "

    def query_prefix(self) -> str:
        return "search_query: "
