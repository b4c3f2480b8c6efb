"""The engine: one llama.cpp context behind one coarse per-turn lock, its sequences managed by the radix arena."""

from nexus_agent.engine.arena import ArenaFull, ArenaStats, Lane
from nexus_agent.engine.engine import (
    CHAT,
    MAIN,
    RELEVANCE,
    SCRATCH,
    SIDECAR,
    Engine,
    EngineConfig,
    Generation,
    KVCacheFull,
    common_prefix_len,
)

__all__ = [
    "CHAT",
    "MAIN",
    "RELEVANCE",
    "SCRATCH",
    "SIDECAR",
    "ArenaFull",
    "ArenaStats",
    "Engine",
    "EngineConfig",
    "Generation",
    "KVCacheFull",
    "Lane",
    "common_prefix_len",
]
