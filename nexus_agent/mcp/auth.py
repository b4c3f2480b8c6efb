"""OAuth 2.1 for HTTP MCP servers, on the SDK's :class:`~mcp.client.auth.OAuthClientProvider`.

What the SDK does: protected-resource and authorization-server metadata discovery, dynamic client registration (or a
URL-based client id), PKCE, the scopes a ``WWW-Authenticate`` challenge names, scope step-up on 403
``insufficient_scope``, and token refresh. What this module adds:

- :class:`TokenStore`: the tokens and the client registration of one server, in ``$NEXUS_HOME/auth/<server>.json``
  (mode 0600, folder 0700). A record is bound to the server's URL: a changed URL reads as "not logged in", so a
  token is never sent to another server. The expiry is stored as a time, so a restart refreshes an expired token
  instead of sending it.
- :data:`LoginMode`: what happens when a connection needs a *new* authorization (no token, or refresh failed).
  ``"never"`` (a normal run) raises :class:`AuthRequiredError` naming the server, its challenge and the login
  command; ``"interactive"`` (``nexus-agent auth login``) opens the browser or prints the URL and catches the
  redirect on a localhost port; ``"headless"`` follows the authorization URL itself and takes the code from its
  redirect, which works where the authorization server approves without a person (``"oauth": {"headless": true}``).
- A 401 that is still a 401 after all that raises :class:`AuthRequiredError` inside the transport, so it ends the
  connection: in ``auto`` mode it is never taken for a legacy server that does not know ``server/discover``.

Tokens never reach a log line, an event or an error message: the stored file is the only place they are written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import webbrowser
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, BaseModel, ValidationError

from nexus_agent import __version__
from nexus_agent.mcp.config import SERVER_NAME, HttpServerConfig
from nexus_agent.mcp.errors import AuthRequiredError, ServerStartError
from nexus_agent.paths import cache_dir

log = logging.getLogger(__name__)
_M = TypeVar("_M", bound=BaseModel)

LoginMode = Literal["never", "interactive", "headless"]

_CLIENT_NAME = "Nexus Agent"
_CALLBACK_PATH = "/callback"
_LOGIN_TIMEOUT_S = 300.0  # how long `auth login` waits for the browser's redirect


def login_command(server: str, config_file: str | None) -> str:
    """The command that logs in to ``server`` (named in every authorization error)."""
    where = f" --config {config_file}" if config_file else " --config <your mcpServers file>"
    return f"nexus-agent auth login {server}{where}"


# ---- storage -------------------------------------------------------------------------------------------


def auth_dir(root: Path | None = None) -> Path:
    """Where the per-server records live: ``$NEXUS_HOME/auth`` (mode 0700)."""
    folder = root if root is not None else cache_dir("auth")
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


@dataclass(frozen=True)
class StoredLogin:
    """What ``auth list`` shows of one record: never the tokens themselves."""

    server: str
    url: str
    scope: str | None
    expires_at: float | None
    refreshable: bool
    client_id: str | None
    updated: str


class TokenStore:
    """The SDK's ``TokenStorage`` for one server, backed by one JSON file written with mode 0600.

    ``preregistered`` is the config's client (``oauth.clientId``): it is returned as the client information and
    never written, so the secret stays in the environment.
    """

    def __init__(
        self,
        server: str,
        url: str,
        *,
        root: Path | None = None,
        preregistered: OAuthClientInformationFull | None = None,
    ) -> None:
        self.server = server
        self.url = url
        self.path = _record_path(server, root)
        self.preregistered = preregistered

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable OAuth record of MCP server %r (%s)", self.server, type(exc).__name__)
            return {}
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}  # another server's record (the URL changed): never send its token here
        return data

    def _write(self, data: dict[str, Any]) -> None:
        data = {**data, "server": self.server, "url": self.url, "updated": _now_iso()}
        tmp = self.path.with_suffix(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file left over from a crash
        os.replace(tmp, self.path)

    def _stored(self, key: str, model: type[_M]) -> _M | None:
        """The stored ``key`` as ``model``; None when absent or no longer valid (a login stores it anew)."""
        raw = self._read().get(key)
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError:
            return None

    # -- TokenStorage ------------------------------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        return self._stored("tokens", OAuthToken)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self._write(data)
        log.info("MCP server %r: OAuth tokens stored (scope: %s)", self.server, tokens.scope or "none")

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.preregistered is not None:
            return self.preregistered
        return self._stored("client", OAuthClientInformationFull)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.preregistered is not None:
            return
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)
        log.info("MCP server %r: registered OAuth client %s", self.server, client_info.client_id)

    # -- ours ----------------------------------------------------------------------------------------------

    def expires_at(self) -> float | None:
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    def has_tokens(self) -> bool:
        return "tokens" in self._read()

    def clear_tokens(self) -> None:
        """Forget the tokens (a fresh login follows) but keep the client registration."""
        data = self._read()
        if data.pop("tokens", None) is not None:
            data.pop("expires_at", None)
            self._write(data)

    def registered_redirect_port(self) -> int | None:
        """The localhost port of the stored registration's redirect URI, so a new login can reuse it."""
        for uri in self._read().get("client", {}).get("redirect_uris") or []:
            parts = urlsplit(str(uri))
            if parts.hostname in ("127.0.0.1", "localhost") and parts.port:
                return parts.port
        return None

    def forget_client(self) -> None:
        data = self._read()
        if data.pop("client", None) is not None:
            self._write(data)


