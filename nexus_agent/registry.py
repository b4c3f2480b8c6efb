"""Loading MCP tool registries from disk.

Two layouts are accepted:

* a registry folder like ``data/mcp-registry/``: ``<server>/<tool>.json`` (one MCP Tool object per file)
  plus an optional ``profiles.json`` naming tool sets by qualified name ``<server>__<tool>``;
* a plain folder of MCP Tool JSON files (``<tool>.json``); the folder's name is used as the server name.

Files whose name starts with ``_`` (e.g. ``github/_toolsets.json``) and the registry's own index files are
metadata, not tools. A malformed tool raises :class:`RegistryError` naming the file and the problem, because a
silently skipped tool shows up much later as an unexplained routing miss.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

# Top-level files of the registry layout that are not tools.
_METADATA_FILES = frozenset({"profiles.json", "index.json"})


class RegistryError(ValueError):
    """A registry file is missing, unreadable or not a valid MCP Tool definition."""


class McpToolModel(BaseModel):
    """The wire form of an MCP ``Tool`` (only the fields routing needs are typed; the rest are kept)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str = Field(min_length=1)
    description: str = ""
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    title: str | None = None
    annotations: dict[str, Any] | None = None


# A parameter that names which existing object to act on: issue_number, pullNumber, comment_id, page_id, threadID …
IDENTIFIER = re.compile(r"(?:^|_)(?:number|id)$|[a-z0-9](?:Number|Id|ID)$")

# A tool whose description says it replaces what is there ("completely overwrite an existing file")
OVERWRITES = re.compile(r"\boverwrit", re.IGNORECASE)


# Names a consolidated tool gives the parameter that picks its operation (GitHub's ``method``, ``action``).
OPERATION_PARAMS = frozenset({"method", "action", "operation"})
OPERATION_SEP = "#"  # between a tool's qualified name and an operation in a routing key


def split_key(key: str) -> tuple[str, str | None]:
    """A routing key -> (the tool's qualified name, the operation or None)."""
    qualified, sep, operation = key.partition(OPERATION_SEP)
    return qualified, (operation if sep else None)


