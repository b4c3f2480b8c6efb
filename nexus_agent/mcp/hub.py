"""``MultiServerClient``: several tool sources behind one name space of qualified tool names.

Usage::

    async with MultiServerClient.from_config(load_config("mcp.json")) as hub:
        for tool in hub.tools: ...                      # ToolInfo from every server
        result = await hub.call_tool("time__get_current_time", {"timezone": "UTC"}, timeout=30)

Names: a tool is addressed by its qualified name ``<server>__<tool>`` or, when only one server offers it, by
its plain name. The index behind that is rebuilt whenever a server's list changes, before the hub's own tools
listeners are called, so a listener that looks tools up sees the new state.

Threading contract: the hub is asyncio-only and bound to the loop on which it was started (``hub.loop``). All
methods must run on that loop; another thread uses ``asyncio.run_coroutine_threadsafe(hub.call_tool(...),
hub.loop).result()``. Start and close need not happen in the same task (each server's SDK contexts are owned
by a task of its own), so a synchronous wrapper may submit them as separate coroutines. Listeners and progress
callbacks run on the loop and must not block it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from nexus_agent.mcp.client import MCPServerSource, SourceOptions
from nexus_agent.mcp.config import MCPConfig
from nexus_agent.mcp.errors import MCPClientError, SourceClosedError, ToolNotFoundError
from nexus_agent.mcp.source import ToolSource, call_listener
from nexus_agent.mcp.tools import QUALIFIER, ProgressCallback, ProgressUpdate, ToolInfo, ToolListDiff, ToolResult


class MultiServerClient(ToolSource):
    """A set of :class:`ToolSource` s started and closed together; itself a :class:`ToolSource` named ``name``.

    ``default_timeout`` (seconds) applies to calls that pass no ``timeout``; ``None`` means no limit. With
    ``require_all`` a server that fails to start fails the whole start (the others are closed again);
    without it the failure is kept in :attr:`failures` and the other servers are used.
    """

    def __init__(
        self,
        sources: Iterable[ToolSource],
        *,
        default_timeout: float | None = 120.0,
        require_all: bool = True,
        name: str = "hub",
    ) -> None:
        super().__init__(name)
        self.sources: dict[str, ToolSource] = {}
        for source in sources:
            if source.name in self.sources:
                raise ValueError(f"two tool sources are named {source.name!r}")
            self.sources[source.name] = source
        self.default_timeout = default_timeout
        self.require_all = require_all
        self.failures: dict[str, BaseException] = {}  # server name -> why it did not start (require_all=False)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._live: dict[str, ToolSource] = {}
        self._index: dict[str, ToolInfo] = {}
        self._by_plain: dict[str, list[ToolInfo]] = {}

    @classmethod
    def from_config(
        cls, config: MCPConfig, *, options: SourceOptions | None = None, **kwargs: Any
    ) -> MultiServerClient:
        """One :class:`MCPServerSource` per configured server; ``kwargs`` go to the constructor.

        The config's file is what an authorization error's login command names (unless ``options`` name one).
        """
        options = options or SourceOptions()
        if options.auth.config_file is None and config.source != "<memory>":
            options = dataclasses.replace(options, auth=dataclasses.replace(options.auth, config_file=config.source))
        return cls([MCPServerSource(name, server, options) for name, server in config.servers.items()], **kwargs)

    # ---- lifetime ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every source concurrently (each has its own start-up timeout)."""
        self.loop = asyncio.get_running_loop()
        names = list(self.sources)
        outcomes = await asyncio.gather(*(self.sources[n].start() for n in names), return_exceptions=True)
        errors: dict[str, BaseException] = {}
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                errors[name] = outcome
            else:
                self._live[name] = self.sources[name]
        if errors and self.require_all:
            await self.aclose()
            if len(errors) == 1:
                raise next(iter(errors.values()))
            raise MCPClientError(
                "several MCP servers failed to start:\n" + "\n".join(f"- {e}" for e in errors.values())
            )
        self.failures = errors
        for source in self._live.values():
            source.add_tools_listener(self._on_source_changed)
            source.add_progress_listener(self._on_progress)
        self._rebuild_index()

    async def aclose(self) -> None:
        """Close every source concurrently; idempotent."""
        live, self._live = list(self.sources.values()), {}
        await asyncio.gather(*(s.aclose() for s in live), return_exceptions=True)
        self._rebuild_index()

    # ---- tools ------------------------------------------------------------------------------------------

    @property
    def tools(self) -> list[ToolInfo]:
        """Every tool of every live server, in server order then server's order."""
        return [t for s in self._live.values() for t in s.tools]

    def resolve(self, name: str) -> ToolInfo:
        """The tool a qualified or plain name refers to; else :class:`ToolNotFoundError` with suggestions."""
        if name in self._index:
            return self._index[name]
        matches = self._by_plain.get(name, [])
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = ", ".join(t.qualified_name for t in matches)
            raise ToolNotFoundError(f"tool name {name!r} is offered by several servers; use one of: {names}")
        server = name.split(QUALIFIER, 1)[0] if QUALIFIER in name else None
        if server in self.failures:
            raise ToolNotFoundError(f"tool {name!r}: MCP server {server!r} failed to start: {self.failures[server]}")
        close = difflib.get_close_matches(name, [*self._index, *self._by_plain], n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ToolNotFoundError(f"no connected MCP server offers a tool {name!r}{hint}")

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Route a call by qualified or plain name.

        ``timeout``: seconds per attempt (None = the hub's ``default_timeout``; ``math.inf`` = no limit).
        Raises :class:`ToolNotFoundError`, :class:`ToolTimeoutError`, :class:`ServerCrashedError`; a tool that
        reports an error returns a result with ``is_error=True``.
        """
        info = self.resolve(tool)
        source = self._live.get(info.server)
        if source is None:
            raise SourceClosedError(f"MCP server {info.server!r} is not running")
        limit = self.default_timeout if timeout is None else timeout
        return await source.call_tool(
            info.name,
            arguments,
            timeout=None if limit is None or math.isinf(limit) else limit,
            on_progress=on_progress,
        )

    # ---- listeners (added with the inherited add_tools_listener / add_progress_listener) ------------------

    async def _on_source_changed(self, diff: ToolListDiff) -> None:
        # Index first, so a tools listener that looks tools up sees the new state.
        self._rebuild_index()
        await self._emit_tools_changed(diff)

    async def _on_progress(self, update: ProgressUpdate) -> None:
        for listener in list(self._progress_listeners):
            await call_listener(listener, update, what="hub progress listener")

    def _rebuild_index(self) -> None:
        index: dict[str, ToolInfo] = {}
        by_plain: dict[str, list[ToolInfo]] = {}
        for tool in self.tools:
            index[tool.qualified_name] = tool
            by_plain.setdefault(tool.name, []).append(tool)
        self._index, self._by_plain = index, by_plain
