"""Relevance detection: say "no tool" when a request is closer to small talk than to any tool's requests.

Two signals, both calibrated from package data and the registry (never from evaluation data):

* the **floor**: the best dense score must reach a percentile of what the no-tool exemplars score against the
  tools (``RouterConfig.floor_percentile``);
* the **exemplars**: a nearest-neighbour test between two kinds of example requests. One side holds the requests
  that need no tool (``data/no_tool_exemplars.txt``); the other holds each tool's own requests: its first
  ``RouterConfig.own_requests`` synthetic example requests and its description's first sentence, plus the tool
  documents themselves. When the request's best cosine to an exemplar beats its best cosine to the other side
  (among the tools routing may pick), no tool fits.

Why requests on the tool side, not only documents: a request is more like another request than like a tool
description, so comparing an exemplar cosine with a document cosine is uneven. It also lets the tool set decide:
"what is 3 plus 7" is small talk next to GitHub's tools, but with a ``get-sum`` tool its own example requests
("what do you get when you add 5 and 9") are closer. And with few tools the best document cosine drops, while a
request's cosine to its own tool's examples does not (docs/measurements.md#relevance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]

EXEMPLARS = Path(__file__).parent / "data" / "no_tool_exemplars.txt"


def no_tool_exemplars() -> list[str]:
    """The packaged requests that need no tool (one per line; ``#`` lines are comments)."""
    lines = EXEMPLARS.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def best_similarity(rows: F32, query: F32) -> float:
    """Best cosine of the unit vector ``query`` ``[dim]`` to the unit ``rows`` ``[n, dim]``; -inf when empty."""
    return float((rows @ query).max()) if len(rows) else float("-inf")


def looks_like_no_tool(exemplar_sim: float, tool_sim: float) -> bool:
    """True when the request's nearest no-tool exemplar is closer than anything on the tool side."""
    return exemplar_sim > tool_sim
