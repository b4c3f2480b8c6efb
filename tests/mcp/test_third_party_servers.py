"""The client against MCP servers written by others: mcp-server-time/-git (PyPI, SDK 2.x) and
server-everything/-filesystem (npm, TypeScript SDK), over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import datetime
from pathlib import Path

from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from mcp_test_support import NEGOTIATED, HttpEverything

from nexus_agent.mcp import (
    HttpServerConfig,
    MCPServerSource,
    MultiServerClient,
    ProgressUpdate,
    ServerCrashedError,
    SourceOptions,
    StdioServerConfig,
    ToolTimeoutError,
)


async def test_each_server_is_spoken_to_in_its_era(
    time_cfg: StdioServerConfig,
    git_cfg: StdioServerConfig,
    everything_cfg: StdioServerConfig,
    options: SourceOptions,
    era: str,
) -> None:
    """The Python reference servers (SDK 2.x) offer 2026-07-28; the npm ones (TypeScript SDK 1.x) know only the
    handshake, so the 2026 client's server/discover probe falls back to it, and the 2025 client never probes."""
    sources = {
        "time": MCPServerSource("time", time_cfg, options),
        "git": MCPServerSource("git", git_cfg, options),
        "everything": MCPServerSource("everything", everything_cfg, options),
    }
    async with MultiServerClient(list(sources.values())) as hub:
        negotiated = {name: source.protocol_version for name, source in sources.items()}
        assert (await hub.call_tool("everything__echo", {"message": "hi"}, timeout=60)).text == "Echo: hi"
        assert not (await hub.call_tool("time__get_current_time", {"timezone": "UTC"}, timeout=60)).is_error
    assert negotiated["time"] == negotiated["git"] == NEGOTIATED[era]
    assert negotiated["everything"] in HANDSHAKE_PROTOCOL_VERSIONS


