"""Synthetic example queries per tool: the shipped caches the router indexes and calibrates on.

The queries were generated offline by the local LLM from each tool's definition alone, never from evaluation data
(:mod:`nexus_agent.training.synth` makes them). Each cache is a JSON file shipped with the package::

    {"model": "...", "prompt_version": 2, "seed": 0, "n": 8, "style": "short",
     "tools": {"<server>__<tool>": {"hash": "<tool content hash>", "model": "...", "queries": ["...", ...]}}}

* ``synthetic_queries.json`` (style ``short``): terse chat requests, 8 per tool. The router indexes the first 6
  (for embedders that want them) and keeps the rest for τ calibration.
* ``synthetic_indirect.json`` and ``synthetic_situational.json``: fine-tuning anchors only.

A tool whose definition hash no longer matches its entry gets no queries until the cache is regenerated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nexus_agent.registry import Tool

DEFAULT_CACHE = Path(__file__).parent / "data" / "synthetic_queries.json"
SITUATIONAL_CACHE = Path(__file__).parent / "data" / "synthetic_situational.json"
INDIRECT_CACHE = Path(__file__).parent / "data" / "synthetic_indirect.json"


def load_cache(path: Path = DEFAULT_CACHE) -> dict[str, Any]:
    if not path.exists():
        return {"tools": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def queries_for(tools: Iterable[Tool], path: Path = DEFAULT_CACHE) -> dict[str, list[str]]:
    """Cached queries for ``tools`` whose definition hash still matches (others get none)."""
    entries = load_cache(path).get("tools", {})
    out: dict[str, list[str]] = {}
    for t in tools:
        e = entries.get(t.qualified_name)
        if e and e.get("hash") == t.content_hash():
            out[t.qualified_name] = list(e["queries"])
    return out
