"""MCP wiring: a low-level ``mcp`` Server that lists the vendored tools and dispatches calls to handlers.

``GitHubSandboxServer.call`` is the one place a tool call happens: validate the arguments against the
tool's inputSchema, look the handler up in the registry, run it inside one database transaction and turn
its value (or its ToolError) into a ``CallToolResult``. Transports: stdio (default) and streamable HTTP.

Both protocol eras are served on either transport, as the SDK's low-level ``Server`` does: the client's first
message decides (``initialize`` for the 2025 revisions, per-request envelopes after ``server/discover`` for
2026-07-28).
The tool list never changes, so the server declares no ``listChanged``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from nexus_agent import __version__
from nexus_agent.sandbox.github.context import DB_NAME, Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import GitError
from nexus_agent.sandbox.github.handlers import Handler, registry
from nexus_agent.sandbox.github.handlers.common import Blocks
from nexus_agent.sandbox.github.seed import SEED_VERSION, seed
from nexus_agent.sandbox.github.store import NotFound
from nexus_agent.sandbox.github.tools import ToolCatalog
from nexus_agent.sandbox.github.world import World, seed_world, world_hash

log = logging.getLogger(__name__)

SERVER_NAME = "nexus-github-sandbox"
INSTRUCTIONS = (
    "Offline stand-in for the GitHub MCP server. Same tools and arguments; data is a local demo "
    "organisation 'acme' (repositories acme/api, acme/web, acme/docs) and the user 'octo-dev'."
)


def unsupported_message(name: str) -> str:
    return f"{name} is not supported in the Nexus offline GitHub sandbox"


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def to_result(value: object) -> types.CallToolResult:
    """Handler value -> MCP result: ``str`` as text, ``Blocks`` as is, anything else as compact JSON."""
    if isinstance(value, Blocks):
        return types.CallToolResult(content=list(value.items), is_error=False)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=False)


def open_sandbox(data_dir: Path, *, reset: bool = False, world: World | None = None) -> Sandbox:
    """Open the sandbox in ``data_dir``, seeding it on first use (or after ``reset``): with ``world`` when given,
    else with the acme demo data.

    A directory already seeded with other data (another world, or acme when a world is asked for, or the reverse)
    is refused rather than served: ``meta.world`` records which world seeded it (absent for acme).
    """
    if reset and data_dir.exists():
        leftovers = {p.name for p in data_dir.iterdir()} - {DB_NAME, "repos", f"{DB_NAME}-journal"}
        if leftovers:
            # Refuse to wipe a directory that is not (only) a sandbox: --data-dir may be mistyped.
            raise RuntimeError(f"refusing to reset {data_dir}: it contains non-sandbox files {sorted(leftovers)}")
        shutil.rmtree(data_dir)
    sb = Sandbox.open(data_dir)
    wanted = None if world is None else world_hash(world)
    seeded = sb.store.get_meta("seed_version")
    if seeded is None:
        # A seed that failed half-way rolled its database transaction back but may have left git
        # repositories behind; start those from scratch too so the seeded SHAs stay deterministic.
        shutil.rmtree(data_dir / "repos", ignore_errors=True)
        try:
            if world is None:
                seed(sb)
            else:
                seed_world(sb, world)
        except BaseException:
            sb.close()
            raise
        return sb
    have = sb.store.get_meta("world")
    problem = None
    if seeded != SEED_VERSION:
        problem = f"{data_dir} holds a sandbox from another seed version; start with --reset"
    elif have != wanted:
        held = "the acme demo data" if have is None else f"another world ({have})"
        asked = "the acme demo data" if wanted is None else f"this world ({wanted})"
        problem = (
            f"{data_dir} holds a sandbox seeded with {held}, not {asked}; "
            "start with --reset to reseed it, or use another --data-dir"
        )
    if problem is not None:
        sb.close()
        raise RuntimeError(problem)
    return sb


def instructions(sb: Sandbox) -> str:
    """The server's instructions: the acme text, or what a world holds (its repositories and who "me" is)."""
    if sb.store.get_meta("world") is None:
        return INSTRUCTIONS
    repos = ", ".join(r.full_name for r in sb.store.repos()) or "none"
    return (
        "Offline stand-in for the GitHub MCP server. Same tools and arguments; data is a seeded world: "
        f"the authenticated user is '{sb.me}', repositories: {repos}."
    )


