"""The engine: one llama.cpp context behind one coarse per-turn lock, with main/sidecar/scratch sequences."""

from nexus_agent.engine.engine import (
    MAIN,
    RELEVANCE,
    SCRATCH,
    SIDECAR,
    Engine,
    EngineConfig,
    Generation,
    common_prefix_len,
)

__all__ = ["MAIN", "RELEVANCE", "SCRATCH", "SIDECAR", "Engine", "EngineConfig", "Generation", "common_prefix_len"]
