"""A small stdio MCP server (official SDK, low-level API) for the failure and list_changed tests.

Tools:
  ``pid``     -> this process's pid as text (so a test can kill exactly this server);
  ``sleep``   {seconds} -> sleeps, then answers "slept";
  ``cancelled`` -> how many ``sleep`` calls the client cancelled (``notifications/cancelled``), as text;
  ``fail``    -> an ``isError: true`` result (a tool reporting its own failure);
  ``crash``   -> writes a line to stderr and exits with status 3 (no answer);
  ``mutate``  -> changes the tool list (drops ``alpha``, adds ``gamma``, rewords ``beta``), then tells the client
                 the way its era does: ``notifications/tools/list_changed`` on a 2025-era connection, an event
                 on the ``subscriptions/listen`` streams of a 2026-era one;
  ``garble``  -> writes a line that is not JSON-RPC to stdout (stdio only), then answers "garbled";
  ``lie``     -> declares an ``outputSchema`` (``{"n": integer}``) and returns structured content that breaks it;
  ``alpha``, ``beta`` -> answer their own name.

``--hang``: never read a request (a server wedged at start).

``--http PORT``: serve streamable HTTP at ``http://127.0.0.1:PORT/mcp`` instead of stdio (both eras, as on stdio).

``--start-once FILE``: refuse to start (stderr line, exit 4) when FILE exists, else create it; models a server
that comes up once and then cannot be restarted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

mutated = False
cancelled_sleeps = 0
bus = InMemorySubscriptionBus()


def tool(name: str, description: str, properties: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(
        name=name, description=description, input_schema={"type": "object", "properties": properties or {}}
    )


def current_tools() -> list[types.Tool]:
    tools = [
        tool("pid", "Return the server's process id."),
        tool("sleep", "Sleep for a while.", {"seconds": {"type": "number"}}),
        tool("cancelled", "How many sleep calls were cancelled by the client."),
        tool("fail", "Always report an error."),
        tool("crash", "Exit the server process at once."),
        tool("mutate", "Change the tool list and notify the client."),
        tool("garble", "Write a line that is not JSON-RPC to stdout, then answer."),
        types.Tool(
            name="lie",
            description="Return structured content that breaks the declared output schema.",
            input_schema={"type": "object", "properties": {}},
            output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        ),
    ]
    if mutated:
        tools += [tool("beta", "Beta, reworded."), tool("gamma", "Gamma, added by mutate.")]
    else:
        tools += [tool("alpha", "Alpha."), tool("beta", "Beta.")]
    return tools


def text(value: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)


async def list_tools(
    _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=current_tools())


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    global mutated, cancelled_sleeps
    name, arguments = params.name, params.arguments or {}
    if name == "pid":
        return text(str(os.getpid()))
    if name == "sleep":
        try:
            await anyio.sleep(float(arguments.get("seconds", 1)))
        except anyio.get_cancelled_exc_class():
            cancelled_sleeps += 1
            raise
        return text("slept")
    if name == "cancelled":
        return text(str(cancelled_sleeps))
    if name == "fail":
        return text("probe: this tool always fails", error=True)
    if name == "crash":
        sys.stderr.write("probe: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "mutate":
        mutated = True
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()
        return text("mutated")
    if name == "garble":
        sys.stdout.write("this is not json-rpc\n")
        sys.stdout.flush()
        return text("garbled")
    if name == "lie":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="n is a word")], structured_content={"n": "seven"}
        )
    if name in {t.name for t in current_tools()}:
        return text(name)
    return text(f"unknown tool {name}", error=True)


server: Server[Any] = Server(
    "probe", on_list_tools=list_tools, on_call_tool=call_tool, on_subscriptions_listen=ListenHandler(bus)
)


async def main(http_port: int | None, hang: bool) -> None:
    if hang:
        await anyio.sleep_forever()
    if http_port is not None:
        import uvicorn

        app = server.streamable_http_app()
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=http_port, log_level="warning")).serve()
        return
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--start-once", type=Path, default=None)
    ap.add_argument("--http", type=int, default=None, metavar="PORT")
    ap.add_argument("--hang", action="store_true")
    args = ap.parse_args()
    if args.start_once is not None:
        if args.start_once.exists():
            sys.stderr.write("probe: refusing to start a second time\n")
            sys.exit(4)
        args.start_once.write_text("started")
    anyio.run(main, args.http, args.hang)
