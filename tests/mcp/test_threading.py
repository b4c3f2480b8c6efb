"""The threading contract: a hub started on a loop thread, used from other threads, closed by another task."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from mcp_test_support import PROBE, child_pids

from nexus_agent.mcp import MCPServerSource, MultiServerClient, SourceOptions, StdioServerConfig, ToolResult


def test_hub_on_a_loop_thread_serves_calls_from_other_threads(
    probe_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    hub = MultiServerClient([MCPServerSource("probe", probe_cfg, options)])

    def call(tool: str) -> ToolResult:
        return asyncio.run_coroutine_threadsafe(hub.call_tool(tool, timeout=60), loop).result(timeout=120)

    try:
        # start() and aclose() run as separate coroutines (separate tasks): the SDK contexts live in the
        # server's own owner task, so this must work.
        asyncio.run_coroutine_threadsafe(hub.start(), loop).result(timeout=120)
        assert hub.loop is loop
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(call, ["alpha", "beta"] * 4))
        assert [r.text for r in results] == ["alpha", "beta"] * 4
        assert len(child_pids(str(PROBE))) == 1
    finally:
        asyncio.run_coroutine_threadsafe(hub.aclose(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=30)
        loop.close()
    assert child_pids(str(PROBE)) == []
