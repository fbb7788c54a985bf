"""The JSON body of each upload route as its description in the document and the refusal of a body that is
not JSON show it (`search.upload_bodies`' `SHAPE`s).

Kept apart from the body models so that the routes' descriptions, written when the handler is imported,
do not import them: `search.upload_bodies` is imported when an upload route first reads a body.
"""

from __future__ import annotations

START = '{"name": ..., "contentType": ..., "size": ..., "folder": ..., "onConflict": ...}'
PARTS = '{"key", "uploadId", "uploadToken", "partNumbers"}'
COMPLETE = '{"key", "uploadId", "uploadToken", "parts": optional}'
ABORT = '{"key", "uploadId"}'
