"""The engine: one llama.cpp context behind one coarse per-turn lock, with main/sidecar/scratch sequences."""

from nexus_agent.engine.engine import MAIN, SCRATCH, SIDECAR, Engine, EngineConfig, Generation

__all__ = ["MAIN", "SCRATCH", "SIDECAR", "Engine", "EngineConfig", "Generation"]
