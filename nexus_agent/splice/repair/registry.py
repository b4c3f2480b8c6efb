"""The one registry of repair policies (``--repair NAME``)."""

from __future__ import annotations

from typing import TypeVar

from nexus_agent.splice.repair.base import RepairPolicy

_POLICIES: dict[str, type[RepairPolicy]] = {}
P = TypeVar("P", bound=type[RepairPolicy])


def register_repair(cls: P) -> P:
    if cls.name in _POLICIES:
        raise ValueError(f"repair policy {cls.name!r} registered twice")
    _POLICIES[cls.name] = cls
    return cls


def repair_policy(name: str) -> RepairPolicy:
    if name not in _POLICIES:
        raise ValueError(f"unknown repair policy {name!r}; known: {', '.join(sorted(_POLICIES))}")
    return _POLICIES[name]()


def repair_names() -> list[str]:
    return sorted(_POLICIES)
