"""Shared fixtures. Models come from ``nexus_agent.models`` (assembled from PyPI by scripts/setup)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NEXUS_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The workplace's shared/ folder (registry, eval sets); CI lays it beside the clone."""
    if not SHARED.exists():
        pytest.fail(f"shared data folder not found at {SHARED} (set NEXUS_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def registry_dir(shared_dir: Path) -> Path:
    return shared_dir / "mcp-registry"


@pytest.fixture(scope="session")
def tiny_model() -> Iterator[object]:
    from nexus_agent.llm import LlamaModel

    m = LlamaModel("tiny")
    yield m
    m.close()
