"""``MCPServerSource``: one MCP server (stdio or streamable HTTP) behind the :class:`ToolSource` interface.

Lifetimes. The SDK's context managers (``stdio_client``, ``streamable_http_client``, ``ClientSession``) hold
anyio task groups and cancel scopes, which must be entered and exited by the same task. So each source owns
one long-lived asyncio task, the *owner*, which enters them in an ``AsyncExitStack``, runs the handshake and
then serves control commands (re-list, restart, stop) from a queue until told to stop. Tool calls do not go
through the owner: ``ClientSession`` supports concurrent requests from any task on the same loop, so each call
runs ``session.call_tool`` in a task of its own and races it against the session's "dead" event and the
per-call timeout. Nothing here is tied to the task that called :meth:`start`, so start and close may come from
different tasks (e.g. two ``run_coroutine_threadsafe`` calls from a synchronous wrapper).

Threading contract: a source is bound to the event loop that started it; every method must run on that loop.

Crashes. A call that finds the connection gone (process exited, stream closed, HTTP session lost) asks the
owner for one restart and retries the call once on the new session; a second loss raises
:class:`ServerCrashedError`. Restarts are serialised by a lock and tagged with the generation that failed, so
ten calls that see the same crash cause one restart. The agent keeps the conversation, so a restart loses
nothing but the server's own session state.

Server stderr goes to ``$NEXUS_HOME/logs/mcp-<name>.log`` (appended, one header per start), and the tail of it
is quoted in start-up and crash errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Iterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TextIO, cast

import anyio
import httpx
from anyio.abc import ObjectSendStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.shared.session import RequestResponder

from nexus_agent import __version__
from nexus_agent.mcp.config import HttpServerConfig, ServerConfig, StdioServerConfig
from nexus_agent.mcp.errors import ServerCrashedError, ServerStartError, SourceClosedError, ToolTimeoutError
from nexus_agent.mcp.source import ToolSource, call_listener
from nexus_agent.mcp.tools import ProgressCallback, ProgressUpdate, ToolInfo, ToolResult, diff_tools
from nexus_agent.paths import cache_dir

log = logging.getLogger(__name__)

_CLIENT_INFO = types.Implementation(name="nexus-agent", version=__version__)
_MAX_LOG_BYTES = 5 * 1024 * 1024  # rotate a server's stderr log past this size (one .1 backup)
_MAX_PAGES = 1000  # tools/list pages; a server that keeps returning cursors is broken, not large

# Errors that mean "the transport is gone", as opposed to "the server answered with an error".
_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    httpx.TransportError,
)


@dataclass(frozen=True)
class SourceOptions:
    """Knobs of one server connection (seconds)."""

    startup_timeout: float = 60.0  # handshake + first tools/list; spawning npx/uvx can be slow on 2 cores
    close_timeout: float = 10.0  # after this, the owner task is cancelled and the process group killed
    log_dir: Path | None = None  # where stderr logs go; default $NEXUS_HOME/logs


@dataclass(frozen=True)
class _Command:
    kind: Literal["relist", "restart", "stop"]
    generation: int = 0  # for "restart": the generation found dead, so stale requests are ignored


class _ConnectionLost(Exception):
    """Internal: the session died under a call."""


@dataclass
class _SentCall:
    """The JSON-RPC id of one call's ``tools/call`` request, once it went out (None before)."""

    request_id: types.RequestId | None = None


# Set in each call's own task; the write stream fills it in as that task sends its request.
_SENT_CALL: contextvars.ContextVar[_SentCall | None] = contextvars.ContextVar("nexus_mcp_sent_call", default=None)


class _RequestIdRecorder(ObjectSendStream[SessionMessage]):
    """The transport's write stream, noting the id of each call's ``tools/call`` request in its :class:`_SentCall`.

    The SDK (1.x) does not return request ids, and ``notifications/cancelled`` needs one. ``send`` runs in the
    task that sends the request, so the call's context variable says whose request it is.
    """

    def __init__(self, inner: ObjectSendStream[SessionMessage]) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage) -> None:
        sent, root = _SENT_CALL.get(), item.message.root
        if sent is not None and isinstance(root, types.JSONRPCRequest) and root.method == "tools/call":
            sent.request_id = root.id  # a call task sends one tools/call (the SDK may add a tools/list after it)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


