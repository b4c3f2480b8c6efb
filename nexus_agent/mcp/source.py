"""``ToolSource``: the small interface the agent sees instead of the MCP SDK.

A source is one provider of tools (one MCP server, or anything else that can list and call tools). The hub
(:class:`nexus_agent.mcp.hub.MultiServerClient`) aggregates sources; the agent and router only use this
interface, so the SDK stays behind :mod:`nexus_agent.mcp.client`.
"""

from __future__ import annotations

import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from nexus_agent.mcp.tools import ProgressCallback, ToolInfo, ToolListDiff, ToolResult, ToolsListener

log = logging.getLogger(__name__)

T = TypeVar("T")


class ToolSource(ABC):
    """One provider of tools. Use as ``async with source:`` or call :meth:`start` / :meth:`aclose`.

    ``name`` is the server name used in qualified tool names. Listeners added with :meth:`add_tools_listener`
    get a :class:`ToolListDiff` whenever the source's tool list changes after start-up (e.g. on MCP
    ``notifications/tools/list_changed``, or after a restart that brought a different list).
    """

    name: str

    def __init__(self, name: str) -> None:
        self.name = name
        self._tools_listeners: list[ToolsListener] = []
        self._progress_listeners: list[ProgressCallback] = []

    @abstractmethod
    async def start(self) -> None:
        """Connect and fetch the tool list; raises :class:`~nexus_agent.mcp.errors.ServerStartError`."""

    @abstractmethod
    async def aclose(self) -> None:
        """Disconnect; idempotent. Later calls raise :class:`~nexus_agent.mcp.errors.SourceClosedError`."""

    @property
    @abstractmethod
    def tools(self) -> list[ToolInfo]:
        """The last known tool list (a copy)."""

    @abstractmethod
    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Call ``tool`` (plain name) with ``arguments``; ``timeout``: s per attempt, None = no limit."""

    def add_tools_listener(self, listener: ToolsListener) -> None:
        self._tools_listeners.append(listener)

    def add_progress_listener(self, listener: ProgressCallback) -> None:
        """Called for every progress notification of every call on this source (besides ``on_progress``)."""
        self._progress_listeners.append(listener)

    async def _emit_tools_changed(self, diff: ToolListDiff) -> None:
        for listener in list(self._tools_listeners):
            await call_listener(listener, diff, what=f"tools listener of {self.name!r}")

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def call_listener(fn: Callable[[T], Awaitable[None] | None], arg: T, *, what: str) -> None:
    """Run a sync or async callback; its exceptions are logged, never raised into the client machinery."""
    try:
        out = fn(arg)
        if inspect.isawaitable(out):
            await out
    except Exception:
        log.exception("%s raised", what)
