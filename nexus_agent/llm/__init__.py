"""llama.cpp through its low-level C API: classes that own native handles (model, context, sampler)."""

from nexus_agent.llm.context import ContextConfig, DecodeError, LlamaContext
from nexus_agent.llm.model import LlamaModel, init_backend
from nexus_agent.llm.sampling import GrammarError, Sampler

__all__ = ["ContextConfig", "DecodeError", "GrammarError", "LlamaContext", "LlamaModel", "Sampler", "init_backend"]