class MCPServerSource(ToolSource):
    """One MCP server. ``config`` is a :class:`StdioServerConfig` or :class:`HttpServerConfig`."""

    def __init__(self, name: str, config: ServerConfig, options: SourceOptions | None = None) -> None:
        super().__init__(name)
        self.config = config
        self.options = options or SourceOptions()
        self._tools: list[ToolInfo] = []
        self._session: ClientSession | None = None
        self._dead = asyncio.Event()
        self._generation = 0  # increments on every successful (re)start
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()
        self._closing = False
        self._commands_tx, self._commands_rx = anyio.create_memory_object_stream[_Command](max_buffer_size=1000)
        self._log_path: Path | None = None
        self._log_offset = 0

    # ---- ToolSource -------------------------------------------------------------------------------------

    @property
    def tools(self) -> list[ToolInfo]:
        return list(self._tools)

    @property
    def restarts(self) -> int:
        """How many times the server was (successfully) started again after its first start."""
        return max(0, self._generation - 1)

    @property
    def log_path(self) -> Path | None:
        """The stderr log of a stdio server (``None`` for HTTP or before start)."""
        return self._log_path

    async def start(self) -> None:
        if self._task is not None:
            return
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._task = loop.create_task(self._owner(), name=f"mcp-server:{self.name}")
        self._task.add_done_callback(self._owner_done)
        try:
            await self._ready
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        task = self._task
        if task is None or self._closing:
            if task is not None:
                await asyncio.gather(asyncio.shield(task), return_exceptions=True)
            return
        self._closing = True
        self._commands_tx.send_nowait(_Command("stop"))
        try:
            await asyncio.wait_for(asyncio.shield(task), self.options.close_timeout)
        except TimeoutError:
            log.warning(
                "MCP server %r did not shut down within %gs; cancelling",
                self.name,
                self.options.close_timeout,
            )
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        except Exception:
            log.exception("MCP server %r: error while closing", self.name)

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        try:
            session, generation, dead = await self._current_session(None)
        except ServerStartError as exc:
            # It had died earlier (between calls) and would not come back.
            raise ServerCrashedError(
                self.name, f"MCP server {self.name!r} is down and could not be restarted: {exc.reason}"
            ) from exc
        try:
            return await self._attempt(session, dead, tool, arguments, timeout, on_progress)
        except _ConnectionLost as exc:
            first = f"{exc}{self._stderr_tail()}"  # read now: a restart starts a new section of the log
            log.warning("MCP server %r: connection lost during %r (%s); restarting it once", self.name, tool, exc)
        try:
            session, generation, dead = await self._current_session(generation)
        except ServerStartError as exc:
            raise ServerCrashedError(
                self.name,
                f"MCP server {self.name!r} crashed while running tool {tool!r} and could not be restarted: "
                f"{exc.reason}\n(first failure: {first})",
            ) from exc
        try:
            return await self._attempt(session, dead, tool, arguments, timeout, on_progress)
        except _ConnectionLost as second:
            raise ServerCrashedError(
                self.name,
                f"MCP server {self.name!r} crashed again after a restart while running tool {tool!r} "
                f"({second}); giving up on this call{self._stderr_tail()}",
            ) from None

    # ---- calls ------------------------------------------------------------------------------------------

    async def _current_session(self, failed_generation: int | None) -> tuple[ClientSession, int, asyncio.Event]:
        """The live session; (re)starts the server if there is none or it is ``failed_generation``."""
        async with self._lock:
            if self._closing or self._task is None:
                raise SourceClosedError(f"MCP server {self.name!r} is {'closed' if self._closing else 'not started'}")
            session = self._session
            if session is not None and self._generation != failed_generation:
                return session, self._generation, self._dead
            self._ready = asyncio.get_running_loop().create_future()
            self._commands_tx.send_nowait(_Command("restart", self._generation))
            await self._ready
            assert self._session is not None  # set by the owner before it resolves _ready
            return self._session, self._generation, self._dead

    async def _attempt(
        self,
        session: ClientSession,
        dead: asyncio.Event,
        tool: str,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
    ) -> ToolResult:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            update = ProgressUpdate(self.name, tool, progress, total, message)
            for cb in ([on_progress] if on_progress else []) + self._progress_listeners:
                await call_listener(cb, update, what=f"progress callback of {self.name}.{tool}")

        sent = _SentCall()

        async def run_call() -> types.CallToolResult:
            _SENT_CALL.set(sent)  # this task's context only
            args = dict(arguments) if arguments is not None else None
            return await session.call_tool(tool, args, progress_callback=report)

        call = asyncio.ensure_future(run_call())
        died = asyncio.ensure_future(dead.wait())
        try:
            await asyncio.wait({call, died}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
            if not call.done():
                call.cancel()
                if sent.request_id is not None and not dead.is_set():
                    await self._send_cancelled(session, sent.request_id, tool, timeout)
        if not call.done() or call.cancelled():
            if dead.is_set() or timeout is None:
                raise _ConnectionLost("the connection to the server was lost")
            raise ToolTimeoutError(self.name, tool, timeout)
        exc = call.exception()
        if exc is None:
            return self._to_result(tool, call.result())
        if _is_transport_loss(exc):
            raise _ConnectionLost(_describe(exc))
        if isinstance(exc, McpError):
            # A JSON-RPC error (unknown tool, invalid params, ...): the model reads it like a tool error.
            return ToolResult(
                self.name,
                tool,
                [{"type": "text", "text": f"MCP error {exc.error.code}: {exc.error.message}"}],
                is_error=True,
                error_code=exc.error.code,
            )
        if isinstance(exc, RuntimeError):
            # The SDK raises RuntimeError when structured output does not match the tool's outputSchema.
            return ToolResult(self.name, tool, [{"type": "text", "text": f"invalid tool result: {exc}"}], is_error=True)
        raise exc

    async def _send_cancelled(
        self, session: ClientSession, request_id: types.RequestId, tool: str, timeout: float | None
    ) -> None:
        """Tell the server to stop working on an abandoned call (MCP ``notifications/cancelled``).

        Without it a timed-out call keeps running server-side: a slow search or a long build would go on using
        the server's resources, and a write could still land after the user was told it timed out.
        """
        reason = f"client timeout after {timeout:g} s" if timeout is not None else "cancelled by the client"
        params = types.CancelledNotificationParams(requestId=request_id, reason=reason)
        note = types.CancelledNotification(params=params)
        try:
            with anyio.fail_after(self.options.close_timeout):
                await session.send_notification(types.ClientNotification(note))
        except Exception as exc:  # a dead pipe here is reported by the next call, not by this one
            log.warning("MCP server %r: could not cancel %r (request %s): %s", self.name, tool, request_id, exc)

    def _to_result(self, tool: str, result: types.CallToolResult) -> ToolResult:
        return ToolResult(
            server=self.name,
            tool=tool,
            content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
            is_error=bool(result.isError),
            structured=result.structuredContent,
        )

    # ---- the owner task ---------------------------------------------------------------------------------

    async def _owner(self) -> None:
        command = _Command("restart")
        while command.kind != "stop" and not self._closing:
            started = False  # the handshake succeeded: a later exception is the session dying, not a failed start
            served: _Command | None = None  # the command that ended the running session, if one did
            try:
                async with AsyncExitStack() as stack:
                    session = await self._open(stack)
                    tools = await self._handshake(session)
                    self._session, self._dead = session, asyncio.Event()
                    self._generation += 1
                    started = True
                    old, self._tools = self._tools, tools
                    self._resolve_ready(None)
                    if self._generation > 1:
                        await self._emit_if_changed(old, tools)
                    try:
                        command = served = await self._serve(session)
                    finally:
                        self._session = None
                        self._dead.set()
            except Exception as exc:
                self._session = None
                self._dead.set()
                if self._closing:
                    break
                if started:
                    # The running session died (a killed server's pipes raise BrokenResourceError in the SDK's
                    # task group, which cancels us) or failed while closing. That is not a failed start, so a
                    # caller waiting for a restart keeps waiting for the next start instead of getting this error.
                    log.info("MCP server %r: session ended: %s", self.name, _describe(exc))
                    command = served if served is not None else await self._next_control_command()
                    continue
                reason = _describe(exc) + self._stderr_tail()
                if not self._resolve_ready(ServerStartError(self.name, reason)):
                    log.warning("MCP server %r stopped: %s", self.name, reason)
                command = await self._next_control_command()

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        if isinstance(self.config, StdioServerConfig):
            errlog = stack.enter_context(self._open_log())
            params = StdioServerParameters(
                command=self.config.command,
                args=list(self.config.args),
                env=dict(self.config.env) or None,
                cwd=self.config.cwd,
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        else:
            assert isinstance(self.config, HttpServerConfig)
            # The SDK's defaults: 30 s for connect/write, 5 min read (a response stream may stay open).
            http = await stack.enter_async_context(
                httpx.AsyncClient(headers=dict(self.config.headers), timeout=httpx.Timeout(30.0, read=300.0))
            )
            read, write, _ = await stack.enter_async_context(streamable_http_client(self.config.url, http_client=http))
        # ClientSession (mcp 1.x) only sends on and closes its write stream, which the recorder forwards.
        recorded = cast("MemoryObjectSendStream[SessionMessage]", _RequestIdRecorder(write))
        return await stack.enter_async_context(
            ClientSession(read, recorded, message_handler=self._on_message, client_info=_CLIENT_INFO)
        )

    async def _handshake(self, session: ClientSession) -> list[ToolInfo]:
        # Only awaits go under the deadline: a cancel scope must not span the entry of the SDK's task groups.
        try:
            with anyio.fail_after(self.options.startup_timeout):
                await session.initialize()
                return await self._list_tools(session)
        except TimeoutError:
            raise TimeoutError(f"no answer to initialize/tools/list within {self.options.startup_timeout:g}s") from None

    async def _list_tools(self, session: ClientSession) -> list[ToolInfo]:
        tools: list[ToolInfo] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(self._to_info(t) for t in page.tools)
            cursor = page.nextCursor
            if not cursor:
                return tools
        raise RuntimeError(f"tools/list of {self.name!r} returned more than {_MAX_PAGES} pages")

    def _to_info(self, tool: types.Tool) -> ToolInfo:
        annotations = (
            tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) if tool.annotations else None
        )
        return ToolInfo(
            server=self.name,
            name=tool.name,
            description=tool.description or "",
            input_schema=tool.inputSchema,
            annotations=annotations,
            title=tool.title,
            output_schema=tool.outputSchema,
        )

    async def _serve(self, session: ClientSession) -> _Command:
        while True:
            command = await self._commands_rx.receive()
            if command.kind == "relist":
                await self._relist(session)
            elif command.kind == "restart" and command.generation != self._generation:
                continue  # a request about a session that is already gone
            else:
                return command

    async def _relist(self, session: ClientSession) -> None:
        try:
            with anyio.fail_after(self.options.startup_timeout):
                tools = await self._list_tools(session)
        except Exception as exc:
            # A dead session is found (and restarted) by the next call; the old list stays until then.
            log.warning("MCP server %r: re-listing tools after list_changed failed: %s", self.name, _describe(exc))
            return
        old, self._tools = self._tools, tools
        await self._emit_if_changed(old, tools)

    async def _emit_if_changed(self, old: list[ToolInfo], new: list[ToolInfo]) -> None:
        diff = diff_tools(self.name, old, new)
        if diff:
            await self._emit_tools_changed(diff)

    async def _next_control_command(self) -> _Command:
        """While the server is down: wait for a restart request or stop (re-list requests are moot)."""
        while True:
            command = await self._commands_rx.receive()
            if command.kind != "relist":
                return command

    async def _on_message(
        self,
        message: RequestResponder[types.ServerRequest, types.ClientResult] | types.ServerNotification | Exception,
    ) -> None:
        # Runs inside the session's receive loop: it must not await a request on this session (that would
        # wait for the very loop it blocks), so re-listing is handed to the owner task.
        if isinstance(message, Exception):
            log.warning("MCP server %r sent something unreadable: %s", self.name, message)
        elif isinstance(message, types.ServerNotification):
            root = message.root
            if isinstance(root, types.ToolListChangedNotification):
                # A full queue already holds re-list requests; one more would fetch the same list.
                with contextlib.suppress(anyio.WouldBlock):
                    self._commands_tx.send_nowait(_Command("relist"))
            elif isinstance(root, types.LoggingMessageNotification):
                log.debug("MCP server %r log [%s]: %s", self.name, root.params.level, root.params.data)

    def _resolve_ready(self, error: BaseException | None) -> bool:
        """Settle a pending start/restart; False if nobody was waiting."""
        fut = self._ready
        if fut is None or fut.done():
            return False
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)
        return True

    def _owner_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("MCP server %r: owner task failed", self.name, exc_info=task.exception())
        self._resolve_ready(SourceClosedError(f"MCP server {self.name!r} was closed"))

    # ---- stderr log -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _open_log(self) -> Iterator[TextIO]:
        log_dir = self.options.log_dir or cache_dir("logs")
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / f"mcp-{self.name}.log"
        if path.exists() and path.stat().st_size > _MAX_LOG_BYTES:
            path.replace(path.with_suffix(".log.1"))
        with open(path, "a", encoding="utf-8") as f:
            assert isinstance(self.config, StdioServerConfig)
            f.write(
                f"=== {datetime.now().isoformat(timespec='seconds')} start: "
                f"{self.config.command} {' '.join(self.config.args)}\n"
            )
            f.flush()
            self._log_path, self._log_offset = path, f.tell()
            yield f

    def _stderr_tail(self, max_lines: int = 12) -> str:
        """The last lines the current/last process wrote to stderr, formatted for an error message."""
        if self._log_path is None:
            return ""
        try:
            with open(self._log_path, "rb") as f:
                f.seek(self._log_offset)
                data = f.read()[-4096:]
        except OSError:
            return ""
        lines = data.decode("utf-8", errors="replace").strip().splitlines()[-max_lines:]
        if not lines:
            return f" (server stderr was empty; log: {self._log_path})"
        body = "\n  ".join(lines)
        return f"\nlast lines of server stderr ({self._log_path}):\n  {body}"


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _is_transport_loss(exc: BaseException) -> bool:
    for leaf in _leaves(exc):
        if isinstance(leaf, McpError):
            # CONNECTION_CLOSED from the session; 32600 "Session terminated" from the HTTP transport on a 404.
            if leaf.error.code == types.CONNECTION_CLOSED or "terminated" in leaf.error.message.lower():
                return True
        elif isinstance(leaf, _TRANSPORT_ERRORS):
            return True
    return False


def _describe(exc: BaseException) -> str:
    """A one-line reason for an error that may be an ExceptionGroup from the SDK's task groups."""
    parts: list[str] = []
    for leaf in _leaves(exc):
        if isinstance(leaf, McpError) and leaf.error.code == types.CONNECTION_CLOSED:
            text = "the server closed the connection (did the process exit?)"
        elif isinstance(leaf, FileNotFoundError):
            text = f"command not found: {leaf.filename or leaf}"
        elif isinstance(leaf, httpx.ConnectError):
            text = f"cannot connect: {leaf}"
        else:
            text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
        if text not in parts:
            parts.append(text)
    return "; ".join(parts) or type(exc).__name__
