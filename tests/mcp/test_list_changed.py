"""A changed tool list: the source re-lists, the hub re-indexes, listeners get a diff.

The probe tells of the change the way the connection's era does: ``notifications/tools/list_changed`` on a 2025-era
connection, an event on the client's ``subscriptions/listen`` stream on a 2026-era one; over stdio and HTTP.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from mcp_test_support import NEGOTIATED, HttpProbe

from nexus_agent.mcp import (
    HttpServerConfig,
    MCPServerSource,
    MultiServerClient,
    SourceOptions,
    StdioServerConfig,
    ToolListDiff,
    ToolNotFoundError,
)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_list_changed_gives_listener_a_diff_and_updates_routing(
    probe_cfg: StdioServerConfig, options: SourceOptions, era: str, transport: str, request: pytest.FixtureRequest
) -> None:
    diffs: list[ToolListDiff] = []
    seen_in_listener: list[bool] = []
    arrived = asyncio.Event()
    if transport == "http":
        probe: HttpProbe = request.getfixturevalue("http_probe")
        source = MCPServerSource("probe", HttpServerConfig(url=probe.url), options)
    else:
        source = MCPServerSource("probe", probe_cfg, options)

    async with MultiServerClient([source]) as hub:
        assert source.protocol_version == NEGOTIATED[era]

        async def listener(diff: ToolListDiff) -> None:
            diffs.append(diff)
            seen_in_listener.append(hub.resolve("probe__gamma").description == "Gamma, added by mutate.")
            arrived.set()

        hub.add_tools_listener(listener)
        assert "probe__alpha" in {t.qualified_name for t in hub.tools}
        result = await hub.call_tool("mutate", timeout=60)
        assert result.text == "mutated"
        await asyncio.wait_for(arrived.wait(), timeout=60)

        (diff,) = diffs
        assert (diff.server, diff.added, diff.removed, diff.changed) == (
            "probe",
            ("gamma",),
            ("alpha",),
            ("beta",),
        )
        assert diff.qualified(diff.added) == ["probe__gamma"]
        assert {t.name for t in diff.tools} == {t.name for t in hub.tools}
        assert seen_in_listener == [True]  # the index was updated before listeners ran
        assert (await hub.call_tool("gamma", timeout=60)).text == "gamma"
        with pytest.raises(ToolNotFoundError):
            await hub.call_tool("alpha", timeout=60)


async def test_restart_that_brings_a_different_list_is_reported(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    """After ``mutate`` the server's list differs from a fresh start's; a crash + restart reverts it."""
    diffs: list[ToolListDiff] = []
    async with MultiServerClient([MCPServerSource("probe", probe_cfg, options)]) as hub:
        changed = asyncio.Event()

        def listener(diff: ToolListDiff) -> None:
            diffs.append(diff)
            changed.set()

        hub.add_tools_listener(listener)
        await hub.call_tool("mutate", timeout=60)
        await asyncio.wait_for(changed.wait(), timeout=60)
        os.kill(int((await hub.call_tool("pid", timeout=60)).text), signal.SIGKILL)
        await hub.call_tool("pid", timeout=60)  # restarts the server: fresh process, original list
    assert len(diffs) == 2
    assert (diffs[1].added, diffs[1].removed, diffs[1].changed) == (("alpha",), ("gamma",), ("beta",))
