"""The ``mcpServers`` config file, in the shape Claude Desktop and Cursor use.

Shape (JSON)::

    {"mcpServers": {
        "<name>": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"}, "cwd": "/opt"},   # stdio
        "<name>": {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ..."}}  # HTTP
        "<name>": {"url": "https://mcp.example.com/mcp", "oauth": {"clientId": "abc", "clientSecretEnv": "X_SECRET"}}
    }}

The server shape is told by its keys (``command`` for stdio, ``url`` for streamable HTTP), as those clients
do; an optional ``type`` (``stdio``, ``http``, ``streamable-http``, ``streamableHttp``) must agree with it.
An optional ``"protocol"`` (``auto``, the default; ``legacy``; ``2026-07-28``) pins how the connection negotiates
the MCP revision (see :data:`Protocol`). An HTTP server that answers 401 is authorized with OAuth 2.1 (see
:mod:`nexus_agent.mcp.auth`); its optional ``"oauth"`` object names a pre-registered client (``clientId``, and the
environment variable ``clientSecretEnv`` that holds its secret: never the secret itself), the ``scope`` to ask for,
a fixed ``redirectPort`` for the login's localhost redirect, and ``headless`` (complete the authorization without a
browser, where the authorization server approves without a person). Our own extension ``"examples": "FILE"`` names
a JSON Lines file of usage examples for the server's tools (``nexus_agent/examples/bank.py``, docs/examples.md).
Keys other clients add for their own UI (``autoApprove``, ``alwaysAllow``, ...) are ignored; ``"disabled": true``
(Cline) drops the server.

The file may also name the generation engine, an OpenAI-compatible server (``nexus-agent run --engine``; the API key
comes from ``NEXUS_API_KEY`` or ``OPENAI_API_KEY``, never from the file)::

    {"engine": {"url": "http://gpu-box:8000/v1", "model": "Qwen/Qwen2.5-14B-Instruct", "timeout": 120},
     "mcpServers": {...}}

Every error is a :class:`~nexus_agent.mcp.errors.ConfigError` naming the file, the dotted key and the problem,
e.g. ``config.json: mcpServers.github.command: expected a string, got 3``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from nexus_agent.backend import check_base_url
from nexus_agent.mcp.errors import ConfigError

# Server names end up in qualified tool names ``<server>__<tool>`` and in log file names, so they are kept to
# characters that are valid in function-calling tool names; ``__`` would make the split ambiguous.
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# How a connection picks its MCP protocol revision: "auto" probes server/discover (2026-07-28) and falls back to the
# initialize handshake of the 2025 revisions; "legacy" goes straight to the handshake (for a proxy or gateway that
# mishandles the probe); "2026-07-28" adopts that revision without a probe.
Protocol = Literal["auto", "legacy", "2026-07-28"]


class StdioServerConfig(BaseModel):
    """A server the client spawns and talks to over stdin/stdout."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    type: Literal["stdio"] | None = None
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    # Added on top of the SDK's safe inherited set (PATH, HOME, ...), not instead of it.
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    disabled: bool = False
    protocol: Protocol = "auto"
    # our extension: a JSON Lines file of usage examples for this server's tools (docs/examples.md); a relative
    # path is read from the config file's folder
    examples: str | None = Field(default=None, min_length=1)

    @property
    def transport(self) -> str:
        return "stdio"


class OAuthConfig(BaseModel):
    """How an HTTP server's OAuth 2.1 authorization goes (all optional: by default the client registers itself)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, alias_generator=to_camel, populate_by_name=True)

    # A client registered with the authorization server beforehand; without it the client registers dynamically.
    client_id: str | None = Field(default=None, min_length=1)
    # The name of the environment variable that holds the pre-registered client's secret (the file never holds it).
    client_secret_env: str | None = Field(default=None, min_length=1)
    # How a pre-registered client with a secret authenticates at the token endpoint (RFC 6749 §2.3.1).
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    # Space-separated scopes to ask for when the server's challenge and metadata name none.
    scope: str | None = None
    # The localhost port the login's redirect comes back to (a pre-registered client's redirect URI fixes it).
    redirect_port: int | None = Field(default=None, ge=1, le=65535)
    # An HTTPS URL of a client metadata document, used as the client_id where the server supports that (CIMD).
    client_metadata_url: str | None = None
    # "client_credentials": machine to machine with clientId and the secret (no person, no login; SEP-1046).
    grant_type: Literal["authorization_code", "client_credentials"] = "authorization_code"
    # The authorization server that issued a client_credentials client (its issuer URL); tokens are asked only there.
    issuer: str | None = None
    # Complete a needed authorization without a browser: follow the authorization URL and take the code from its
    # redirect. Only works where the authorization server approves without a person (test and internal servers).
    headless: bool = False


class HttpServerConfig(BaseModel):
    """A server already running somewhere, reached over MCP streamable HTTP."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    type: Literal["http", "streamable-http", "streamableHttp"] | None = None
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    disabled: bool = False
    protocol: Protocol = "auto"
    oauth: OAuthConfig = Field(default_factory=OAuthConfig)
    examples: str | None = Field(default=None, min_length=1)  # as StdioServerConfig.examples

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {json.dumps(v)}")
        return v

    @property
    def transport(self) -> str:
        return "streamable-http"


