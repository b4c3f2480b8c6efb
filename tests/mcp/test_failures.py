"""Failure handling: start-up errors, timeouts, crashes with one restart, tool errors, routing errors."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
from pathlib import Path

import pytest
from mcp_test_support import EVERYTHING_JS, PROBE, child_pids

from nexus_agent.mcp import (
    MCPClientError,
    MCPServerSource,
    MultiServerClient,
    ServerCrashedError,
    ServerStartError,
    SourceClosedError,
    SourceOptions,
    StdioServerConfig,
    ToolNotFoundError,
    ToolTimeoutError,
)


async def _pid(hub: MultiServerClient, tool: str = "pid") -> int:
    result = await hub.call_tool(tool, timeout=60)
    assert not result.is_error, result.text
    return int(result.text)


async def test_tool_error_is_a_result_not_an_exception(probe_cfg: StdioServerConfig, options: SourceOptions) -> None:
    async with MultiServerClient([MCPServerSource("probe", probe_cfg, options)]) as hub:
        result = await hub.call_tool("fail", timeout=60)
        assert result.is_error
        assert "always fails" in result.text
        assert result.error_code is None  # isError from the tool, not a JSON-RPC error


async def test_unknown_and_ambiguous_tool_names(probe_cfg: StdioServerConfig, options: SourceOptions) -> None:
    sources = [MCPServerSource("p1", probe_cfg, options), MCPServerSource("p2", probe_cfg, options)]
    async with MultiServerClient(sources) as hub:
        with pytest.raises(ToolNotFoundError, match=r"several servers; use one of: p1__pid, p2__pid"):
            await hub.call_tool("pid")
        with pytest.raises(ToolNotFoundError, match=r"no connected MCP server offers a tool 'p1__pdi'.*'p1__pid'"):
            await hub.call_tool("p1__pdi")
        assert await _pid(hub, "p1__pid") != await _pid(hub, "p2__pid")


async def test_server_killed_between_calls_is_restarted_once(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source]) as hub:
        first = await _pid(hub)
        os.kill(first, signal.SIGKILL)
        second = await _pid(hub)
        assert second != first
        assert source.restarts == 1
        assert await _pid(hub) == second  # no further restart


async def test_concurrent_calls_after_a_crash_share_one_restart(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source]) as hub:
        os.kill(await _pid(hub), signal.SIGKILL)
        pids = await asyncio.gather(*(_pid(hub) for _ in range(5)))
        assert len(set(pids)) == 1
        assert source.restarts == 1


async def test_third_party_server_killed_between_calls_is_restarted(
    everything_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    source = MCPServerSource("everything", everything_cfg, options)
    async with MultiServerClient([source]) as hub:
        assert (await hub.call_tool("echo", {"message": "a"}, timeout=60)).text == "Echo: a"
        (pid,) = child_pids(str(EVERYTHING_JS))
        os.kill(pid, signal.SIGKILL)
        assert (await hub.call_tool("echo", {"message": "b"}, timeout=60)).text == "Echo: b"
        assert source.restarts == 1
        assert child_pids(str(EVERYTHING_JS)) != [pid]


async def test_call_that_always_crashes_the_server_gives_a_clear_error(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source]) as hub:
        with pytest.raises(ServerCrashedError) as info:
            await hub.call_tool("crash", timeout=60)
        message = str(info.value)
        assert "'probe'" in message and "'crash'" in message and "crashed again after a restart" in message
        assert "probe: crashing on purpose" in message  # the server's stderr is quoted
        assert source.restarts == 1
        # The poison call does not poison the server: the next call restarts it and works.
        assert await _pid(hub) > 0
        assert source.restarts == 2


async def test_server_that_cannot_come_back_gives_a_clear_error(options: SourceOptions, tmp_path: Path) -> None:
    config = StdioServerConfig(command=sys.executable, args=[str(PROBE), "--start-once", str(tmp_path / "once")])
    async with MultiServerClient([MCPServerSource("once", config, options)]) as hub:
        with pytest.raises(ServerCrashedError) as info:
            await hub.call_tool("crash", timeout=60)
        message = str(info.value)
        assert "could not be restarted" in message
        assert "refusing to start a second time" in message
        assert "probe: crashing on purpose" in message


async def test_server_that_exits_at_start_names_server_and_stderr(options: SourceOptions) -> None:
    config = StdioServerConfig(
        command=sys.executable, args=["-c", "import sys; sys.stderr.write('boom: no config\\n'); sys.exit(3)"]
    )
    with pytest.raises(ServerStartError) as info:
        async with MultiServerClient([MCPServerSource("broken", config, options)]):
            pass
    assert info.value.server == "broken"
    assert "MCP server 'broken' failed to start" in str(info.value)
    assert "boom: no config" in str(info.value)


async def test_server_that_never_answers_the_handshake_times_out(options: SourceOptions) -> None:
    config = StdioServerConfig(command=sys.executable, args=[str(PROBE), "--hang"])
    quick = dataclasses.replace(options, startup_timeout=2.0)
    with pytest.raises(ServerStartError) as info:
        async with MultiServerClient([MCPServerSource("wedged", config, quick)]):
            pass
    assert "'wedged' failed to start" in str(info.value)
    assert "timed out" in str(info.value).lower()


async def test_a_line_that_is_not_json_rpc_does_not_break_the_session(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    """Invalid JSON on a stdio server's stdout (a stray print) is logged and skipped, not a crash."""
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source]) as hub:
        pid = await _pid(hub)
        assert (await hub.call_tool("garble", timeout=60)).text == "garbled"
        assert (await hub.call_tool("alpha", timeout=60)).text == "alpha"
        assert await _pid(hub) == pid
        assert source.restarts == 0


