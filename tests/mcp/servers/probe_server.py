"""A small stdio MCP server (official SDK, low-level API) for the failure and list_changed tests.

Tools:
  ``pid``     -> this process's pid as text (so a test can kill exactly this server);
  ``sleep``   {seconds} -> sleeps, then answers "slept";
  ``cancelled`` -> how many ``sleep`` calls the client cancelled (``notifications/cancelled``), as text;
  ``fail``    -> raises, which the SDK turns into ``isError: true``;
  ``crash``   -> writes a line to stderr and exits with status 3 (no answer);
  ``mutate``  -> changes the tool list (drops ``alpha``, adds ``gamma``, rewords ``beta``), then sends
                 ``notifications/tools/list_changed``;
  ``alpha``, ``beta`` -> answer their own name.

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
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

mutated = False
cancelled_sleeps = 0


def tool(name: str, description: str, properties: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(
        name=name, description=description, inputSchema={"type": "object", "properties": properties or {}}
    )


def current_tools() -> list[types.Tool]:
    tools = [
        tool("pid", "Return the server's process id."),
        tool("sleep", "Sleep for a while.", {"seconds": {"type": "number"}}),
        tool("cancelled", "How many sleep calls were cancelled by the client."),
        tool("fail", "Always report an error."),
        tool("crash", "Exit the server process at once."),
        tool("mutate", "Change the tool list and notify the client."),
    ]
    if mutated:
        tools += [tool("beta", "Beta, reworded."), tool("gamma", "Gamma, added by mutate.")]
    else:
        tools += [tool("alpha", "Alpha."), tool("beta", "Beta.")]
    return tools


server: Server[Any, Any] = Server("probe")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return current_tools()


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
    global mutated, cancelled_sleeps
    if name == "pid":
        return [types.TextContent(type="text", text=str(os.getpid()))]
    if name == "sleep":
        try:
            await anyio.sleep(float(arguments.get("seconds", 1)))
        except anyio.get_cancelled_exc_class():
            cancelled_sleeps += 1
            raise
        return [types.TextContent(type="text", text="slept")]
    if name == "cancelled":
        return [types.TextContent(type="text", text=str(cancelled_sleeps))]
    if name == "fail":
        raise ValueError("probe: this tool always fails")
    if name == "crash":
        sys.stderr.write("probe: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "mutate":
        mutated = True
        await server.request_context.session.send_tool_list_changed()
        return [types.TextContent(type="text", text="mutated")]
    if name in {t.name for t in current_tools()}:
        return [types.TextContent(type="text", text=name)]
    raise ValueError(f"unknown tool {name}")


async def main() -> None:
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--start-once", type=Path, default=None)
    args = ap.parse_args()
    if args.start_once is not None:
        if args.start_once.exists():
            sys.stderr.write("probe: refusing to start a second time\n")
            sys.exit(4)
        args.start_once.write_text("started")
    anyio.run(main)
