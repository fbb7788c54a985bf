"""What a file may be previewed as in the page, without a download, and within which size.

A file is previewed only if its name's extension is on the allowlist below: images, PDF, plain text, audio
and video. The presigned URL makes S3 answer it with the allowlisted type (whatever type it was stored with;
text as `text/plain; charset=utf-8`) and `Content-Disposition: inline`, so that a browser shows it and
never runs it: HTML, SVG, XML, scripts and anything else are not on the list (415), and a file named
`.png` that holds HTML is still served as `image/png`, which no browser runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from search.errors import NoPreview, TooLargeToPreview

MiB = 1024**2
TEXT_TYPE = "text/plain; charset=utf-8"
# The type each previewable extension is served as, by kind.
PREVIEW_TYPES: dict[str, dict[str, str]] = {
    "image": {
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "png": "image/png",
        "gif": "image/gif",
        "webp": "image/webp",
        "avif": "image/avif",
    },
    "pdf": {"pdf": "application/pdf"},
    "text": dict.fromkeys(("txt", "text", "md", "csv", "tsv", "log", "json", "yaml", "yml"), TEXT_TYPE),
    "audio": {
        "mp3": "audio/mpeg",
        "wav": "audio/wav",
        "ogg": "audio/ogg",
        "oga": "audio/ogg",
        "m4a": "audio/mp4",
        "flac": "audio/flac",
    },
    "video": {"mp4": "video/mp4", "m4v": "video/mp4", "webm": "video/webm", "ogv": "video/ogg"},
}
# The largest file of each kind a preview shows: text is read whole into the page, images and PDFs are
# loaded whole by the browser; audio and video are streamed (range requests), so they may be larger.
PREVIEW_MAX_BYTES = {
    "image": 25 * MiB,
    "pdf": 50 * MiB,
    "text": 2 * MiB,
    "audio": 500 * MiB,
    "video": 500 * MiB,
}
# How long a preview URL works: an hour, so that a long video can still ask for its later ranges.
PREVIEW_URL_EXPIRY_SECONDS = 3600


@dataclass(frozen=True)
class Preview:
    kind: str
    content_type: str


def preview_of(key: str, size: int) -> Preview:
    """How `key` (of `size` bytes) is previewed; NoPreview or TooLargeToPreview saying why not."""
    name = key.rsplit("/", 1)[-1]
    extension = name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""
    for kind, types in PREVIEW_TYPES.items():
        if extension in types:
            limit = PREVIEW_MAX_BYTES[kind]
            if size > limit:
                raise TooLargeToPreview(
                    f"{name!r} is {size} bytes; a {kind} preview shows files up to {limit} bytes: download it"
                )
            return Preview(kind=kind, content_type=types[extension])
    shown = f".{extension}" if extension else "without an extension"
    raise NoPreview(
        f"{name!r} ({shown}) has no preview: only images, PDF, plain text, audio and video are shown "
        "in the page (never HTML, SVG or scripts); download it"
    )


def inline_disposition(key: str) -> str:
    """A Content-Disposition that shows the file in the browser, named as the key's last segment."""
    name = key.rsplit("/", 1)[-1] or "preview"
    fallback = re.sub(r"[^A-Za-z0-9._ -]", "_", name)
    return f"inline; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
