"""Fixtures of the sandbox tests: a fresh copy of the harbor world's data directory per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gh_sandbox_support import HARBOR

from nexus_agent.sandbox.github.server import open_sandbox
from nexus_agent.sandbox.github.world import load_world


@pytest.fixture(scope="session")
def harbor_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The harbor world seeded once per session (in process); tests get copies."""
    data = tmp_path_factory.mktemp("harbor") / "gh"
    open_sandbox(data, world=load_world(HARBOR)).close()
    return data


@pytest.fixture
def harbor(tmp_path: Path, harbor_template: Path) -> Path:
    """A data directory holding the seeded harbor world, for this test alone (the server reopens it as is)."""
    data = tmp_path / "gh"
    shutil.copytree(harbor_template, data, symlinks=True)
    return data