def stored_logins(root: Path | None = None) -> list[StoredLogin]:
    """Every stored record, by server name."""
    out: list[StoredLogin] = []
    for path in sorted(auth_dir(root).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        tokens = data.get("tokens") or {}
        out.append(
            StoredLogin(
                server=str(data.get("server", path.stem)),
                url=str(data.get("url", "")),
                scope=tokens.get("scope"),
                expires_at=data.get("expires_at"),
                refreshable=bool(tokens.get("refresh_token")),
                client_id=(data.get("client") or {}).get("client_id"),
                updated=str(data.get("updated", "")),
            )
        )
    return out


def forget_login(server: str, root: Path | None = None) -> bool:
    """Delete ``server``'s record (tokens and registration); False if there was none."""
    path = _record_path(server, root)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _record_path(server: str, root: Path | None) -> Path:
    if not SERVER_NAME.match(server) or "__" in server:
        raise ValueError(f"not a server name: {server!r}")
    return auth_dir(root) / f"{server}.json"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# ---- the login's redirect ------------------------------------------------------------------------------


class _Login:
    """Where the authorization URL goes and how its code comes back, per :data:`LoginMode`."""

    def __init__(
        self,
        server: str,
        mode: LoginMode,
        port: int | None,
        login: str,
        challenge: Callable[[], tuple[int, str]],
        on_url: Callable[[str], None] | None,
        open_browser: bool,
    ) -> None:
        self.server = server
        self.mode = mode
        self.login = login
        self.challenge = challenge
        self.on_url = on_url
        self.open_browser = open_browser
        self._sock: socket.socket | None = None
        self._result: AuthorizationCodeResult | None = None
        if mode == "interactive":
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self._sock.bind(("127.0.0.1", port or 0))
            except OSError:
                self._sock.close()
                raise
            self._sock.listen(8)
            port = int(self._sock.getsockname()[1])
        self.redirect_uri = f"http://127.0.0.1:{port or 0}{_CALLBACK_PATH}" if port else _placeholder_redirect()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def redirect(self, authorization_url: str) -> None:
        if self.mode == "never":
            status, challenge = self.challenge()
            raise AuthRequiredError(self.server, status, challenge, self.login, "no valid token is stored")
        if self.mode == "headless":
            self._result = await self._follow(authorization_url)
            return
        if self.on_url is not None:
            self.on_url(authorization_url)
        if self.open_browser:
            with contextlib.suppress(Exception):
                webbrowser.open(authorization_url)

    async def callback(self) -> AuthorizationCodeResult:
        if self.mode == "headless":
            assert self._result is not None
            return self._result
        assert self._sock is not None
        got: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                target = head.split(b" ", 2)[1].decode("ascii", "replace")
                parts = urlsplit(target)
                if parts.path != _CALLBACK_PATH:
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                try:
                    result = _code_from_query(parts.query)
                    page = b"Nexus Agent: authorized. You can close this tab."
                    if not got.done():
                        got.set_result(result)
                except OAuthFlowError as exc:
                    page = f"Nexus Agent: authorization failed: {exc}".encode()
                    if not got.done():
                        got.set_exception(exc)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                    + f"Content-Length: {len(page)}\r\n\r\n".encode()
                    + page
                )
                await writer.drain()
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, IndexError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(serve, sock=self._sock)
        self._sock = None  # the server owns it now
        async with server:
            try:
                return await asyncio.wait_for(got, _LOGIN_TIMEOUT_S)
            except TimeoutError:
                raise OAuthFlowError(f"no authorization arrived within {_LOGIN_TIMEOUT_S:g} s") from None

    async def _follow(self, authorization_url: str) -> AuthorizationCodeResult:
        """Headless: the authorization server answers the URL with a redirect that carries the code."""
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30.0) as http:
            response = await http.get(authorization_url)
        location = response.headers.get("location", "")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            status, challenge = self.challenge()
            raise AuthRequiredError(
                self.server,
                status,
                challenge,
                self.login,
                f"headless authorization needs a person: the authorization endpoint answered HTTP "
                f"{response.status_code} instead of a redirect",
            )
        return _code_from_query(urlsplit(location).query)