ServerConfig = StdioServerConfig | HttpServerConfig


class EngineEntry(BaseModel):
    """The config's ``engine``: an OpenAI-compatible base URL, the served model's name, a timeout in seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    url: str = Field(min_length=1)
    model: str | None = None
    timeout: float = Field(default=120.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        return check_base_url(v)


class MCPConfig(BaseModel):
    """A parsed config: enabled servers by name, in file order, and the engine the file names (None: in-process)."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, ServerConfig]
    source: str = "<memory>"
    engine: EngineEntry | None = None


def load_config(path: str | Path) -> MCPConfig:
    """Read and validate a ``mcpServers`` JSON file; raises :class:`ConfigError` naming ``path``."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(file, "", "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(file, "", f"cannot read file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}:{exc.lineno}:{exc.colno}", "", f"invalid JSON: {exc.msg}") from None
    cfg = parse_config(data, source=file)
    # an examples file named relative to the config is read from the config's folder, wherever the agent runs
    base = Path(path).resolve().parent
    servers = {
        name: s.model_copy(update={"examples": str(base / s.examples)})
        if s.examples is not None and not Path(s.examples).is_absolute()
        else s
        for name, s in cfg.servers.items()
    }
    return cfg.model_copy(update={"servers": servers})


def parse_config(data: Any, source: str = "<memory>") -> MCPConfig:
    """Validate an already-decoded config document (``source`` names it in errors)."""
    if not isinstance(data, dict):
        raise ConfigError(source, "", f'expected a JSON object like {{"mcpServers": {{...}}}}, got {_show(data)}')
    if "mcpServers" not in data:
        hint = ' (VS Code\'s "servers" key is not read; rename it to "mcpServers")' if "servers" in data else ""
        raise ConfigError(source, "mcpServers", f"required key is missing{hint}")
    raw = data["mcpServers"]
    if not isinstance(raw, dict):
        raise ConfigError(source, "mcpServers", f"expected an object of servers by name, got {_show(raw)}")
    servers: dict[str, ServerConfig] = {}
    for name, entry in raw.items():
        key = f"mcpServers.{name}"
        if not SERVER_NAME.match(name) or "__" in name:
            raise ConfigError(
                source,
                key,
                "server names may use letters, digits, '_', '.', '-' (no '__', which separates "
                "server and tool in qualified names) and must start with a letter or digit",
            )
        server = _parse_server(entry, source, key)
        if not server.disabled:
            servers[name] = server
    engine = None
    if "engine" in data:
        try:
            engine = EngineEntry.model_validate(data["engine"])
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in ("engine", *err["loc"]))
            raise ConfigError(source, where, _problem(err)) from None
    return MCPConfig(servers=servers, source=source, engine=engine)


def _parse_server(entry: Any, source: str, key: str) -> ServerConfig:
    if not isinstance(entry, dict):
        raise ConfigError(source, key, f'expected an object with "command" or "url", got {_show(entry)}')
    has_command, has_url = "command" in entry, "url" in entry
    kind = entry.get("type")
    if kind == "sse":
        raise ConfigError(source, f"{key}.type", "the SSE transport is not supported; use streamable HTTP")
    if has_command and has_url:
        raise ConfigError(source, key, 'unknown server shape: has both "command" (stdio) and "url" (HTTP)')
    model: type[StdioServerConfig] | type[HttpServerConfig]
    if has_command:
        model = StdioServerConfig
    elif has_url:
        model = HttpServerConfig
    else:
        keys = ", ".join(sorted(entry)) or "none"
        raise ConfigError(
            source,
            key,
            f'unknown server shape: expected "command" (stdio) or "url" (streamable HTTP), got keys: {keys}',
        )
    try:
        return model.model_validate(entry)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ConfigError(source, f"{key}.{loc}" if loc else key, _problem(err)) from None


# pydantic error type -> what the value should have been, in the words a config author uses.
_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}


def _problem(err: Any) -> str:
    kind = err["type"]
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_show(err['input'])}"
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        if err["loc"][-1] in ("clientSecret", "client_secret"):
            return "a secret is never read from the file: put it in an environment variable named by clientSecretEnv"
        return "unknown key"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "literal_error":
        return f"{err['msg'].lower()}, got {_show(err['input'])}"
    if kind == "value_error":
        return str(err["ctx"]["error"]) if "ctx" in err else err["msg"]
    return f"{err['msg']}, got {_show(err['input'])}"


def _show(value: Any) -> str:
    """The value as it appears in JSON (``3``, ``"x"``, ``null``), shortened."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
