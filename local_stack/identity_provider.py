"""The user pool's managed login domain on the local stack, standing in for each configured identity provider.

moto's Cognito has no managed login and no federation, so with `identityProviders` the local stack serves
this stand-in on a port of its own. It answers the domain's three OAuth 2.0 endpoints as Cognito does for
a public app client:

- `GET /oauth2/authorize` (`response_type=code`, `identity_provider`, PKCE's `code_challenge` with
  `code_challenge_method=S256`, `state`): checks the client, its callback URL and its identity providers
  as moto holds them, then signs the provider's test person in at once (no form: the provider's own sign-in
  page is the organisation's, not the product's) and redirects back with a one-time code and the state.
- `POST /oauth2/token`: `authorization_code` (the code once, within five minutes, for the same client and
  redirect URI, and only with the verifier whose SHA-256 is the challenge) and `refresh_token`.
- `POST /oauth2/revoke`: revokes a refresh token: this domain refreshes it no more. (moto has no
  RevokeToken, so the stand-in keeps the revoked tokens itself; moto's own InitiateAuth would still take
  one, which the page never asks for a session that began here.)
- `GET /logout` (`client_id`, `logout_uri`): ends the managed login's session (the stand-in keeps none: it
  signs the provider's test person in at each authorize) and sends the browser to `logout_uri`, only when
  it is one of the app client's sign-out URLs as moto holds them; else an error page, as Cognito shows.

The tokens are the local pool's own: the test person is a user of moto's pool named as Cognito names a
federated user (`<provider>_<subject>`), and the tokens come from moto for that user, so the local API's
authorizer accepts them exactly as it accepts a password sign-in's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from botocore.exceptions import ClientError

from infra.federation import IdentityProvider
from local_stack.cognito import LocalUserPool

# Cognito's authorization codes are good for five minutes, once.
CODE_LIFETIME_S = 300
OAUTH_SCOPES = ("openid", "email", "profile")
FORM = "application/x-www-form-urlencoded"


def code_challenge(verifier: str) -> str:
    """PKCE's S256: the verifier's SHA-256, base64url without padding (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def provider_person(provider: str) -> str:
    """The user name Cognito gives the provider's test person: `<provider>_<subject at the provider>`."""
    return f"{provider}_{provider.lower()}-person"


@dataclass(frozen=True)
class _Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    username: str
    expires: float


class OAuthError(Exception):
    """An OAuth error answer: 400 with `{"error": ...}` (token, revoke) or a page (authorize)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


class LocalSignInDomain(ThreadingHTTPServer):
    """The stand-in domain on a thread of its own; a context manager (`close()` stops it)."""

    daemon_threads = True

    def __init__(
        self,
        *,
        host: str,
        cognito: Any,
        pool: LocalUserPool,
        providers: tuple[IdentityProvider, ...],
        page_url: str,
        port: int = 0,
        clock: Any = time.monotonic,
    ) -> None:
        super().__init__((host, port), _Handler)
        self.cognito = cognito
        self.pool = pool
        self.providers = providers
        self.page_url = page_url
        self.page_origin = "{0.scheme}://{0.netloc}".format(urlsplit(page_url))
        self._clock = clock
        self._grants: dict[str, _Grant] = {}
        self._passwords: dict[str, str] = {}
        self._revoked: set[str] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, name="sign-in-domain", daemon=True)
        self._register()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def page_config(self) -> dict[str, Any]:
        """config.json's keys for the page, as the deployed stack writes them."""
        return {
            "signInDomain": self.url,
            "identityProviders": [provider.name for provider in self.providers],
            "signInRedirectUri": self.page_url,
        }

    def __enter__(self) -> LocalSignInDomain:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self.shutdown()
        self.server_close()

    # -- what the deployed stack configures, in moto ----------------------------------------------------

    def _register(self) -> None:
        """The providers in the pool and the page client's code grant, as infra/user_pool.py deploys them."""
        for provider in self.providers:
            details = (
                {"client_id": provider.client_id or "", "authorize_scopes": " ".join(provider.scopes)}
                if provider.kind == "OIDC"
                else {"MetadataURL": provider.metadata_url or ""}
            )
            self.cognito.create_identity_provider(
                UserPoolId=self.pool.pool_id,
                ProviderName=provider.name,
                ProviderType=provider.kind,
                ProviderDetails=details,
                AttributeMapping=dict(provider.attribute_mapping),
            )
        self.cognito.update_user_pool_client(
            UserPoolId=self.pool.pool_id,
            ClientId=self.pool.client_id,
            AllowedOAuthFlows=["code"],
            AllowedOAuthFlowsUserPoolClient=True,
            AllowedOAuthScopes=list(OAUTH_SCOPES),
            CallbackURLs=[self.page_url],
            LogoutURLs=[self.page_url],
            SupportedIdentityProviders=["COGNITO", *(provider.name for provider in self.providers)],
        )

    def _client(self, client_id: str) -> dict[str, Any]:
        try:
            client: dict[str, Any] = self.cognito.describe_user_pool_client(
                UserPoolId=self.pool.pool_id, ClientId=client_id
            )["UserPoolClient"]
        except ClientError:
            raise OAuthError("invalid_client", "no such app client") from None
        return client

    # -- the endpoints ----------------------------------------------------------------------------------

    def authorize(self, query: Mapping[str, str]) -> str:
        """The redirect back to the page with a code (the person signed in at their provider)."""
        client = self._client(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in client.get("CallbackURLs", []):
            raise OAuthError("redirect_mismatch", "redirect_uri is not a callback URL of the app client")
        if query.get("response_type") != "code" or "code" not in client.get("AllowedOAuthFlows", []):
            raise OAuthError("unsupported_response_type", "only response_type=code")
        provider = query.get("identity_provider", "")
        if provider not in client.get("SupportedIdentityProviders", []) or provider == "COGNITO":
            raise OAuthError("invalid_request", f"identity_provider {provider!r} is not one of the client's")
        challenge = query.get("code_challenge", "")
        if query.get("code_challenge_method") != "S256" or not challenge:
            raise OAuthError("invalid_request", "PKCE: code_challenge with code_challenge_method=S256")
        username = self._federated_user(provider)
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._grants[code] = _Grant(
                client_id=client["ClientId"],
                redirect_uri=redirect_uri,
                challenge=challenge,
                username=username,
                expires=self._clock() + CODE_LIFETIME_S,
            )
        answer = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        return f"{redirect_uri}?{urlencode(answer)}"

    def logout(self, query: Mapping[str, str]) -> str:
        """Where the managed login's sign-out sends the browser back to: `logout_uri`, if the client's."""
        client = self._client(query.get("client_id", ""))
        logout_uri = query.get("logout_uri", "")
        if logout_uri not in client.get("LogoutURLs", []):
            raise OAuthError("invalid_request", "logout_uri is not a sign-out URL of the app client")
        return logout_uri

    def token(self, form: Mapping[str, str]) -> dict[str, Any]:
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            return self._redeem(form)
        if grant_type == "refresh_token":
            self._client(form.get("client_id", ""))
            with self._lock:
                revoked = form.get("refresh_token", "") in self._revoked
            if revoked:
                raise OAuthError("invalid_grant", "the refresh token has been revoked")
            try:
                result = self.cognito.initiate_auth(
                    ClientId=form.get("client_id", ""),
                    AuthFlow="REFRESH_TOKEN_AUTH",
                    AuthParameters={"REFRESH_TOKEN": form.get("refresh_token", "")},
                )["AuthenticationResult"]
            except ClientError:
                raise OAuthError(
                    "invalid_grant", "the refresh token is not valid (revoked or unknown)"
                ) from None
            return {
                "id_token": result["IdToken"],
                "access_token": result["AccessToken"],
                "expires_in": result["ExpiresIn"],
                "token_type": "Bearer",
            }
        raise OAuthError("unsupported_grant_type", "grant_type is authorization_code or refresh_token")

    def _redeem(self, form: Mapping[str, str]) -> dict[str, Any]:
        with self._lock:
            grant = self._grants.pop(form.get("code", ""), None)  # once, whatever happens next
        if grant is None or grant.expires <= self._clock():
            raise OAuthError("invalid_grant", "the code is unknown, used or expired")
        if form.get("client_id") != grant.client_id or form.get("redirect_uri") != grant.redirect_uri:
            raise OAuthError("invalid_grant", "the code was issued to another client or redirect_uri")
        verifier = form.get("code_verifier", "")
        if not verifier or not secrets.compare_digest(code_challenge(verifier), grant.challenge):
            raise OAuthError("invalid_grant", "the code_verifier does not match the code_challenge")
        result = self.cognito.initiate_auth(
            ClientId=grant.client_id,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": grant.username, "PASSWORD": self._passwords[grant.username]},
        )["AuthenticationResult"]
        return {
            "id_token": result["IdToken"],
            "access_token": result["AccessToken"],
            "refresh_token": result["RefreshToken"],
            "expires_in": result["ExpiresIn"],
            "token_type": "Bearer",
        }

    def revoke(self, form: Mapping[str, str]) -> None:
        self._client(form.get("client_id", ""))
        token = form.get("token", "")
        if not token:
            raise OAuthError("invalid_request", "token is required")
        with self._lock:
            self._revoked.add(token)

    def _federated_user(self, provider: str) -> str:
        """The provider's test person in the pool (made at their first sign-in, as Cognito does)."""
        username = provider_person(provider)
        with self._lock:
            if username in self._passwords:
                return username
            # Known to this stand-in only: a federated person signs in at their provider, never with it.
            password = f"{secrets.token_urlsafe(18)}Aa1!"
            self.cognito.admin_create_user(
                UserPoolId=self.pool.pool_id,
                Username=username,
                MessageAction="SUPPRESS",
                UserAttributes=[
                    {"Name": "email", "Value": f"{username.split('_', 1)[1]}@{provider.lower()}.example"}
                ],
            )
            self.cognito.admin_set_user_password(
                UserPoolId=self.pool.pool_id, Username=username, Password=password, Permanent=True
            )
            self._passwords[username] = password
        return username


class _Handler(BaseHTTPRequestHandler):
    server: LocalSignInDomain

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        endpoints = {"/oauth2/authorize": self.server.authorize, "/logout": self.server.logout}
        if parts.path not in endpoints:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n")
            return
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        try:
            location = endpoints[parts.path](query)
        except OAuthError as error:
            # Cognito shows an error page rather than redirect to an address it has not checked.
            self._send(HTTPStatus.BAD_REQUEST, "text/plain; charset=utf-8", f"{error.description}\n".encode())
            return
        self.send_response(HTTPStatus.FOUND)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_OPTIONS(self) -> None:
        self._send(HTTPStatus.NO_CONTENT, "text/plain", b"")

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if path not in ("/oauth2/token", "/oauth2/revoke"):
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n")
            return
        if not (self.headers.get("Content-Type") or "").startswith(FORM):
            self._json(HTTPStatus.BAD_REQUEST, {"error": "invalid_request"})
            return
        form = {name: values[0] for name, values in parse_qs(body).items()}
        try:
            if path == "/oauth2/token":
                self._json(HTTPStatus.OK, self.server.token(form))
            else:
                self.server.revoke(form)
                self._send(HTTPStatus.OK, "application/json", b"")
        except OAuthError as error:
            self._json(HTTPStatus.BAD_REQUEST, {"error": error.error, "error_description": error.description})

    def _json(self, status: int, answer: Mapping[str, Any]) -> None:
        self._send(status, "application/json;charset=UTF-8", json.dumps(answer).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        # The page calls the token and revoke endpoints from its own origin.
        self.send_header("Access-Control-Allow-Origin", self.server.page_origin)
        self.send_header("Access-Control-Allow-Methods", "POST")
        self.send_header("Access-Control-Allow-Headers", "Content-Type")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet, as the other stand-ins
        pass
