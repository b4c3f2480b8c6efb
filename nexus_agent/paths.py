"""Where Nexus Agent keeps its caches: ``$NEXUS_HOME`` (default ``~/.cache/nexus-agent``)."""

from __future__ import annotations

import os
from pathlib import Path


def nexus_home() -> Path:
    """The cache root; created on first use."""
    home = Path(os.environ.get("NEXUS_HOME", Path.home() / ".cache" / "nexus-agent")).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def cache_dir(*parts: str) -> Path:
    """A sub-folder of the cache root, created on first use."""
    d = nexus_home().joinpath(*parts)
    d.mkdir(parents=True, exist_ok=True)
    return d
