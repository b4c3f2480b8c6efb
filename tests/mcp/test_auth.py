"""Authorization of HTTP servers: clear errors on 401, stored tokens (0600, bound to the URL), refresh, no leaks.

The OAuth flows themselves (discovery, registration, PKCE, scopes, pre-registered clients) are run against the
official conformance suite's authorization servers in test_conformance.py; here a local server behind a bearer
token (locked_server.py) checks what the user sees and what is stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import typer
from locked_server import LockedServer
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthToken
from typer.testing import CliRunner

from nexus_agent.cli import _register_all, app
from nexus_agent.mcp import AuthRequiredError, MultiServerClient, SourceOptions, StdioServerConfig, parse_config
from nexus_agent.mcp.auth import TokenStore, _Login, auth_dir, forget_login, stored_logins


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def locked() -> Iterator[LockedServer]:
    with LockedServer() as srv:
        yield srv


def _config(locked: LockedServer, probe: StdioServerConfig | None = None, **entry: object) -> dict[str, object]:
    servers: dict[str, object] = {"locked": {"url": locked.url, **entry}}
    if probe is not None:
        servers["probe"] = {"command": probe.command, "args": probe.args}
    return {"mcpServers": servers}


async def test_401_names_the_server_the_challenge_and_the_login_and_the_others_keep_working(
    home: Path, locked: LockedServer, probe_cfg: StdioServerConfig, options: SourceOptions, era: str
) -> None:
    config = parse_config(_config(locked, probe_cfg), source="team.json")
    async with MultiServerClient.from_config(config, options=options, require_all=False) as hub:
        error = hub.failures["locked"]
        assert isinstance(error, AuthRequiredError)
        text = str(error)
        assert "MCP server 'locked' requires authorization: HTTP 401" in text
        assert f"WWW-Authenticate: {locked.challenge}" in text
        assert "nexus-agent auth login locked --config team.json" in text
        # The probe server is unaffected.
        result = await hub.call_tool("probe__alpha", timeout=60)
        assert not result.is_error
    # In auto mode the 401 on server/discover is not taken for a legacy server: no second, initialize, request.
    assert locked.seen == (["server/discover"] if options.protocol == "auto" else ["initialize"])


async def test_a_refused_authorization_header_says_so(home: Path, locked: LockedServer, options: SourceOptions) -> None:
    config = parse_config(_config(locked, headers={"Authorization": "Bearer wrong-secret-value"}))
    async with MultiServerClient.from_config(config, options=options, require_all=False) as hub:
        error = hub.failures["locked"]
    assert isinstance(error, AuthRequiredError)
    assert "the configured Authorization header was refused" in str(error)
    assert "wrong-secret-value" not in str(error)
    assert len(locked.seen) == 1


async def test_a_stored_token_is_used(home: Path, locked: LockedServer, options: SourceOptions) -> None:
    await TokenStore("locked", locked.url).set_tokens(OAuthToken(access_token=locked.access_token, expires_in=3600))
    async with MultiServerClient.from_config(parse_config(_config(locked)), options=options) as hub:
        result = await hub.call_tool("whoami", timeout=60)
    assert result.text == "octo-dev"


async def test_an_expired_stored_token_is_refreshed_and_never_logged(
    home: Path, locked: LockedServer, options: SourceOptions, caplog: pytest.LogCaptureFixture
) -> None:
    store = TokenStore("locked", locked.url)
    old = OAuthToken(access_token="stale-access-token-1", refresh_token=locked.refresh_token, expires_in=1)
    await store.set_tokens(old)
    # A registered client is needed to refresh; the test server accepts any.
    from mcp.shared.auth import OAuthClientInformationFull

    await store.set_client_info(OAuthClientInformationFull(client_id="nexus-test", token_endpoint_auth_method="none"))
    data = json.loads(store.path.read_text())
    data["expires_at"] = time.time() - 10
    store.path.write_text(json.dumps(data))
    caplog.set_level(logging.DEBUG)
    async with MultiServerClient.from_config(parse_config(_config(locked)), options=options) as hub:
        result = await hub.call_tool("whoami", timeout=60)
    assert result.text == "octo-dev"
    assert locked.refreshes == 1
    stored = await store.get_tokens()
    assert stored is not None and stored.access_token == locked.access_token
    assert stored.refresh_token == locked.refresh_token  # kept when the server does not rotate it
    for secret in (locked.access_token, locked.refresh_token, "stale-access-token-1"):
        assert secret not in caplog.text


async def test_a_url_change_forgets_the_token(home: Path, locked: LockedServer, options: SourceOptions) -> None:
    await TokenStore("locked", "https://elsewhere.example/mcp").set_tokens(OAuthToken(access_token=locked.access_token))
    async with MultiServerClient.from_config(parse_config(_config(locked)), options=options, require_all=False) as hub:
        assert isinstance(hub.failures["locked"], AuthRequiredError)
    assert locked.seen and all(m in ("server/discover", "initialize") for m in locked.seen)


async def test_token_files_are_private_and_listed_without_tokens(home: Path) -> None:
    store = TokenStore("remote", "https://mcp.example.com/mcp")
    await store.set_tokens(OAuthToken(access_token="at-secret", refresh_token="rt-secret", expires_in=60, scope="a b"))
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_dir().stat().st_mode) == 0o700
    [entry] = stored_logins()
    assert (entry.server, entry.url, entry.scope, entry.refreshable) == (
        "remote",
        "https://mcp.example.com/mcp",
        "a b",
        True,
    )
    assert "secret" not in repr(entry)
    result = CliRunner().invoke(_cli(), ["auth", "list"])
    assert result.exit_code == 0, result.output
    assert "remote" in result.output and "secret" not in result.output
    result = CliRunner().invoke(_cli(), ["auth", "logout", "remote"])
    assert result.exit_code == 0 and "Logged out of remote" in result.output
    assert not store.path.exists() and stored_logins() == []
    assert not forget_login("remote")
    with pytest.raises(ValueError):
        forget_login("../escape")


def test_a_secret_in_the_config_file_is_refused() -> None:
    from nexus_agent.mcp import ConfigError

    with pytest.raises(ConfigError, match="clientSecretEnv"):
        parse_config({"mcpServers": {"x": {"url": "https://h/mcp", "oauth": {"clientId": "c", "clientSecret": "s"}}}})


async def test_a_missing_client_secret_variable_is_named(home: Path, options: SourceOptions) -> None:
    entry = {"url": "http://127.0.0.1:9/mcp", "oauth": {"clientId": "c", "clientSecretEnv": "NEXUS_TEST_UNSET_SECRET"}}
    config = parse_config({"mcpServers": {"x": entry}})
    async with MultiServerClient.from_config(config, options=options, require_all=False) as hub:
        assert "NEXUS_TEST_UNSET_SECRET" in str(hub.failures["x"])


def test_login_refuses_a_server_with_its_own_authorization_header(home: Path, tmp_path: Path) -> None:
    with LockedServer() as srv:
        cfg = tmp_path / "mcp.json"
        cfg.write_text(json.dumps(_config(srv, headers={"Authorization": f"Bearer {srv.access_token}"})))
        result = CliRunner().invoke(_cli(), ["auth", "login", "locked", "--config", str(cfg)])
    assert result.exit_code == 2  # its own Authorization header: OAuth does not apply
    assert "own Authorization header" in result.output


def _cli() -> typer.Typer:
    if not app.registered_groups:
        _register_all()
    return app


async def test_the_interactive_login_catches_the_redirect_on_localhost(home: Path) -> None:
    shown: list[str] = []
    login = _Login("remote", "interactive", None, "login-cmd", lambda: (401, ""), shown.append, open_browser=False)
    try:
        await login.redirect("https://auth.example/authorize?client_id=c")
        assert shown == ["https://auth.example/authorize?client_id=c"]

        async def browser() -> int:
            async with httpx2.AsyncClient() as http:
                await http.get(login.redirect_uri.replace("/callback", "/favicon.ico"))  # a stray request
                response = await http.get(f"{login.redirect_uri}?code=the-code&state=s1")
                return response.status_code

        result, status = await asyncio.gather(login.callback(), browser())
    finally:
        login.close()
    assert (result.code, result.state, status) == ("the-code", "s1", 200)


async def test_the_interactive_login_reports_a_refusal(home: Path) -> None:
    login = _Login("remote", "interactive", None, "login-cmd", lambda: (401, ""), None, open_browser=False)

    async def browser() -> None:
        async with httpx2.AsyncClient() as http:
            await http.get(f"{login.redirect_uri}?error=access_denied&error_description=no+thanks")

    try:
        with pytest.raises(OAuthFlowError, match="access_denied: no thanks"):
            await asyncio.gather(login.callback(), browser())
    finally:
        login.close()
