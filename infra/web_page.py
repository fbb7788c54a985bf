"""The page's files and the headers it is served with, said once for CloudFront and the local stack.

The page is the static app in `web/`: no build step; its runtime configuration is `config.json`, written
at deploy (CDK) or served by the local stack, naming the API, the user pool and its app client.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

WEB_ROOT = Path(__file__).resolve().parent.parent / "web"
CONFIG_FILE = "config.json"
# Types of the files in web/ (everything else is refused by the local server).
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


# The expiries the page offers for a share link, in seconds: those not above the deployment's cap.
SHARE_LINK_CHOICES = (300, 3600, 4 * 3600, 12 * 3600)


def link_expiries(max_seconds: int) -> list[int]:
    """The share link expiries the page offers (config.json's `linkExpiries`): the choices up to the cap,
    and the cap itself when no choice reaches it."""
    offered = [seconds for seconds in SHARE_LINK_CHOICES if seconds <= max_seconds]
    return offered if max_seconds in offered else [*offered, max_seconds]


def content_security_policy(connect_sources: Iterable[str], preview_sources: Iterable[str] = ()) -> str:
    """The page's CSP: its own scripts and styles only, and connections to the API, Cognito and S3; the
    bucket's files (`preview_sources`) as images, audio, video and PDF objects, for previews.

    A PDF's `<object>` needs `frame-src` as well as `object-src`: Chromium shows it in a frame of the
    PDF's own address (its viewer's), which `frame-src` governs (else `default-src 'none'` blocks it and
    the preview stays blank). Only the bucket's keys may be framed, as they may be objects."""
    connect = " ".join(["'self'", *connect_sources])
    previews = " ".join(preview_sources)
    shown = [f"media-src {previews}", f"object-src {previews}", f"frame-src {previews}"] if previews else []
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            " ".join(["img-src 'self' data:", *([previews] if previews else [])]),
            *shown,
            f"connect-src {connect}",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ]
    )


def security_headers(connect_sources: Iterable[str], preview_sources: Iterable[str] = ()) -> dict[str, str]:
    """Every answer's security headers (CloudFront's response headers policy sets the same)."""
    return {
        "Content-Security-Policy": content_security_policy(connect_sources, preview_sources),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    }
