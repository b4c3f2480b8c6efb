"""Shared fixtures. Models come from ``nexus_agent.models`` (assembled from PyPI by scripts/setup)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The vendored registry and eval sets (data/README.md); NEXUS_SHARED points at another copy of the same layout.
SHARED = Path(os.environ.get("NEXUS_SHARED", REPO / "data"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The data folder (``mcp-registry/``, ``eval/``): the repository's ``data/`` unless NEXUS_SHARED says otherwise."""
    if not (SHARED / "mcp-registry").is_dir():
        pytest.fail(f"data folder not found at {SHARED}: expected mcp-registry/ and eval/ there (NEXUS_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def registry_dir(shared_dir: Path) -> Path:
    return shared_dir / "mcp-registry"


@pytest.fixture(scope="session")
def tiny_model() -> Iterator[object]:
    from nexus_agent.llm import LlamaModel
    from nexus_agent.models import resolve

    m = LlamaModel(resolve("tiny"))
    yield m
    m.close()


@pytest.fixture(scope="session")
def eval_queries(registry_dir: Path) -> frozenset[str]:
    """Every query of the eval sets (data/eval/*.jsonl), stripped and lower-cased: what generated data must not copy."""
    return frozenset(
        json.loads(line)["query"].strip().lower()
        for f in (registry_dir.parent / "eval").glob("*.jsonl")
        for line in f.read_text().splitlines()
        if line.strip()
    )
