"""The Nexus Agent client as the MCP conformance suite drives it: ``conformance_client.py [--protocol MODE] URL``.

``npx @modelcontextprotocol/conformance client --command "python conformance_client.py --protocol auto" --scenario X``
appends the scenario server's URL and sets ``MCP_CONFORMANCE_SCENARIO`` (and, for some, ``MCP_CONFORMANCE_CONTEXT``,
a JSON object with e.g. a pre-registered client's id and secret). The client is the project's own path, as a user's
config takes it: ``parse_config`` → ``MultiServerClient`` → ``MCPServerSource``; OAuth is headless (the scenarios'
authorization servers approve without a person) and tokens go to ``$NEXUS_HOME/auth``. Elicitations are accepted
with the requested defaults. Every tool the server lists is called once, with arguments made from its schema.

Logging goes to stderr (or ``--log FILE``) at DEBUG, so a test can check that no token appears in it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from typing import Any

from nexus_agent.mcp import MultiServerClient, SourceOptions, parse_config
from nexus_agent.mcp.elicitation import ElicitationReply, ElicitationRequest


async def accept_defaults(request: ElicitationRequest) -> ElicitationReply:
    print(f"elicitation from {request.server}: {request.message}", file=sys.stderr)
    return ElicitationReply("accept", {})


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    samples = {"number": 1, "integer": 1, "boolean": True, "string": "x", "array": [], "object": {}}
    props = schema.get("properties") or {}
    return {name: samples.get(str(p.get("type")), "x") for name, p in props.items() if isinstance(p, dict)}


async def main(url: str, protocol: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    oauth: dict[str, Any] = {"headless": True}
    if context.get("client_id"):
        oauth["clientId"] = context["client_id"]
    if context.get("client_secret"):
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        oauth["clientSecretEnv"] = "CONFORMANCE_CLIENT_SECRET"
    if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "auth/client-credentials-basic":
        oauth["grantType"] = "client_credentials"  # a machine-to-machine server entry, as a user would write it
    config = parse_config(
        {"mcpServers": {"conformance": {"url": url, "protocol": protocol, "oauth": oauth}}}, source="conformance"
    )
    options = SourceOptions(startup_timeout=20.0, elicitation=accept_defaults)
    async with MultiServerClient.from_config(config, options=options, default_timeout=20.0) as hub:
        for tool in hub.tools:
            result = await hub.call_tool(tool.qualified_name, sample_arguments(tool.input_schema))
            print(f"{tool.name}: error={result.is_error} {json.dumps(result.content)[:200]}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocol", default="auto", choices=["auto", "legacy"])
    ap.add_argument("--log", default=None, help="append the DEBUG log here instead of stderr")
    ap.add_argument("url")
    args = ap.parse_args()
    fmt = "%(levelname)s %(name)s: %(message)s"
    if args.log:
        logging.basicConfig(level=logging.DEBUG, filename=args.log, format=fmt)
    else:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format=fmt)
    try:
        sys.exit(asyncio.run(main(args.url, args.protocol)))
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
