"""Response shapes of the search API, for its OpenAPI document (clients generate code from it)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FileItem(BaseModel):
    """An indexed file; attributes the index does not hold for it are omitted (names as on the wire)."""

    objectKey: str = Field(description="The S3 object key, URL-decoded")
    bucketName: str | None = Field(default=None, description="Bucket of the object")
    fileId: str | None = Field(default=None, description="File name part of the key")
    size: int | None = Field(default=None, description="Size in bytes")
    uploadUser: str | None = Field(default=None, description="Uploader, from the key layout")
    uploadDate: str | None = Field(
        default=None, description="ISO-8601 UTC time of the upload event, e.g. 2017-08-20T09:15:02.113Z"
    )
    sequencer: str | None = Field(default=None, description="S3's sequencer of the indexed event")
    eTag: str | None = Field(default=None, description="Entity tag of the object")
    versionId: str | None = Field(default=None, description="Version of the object")


class FileListPage(BaseModel):
    """One page of a list; pass `nextCursor` back as `cursor` for the next page (null: no more)."""

    items: list[FileItem]
    nextCursor: str | None = Field(description="Opaque cursor of the next page, or null")


class ErrorMessage(BaseModel):
    """Every 4xx answer."""

    message: str
