"""``MCPServerSource``: one MCP server (stdio or streamable HTTP) behind the :class:`ToolSource` interface.

Protocol eras. The SDK's :class:`mcp.Client` negotiates the revision: by default (``protocol: "auto"``) it probes
``server/discover`` at 2026-07-28 and falls back to the ``initialize`` handshake of the 2025 revisions when the
server does not answer it. Tool-list changes reach the router under either era: a 2025-era server sends
``notifications/tools/list_changed`` on its standing stream; on a 2026-era connection, which has no standing
stream, the source opens a ``subscriptions/listen`` stream for ``tools_list_changed`` when the server declares
``tools.listChanged``. Either way the owner re-lists and emits the difference.

Lifetimes. The SDK's context managers (the transport and ``Client``) hold anyio task groups and cancel scopes,
which must be entered and exited by the same task. So each source owns one long-lived asyncio task, the
*owner*, which enters them in an ``AsyncExitStack``, negotiates, lists the tools and then serves control
commands (re-list, restart, stop) from a queue until told to stop. Tool calls do not go through the owner: the
SDK supports concurrent requests from any task on the same loop, so each call runs ``client.call_tool`` in a
task of its own and races it against the session's "dead" event and the per-call timeout. An abandoned call
(timed out or cancelled) makes the SDK send ``notifications/cancelled`` itself. Nothing here is tied to the task
that called :meth:`start`, so start and close may come from different tasks (e.g. two ``run_coroutine_threadsafe``
calls from a synchronous wrapper).

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
import logging
from collections.abc import Iterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TextIO

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from nexus_agent import __version__
from nexus_agent.mcp.auth import AuthOptions, build_auth
from nexus_agent.mcp.config import HttpServerConfig, ServerConfig, StdioServerConfig
from nexus_agent.mcp.elicitation import ElicitationHandler, answer_elicitation
from nexus_agent.mcp.errors import (
    AuthRequiredError,
    ServerCrashedError,
    ServerStartError,
    SourceClosedError,
    ToolTimeoutError,
)
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
    httpx2.TransportError,
)

# The SDK bounds every request by the client's read timeout unless a call names its own. Ours is the start-up
# deadline (it bounds discover/initialize and tools/list); a tool call has its own deadline, raced outside the
# SDK, so it asks the SDK for none (a day: the SDK takes a float, and None means "the client's").
_NO_DEADLINE = 86_400.0
# After a listen stream drops without the server's graceful close, wait this long before listening again.
_RELISTEN_DELAY = 1.0


@dataclass(frozen=True)
class SourceOptions:
    """Knobs of one server connection (seconds)."""

    startup_timeout: float = 60.0  # handshake + first tools/list; spawning npx/uvx can be slow on 2 cores
    close_timeout: float = 10.0  # after this, the owner task is cancelled and the process group killed
    log_dir: Path | None = None  # where stderr logs go; default $NEXUS_HOME/logs
    # Overrides every server's config ``protocol`` when set ("auto", "legacy" or a 2026-era revision).
    protocol: str | None = None
    # How an HTTP server's OAuth goes (login mode, where tokens live, the config file the login command names).
    auth: AuthOptions = field(default_factory=AuthOptions)
    # Answers a server's elicitation/create (None: the server is told this client does not support elicitation).
    elicitation: ElicitationHandler | None = None


@dataclass(frozen=True)
class _Command:
    kind: Literal["relist", "restart", "stop"]
    generation: int = 0  # for "restart": the generation found dead, so stale requests are ignored


class _ConnectionLost(Exception):
    """Internal: the session died under a call."""


class MCPServerSource(ToolSource):
    """One MCP server. ``config`` is a :class:`StdioServerConfig` or :class:`HttpServerConfig`."""

    def __init__(self, name: str, config: ServerConfig, options: SourceOptions | None = None) -> None:
        super().__init__(name)
        self.config = config
        self.options = options or SourceOptions()
        self._tools: list[ToolInfo] = []
        self._session: Client | None = None
        self._dead = asyncio.Event()
        self._generation = 0  # increments on every successful (re)start
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()
        self._closing = False
        self._commands_tx, self._commands_rx = anyio.create_memory_object_stream[_Command](max_buffer_size=1000)
        self._log_path: Path | None = None
        self._log_offset = 0
        self._relist_pending = False  # a "relist" command is queued and has not started yet

    # ---- ToolSource -------------------------------------------------------------------------------------

    @property
    def tools(self) -> list[ToolInfo]:
        return list(self._tools)

    @property
    def restarts(self) -> int:
        """How many times the server was (successfully) started again after its first start."""
        return max(0, self._generation - 1)

    @property
    def protocol_version(self) -> str | None:
        """The revision negotiated with the running server (``"2026-07-28"``, ``"2025-11-25"``, ...); None when down."""
        session = self._session
        return session.protocol_version if session is not None else None

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

    async def _current_session(self, failed_generation: int | None) -> tuple[Client, int, asyncio.Event]:
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
        session: Client,
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

        async def run_call() -> types.CallToolResult:
            args = dict(arguments) if arguments is not None else None
            return await session.call_tool(tool, args, read_timeout_seconds=_NO_DEADLINE, progress_callback=report)

        call = asyncio.ensure_future(run_call())
        died = asyncio.ensure_future(dead.wait())
        try:
            await asyncio.wait({call, died}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
            if not call.done():
                # Abandoning the request makes the SDK send notifications/cancelled, so a timed-out call does not
                # keep running server-side (a slow search, or a write landing after the user was told it failed).
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
        if not call.done() or call.cancelled():
            if dead.is_set() or timeout is None:
                raise _ConnectionLost("the connection to the server was lost")
            raise ToolTimeoutError(self.name, tool, timeout)
        exc = call.exception()
        if exc is None:
            return self._to_result(tool, call.result())
        if _is_transport_loss(exc):
            raise _ConnectionLost(_describe(exc))
        if isinstance(exc, MCPError):
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

    def _to_result(self, tool: str, result: types.CallToolResult) -> ToolResult:
        return ToolResult(
            server=self.name,
            tool=tool,
            content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
            is_error=bool(result.is_error),
            structured=result.structured_content,
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
                    tools = await self._handshake(session, stack)
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
                auth = _auth_error(exc)
                reason = str(auth) if auth is not None else _describe(exc) + self._stderr_tail()
                if not self._resolve_ready(auth or ServerStartError(self.name, reason)):
                    log.warning("MCP server %r stopped: %s", self.name, reason)
                command = await self._next_control_command()

    def _protocol(self) -> str:
        return self.options.protocol or self.config.protocol

    async def _open(self, stack: AsyncExitStack) -> Client:
        """Start the transport and negotiate the protocol revision (``Client.__aenter__`` does both)."""
        if isinstance(self.config, StdioServerConfig):
            errlog = stack.enter_context(self._open_log())
            params = StdioServerParameters(
                command=self.config.command,
                args=list(self.config.args),
                env=dict(self.config.env) or None,
                cwd=self.config.cwd,
            )
            transport = stdio_client(params, errlog=errlog)
        else:
            assert isinstance(self.config, HttpServerConfig)
            # OAuth (or, with a configured Authorization header, a gate that turns a 401 into AuthRequiredError).
            auth, release = build_auth(self.name, self.config, self.options.auth)
            stack.callback(release)
            # The SDK's defaults: 30 s for connect/write, 5 min read (a response stream may stay open). Headers
            # (a bearer token for a remote server) ride on every request, the 2026 revision's mcp-* ones included.
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(self.config.headers),
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    follow_redirects=True,
                    auth=auth,
                )
            )
            transport = streamable_http_client(self.config.url, http_client=http)
        client = Client(
            transport,
            mode=self._protocol(),
            # Bounds each start-up request (discover or initialize, tools/list pages); calls name their own.
            read_timeout_seconds=self.options.startup_timeout,
            message_handler=self._on_message,
            client_info=_CLIENT_INFO,
            elicitation_callback=self._on_elicitation if self.options.elicitation is not None else None,
            cache=None,  # this source keeps the tool list itself, and re-lists only on a change notice
        )
        # No cancel scope around this: the SDK's task groups entered here outlive the call (see _handshake).
        return await stack.enter_async_context(client)

    async def _handshake(self, session: Client, stack: AsyncExitStack) -> list[ToolInfo]:
        """Subscribe to tool-list changes (a 2026-era connection) and list the tools, within the start-up deadline."""
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS and _declares_list_changed(session):
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)  # runs first on unwind: the listener ends before the session
            # Listen before listing, so a change between the two is not lost.
            await tg.start(self._listen_for_changes, session)
        # Only awaits go under the deadline: a cancel scope must not span the entry of the SDK's task groups.
        try:
            with anyio.fail_after(self.options.startup_timeout):
                return await self._list_tools(session)
        except TimeoutError:
            raise TimeoutError(f"no answer to tools/list within {self.options.startup_timeout:g}s") from None

    async def _listen_for_changes(self, session: Client, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """``subscriptions/listen`` for ``tools_list_changed``: the 2026 revision's way to hear of a new tool list.

        Reports started (so the first ``tools/list`` may go out) once the first stream is acknowledged or has failed.
        There is no replay, so after a dropped stream it listens again and re-lists. Failures end this task
        quietly: a dead session is found and restarted by the next call, as for a 2025-era server.
        """
        started = False

        def start() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        while True:
            try:
                async with session.listen(tools_list_changed=True) as subscription:
                    start()
                    async for _event in subscription:
                        self._request_relist()
                break  # the server closed the stream on purpose (it is shutting down)
            except SubscriptionLost as exc:
                log.info("MCP server %r: tool-change stream lost (%s); listening again", self.name, exc)
            except (MCPError, ListenNotSupportedError, TimeoutError) as exc:
                log.warning(
                    "MCP server %r declares tools.listChanged but subscriptions/listen failed (%s); changes to its "
                    "tool list will not be seen until it restarts",
                    self.name,
                    _describe(exc),
                )
                break
            except Exception as exc:
                log.info("MCP server %r: tool-change stream ended: %s", self.name, _describe(exc))
                break
            start()
            await anyio.sleep(_RELISTEN_DELAY)
            self._request_relist()  # changes made while no stream was open
        start()  # a failed first listen must not hold up the first tools/list

    async def _list_tools(self, session: Client) -> list[ToolInfo]:
        tools: list[ToolInfo] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await session.list_tools(cursor=cursor)
            tools.extend(self._to_info(t) for t in page.tools)
            cursor = page.next_cursor
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
            input_schema=tool.input_schema,
            annotations=annotations,
            title=tool.title,
            output_schema=tool.output_schema,
            meta=tool.meta,
        )

    async def _serve(self, session: Client) -> _Command:
        while True:
            command = await self._commands_rx.receive()
            if command.kind == "relist":
                await self._relist(session)
            elif command.kind == "restart" and command.generation != self._generation:
                continue  # a request about a session that is already gone
            else:
                return command

    def _request_relist(self) -> None:
        """Ask the owner to re-list; one pending request covers any number of notices that arrive before it runs."""
        if self._relist_pending:
            return
        with contextlib.suppress(anyio.WouldBlock):
            self._commands_tx.send_nowait(_Command("relist"))
            self._relist_pending = True

    async def _relist(self, session: Client) -> None:
        self._relist_pending = False  # a notice from now on may describe a list newer than the one fetched here
        try:
            with anyio.fail_after(self.options.startup_timeout):
                tools = await self._list_tools(session)
        except Exception as exc:
            # A dead session is found (and restarted) by the next call; the old list stays until then.
            log.warning("MCP server %r: re-listing tools after a change notice failed: %s", self.name, _describe(exc))
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
            if command.kind == "relist":
                self._relist_pending = False
            else:
                return command

    async def _on_message(self, message: IncomingMessage) -> None:
        # Runs inside the session's receive loop: it must not await a request on this session (that would
        # wait for the very loop it blocks), so re-listing is handed to the owner task.
        if isinstance(message, Exception):
            log.warning("MCP server %r sent something unreadable: %s", self.name, message)
        elif isinstance(message, types.ToolListChangedNotification):
            self._request_relist()  # a 2025-era server's notice on its standing stream
        elif isinstance(message, types.LoggingMessageNotification):
            log.debug("MCP server %r log [%s]: %s", self.name, message.params.level, message.params.data)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        handler = self.options.elicitation
        assert handler is not None  # the callback is only installed with a handler
        return await answer_elicitation(self.name, params, handler)

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


def _declares_list_changed(session: Client) -> bool:
    tools = session.server_capabilities.tools
    return bool(tools is not None and tools.list_changed)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _auth_error(exc: BaseException) -> AuthRequiredError | None:
    """The authorization error inside an exception (group) from the SDK's task groups, if there is one."""
    return next((leaf for leaf in _leaves(exc) if isinstance(leaf, AuthRequiredError)), None)


def _is_transport_loss(exc: BaseException) -> bool:
    for leaf in _leaves(exc):
        if isinstance(leaf, MCPError):
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
        if isinstance(leaf, MCPError) and leaf.error.code == types.CONNECTION_CLOSED:
            text = "the server closed the connection (did the process exit?)"
        elif isinstance(leaf, FileNotFoundError):
            text = f"command not found: {leaf.filename or leaf}"
        elif isinstance(leaf, httpx2.ConnectError):
            text = f"cannot connect: {leaf}"
        else:
            text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
        if text not in parts:
            parts.append(text)
    return "; ".join(parts) or type(exc).__name__