@dataclass(frozen=True)
class Tool:
    """One tool as routing sees it.

    ``qualified_name`` is ``<server>__<name>``, the key used by ``profiles.json`` and by the router; two servers
    may expose the same bare ``name``.
    """

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    source: str = ""  # file it came from, for error messages
    # MCP ``annotations.readOnlyHint`` as declared (None: not declared). Routing tells a question from a change
    # with it (RouterConfig.question_write_penalty); not part of ``content_hash``, which keys embeddings.
    read_only_hint: bool | None = None
    # the MCP ``_meta`` object as the server sent it (None: none); a tool may carry usage examples there
    meta: Mapping[str, Any] | None = field(default=None, compare=False)
    # routing's view of one operation of a consolidated tool (``issue_write`` update): the value of its operation
    # parameter, fixed in ``input_schema``; None for a tool as its server offers it (routing/examples)
    operation: str | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.server}__{self.name}"

    @property
    def key(self) -> str:
        """What routing ranks: the qualified name, and for one operation of a consolidated tool ``name#operation``
        (``github__issue_write#update``)."""
        return (
            self.qualified_name if self.operation is None else f"{self.qualified_name}{OPERATION_SEP}{self.operation}"
        )

    @property
    def label(self) -> str:
        """The name a decision lists: the tool's, and ``name.operation`` for one operation (``issue_write.update``)."""
        return self.name if self.operation is None else f"{self.name}.{self.operation}"

    @property
    def declares_write(self) -> bool:
        """Whether the tool declares that it changes things (``readOnlyHint: false``; no hint is no declaration)."""
        return self.read_only_hint is False

    @property
    def requires_identifier(self) -> bool:
        """Whether a required parameter names an existing object (``issue_number``, ``pullNumber`` …): such a tool
        acts on an object already found, it cannot find one from a description."""
        return any(IDENTIFIER.search(k) for k in self.input_schema.get("required") or [])

    @property
    def operation_param(self) -> str | None:
        """The required parameter whose enum selects what a consolidated tool does (``issue_write``'s ``method``:
        create or update; ``manage_notification_subscription``'s ``action``), or None. One such tool is several
        operations under one name, which its schema alone cannot tell apart."""
        props = self.input_schema.get("properties") or {}
        for name in self.input_schema.get("required") or []:
            prop = props.get(name) or {}
            if name in OPERATION_PARAMS and isinstance(prop.get("enum"), list) and len(prop["enum"]) > 1:
                return str(name)
        return None

    def operations(self) -> list[str]:
        """The values of :attr:`operation_param` (empty for a tool with one operation)."""
        key = self.operation_param
        return [str(v) for v in self.input_schema["properties"][key]["enum"]] if key else []

    def to_mcp(self) -> dict[str, Any]:
        """The MCP wire form (``name``/``description``/``inputSchema``)."""
        return {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}

    def content_hash(self) -> str:
        """Stable hash of everything routing reads from the tool (hex, 16 chars)."""
        blob = json.dumps([self.server, self.to_mcp()], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def tool_from_mcp(data: Mapping[str, Any], server: str, source: str = "<memory>") -> Tool:
    """Validate one MCP Tool object and convert it; raises :class:`RegistryError` naming ``source``."""
    if not isinstance(data, Mapping):
        raise RegistryError(f"{source}: expected a JSON object (an MCP Tool), got {type(data).__name__}")
    try:
        model = McpToolModel.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise RegistryError(f"{source}: not a valid MCP Tool: {problems}") from exc
    _check_input_schema(model.input_schema, source)
    return Tool(
        server=server,
        name=model.name,
        description=model.description or "",
        input_schema=model.input_schema,
        source=source,
        read_only_hint=read_only_hint_of(model.annotations),
    )


def read_only_hint_of(annotations: Mapping[str, Any] | None) -> bool | None:
    """``annotations.readOnlyHint`` when it is declared as a boolean, else None."""
    hint = (annotations or {}).get("readOnlyHint")
    return hint if isinstance(hint, bool) else None


def _check_input_schema(schema: dict[str, Any], source: str) -> None:
    """MCP requires ``inputSchema`` to be a JSON Schema of ``type: object``; check that and its structure."""
    if schema.get("type") != "object":
        raise RegistryError(f"{source}: inputSchema.type must be 'object', got {schema.get('type')!r}")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise RegistryError(f"{source}: inputSchema.properties must be an object, got {type(props).__name__}")
    for pname, pschema in props.items():
        if not isinstance(pschema, dict):
            raise RegistryError(f"{source}: inputSchema.properties.{pname} must be an object (a JSON Schema)")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise RegistryError(f"{source}: inputSchema.required must be a list of property names")
    missing = [r for r in required if r not in props]
    if missing:
        raise RegistryError(f"{source}: inputSchema.required names unknown properties {missing}")
    # Draft is taken from "$schema" when present (e.g. draft-07 in several servers), 2020-12 otherwise.
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        raise RegistryError(f"{source}: inputSchema is not a valid JSON Schema at {where}: {exc.message}") from exc


@dataclass
class Registry:
    """All tools of a registry, keyed by qualified name, plus its named profiles (lists of qualified names)."""

    root: Path
    tools: dict[str, Tool] = field(default_factory=dict)
    profiles: dict[str, list[str]] = field(default_factory=dict)

    def profile(self, name: str | None) -> list[Tool]:
        """The tools of profile ``name`` in profile order; ``None`` means every tool (sorted by qualified name)."""
        if name is None:
            return [self.tools[k] for k in sorted(self.tools)]
        if name not in self.profiles:
            known = ", ".join(sorted(self.profiles)) or "none"
            raise RegistryError(f"{self.root}: unknown profile {name!r} (known: {known})")
        out = []
        for q in self.profiles[name]:
            if q not in self.tools:
                raise RegistryError(f"{self.root}/profiles.json: profile {name!r} names unknown tool {q!r}")
            out.append(self.tools[q])
        return out

    def find(self, name: str, server: str | None = None) -> Tool:
        """Look a tool up by qualified name, ``server/tool``, or bare name (+ optional server).

        A bare name that several servers expose is ambiguous without ``server``: that raises.
        """
        if "__" in name and name in self.tools:
            return self.tools[name]
        if "/" in name:
            server, name = name.split("/", 1)
        if server is not None and f"{server}__{name}" in self.tools:
            return self.tools[f"{server}__{name}"]
        hits = [t for t in self.tools.values() if t.name == name]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise KeyError(f"no tool named {name!r}" + (f" on server {server!r}" if server else ""))
        raise KeyError(f"tool name {name!r} is ambiguous: {sorted(t.qualified_name for t in hits)}")

    def content_hash(self, tools: Iterable[Tool] | None = None) -> str:
        """Hash over the given tools (default: all), order-independent; keys caches such as the SLB file."""
        items = sorted(t.qualified_name + ":" + t.content_hash() for t in (tools or self.tools.values()))
        return hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RegistryError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except OSError as exc:
        raise RegistryError(f"{path}: cannot read: {exc}") from exc


def _tool_objects(data: Any, path: Path) -> list[Any]:
    """A file may hold one Tool, a list of Tools, or a ``tools/list`` result ``{"tools": [...]}``."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and "tools" in data and "name" not in data:
        tools = data["tools"]
        if not isinstance(tools, list):
            raise RegistryError(f"{path}: 'tools' must be a list")
        return tools
    return [data]


def _load_file(path: Path, server: str, into: dict[str, Tool]) -> None:
    for i, obj in enumerate(_tool_objects(_read_json(path), path)):
        source = str(path) if i == 0 else f"{path}[{i}]"
        tool = tool_from_mcp(obj, server=server, source=source)
        if tool.qualified_name in into:
            raise RegistryError(
                f"{source}: duplicate tool {tool.qualified_name} (also in {into[tool.qualified_name].source})"
            )
        into[tool.qualified_name] = tool


def tool_files(path: str | Path) -> list[tuple[Path, str]]:
    """Every tool JSON file under ``path`` with the server it belongs to: a file (server: its folder's name), a
    folder of files (server: the folder's name) or a registry folder (``<server>/<tool>.json``)."""
    root = Path(path).expanduser()
    if root.is_file():
        return [(root, root.parent.name)]
    if not root.is_dir():
        raise RegistryError(f"{root}: no such file or folder")
    out: list[tuple[Path, str]] = []
    for d in sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))):
        out += [(f, d.name) for f in sorted(d.glob("*.json")) if not f.name.startswith("_")]
    top = sorted(f for f in root.glob("*.json") if not f.name.startswith("_") and f.name not in _METADATA_FILES)
    out += [(f, root.name) for f in top]
    return out


