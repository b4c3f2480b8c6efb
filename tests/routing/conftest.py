from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("NEXUS_SHARED", Path(__file__).resolve().parents[3] / "shared"))
REGISTRY = SHARED / "mcp-registry"


@pytest.fixture(scope="session")
def registry_dir() -> Path:
    assert REGISTRY.is_dir(), f"shared registry not found at {REGISTRY} (set NEXUS_SHARED)"
    return REGISTRY
