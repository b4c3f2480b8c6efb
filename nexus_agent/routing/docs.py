"""Tool documents: the texts that represent a tool to the retrievers.

* ``basic``: ``name: description`` (the paper's recipe).
* ``rich``: adds the name split into words, the server, parameter names and enum values. Enum values matter
  most for consolidated tools (``issue_write`` with ``method: create|update``; ``actions_list`` with
  ``list_workflow_runs`` …) whose description alone does not say which operations they cover.

Synthetic example queries (:mod:`nexus_agent.routing.synth`) are separate texts of the same tool; the SLB holds
one row per text and scores a tool by its best row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nexus_agent.registry import Tool
from nexus_agent.signature import first_sentence

DocStyle = Literal["basic", "rich"]

_MAX_DESC = 600  # characters of description kept; long descriptions are mostly usage notes


def split_identifier(name: str) -> str:
    """``list_workflow_runs`` / ``API-post-search`` / ``getUserInfo`` → ``list workflow runs`` etc."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return " ".join(re.split(r"[_\-.\s/]+", s)).strip().lower()


def _enum_values(schema: Mapping[str, Any], depth: int = 0) -> list[str]:
    out: list[str] = []
    if depth > 3 or not isinstance(schema, Mapping):
        return out
    if isinstance(schema.get("enum"), list):
        out += [str(v) for v in schema["enum"] if isinstance(v, str | int | float)]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            out += _enum_values(schema[key], depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            out += _enum_values(sub, depth + 1)
    for name, sub in (schema.get("properties") or {}).items():
        if not _is_projection(name, sub):
            out += _enum_values(sub, depth + 1)
    return out


def _is_projection(name: str, schema: Any) -> bool:
    """An array of enum strings that picks which output fields come back (GitHub's ``fields: ["title",
    "state", …]``). Its values name the result's columns, not what the tool does: in the document they made
    ``search_issues`` match "create an issue titled …" through ``title``."""
    if not isinstance(schema, Mapping) or schema.get("type") != "array":
        return False
    items = schema.get("items")
    if not isinstance(items, Mapping) or not isinstance(items.get("enum"), list):
        return False
    return "field" in name.lower() or "fields" in str(schema.get("description", "")).lower()


@dataclass(frozen=True)
class DocConfig:
    style: DocStyle = "rich"
    max_desc: int = _MAX_DESC


def tool_document(tool: Tool, cfg: DocConfig | None = None) -> str:
    """The main document of ``tool`` for embedding and BM25."""
    cfg = cfg or DocConfig()
    desc = " ".join(tool.description.split())
    if cfg.style == "basic":
        return f"{tool.name}: {desc}"
    if len(desc) > cfg.max_desc:
        desc = desc[: cfg.max_desc].rsplit(" ", 1)[0]
    props = tool.input_schema.get("properties") or {}
    params = ", ".join(split_identifier(p) for p in props)
    enums = list(dict.fromkeys(_enum_values(tool.input_schema)))
    parts = [f"{tool.name} ({split_identifier(tool.name)}, {tool.server}): {first_sentence(desc)}"]
    rest = desc[len(first_sentence(desc)) :].strip()
    if enums:
        parts.append("Operations/options: " + ", ".join(split_identifier(e) for e in enums[:24]) + ".")
    if params:
        parts.append(f"Parameters: {params}.")
    if rest:
        parts.append(rest)
    return " ".join(parts)
