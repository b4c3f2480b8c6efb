"""Named server presets for ``--mcp NAME``: one function per preset, one registry (:data:`PRESETS`).

A preset looks at the machine (through a :class:`PresetContext`, so tests can stage any machine) and returns a
:class:`PresetResolution`: the server config it chose, which way of running it (``choice``) and a one-line
``reason`` for the user. When the real server cannot work here (no token, no network, nothing to run it
with), a preset falls back to an offline stand-in and says why; the CLI prints ``reason`` as is, e.g.
``no GitHub token found: using the offline sandbox``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nexus_agent.mcp.config import ServerConfig, StdioServerConfig
from nexus_agent.mcp.errors import ConfigError
from nexus_agent.paths import nexus_home


def _run_quiet(cmd: Sequence[str], timeout: float) -> str | None:
    """stdout of ``cmd`` if it exits 0 within ``timeout`` seconds, else None."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _resolves(host: str, timeout: float = 3.0) -> bool:
    """Whether ``host`` resolves in DNS within ``timeout`` s. Only a lookup: no connection is made."""
    done: list[bool] = []

    def lookup() -> None:
        try:
            done.append(bool(socket.getaddrinfo(host, 443)))
        except OSError:
            done.append(False)

    t = threading.Thread(target=lookup, daemon=True)  # getaddrinfo has no timeout of its own
    t.start()
    t.join(timeout)
    return bool(done and done[0])


@dataclass(frozen=True)
class PresetContext:
    """What a preset may look at. :meth:`from_system` is the real machine; tests build their own.

    ``run(cmd, timeout_s)`` returns the stdout of a command that succeeded, else None; ``resolves(host)`` says
    whether a host name resolves; ``sandbox_dir`` is where offline sandboxes keep their state.
    """

    env: Mapping[str, str]
    which: Callable[[str], str | None]
    run: Callable[[Sequence[str], float], str | None]
    resolves: Callable[[str], bool]
    sandbox_dir: Path

    @classmethod
    def from_system(cls) -> PresetContext:
        return cls(
            env=dict(os.environ),
            which=shutil.which,
            run=_run_quiet,
            resolves=_resolves,
            sandbox_dir=nexus_home() / "sandbox",
        )


@dataclass(frozen=True)
class PresetResolution:
    """What ``--mcp <preset>`` resolved to. ``server`` may hold a token in ``env``: kept out of repr."""

    preset: str
    server_name: str
    choice: str  # how the server runs, e.g. "github-mcp-server", "docker", "npx", "sandbox"
    reason: str  # one line for the user
    server: ServerConfig = field(repr=False)

    @property
    def fallback(self) -> bool:
        """True when an offline stand-in replaces the real server."""
        return self.choice == "sandbox"


PresetFn = Callable[[PresetContext], PresetResolution]
PRESETS: dict[str, PresetFn] = {}


def register_preset(name: str) -> Callable[[PresetFn], PresetFn]:
    def add(fn: PresetFn) -> PresetFn:
        if name in PRESETS:
            raise ValueError(f"preset {name!r} registered twice")
        PRESETS[name] = fn
        return fn

    return add


def resolve_preset(name: str, ctx: PresetContext | None = None) -> PresetResolution:
    """Resolve ``--mcp name``; raises :class:`ConfigError` for an unknown preset."""
    if name not in PRESETS:
        raise ConfigError("--mcp", name, f"unknown preset; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name](ctx or PresetContext.from_system())


# ---- github ---------------------------------------------------------------------------------------------

GITHUB_IMAGE = "ghcr.io/github/github-mcp-server"
GITHUB_NPM = "@modelcontextprotocol/server-github"
TOKEN_VAR = "GITHUB_PERSONAL_ACCESS_TOKEN"


def _github_token(ctx: PresetContext) -> tuple[str | None, str]:
    """The token and where it came from."""
    token = ctx.env.get(TOKEN_VAR, "").strip()
    if token:
        return token, TOKEN_VAR
    if ctx.which("gh"):
        out = ctx.run(["gh", "auth", "token"], 10.0)
        if out and out.strip():
            return out.strip(), "gh auth token"
    return None, ""


def _github_sandbox(ctx: PresetContext, why: str) -> PresetResolution:
    # Imported here: the sandbox pulls in its data only when it is actually needed.
    from nexus_agent.sandbox.github import sandbox_server_params

    params = sandbox_server_params(ctx.sandbox_dir / "github")
    server = StdioServerConfig(
        command=params.command,
        args=list(params.args),
        env=dict(params.env or {}),
        cwd=str(params.cwd) if params.cwd is not None else None,
    )
    return PresetResolution("github", "github", "sandbox", f"{why}: using the offline sandbox", server)


@register_preset("github")
def github_preset(ctx: PresetContext) -> PresetResolution:
    """GitHub's MCP server: the native binary, else Docker (if an engine answers), else npx; the offline
    sandbox when there is no token, no network, or no way to run it."""
    token, origin = _github_token(ctx)
    if token is None:
        return _github_sandbox(ctx, "no GitHub token found")
    if not ctx.resolves("api.github.com"):
        return _github_sandbox(ctx, "api.github.com does not resolve (no network?)")
    env = {TOKEN_VAR: token}
    binary = ctx.which("github-mcp-server")
    if binary:
        server = StdioServerConfig(command=binary, args=["stdio"], env=env)
        return PresetResolution(
            "github", "github", "github-mcp-server", f"using {binary} (token from {origin})", server
        )
    skipped = []
    if ctx.which("docker"):
        # A docker CLI without a reachable engine is common (CI, remote contexts): ask the engine itself.
        if ctx.run(["docker", "info"], 15.0) is not None:
            server = StdioServerConfig(
                command="docker", args=["run", "-i", "--rm", "-e", TOKEN_VAR, GITHUB_IMAGE], env=env
            )
            return PresetResolution(
                "github",
                "github",
                "docker",
                f"using Docker image {GITHUB_IMAGE} (token from {origin})",
                server,
            )
        skipped.append("docker has no reachable engine")
    if ctx.which("npx"):
        server = StdioServerConfig(command="npx", args=["-y", GITHUB_NPM], env=env)
        note = f"; {', '.join(skipped)}" if skipped else ""
        return PresetResolution(
            "github", "github", "npx", f"using npx {GITHUB_NPM} (token from {origin}{note})", server
        )
    return _github_sandbox(ctx, "neither github-mcp-server, a Docker engine nor npx is available")