def load_file(path: Path, server: str) -> list[Tool]:
    """The tools of one JSON file (one Tool, a list, or a ``tools/list`` result); RegistryError names the file."""
    into: dict[str, Tool] = {}
    _load_file(path, server, into)
    return list(into.values())


def load_registry(path: str | Path) -> Registry:
    """Load either layout (see module docstring). Raises :class:`RegistryError` on any malformed file."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise RegistryError(f"{root}: registry must be a directory")
    reg = Registry(root=root)
    subdirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))
    top_files = sorted(f for f in root.glob("*.json") if not f.name.startswith("_") and f.name not in _METADATA_FILES)
    server_dirs = [d for d in subdirs if any(not f.name.startswith("_") for f in d.glob("*.json"))]
    for d in server_dirs:
        for f in sorted(d.glob("*.json")):
            if not f.name.startswith("_"):
                _load_file(f, server=d.name, into=reg.tools)
    for f in top_files:
        _load_file(f, server=root.name, into=reg.tools)
    if not reg.tools:
        raise RegistryError(f"{root}: no tool JSON files found (expected <server>/<tool>.json or <tool>.json)")
    prof_path = root / "profiles.json"
    if prof_path.exists():
        reg.profiles = _parse_profiles(_read_json(prof_path), prof_path)
    return reg


def _parse_profiles(data: Any, path: Path) -> dict[str, list[str]]:
    """``{"name": {"tools": [...], "desc": ...}}`` or ``{"name": [...]}``."""
    if not isinstance(data, dict):
        raise RegistryError(f"{path}: expected an object mapping profile names to tool lists")
    out: dict[str, list[str]] = {}
    for name, spec in data.items():
        tools = spec.get("tools") if isinstance(spec, dict) else spec
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise RegistryError(f"{path}: profile {name!r} must list qualified tool names")
        out[name] = list(tools)
    return out
