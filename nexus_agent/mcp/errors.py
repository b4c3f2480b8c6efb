"""Exceptions of the MCP client layer.

Every message names what the user has to look at: the config file and key, or the server and tool. They all
derive from :class:`MCPClientError`, so the CLI can catch one type and print ``str(exc)``.

A tool that *runs* and fails (``isError: true`` on the wire) is not an exception here: it comes back as a
:class:`nexus_agent.mcp.tools.ToolResult` with ``is_error=True``, because the model should see the error text
and may retry. Exceptions are for failures of the plumbing: config, start-up, timeouts, crashes, routing.
"""

from __future__ import annotations


class MCPClientError(Exception):
    """Base class of the errors raised by :mod:`nexus_agent.mcp`."""


class ConfigError(MCPClientError, ValueError):
    """A ``mcpServers`` config is unreadable or invalid.

    ``file`` is the config path as given (or ``<memory>``), ``key`` the dotted path to the offending value
    (e.g. ``mcpServers.github.command``; empty for the whole document), ``problem`` what is wrong with it.
    """

    def __init__(self, file: str, key: str, problem: str) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        super().__init__(f"{file}: {key}: {problem}" if key else f"{file}: {problem}")


class ServerStartError(MCPClientError):
    """A server could not be started or did not complete the MCP handshake."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server {server!r} failed to start: {reason}")


class AuthRequiredError(MCPClientError):
    """An HTTP server refused the connection for want of authorization (HTTP 401, or 403 ``insufficient_scope``).

    ``challenge`` is the server's ``WWW-Authenticate`` header (empty if it sent none) and ``login`` the command that
    logs in. The message never holds a token: the challenge is the server's, and tokens never reach this layer's
    messages.
    """

    def __init__(self, server: str, status: int, challenge: str, login: str, detail: str = "") -> None:
        self.server = server
        self.status = status
        self.challenge = challenge
        self.login = login
        shown = f"; WWW-Authenticate: {challenge}" if challenge else " and no WWW-Authenticate challenge"
        why = f" ({detail})" if detail else ""
        super().__init__(
            f"MCP server {server!r} requires authorization: HTTP {status}{shown}{why}. Log in with: {login}"
        )


class ServerCrashedError(MCPClientError):
    """A server died (process exited, stream closed) and the one allowed restart did not help."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(message)


class ToolTimeoutError(MCPClientError, TimeoutError):
    """A tool call did not answer within its per-call timeout (seconds)."""

    def __init__(self, server: str, tool: str, timeout: float) -> None:
        self.server = server
        self.tool = tool
        self.timeout = timeout
        super().__init__(f"tool {tool!r} on MCP server {server!r} did not answer within {timeout:g} s")


class ToolNotFoundError(MCPClientError, LookupError):
    """No connected server offers the requested tool (or the name is ambiguous between servers)."""


class SourceClosedError(MCPClientError):
    """The tool source was closed (or never started) when a call arrived."""
