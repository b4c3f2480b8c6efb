"""Model lookup for routing: a short name goes through :func:`nexus_agent.models.resolve`, a path is used as is."""

from __future__ import annotations

from pathlib import Path

from nexus_agent.models import resolve


def resolve_model(name_or_path: str | Path) -> Path:
    """Path of a model file or folder; short names (``nomic``, ``minilm``, ``qwen0.5b`` …) are assembled on demand."""
    p = Path(name_or_path).expanduser()
    if p.exists():
        return p
    return Path(resolve(str(name_or_path)))
