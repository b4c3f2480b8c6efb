"""EmbeddingGemma-300M (GGUF Q8_0, converted by the model store) through llama.cpp's embedding mode.

The GGUF holds the whole sentence-transformers pipeline but the last step: the Gemma3 encoder, mean pooling and the
two dense layers; the base class L2-normalises. The model is asymmetric, with its own prompts for queries and
documents (``config_sentence_transformers.json``: ``query`` and ``document``). Gemma Terms of Use.
"""

from __future__ import annotations

from nexus_agent.routing.embedders.base import register_embedder
from nexus_agent.routing.embedders.gguf import GGUFEmbedder


@register_embedder("gemma")
class GemmaEmbedder(GGUFEmbedder):
    """Zero-shot: the synthetic example requests are not indexed unless ``RouterConfig(synthetic=True)`` asks
    (docs/measurements.md#routing-embedder: on both dev sets they lowered its accuracy)."""

    default_model = "gemma"
    index_synthetic = False

    def document_prefix(self) -> str:
        return "title: none | text: "

    def query_prefix(self) -> str:
        return "task: search result | query: "
