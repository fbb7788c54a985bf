"""A signed-in person's uploads: one presigned POST up to MULTIPART_THRESHOLD_BYTES, S3 multipart above it.

Every upload's key is `upload_key`'s, under the person's own prefix. A multipart upload is started by the
function (CreateMultipartUpload), which answers the part size and count and an `uploadToken`: an HMAC of
the key, the upload id, the declared size and the part size, made with the paging cursors' key. Each later
call (the parts' URLs, the parts uploaded, complete, abort) names the key and the upload id; the key must be
the person's own, and the URLs and the completion take the size from the token, so nobody signs a part of
another size or completes an upload to another total. Each part's presigned UploadPart signs its exact
Content-Length. Completing lists the parts S3 holds (ListParts): all of them, of the sizes the token says,
adding up to the declared size; a total that cannot be reached any more aborts the upload.

`onConflict` says what an upload to a name already in the index does: `replace` (the default, as before),
`keepBoth` (the next free `name (n).ext`) or `ask` (409 with the existing file, to ask the person).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from file_index.rules.key_pattern import KeyPattern
from search.dal import ObjectStore
from search.errors import BadRequest, Conflict
from search.people import (
    Person,
    UserAccess,
    own_folder,
    upload_content_type,
    upload_key,
    upload_size,
)

if TYPE_CHECKING:
    from search.upload_bodies import AbortBody, CompleteBody, PartEtag, PartsBody, StartBody, TicketBody

# Files above this go in parts: a dropped connection then costs one part, not the file, and the upload
# resumes. S3 takes parts of 5 MiB to 5 GiB (the last may be smaller), at most 10,000 of them.
MULTIPART_THRESHOLD_BYTES = 16 * 1024**2
# A POST form is used at once (the page sends the file as soon as it has the form), and S3 takes a form
# again and again while it is valid, each time an upload the index pays for: it lives FORM_SECONDS, plus
# the time the file takes at FORM_SLOWEST_BYTES_PER_SECOND (1 Mbit/s): 60 s for a small file, 194 s for
# 16 MiB; never longer than the deployment's upload URL expiry (UPLOAD_URL_EXPIRY_SECONDS, 900 s).
FORM_SECONDS = 60
FORM_SLOWEST_BYTES_PER_SECOND = 125_000
MIN_PART_BYTES = 8 * 1024**2
MAX_PARTS = 10_000
# The part URLs one request may ask for (each a presigned URL in the answer).
MAX_PART_URLS = 100
# How far keepBoth looks for a free `name (n).ext` before it gives up (409).
MAX_KEEP_BOTH = 1000


def part_size_for(size: int) -> int:
    """The part size of a `size`-byte file: MIN_PART_BYTES, or the whole MiB that fits it in MAX_PARTS."""
    mebibyte = 1024**2
    return max(MIN_PART_BYTES, math.ceil(size / MAX_PARTS / mebibyte) * mebibyte)


def part_length(number: int, *, size: int, part_size: int) -> int:
    """Bytes of part `number` (from 1): `part_size`, the last one what is left."""
    return min(part_size, size - (number - 1) * part_size)


def form_seconds(size: int, access: UserAccess) -> int:
    """How long the POST form of a file of `size` bytes stays valid: what its upload needs, no more."""
    return min(
        FORM_SECONDS + math.ceil(size / FORM_SLOWEST_BYTES_PER_SECOND), access.upload_url_expiry_seconds
    )


def keep_both_name(name: str, n: int) -> str:
    """`report.pdf` -> `report (n).pdf`; a name without an extension (or a dotfile) gets ` (n)` at the end."""
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        return f"{name} ({n})"
    return f"{stem} ({n}).{extension}"


@dataclass(frozen=True)
class MultipartTicket:
    """What the token of a multipart upload vouches for."""

    key: str
    upload_id: str
    size: int
    part_size: int

    @property
    def part_count(self) -> int:
        return max(1, math.ceil(self.size / self.part_size))


class Uploads:
    """Uploads of signed-in people to the bucket (`objects`), keyed by `key_pattern`; `existing(key)` is
    the indexed file under a key (None if none), and `secret` signs the upload tokens."""

    def __init__(
        self,
        *,
        objects: ObjectStore,
        key_pattern: KeyPattern,
        secret: bytes,
        existing: Callable[[str], dict[str, Any] | None],
    ) -> None:
        self._objects = objects
        self._key_pattern = key_pattern
        self._secret = secret
        self._existing = existing

    def start(self, person: Person, request: StartBody, access: UserAccess) -> dict[str, Any]:
        """A presigned POST (`{"key", "url", "fields"}`) for a file up to MULTIPART_THRESHOLD_BYTES; above
        it a multipart upload (`{"key", "uploadId", "partSize", "partCount", "size", "uploadToken"}`)."""
        name, folder = request.name, request.folder
        key = upload_key(person, name, folder, self._key_pattern)
        content_type = upload_content_type(request.content_type)
        size = upload_size(request.size, access)
        if request.on_conflict != "replace":
            key = self._free_key(person, key, name, folder, ask=request.on_conflict == "ask")
        if size <= MULTIPART_THRESHOLD_BYTES:
            form = self._objects.upload_form(
                key, content_type=content_type, size=size, expires_in=form_seconds(size, access)
            )
            return {"key": key, **form}
        upload_id = self._objects.start_multipart(key, content_type=content_type)
        ticket = MultipartTicket(key=key, upload_id=upload_id, size=size, part_size=part_size_for(size))
        return {
            "key": key,
            "uploadId": upload_id,
            "size": size,
            "partSize": ticket.part_size,
            "partCount": ticket.part_count,
            "uploadToken": self._token(ticket),
        }

    def part_urls(self, person: Person, request: PartsBody, access: UserAccess) -> dict[str, Any]:
        """Presigned UploadPart URLs of `partNumbers`, each with its part's exact Content-Length signed."""
        ticket = self._ticket(person, request)
        numbers = request.part_numbers
        if len(numbers) > MAX_PART_URLS:
            raise BadRequest(f"ask for at most {MAX_PART_URLS} parts at a time, not {len(numbers)}")
        outside = sorted({n for n in numbers if not 1 <= n <= ticket.part_count})
        if outside:
            raise BadRequest(
                f"part number(s) {', '.join(map(str, outside))} outside 1 to {ticket.part_count}, "
                "this upload's parts"
            )
        parts = []
        for number in sorted(set(numbers)):
            length = part_length(number, size=ticket.size, part_size=ticket.part_size)
            url = self._objects.part_url(
                ticket.key,
                upload_id=ticket.upload_id,
                part_number=number,
                length=length,
                expires_in=access.upload_url_expiry_seconds,
            )
            parts.append({"partNumber": number, "size": length, "url": url})
        return {"key": ticket.key, "uploadId": ticket.upload_id, "parts": parts}

    def uploaded_parts(self, person: Person, key: str, upload_id: str) -> dict[str, Any]:
        """The parts S3 holds of the person's multipart upload: what a resumed upload need not send."""
        parts = self._objects.uploaded_parts(self._own_key(person, key), upload_id)
        return {"key": key, "uploadId": upload_id, "parts": parts}

    def complete(self, person: Person, request: CompleteBody) -> dict[str, Any]:
        """Complete the upload once S3 holds every part at its size: exactly the declared total.

        A part missing is a 400 that leaves the upload to resume; parts that do not add up to the declared
        size (one the token does not allow) abort it, and are a 400 too. `parts`, if given, must name the
        ETags S3 holds.
        """
        ticket = self._ticket(person, request)
        held = {
            part["partNumber"]: part for part in self._objects.uploaded_parts(ticket.key, ticket.upload_id)
        }
        expected = range(1, ticket.part_count + 1)
        wrong = [
            n
            for n, part in held.items()
            if n not in expected
            or part["size"] != part_length(n, size=ticket.size, part_size=ticket.part_size)
        ]
        total = sum(part["size"] for part in held.values())
        if wrong or total > ticket.size:
            self._objects.abort_multipart(ticket.key, ticket.upload_id)
            raise BadRequest(
                f"the parts S3 holds add up to {total} bytes, not the declared {ticket.size} "
                f"(part(s) {', '.join(map(str, sorted(wrong)))} of another size); the upload is aborted"
            )
        missing = [n for n in expected if n not in held]
        if missing:
            shown = ", ".join(map(str, missing[:20])) + (", ..." if len(missing) > 20 else "")
            raise BadRequest(
                f"part(s) {shown} are not uploaded yet ({total} of {ticket.size} bytes); upload them and "
                "complete again"
            )
        if request.parts is not None:
            self._check_etags(request.parts, held)
        self._objects.complete_multipart(
            ticket.key, ticket.upload_id, [{"PartNumber": n, "ETag": held[n]["etag"]} for n in expected]
        )
        return {"key": ticket.key, "size": ticket.size}

    def abort(self, person: Person, request: AbortBody) -> None:
        """Abort the person's multipart upload: S3 drops the parts it holds."""
        self._objects.abort_multipart(self._own_key(person, request.key), request.upload_id)

    def _free_key(self, person: Person, key: str, name: str, folder: str | None, *, ask: bool) -> str:
        existing = self._existing(key)
        if existing is None:
            return key
        if ask:
            raise Conflict(f"a file named {name!r} already exists: replace it or keep both", existing)
        for n in range(1, MAX_KEEP_BOTH + 1):
            candidate = upload_key(person, keep_both_name(name, n), folder, self._key_pattern)
            if self._existing(candidate) is None:
                return candidate
        raise Conflict(f"{MAX_KEEP_BOTH} copies of {name!r} exist already; choose another name", existing)

    def _own_key(self, person: Person, key: str) -> str:
        if not key:
            raise BadRequest("key is required: the key POST /me/uploads answered")
        if (
            not key.startswith(own_folder(person.user))
            or self._key_pattern.split(key).upload_user != person.user
        ):
            raise BadRequest(f"key {key!r} is not in your own folder {own_folder(person.user)!r}")
        return key

    def _ticket(self, person: Person, request: TicketBody) -> MultipartTicket:
        """The upload a request names (`key`, `uploadId`, `uploadToken`), once the token vouches for it."""
        key, upload_id, token = self._own_key(person, request.key), request.upload_id, request.upload_token
        size_text, _, rest = token.partition(".")
        part_text, _, _ = rest.partition(".")
        if not (size_text.isdigit() and part_text.isdigit()):
            raise BadRequest("uploadToken is not the one POST /me/uploads answered for this upload")
        ticket = MultipartTicket(key=key, upload_id=upload_id, size=int(size_text), part_size=int(part_text))
        if ticket.part_size < 1 or not hmac.compare_digest(token, self._token(ticket)):
            raise BadRequest("uploadToken is not the one POST /me/uploads answered for this upload")
        return ticket

    def _token(self, ticket: MultipartTicket) -> str:
        message = f"upload\n{ticket.key}\n{ticket.upload_id}\n{ticket.size}\n{ticket.part_size}".encode()
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        signature = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        return f"{ticket.size}.{ticket.part_size}.{signature}"

    @staticmethod
    def _check_etags(given: list[PartEtag], held: Mapping[int, Mapping[str, Any]]) -> None:
        for part in given:
            number = part.part_number
            if number not in held or held[number]["etag"].strip('"') != part.etag.strip('"'):
                raise BadRequest(f"part {number}: its ETag is not the one S3 holds; upload it again")
