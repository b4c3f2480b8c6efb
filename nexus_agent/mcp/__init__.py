"""The MCP client layer: config, presets, the :class:`ToolSource` interface and the multi-server hub.

The official ``mcp`` SDK is used only inside :mod:`nexus_agent.mcp.client`; everything exported here is our
own types, so the rest of Nexus Agent never imports the SDK.
"""

from nexus_agent.mcp.auth import AuthOptions, LoginMode
from nexus_agent.mcp.client import MCPServerSource, SourceOptions
from nexus_agent.mcp.config import (
    HttpServerConfig,
    MCPConfig,
    OAuthConfig,
    ServerConfig,
    StdioServerConfig,
    load_config,
    parse_config,
)
from nexus_agent.mcp.elicitation import ElicitationHandler, ElicitationReply, ElicitationRequest
from nexus_agent.mcp.errors import (
    AuthRequiredError,
    ConfigError,
    MCPClientError,
    ServerCrashedError,
    ServerStartError,
    SourceClosedError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from nexus_agent.mcp.hub import MultiServerClient
from nexus_agent.mcp.presets import PRESETS, PresetContext, PresetResolution, resolve_preset
from nexus_agent.mcp.source import ToolSource
from nexus_agent.mcp.tools import ProgressUpdate, ToolInfo, ToolListDiff, ToolResult, qualify

__all__ = [
    "PRESETS",
    "AuthOptions",
    "AuthRequiredError",
    "ConfigError",
    "ElicitationHandler",
    "ElicitationReply",
    "ElicitationRequest",
    "HttpServerConfig",
    "LoginMode",
    "MCPClientError",
    "MCPConfig",
    "MCPServerSource",
    "MultiServerClient",
    "OAuthConfig",
    "PresetContext",
    "PresetResolution",
    "ProgressUpdate",
    "ServerConfig",
    "ServerCrashedError",
    "ServerStartError",
    "SourceClosedError",
    "SourceOptions",
    "StdioServerConfig",
    "ToolInfo",
    "ToolListDiff",
    "ToolNotFoundError",
    "ToolResult",
    "ToolSource",
    "ToolTimeoutError",
    "load_config",
    "parse_config",
    "qualify",
    "resolve_preset",
]
