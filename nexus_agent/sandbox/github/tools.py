"""The vendored GitHub MCP tool definitions and argument validation against their input schemas.

The 86 ``github_all`` definitions live in ``nexus_agent/sandbox/github_tools/<tool>.json`` exactly as
github-mcp-server publishes them (see the LICENSE file there); ``list_tools`` serves them verbatim.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema
from mcp import types

TOOLS_DIR = Path(__file__).resolve().parent.parent / "github_tools"


@dataclass(frozen=True)
class ToolCatalog:
    """Tool name -> definition dict (MCP Tool JSON: name, description, inputSchema, annotations, _meta)."""

    definitions: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, directory: Path = TOOLS_DIR) -> ToolCatalog:
        defs = {}
        for path in sorted(directory.glob("*.json")):
            d = json.loads(path.read_text(encoding="utf-8"))
            if d.get("name") != path.stem:
                raise ValueError(f"{path}: tool name {d.get('name')!r} does not match the file name")
            defs[path.stem] = d
        if not defs:
            raise FileNotFoundError(f"no tool definitions in {directory}")
        return cls(defs)

    @cached_property
    def tools(self) -> list[types.Tool]:
        """MCP Tool objects, sorted by name."""
        return [types.Tool.model_validate(d) for d in self.definitions.values()]

    @cached_property
    def _validators(self) -> dict[str, jsonschema.protocols.Validator]:
        out = {}
        for name, d in self.definitions.items():
            cls = jsonschema.validators.validator_for(d["inputSchema"])
            cls.check_schema(d["inputSchema"])
            out[name] = cls(d["inputSchema"])
        return out

    def validate(self, name: str, arguments: dict[str, Any]) -> str | None:
        """None if ``arguments`` satisfy tool ``name``'s inputSchema, else a message naming the bad arguments."""
        errors = sorted(self._validators[name].iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        return f"invalid arguments for {name}: " + "; ".join(_describe(e) for e in errors[:5])


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "required" and not error.absolute_path:
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"missing required argument '{missing}'"
    where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
    return f"argument '{where}': {error.message}"