class GitHubSandboxServer:
    """The sandbox behind an MCP ``Server``; one instance serves one data directory."""

    def __init__(self, sandbox: Sandbox, catalog: ToolCatalog | None = None) -> None:
        self.sandbox = sandbox
        self.catalog = catalog or ToolCatalog.load()
        self.handlers: dict[str, Handler] = registry()
        extra = set(self.handlers) - set(self.catalog.definitions)
        if extra:
            raise ValueError(f"handlers for tools that are not in the catalog: {sorted(extra)}")
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            instructions=instructions(sandbox),
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
        )

    @property
    def supported(self) -> list[str]:
        return sorted(self.handlers)

    async def _on_list_tools(
        self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.catalog.tools)

    async def _on_call_tool(
        self, _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in self.catalog.definitions:
            # As the spec's example answers an unknown tool: a JSON-RPC error, not a tool result.
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        # Validation happens in call() so the message can name the argument.
        try:
            return self.call(params.name, params.arguments or {})
        except Exception as exc:
            # A bug in a handler. SDK 2.x would answer a JSON-RPC error whose code depends on the exception type (a
            # pydantic error reads "Invalid request parameters"); as 1.x did, the model gets an error result instead.
            log.exception("sandbox tool %s failed", params.name)
            return _error(f"internal error in the sandbox while running {params.name}: {type(exc).__name__}: {exc}")

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run tool ``name`` synchronously and return its MCP result (errors as ``isError`` results)."""
        if name not in self.catalog.definitions:
            return _error(f"unknown tool: {name}")
        problem = self.catalog.validate(name, arguments)
        if problem is not None:
            return _error(problem)
        handler = self.handlers.get(name)
        if handler is None:
            return _error(unsupported_message(name))
        try:
            with self.sandbox.store.transaction():
                return to_result(handler(self.sandbox, arguments))
        except ToolError as e:
            return _error(str(e))
        except NotFound as e:
            return _error(f"404 Not Found: {e}")
        except GitError as e:
            return _error(f"{name} failed: {e}")

    # -- transports -----------------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def run_http(self, host: str, port: int) -> None:
        """Serve streamable HTTP at ``http://host:port/mcp`` (and ``/mcp/``, without a redirect) until cancelled."""
        import uvicorn
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
        from starlette.applications import Starlette
        from starlette.routing import Route

        # Both eras, as the SDK's own app serves them; Host/Origin checked against DNS rebinding (see http_security).
        manager = StreamableHTTPSessionManager(app=self.server, security_settings=http_security(host))
        endpoint = StreamableHTTPASGIApp(manager)

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            async with manager.run():
                yield

        # Two routes rather than a Mount: a Mount answers POST /mcp with a 307 to /mcp/, which a client that does not
        # follow redirects on POST cannot use.
        routes = [Route(path, endpoint=endpoint) for path in ("/mcp", "/mcp/")]
        app = Starlette(routes=routes, lifespan=lifespan)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def http_security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection: only loopback ``Host`` and ``Origin`` headers (and the bound host's) are served.

    A web page on another origin that resolves its own name to 127.0.0.1 gets 403 (bad Origin) or 421 (bad Host),
    as the SDK's ``streamable_http_app()`` does for a local server. Binding a specific non-loopback address adds it.
    """
    hosts = list(_LOOPBACK)
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if bound not in hosts and bound not in ("0.0.0.0", "[::]"):
        hosts.append(bound)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")],
    )