def _code_from_query(query: str) -> AuthorizationCodeResult:
    params = {k: v[0] for k, v in parse_qs(query).items() if v}
    if "error" in params:
        detail = params.get("error_description", "")
        raise OAuthFlowError(f"the authorization server refused: {params['error']}{': ' + detail if detail else ''}")
    if "code" not in params:
        raise OAuthFlowError("the authorization redirect carried no code")
    return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


def _placeholder_redirect() -> str:
    # Registration needs a redirect URI even when no browser comes back (headless, or a run that only refreshes).
    return f"http://127.0.0.1:{_free_port()}{_CALLBACK_PATH}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- the provider --------------------------------------------------------------------------------------


async def _guarded_flow(
    provider: OAuthClientProvider,
    flow: AsyncGenerator[httpx2.Request, httpx2.Response],
    request: httpx2.Request,
    on_refusal: Callable[[httpx2.Response], None],
) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
    """Drive the SDK provider's ``flow``, report each 401/403 of ``request`` and check the response it ends with."""
    last: httpx2.Response | None = None
    try:
        outgoing = await flow.__anext__()
        while True:
            response = yield outgoing
            if outgoing is request:
                last = response
                if response.status_code in (401, 403):
                    on_refusal(response)
            outgoing = await flow.asend(response)
    except StopAsyncIteration:
        pass
    finally:
        await flow.aclose()
    if last is not None:
        _raise_if_refused(_server_of(provider), last, _login_of(provider), "refused after authorization")


class NexusOAuth(OAuthClientProvider):
    """The SDK's provider, plus: stored expiry, a login mode, and a 401 that ends the connection with a clear error."""

    def __init__(
        self, server: str, url: str, store: TokenStore, login: _Login, metadata: OAuthClientMetadata, **kw: Any
    ):
        super().__init__(
            url,
            metadata,
            store,
            redirect_handler=login.redirect,
            callback_handler=login.callback,
            **kw,
        )
        self.server = server
        self.store = store
        self.login = login
        self.last_challenge: tuple[int, str] = (401, "")

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.token_expiry_time = self.store.expires_at()

    def _refused(self, response: httpx2.Response) -> None:
        self.last_challenge = (response.status_code, response.headers.get("www-authenticate", ""))

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self.login.mode == "never" and not self.store.has_tokens():
            # Nothing to refresh and no login allowed: no discovery, no registration, just the clear error.
            response = yield request
            _raise_if_refused(self.server, response, self.login.login, "not logged in")
            return
        guarded = _guarded_flow(self, super().async_auth_flow(request), request, self._refused)
        try:
            outgoing = await guarded.__anext__()
            while True:
                response = yield outgoing
                outgoing = await guarded.asend(response)
        except StopAsyncIteration:
            return


class NexusClientCredentials(ClientCredentialsOAuthProvider):
    """Machine to machine (``"grantType": "client_credentials"``, SEP-1046): the client's own id and secret get the
    token, so no person and no login are involved; tokens are stored like a login's, with their expiry."""

    def __init__(self, server: str, url: str, store: TokenStore, login_cmd: str, **kw: Any) -> None:
        super().__init__(url, store, **kw)
        self.server = server
        self.store = store
        self.login_cmd = login_cmd

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.token_expiry_time = self.store.expires_at()

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        guarded = _guarded_flow(self, super().async_auth_flow(request), request, lambda _r: None)
        try:
            outgoing = await guarded.__anext__()
            while True:
                response = yield outgoing
                outgoing = await guarded.asend(response)
        except StopAsyncIteration:
            return


def _server_of(provider: OAuthClientProvider) -> str:
    return provider.server if isinstance(provider, NexusOAuth | NexusClientCredentials) else "?"


