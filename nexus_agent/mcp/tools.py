"""What the client hands to the rest of Nexus Agent: tools, call results, list diffs, progress updates.

These are plain dataclasses, free of SDK types, so the routing and agent layers never import ``mcp``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_agent.registry import Tool, read_only_hint_of

QUALIFIER = "__"


def qualify(server: str, tool: str) -> str:
    """The qualified name ``<server>__<tool>`` used by the router and by ``profiles.json``."""
    return f"{server}{QUALIFIER}{tool}"


@dataclass(frozen=True)
class ToolInfo:
    """One tool offered by one server.

    ``input_schema`` is the tool's JSON Schema for its arguments; ``annotations`` the MCP ``ToolAnnotations``
    as a camelCase dict (``readOnlyHint``, ``destructiveHint``, ...) or ``None``.
    """

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None  # the tool's MCP ``_meta``

    @property
    def qualified_name(self) -> str:
        return qualify(self.server, self.name)

    def fingerprint(self) -> str:
        """Everything a client can see of the tool, canonicalised; equal fingerprints mean "unchanged"."""
        return json.dumps(
            [self.description, self.input_schema, self.annotations, self.title, self.output_schema, self.meta],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )

    def to_registry_tool(self) -> Tool:
        """The routing layer's :class:`nexus_agent.registry.Tool` for this tool."""
        return Tool(
            server=self.server,
            name=self.name,
            description=self.description,
            input_schema=dict(self.input_schema),
            source=f"mcp:{self.server}",
            read_only_hint=read_only_hint_of(self.annotations),
            meta=self.meta,
        )


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one ``tools/call``.

    ``content`` holds the MCP content blocks as JSON dicts (``{"type": "text", "text": ...}``, images, ...);
    ``structured`` the ``structuredContent`` object if the tool returned one. ``is_error`` is true when the
    tool reported a failure (``isError: true``) or the server rejected the call with a JSON-RPC error, whose
    code is then in ``error_code``. Either way the text is meant for the model to read.
    """

    server: str
    tool: str
    content: Sequence[Mapping[str, Any]]
    is_error: bool = False
    structured: Mapping[str, Any] | None = None
    error_code: int | None = None

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (non-text blocks are left out)."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")

    def readable(self, limit: int = 4000) -> str:
        """What the model reads: the text blocks and the text of embedded resources, in order (a GitHub server
        returns a file's content as a resource after a one-line text block); without any, the structured result as
        JSON, else the content blocks as JSON (at most ``limit`` characters; base64 images are long). A result with
        structured content and no text block is not an empty result."""
        parts = [_block_text(b) for b in self.content]
        if any(parts):
            return "\n".join(p for p in parts if p)
        other = self.structured if self.structured is not None else list(self.content)
        return json.dumps(other, ensure_ascii=False)[:limit]


def _block_text(block: Mapping[str, Any]) -> str:
    """A content block's text: a text block's, or an embedded text resource's (a binary one has none)."""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    resource = block.get("resource") if block.get("type") == "resource" else None
    if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
        return str(resource["text"])
    return ""


@dataclass(frozen=True)
class ToolListDiff:
    """How a server's tool list changed, in plain tool names, each tuple sorted.

    ``changed`` lists tools whose description, schema, annotations or title differ. ``tools`` is the full new
    list, so a listener can index the added and changed tools without asking again.
    """

    server: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    tools: tuple[ToolInfo, ...] = field(default=(), repr=False)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def qualified(self, names: Sequence[str]) -> list[str]:
        """``names`` (one of the tuples above) as qualified names."""
        return [qualify(self.server, n) for n in names]


def diff_tools(server: str, old: Sequence[ToolInfo], new: Sequence[ToolInfo]) -> ToolListDiff:
    """Compare two listings of the same server (by name, then by fingerprint)."""
    before = {t.name: t.fingerprint() for t in old}
    after = {t.name: t.fingerprint() for t in new}
    return ToolListDiff(
        server=server,
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys())),
        changed=tuple(sorted(n for n in after.keys() & before.keys() if after[n] != before[n])),
        tools=tuple(new),
    )


@dataclass(frozen=True)
class ProgressUpdate:
    """One ``notifications/progress`` of a running call; ``total`` and ``message`` may be missing."""

    server: str
    tool: str
    progress: float
    total: float | None = None
    message: str | None = None


# Callbacks may be plain functions or coroutines; they run on the client's event loop, between messages of
# that server, so they must be quick.
ProgressCallback = Callable[[ProgressUpdate], Awaitable[None] | None]
ToolsListener = Callable[[ToolListDiff], Awaitable[None] | None]
