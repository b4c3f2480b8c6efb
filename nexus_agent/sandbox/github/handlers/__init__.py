"""The single registry of implemented tools: tool name -> handler.

Handlers register themselves with ``@tool("name")`` in the area modules (one per area, listed in ``AREAS``);
``registry()`` imports those modules once and returns the mapping. A name that is in the vendored tool
list but not here is answered with "not supported in the Nexus offline GitHub sandbox".
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from nexus_agent.sandbox.github.context import Sandbox

# A handler gets the validated arguments and returns a JSON-able value (sent as compact JSON text), a
# ``str`` (sent as is, e.g. a diff) or ``Blocks`` (explicit content blocks, e.g. an embedded file).
Handler = Callable[[Sandbox, dict[str, Any]], object]

AREAS = (
    "users",
    "repos",
    "issues",
    "pulls",
    "sub_issues",
    "issue_fields",
    "copilot",
    "reviews",
    "releases",
    "stars",
    "collaborators",
    "gists",
    "discussions",
    "projects",
    "projects_write",
    "actions",
    "notifications",
    "security",
    "advisories",
)

_REGISTRY: dict[str, Handler] = {}


def tool(name: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the implementation of tool ``name`` (each name exactly once)."""

    def decorate(fn: Handler) -> Handler:
        if name in _REGISTRY:
            raise ValueError(f"tool {name!r} registered twice")
        _REGISTRY[name] = fn
        return fn

    return decorate


def registry() -> dict[str, Handler]:
    """All implemented handlers, keyed by tool name."""
    for area in AREAS:
        importlib.import_module(f"{__name__}.{area}")
    return dict(_REGISTRY)