def _login_of(provider: OAuthClientProvider) -> str:
    if isinstance(provider, NexusOAuth):
        return provider.login.login
    if isinstance(provider, NexusClientCredentials):
        return provider.login_cmd
    return "?"


class HeaderAuthGate(httpx2.Auth):
    """For a server configured with its own ``Authorization`` header: a 401 ends the connection with a clear error."""

    def __init__(self, server: str, login: str) -> None:
        self.server = server
        self.login = login

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        _raise_if_refused(self.server, response, self.login, "the configured Authorization header was refused")


def _raise_if_refused(server: str, response: httpx2.Response, login: str, detail: str) -> None:
    challenge = response.headers.get("www-authenticate", "")
    if response.status_code == 401 or (response.status_code == 403 and "insufficient_scope" in challenge):
        raise AuthRequiredError(server, response.status_code, challenge, login, detail)


@dataclass(frozen=True)
class AuthOptions:
    """How one connection authorizes. ``mode`` None: the config's ``oauth.headless`` picks headless, else never."""

    mode: LoginMode | None = None
    config_file: str | None = None
    store_root: Path | None = None  # default $NEXUS_HOME/auth
    on_url: Callable[[str], None] | None = None  # interactive: shown the authorization URL
    open_browser: bool = True


def build_auth(server: str, config: HttpServerConfig, options: AuthOptions) -> tuple[httpx2.Auth, Callable[[], None]]:
    """The ``httpx2.Auth`` for one HTTP server and a function that releases what it holds (the redirect socket)."""
    login_cmd = login_command(server, options.config_file)
    if any(k.lower() == "authorization" for k in config.headers):
        return HeaderAuthGate(server, login_cmd), lambda: None
    oauth = config.oauth
    if oauth.grant_type == "client_credentials":
        return _client_credentials(server, config, options, login_cmd), lambda: None
    mode: LoginMode = options.mode or ("headless" if oauth.headless else "never")
    preregistered = None
    if oauth.client_id is not None:
        secret = _client_secret(server, config)
        method = oauth.token_endpoint_auth_method or ("client_secret_basic" if secret else "none")
        port = oauth.redirect_port
        preregistered = OAuthClientInformationFull(
            client_id=oauth.client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            redirect_uris=[AnyUrl(f"http://127.0.0.1:{port}{_CALLBACK_PATH}")] if port else None,
        )
    store = TokenStore(server, config.url, root=options.store_root, preregistered=preregistered)
    port = oauth.redirect_port
    if port is None and mode == "interactive" and preregistered is None:
        port = store.registered_redirect_port()
    provider: NexusOAuth | None = None

    def challenge() -> tuple[int, str]:
        return provider.last_challenge if provider is not None else (401, "")

    try:
        login = _Login(server, mode, port, login_cmd, challenge, options.on_url, options.open_browser)
    except OSError:
        # The stored registration's port is taken: register again with a new one.
        store.forget_client()
        login = _Login(server, mode, oauth.redirect_port, login_cmd, challenge, options.on_url, options.open_browser)
    metadata = OAuthClientMetadata(
        client_name=_CLIENT_NAME,
        software_id="nexus-agent",
        software_version=__version__,
        redirect_uris=[AnyUrl(login.redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        scope=oauth.scope,
    )
    provider = NexusOAuth(server, config.url, store, login, metadata, client_metadata_url=oauth.client_metadata_url)
    return provider, login.close


def _client_secret(server: str, config: HttpServerConfig) -> str | None:
    """The pre-registered client's secret, from the environment variable the config names."""
    name = config.oauth.client_secret_env
    if name is None:
        return None
    secret = os.environ.get(name)
    if not secret:
        raise ServerStartError(
            server, f"the environment variable {name} (named by mcpServers.{server}.oauth.clientSecretEnv) is not set"
        )
    return secret


def _client_credentials(
    server: str, config: HttpServerConfig, options: AuthOptions, login_cmd: str
) -> NexusClientCredentials:
    oauth = config.oauth
    secret = _client_secret(server, config)
    if oauth.client_id is None or secret is None:
        raise ServerStartError(
            server,
            f'mcpServers.{server}.oauth: "grantType": "client_credentials" needs "clientId" and "clientSecretEnv"',
        )
    method = oauth.token_endpoint_auth_method
    return NexusClientCredentials(
        server,
        config.url,
        TokenStore(server, config.url, root=options.store_root),
        login_cmd,
        client_id=oauth.client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_post" if method == "client_secret_post" else "client_secret_basic",
        scope=oauth.scope,
        issuer=oauth.issuer,
    )
