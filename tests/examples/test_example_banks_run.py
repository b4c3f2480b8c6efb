"""The shipped example banks, run: every example on a scratch server seeded with its own world, through the real MCP
server processes, and every argument value checked against the runtime's own grounding rules.

One set of server processes serves the module (the GitHub sandbox, the reference filesystem and git servers); the
scratch state is put back to the example's world before each example (``nexus_agent/evaluation/bankcheck.py``).
The examples run once, in the ``banks`` fixture; the tests below read its record, one test per example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from nexus_agent.agent.grounding import drop_ungrounded, ungrounded_identifiers
from nexus_agent.agent.schema import validate
from nexus_agent.evaluation.bankcheck import (
    SERVERS,
    BankRun,
    Scratch,
    example_key,
    load_bank,
    run_banks,
    server_tools,
)
from nexus_agent.evaluation.multistep import FILESYSTEM_JS
from nexus_agent.registry import Tool

BANKS = {server: load_bank(server) for server in SERVERS}
KEYS = [example_key(ex) for examples in BANKS.values() for ex in examples]
TOOLS = {server: server_tools(server) for server in SERVERS}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def banks(tmp_path_factory: pytest.TempPathFactory) -> BankRun:
    if not FILESYSTEM_JS.exists():
        pytest.fail(f"the reference filesystem server is not installed ({FILESYSTEM_JS}): run scripts/setup --test")
    return await run_banks(Scratch(Path(tmp_path_factory.mktemp("banks"))), BANKS)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("key", KEYS)
async def test_example_runs_as_verified(key: str, banks: BankRun) -> None:
    run = banks.runs[key]
    assert run.problems == [], f"{run.example.source}: {run.example.request}"


@pytest.mark.asyncio(loop_scope="module")
async def test_every_tool_of_a_bank_is_listed_by_its_server(banks: BankRun) -> None:
    for server, examples in BANKS.items():
        used = {c.tool for ex in examples for c in ex.calls}
        assert used - banks.listed[server] == set(), server


def _optional_dropped(tool: Tool, args: dict[str, Any], context: str, request: str) -> list[str]:
    """Optional arguments ``drop_ungrounded`` removes when it is given that argument alone beside the required
    ones. ``drop_ungrounded`` keeps everything when what is left would not validate, so asking about the whole
    call could hide a value it would drop."""
    required = set(tool.input_schema.get("required") or [])
    base = {k: v for k, v in args.items() if k in required}
    if validate(tool, base) is not None:
        return []
    return [
        k
        for k, v in args.items()
        if k not in required and k not in drop_ungrounded(tool, {**base, k: v}, context, user_context=request)
    ]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("key", KEYS)
async def test_example_is_grounded(key: str, banks: BankRun) -> None:
    """Every value passes the rules argument writing and the run policy apply: optional values the conversation
    (request and earlier outputs) supports, options the user's own words support, identifiers given in the request
    or returned by an earlier call."""
    run = banks.runs[key]
    ex = run.example
    assert len(run.outputs) == len(ex.calls), f"the example did not run through: {run.problems}"
    for i, call in enumerate(ex.calls):
        tool = TOOLS[ex.server][call.tool]
        earlier = run.outputs[:i]
        context = "\n".join([ex.request, *earlier])
        where = f"{ex.source} call {i} {call.tool}"
        assert drop_ungrounded(tool, dict(call.arguments), context, user_context=ex.request) == call.arguments, where
        assert _optional_dropped(tool, dict(call.arguments), context, ex.request) == [], where
        assert ungrounded_identifiers(tool, call.arguments, ex.request, results=earlier) == {}, where
