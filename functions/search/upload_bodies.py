"""The JSON bodies of the upload routes, one Pydantic model each, and the 400 a bad body is answered with.

A route reads its body with `read_body`, after the person and the query string are checked (a request
without a valid ID token is a 401 whatever its body). The model checks each field's type; the first fault
is a BadRequest with the message the API gives for it: a body that is not JSON or not an object, unknown
fields, a field missing (those first), else the first field of the wrong type or value. What needs the
person or the deployment (the key's folder, the upload limit, the token) is `search.uploads`'s to check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from search import upload_shapes
from search.errors import BadRequest

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Refusal:
    """What a field of the wrong type or value is answered with; `missing`, if another, when it is absent,
    and `with_value`: the message ends with the value given (`, not 'overwrite'`)."""

    invalid: str
    missing: str | None = None
    with_value: bool = False


class UploadBody(BaseModel):
    """A body's fields by their camelCase names on the wire; strict: `"1"` is no size, `true` no number."""

    model_config = ConfigDict(
        alias_generator=to_camel, strict=True, extra="forbid", frozen=True, defer_build=True
    )

    # The body as the route's description and the refusal of a body that is not JSON show it
    # (`search.upload_shapes`).
    SHAPE: ClassVar[str]
    NOT_OBJECT: ClassVar[str]

    @classmethod
    def refusal(cls, errors: list[ErrorDetails]) -> str:
        """The message of a body that fails the model with `errors` (pydantic's, in the fields' order)."""
        if any(not error["loc"] for error in errors):
            return cls.NOT_OBJECT
        names = {field.alias or name: field for name, field in cls.model_fields.items()}
        unknown = sorted(str(error["loc"][0]) for error in errors if error["type"] == "extra_forbidden")
        if unknown:
            return f"unknown field(s) {', '.join(unknown)}; give {', '.join(names)}"
        missing = [error for error in errors if error["type"] == "missing" and len(error["loc"]) == 1]
        error = (missing or errors)[0]
        (refusal,) = [rule for rule in names[str(error["loc"][0])].metadata if isinstance(rule, Refusal)]
        if missing:
            return refusal.missing or refusal.invalid
        return f"{refusal.invalid}, not {error['input']!r}" if refusal.with_value else refusal.invalid


class StartBody(UploadBody):
    """`POST /me/uploads`: the file to upload, where, and what to do if its name is taken."""

    SHAPE = upload_shapes.START
    NOT_OBJECT = 'the body must be a JSON object: {"name", "contentType", "size", "folder", "onConflict"}'

    name: Annotated[
        str, Refusal("name must be a string: the file's name", missing="name is required: the file's name")
    ]
    content_type: Annotated[str | None, Refusal("contentType must be a media type such as 'image/png'")] = (
        None
    )
    size: Annotated[
        int,
        Field(ge=0),
        Refusal(
            "size must be the file's size in bytes, a whole number",
            missing="size is required: the file's size in bytes",
        ),
    ]
    folder: Annotated[str | None, Refusal("folder must be a string such as 'reports/2026'")] = None
    on_conflict: Annotated[
        Literal["replace", "keepBoth", "ask"],
        Refusal("onConflict must be one of replace, keepBoth, ask", with_value=True),
    ] = "replace"


_TICKET = "uploadId and uploadToken are required: POST /me/uploads answered them"
_KEY = "key is required: the key POST /me/uploads answered"


class TicketBody(UploadBody):
    """The multipart upload a body names, as `POST /me/uploads` answered it."""

    key: Annotated[str, Field(min_length=1), Refusal(_KEY)]
    upload_id: Annotated[str, Field(min_length=1), Refusal(_TICKET)]
    upload_token: Annotated[str, Refusal(_TICKET)]


class PartsBody(TicketBody):
    """`POST /me/uploads/parts`: the parts whose URLs are wanted."""

    SHAPE = upload_shapes.PARTS
    NOT_OBJECT = "the body must be a JSON object with key, uploadId, uploadToken, partNumbers"

    part_numbers: Annotated[
        list[int],
        Field(min_length=1),
        Refusal("partNumbers must be a non-empty list of part numbers, such as [1, 2]"),
    ]


class PartEtag(BaseModel):
    """A part S3 holds, as it answered its upload (other fields are ignored)."""

    model_config = ConfigDict(alias_generator=to_camel, strict=True, frozen=True, defer_build=True)

    part_number: int
    etag: str


class CompleteBody(TicketBody):
    """`POST /me/uploads/complete`: optionally the parts' ETags, to check against those S3 holds."""

    SHAPE = upload_shapes.COMPLETE
    NOT_OBJECT = "the body must be a JSON object with key, uploadId, uploadToken, parts"

    parts: Annotated[
        list[PartEtag] | None, Refusal('parts must be a list of {"partNumber": n, "etag": "..."}')
    ] = None


class AbortBody(UploadBody):
    """`POST /me/uploads/abort`: the upload to cancel (other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    SHAPE = upload_shapes.ABORT
    NOT_OBJECT = f"the body must be a JSON object: {SHAPE}"

    upload_id: Annotated[
        str, Field(min_length=1), Refusal("uploadId is required: the id POST /me/uploads answered")
    ]
    key: Annotated[str, Field(min_length=1), Refusal(_KEY)]


def read_body[Body: UploadBody](model: type[Body], text: str | None) -> Body:
    """The request body `text` as `model`; BadRequest with the message of its first fault."""
    try:
        data = json.loads(text or "")
    except ValueError:
        raise BadRequest(f"the body must be JSON: {model.SHAPE}") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise BadRequest(model.refusal(error.errors())) from None