async def test_result_that_breaks_the_declared_output_schema_is_an_error_result(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    """A server that lies about its tool (declares an output schema, returns something else): the model is told."""
    async with MultiServerClient([MCPServerSource("probe", probe_cfg, options)]) as hub:
        result = await hub.call_tool("lie", timeout=60)
        assert result.is_error
        assert "invalid tool result" in result.text and "seven" in result.text
        assert (await hub.call_tool("alpha", timeout=60)).text == "alpha"


async def test_missing_command_is_reported(options: SourceOptions) -> None:
    config = StdioServerConfig(command="/nonexistent/mcp-server-nothing")
    with pytest.raises(ServerStartError, match=r"'ghost' failed to start: command not found: /nonexistent"):
        async with MultiServerClient([MCPServerSource("ghost", config, options)]):
            pass


async def test_optional_servers_may_fail_without_stopping_the_others(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    sources = [
        MCPServerSource("good", probe_cfg, options),
        MCPServerSource("bad", StdioServerConfig(command="/nonexistent/x"), options),
    ]
    async with MultiServerClient(sources, require_all=False) as hub:
        assert set(hub.failures) == {"bad"}
        assert {t.server for t in hub.tools} == {"good"}
        assert await _pid(hub) > 0
        with pytest.raises(ToolNotFoundError, match="'bad' failed to start"):
            await hub.call_tool("bad__pid")


async def test_several_start_failures_are_reported_together(options: SourceOptions) -> None:
    sources = [
        MCPServerSource("a", StdioServerConfig(command="/nonexistent/a"), options),
        MCPServerSource("b", StdioServerConfig(command="/nonexistent/b"), options),
    ]
    with pytest.raises(MCPClientError, match=r"(?s)several MCP servers failed to start.*'a'.*'b'"):
        await MultiServerClient(sources).start()


async def test_timeout_leaves_the_session_usable(probe_cfg: StdioServerConfig, options: SourceOptions) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source], default_timeout=1.0) as hub:
        before = await _pid(hub)
        with pytest.raises(ToolTimeoutError, match=r"tool 'sleep' on MCP server 'probe' did not answer within 1 s"):
            await hub.call_tool("sleep", {"seconds": 60})  # the hub's default timeout applies
        assert await _pid(hub) == before
        assert source.restarts == 0


async def test_timeout_cancels_the_call_on_the_server(probe_cfg: StdioServerConfig, options: SourceOptions) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source], default_timeout=1.0) as hub:
        with pytest.raises(ToolTimeoutError):
            await hub.call_tool("sleep", {"seconds": 60})
        # notifications/cancelled is one-way: poll until the server has acted on it (it counts the sleeps it
        # saw cancelled); without the notification the sleep would run on for the full 60 s.
        deadline = asyncio.get_running_loop().time() + 30
        while (count := (await hub.call_tool("cancelled", timeout=60)).text) == "0":
            assert asyncio.get_running_loop().time() < deadline, "the server never saw the call cancelled"
            await asyncio.sleep(0.1)
        assert count == "1"


async def test_calls_after_close_are_refused(probe_cfg: StdioServerConfig, options: SourceOptions) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    await source.start()
    pid = int((await source.call_tool("pid", timeout=60)).text)
    await source.aclose()
    with pytest.raises(SourceClosedError):
        await source.call_tool("pid")
    assert child_pids(str(PROBE)) == []
    assert pid not in child_pids("")


async def test_server_stderr_goes_to_the_log_file(probe_cfg: StdioServerConfig, options: SourceOptions) -> None:
    source = MCPServerSource("probe", probe_cfg, options)
    async with MultiServerClient([source]) as hub:
        with pytest.raises(ServerCrashedError):
            await hub.call_tool("crash", timeout=60)
    assert source.log_path is not None and options.log_dir is not None
    assert source.log_path.parent == options.log_dir
    text = source.log_path.read_text()
    assert text.count("probe: crashing on purpose") == 2
    assert text.count(" start: ") == 2  # the first start and the one restart, each with a header