async def test_lists_tools_of_several_servers_with_qualified_names(
    time_cfg: StdioServerConfig, everything_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    sources = [
        MCPServerSource("time", time_cfg, options),
        MCPServerSource("everything", everything_cfg, options),
    ]
    async with MultiServerClient(sources) as hub:
        names = {t.qualified_name for t in hub.tools}
        assert {
            "time__get_current_time",
            "time__convert_time",
            "everything__echo",
            "everything__get-sum",
        } <= names
        echo = hub.resolve("everything__echo")
        assert echo.server == "everything" and echo.name == "echo"
        assert echo.input_schema["properties"]["message"]["type"] == "string"
        assert echo.description
        assert hub.resolve("get-sum").annotations == {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }


async def test_time_server_answers_in_the_requested_timezone(
    time_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    async with MultiServerClient([MCPServerSource("time", time_cfg, options)]) as hub:
        result = await hub.call_tool("get_current_time", {"timezone": "Asia/Kolkata"}, timeout=60)
        assert not result.is_error
        payload = json.loads(result.text)
        assert payload["timezone"] == "Asia/Kolkata"
        assert datetime.fromisoformat(payload["datetime"]).utcoffset() is not None
        assert payload["datetime"].endswith("+05:30")

        bad = await hub.call_tool("get_current_time", {"timezone": "Mars/Olympus_Mons"}, timeout=60)
        assert bad.is_error
        assert "Mars/Olympus_Mons" in bad.text


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


async def test_git_server_reports_status_and_log_of_a_temp_repo(
    git_cfg: StdioServerConfig, options: SourceOptions, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "first commit")
    (repo / "a.txt").write_text("two\n")
    (repo / "new.txt").write_text("untracked\n")

    async with MultiServerClient([MCPServerSource("git", git_cfg, options)]) as hub:
        status = await hub.call_tool("git_status", {"repo_path": str(repo)}, timeout=60)
        assert not status.is_error
        assert "a.txt" in status.text and "new.txt" in status.text
        logged = await hub.call_tool("git__git_log", {"repo_path": str(repo), "max_count": 5}, timeout=60)
        assert not logged.is_error
        assert "first commit" in logged.text
        missing = await hub.call_tool("git_status", {"repo_path": str(tmp_path / "nope")}, timeout=60)
        assert missing.is_error


async def test_filesystem_server_writes_and_reads_a_file(
    filesystem_cfg: StdioServerConfig, options: SourceOptions, tmp_path: Path
) -> None:
    root = tmp_path / "files"
    async with MultiServerClient([MCPServerSource("fs", filesystem_cfg, options)]) as hub:
        target = root / "notes.txt"
        written = await hub.call_tool("write_file", {"path": str(target), "content": "hello\nworld\n"}, timeout=60)
        assert not written.is_error, written.text
        assert target.read_text() == "hello\nworld\n"

        (root / "made-by-test.txt").write_text("from the test\n")
        read = await hub.call_tool("read_text_file", {"path": str(root / "made-by-test.txt")}, timeout=60)
        assert not read.is_error
        assert "from the test" in read.text

        outside = await hub.call_tool("read_text_file", {"path": "/etc/hostname"}, timeout=60)
        assert outside.is_error
        assert "outside" in outside.text.lower() or "denied" in outside.text.lower()


async def test_everything_echo_add_and_bad_arguments(everything_cfg: StdioServerConfig, options: SourceOptions) -> None:
    async with MultiServerClient([MCPServerSource("everything", everything_cfg, options)]) as hub:
        echo = await hub.call_tool("echo", {"message": "ping 42"}, timeout=60)
        assert (echo.is_error, echo.text) == (False, "Echo: ping 42")
        total = await hub.call_tool("get-sum", {"a": 2.5, "b": 40}, timeout=60)
        assert not total.is_error
        assert "42.5" in total.text
        bad = await hub.call_tool("get-sum", {"a": 1, "b": "two"}, timeout=60)
        assert bad.is_error
        assert "b" in bad.text
        structured = await hub.call_tool("get-structured-content", {"location": "New York"}, timeout=60)
        assert structured.structured is not None and "temperature" in structured.structured


async def test_everything_long_running_operation_reports_progress(
    everything_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    per_call: list[ProgressUpdate] = []
    hub_wide: list[ProgressUpdate] = []
    async with MultiServerClient([MCPServerSource("everything", everything_cfg, options)]) as hub:
        hub.add_progress_listener(hub_wide.append)
        result = await hub.call_tool(
            "trigger-long-running-operation",
            {"duration": 1, "steps": 4},
            timeout=60,
            on_progress=per_call.append,
        )
    assert not result.is_error
    assert "Steps: 4" in result.text
    assert len(per_call) >= 1
    assert [u.progress for u in per_call] == sorted(u.progress for u in per_call)
    assert all(
        u.total == 4 and u.server == "everything" and u.tool == "trigger-long-running-operation" for u in per_call
    )
    assert hub_wide == per_call


async def test_everything_per_call_timeout_names_server_tool_and_limit(
    everything_cfg: StdioServerConfig, options: SourceOptions
) -> None:
    async with MultiServerClient([MCPServerSource("everything", everything_cfg, options)]) as hub:
        try:
            await hub.call_tool("trigger-long-running-operation", {"duration": 30, "steps": 2}, timeout=1.5)
        except ToolTimeoutError as exc:
            assert (exc.server, exc.tool, exc.timeout) == (
                "everything",
                "trigger-long-running-operation",
                1.5,
            )
            assert "'trigger-long-running-operation'" in str(exc) and "'everything'" in str(exc)
            assert "1.5 s" in str(exc)
        else:
            raise AssertionError("a 30 s operation finished within a 1.5 s timeout")
        # The session survives a timed-out call.
        assert (await hub.call_tool("echo", {"message": "still here"}, timeout=60)).text == "Echo: still here"


async def test_streamable_http_transport(http_everything: HttpEverything, options: SourceOptions) -> None:
    config = HttpServerConfig(url=http_everything.url)
    progress: list[ProgressUpdate] = []
    async with MultiServerClient([MCPServerSource("web", config, options)]) as hub:
        assert "web__echo" in {t.qualified_name for t in hub.tools}
        echo = await hub.call_tool("web__echo", {"message": "over http"}, timeout=60)
        assert echo.text == "Echo: over http"
        done = await hub.call_tool(
            "trigger-long-running-operation",
            {"duration": 1, "steps": 2},
            timeout=60,
            on_progress=progress.append,
        )
        assert not done.is_error
        assert len(progress) >= 1
        bad = await hub.call_tool("get-sum", {"a": "x", "b": 1}, timeout=60)
        assert bad.is_error


async def test_streamable_http_server_restart_is_followed(
    http_everything: HttpEverything, options: SourceOptions
) -> None:
    """The HTTP server goes away: the call fails clearly; once it is back, the next call reconnects."""
    source = MCPServerSource("web", HttpServerConfig(url=http_everything.url), options)
    async with MultiServerClient([source]) as hub:
        assert (await hub.call_tool("echo", {"message": "1"}, timeout=60)).text == "Echo: 1"
        http_everything.stop()
        try:
            await hub.call_tool("echo", {"message": "2"}, timeout=60)
        except ServerCrashedError as exc:
            assert "'web'" in str(exc) and "could not be restarted" in str(exc)
        else:
            raise AssertionError("a call to a stopped HTTP server succeeded")
        await asyncio.to_thread(http_everything.start)
        assert (await hub.call_tool("echo", {"message": "3"}, timeout=60)).text == "Echo: 3"
