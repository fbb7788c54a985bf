"""HTTP to the search API: SigV4-signed for a deployed API Gateway, plain for the local stack.

Signing uses botocore (`SigV4Auth`, service `execute-api`) with credentials from the default chain
(environment, profile, SSO, instance role). Redirects are not followed: a download's 302 carries a
presigned S3 URL, which must be fetched without the API's signature headers.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from file_search_client import __version__

_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
USER_AGENT = f"file-search-client/{__version__}"


class ApiError(Exception):
    """The API answered with an error status (0: no answer); `message` is its text, `str()` the status
    and the text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def needs_signing(api_url: str) -> bool:
    """True for a deployed API (https, AWS host); the local stack takes plain HTTP."""
    parts = urlsplit(api_url)
    host = parts.hostname or ""
    return parts.scheme == "https" and host.endswith((".amazonaws.com", ".amazonaws.com.cn"))


def region_of(api_url: str) -> str | None:
    match = _EXECUTE_API_HOST.match(urlsplit(api_url).hostname or "")
    return match.group(1) if match else None


def key_path(route: str, object_key: str) -> str:
    """`/route/<key>` with every reserved character of the key percent-encoded, "/" as %2F."""
    return f"/{route}/{quote(object_key, safe='')}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class SearchApiClient:
    """GET requests to the API at `api_url` (the stage URL, e.g. https://id.execute-api.r.amazonaws.com/v1)."""

    def __init__(
        self,
        api_url: str,
        *,
        sign: bool | None = None,
        region: str | None = None,
        timeout: float = 30,
        session: Any = None,
    ) -> None:
        """`session`: a boto3 `Session` (or a botocore one) whose credentials sign; the default chain's
        when None."""
        self.api_url = api_url.rstrip("/")
        self.sign = needs_signing(api_url) if sign is None else sign
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect)
        self._credentials: Any = None
        self._region = region
        if self.sign:
            chosen = session if session is not None else botocore.session.get_session()
            self._credentials = chosen.get_credentials()
            if self._credentials is None:
                raise ApiError(0, "no AWS credentials found to sign requests (see `aws configure`)")
            session_region = getattr(chosen, "region_name", None)
            if session_region is None and hasattr(chosen, "get_config_variable"):
                session_region = chosen.get_config_variable("region")
            self._region = region or region_of(api_url) or session_region
            if not self._region:
                raise ApiError(0, "cannot tell the API's region: pass --region")

    def signed_headers(self, url: str) -> dict[str, str]:
        """Headers of a GET of `url`; if signing, with Authorization, X-Amz-Date, X-Amz-Security-Token."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if not self.sign:
            return headers
        request = AWSRequest(method="GET", url=url, headers=headers)
        SigV4Auth(self._credentials.get_frozen_credentials(), "execute-api", self._region).add_auth(request)
        return dict(request.headers.items())

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> HttpResponse:
        # RFC 3986 encoding (a space is %20, never +): SigV4 signs the query exactly as it is sent, and
        # API Gateway's canonical form of it uses %20.
        query = urlencode({k: v for k, v in (params or {}).items() if v is not None}, quote_via=quote)
        url = self.api_url + path + (f"?{query}" if query else "")
        request = urllib.request.Request(url, headers=self.signed_headers(url), method="GET")  # noqa: S310
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return HttpResponse(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as error:
            body = error.read()
            if 300 <= error.code < 400:
                return HttpResponse(error.code, dict(error.headers.items()), body)
            raise ApiError(error.code, _message(error.code, body)) from None

    def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.get(path, params).json()


def _message(status: int, body: bytes) -> str:
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return message or body[:200].decode("utf-8", "replace") or f"HTTP {status} without a message"


def fetch(url: str, timeout: float = 60) -> bytes:
    """The body of a plain GET (a presigned URL carries its own authorization)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ApiError(0, f"refusing to fetch a {parts.scheme!r} URL")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (scheme checked)
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, f"download failed: {error.reason}") from None
