"""An HTTP MCP server behind a bearer token, in-process, for the authorization tests.

``/mcp`` answers 401 with a ``WWW-Authenticate`` challenge unless the request carries ``Bearer <access token>``;
behind it is a low-level SDK server with one tool, ``whoami``. ``POST /token`` answers a ``refresh_token`` grant
with a new access token (the old refresh token is kept), so a stored expired token can be refreshed. No metadata is
published (``/.well-known/*`` is 404), so with no token the OAuth flow cannot start: the client must say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class LockedServer:
    """Start with ``with LockedServer() as srv:``; ``srv.url`` is the MCP endpoint, ``srv.seen`` the JSON-RPC methods
    (or "GET"/"DELETE") that reached ``/mcp``, refused or not."""

    def __init__(self, access_token: str = "access-0123456789", refresh_token: str = "refresh-9876543210") -> None:
        self.access_token = access_token
        self.refresh_token = refresh_token
        self.seen: list[str] = []
        self.refreshes = 0
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.challenge = 'Bearer realm="locked", scope="repo read:user", error="invalid_token"'
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- the app ---------------------------------------------------------------------------------------------

    def _app(self) -> ASGIApp:
        async def whoami(_ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(type="text", text="octo-dev")])

        async def tools(
            _ctx: ServerRequestContext[Any], _p: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[types.Tool(name="whoami", description="Who is logged in.", input_schema={"type": "object"})]
            )

        async def token(request: Request) -> Response:
            form = await request.form()
            if form.get("grant_type") == "refresh_token" and form.get("refresh_token") == self.refresh_token:
                self.refreshes += 1
                return JSONResponse({"access_token": self.access_token, "token_type": "Bearer", "expires_in": 3600})
            return JSONResponse({"error": "invalid_grant"}, status_code=400)

        mcp = Server("locked", on_list_tools=tools, on_call_tool=whoami)
        inner = mcp.streamable_http_app(custom_starlette_routes=[Route("/token", token, methods=["POST"])])

        async def gate(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http" or scope["path"] != "/mcp":
                await inner(scope, receive, send)
                return
            request = Request(scope, receive)
            body = await request.body()
            method = request.method
            if method == "POST":
                with contextlib.suppress(ValueError, AttributeError):
                    method = str((await request.json()).get("method", "?"))
            self.seen.append(method)
            if request.headers.get("authorization") != f"Bearer {self.access_token}":
                response = Response("unauthorized", status_code=401, headers={"WWW-Authenticate": self.challenge})
                await response(scope, receive, send)
                return
            sent = False

            async def replay() -> Message:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            await inner(scope, replay, send)

        return gate

    # -- lifetime ----------------------------------------------------------------------------------------------

    def __enter__(self) -> LockedServer:
        config = uvicorn.Config(self._app(), host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve()), daemon=True)  # type: ignore[union-attr]
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the locked test server did not start")
            time.sleep(0.05)  # readiness polling, not ordering
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=30)


@contextlib.contextmanager
def locked_server(**kwargs: str) -> Iterator[LockedServer]:
    with LockedServer(**kwargs) as srv:
        yield srv
