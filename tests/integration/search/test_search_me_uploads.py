"""`POST /me/uploads` and its multipart routes: a form up to 16 MiB, parts above it (pinned to the person's
prefix and the declared size, resumable, cancellable), and what an upload to a taken name does."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from search.uploads import MIN_PART_BYTES, MULTIPART_THRESHOLD_BYTES, keep_both_name, part_size_for
from tests.integration.search.conftest import BUCKET, SearchApi
from tests.integration.search.people import BOB, call, me_api

__all__ = ["me_api"]

MiB = 1024**2
# Three parts: 8 MiB, 8 MiB and 1 MiB.
BIG = 17 * MiB


def start(api: SearchApi, name: str, size: int, **more: Any) -> tuple[int, Any]:
    status, body, _ = call(api, "POST", "/me/uploads", body={"name": name, "size": size, **more})
    return status, body


def put_parts(api: SearchApi, upload: dict[str, Any], numbers: list[int], content: bytes) -> None:
    status, answer, _ = call(
        api, "POST", "/me/uploads/parts", body={**ticket(upload), "partNumbers": numbers}
    )
    assert status == 200, answer
    for part in answer["parts"]:
        offset = (part["partNumber"] - 1) * upload["partSize"]
        data = content[offset : offset + part["size"]]
        assert len(data) == part["size"]
        response = requests.put(part["url"], data=data, timeout=30)
        assert response.status_code == 200, response.text
        assert response.headers["ETag"]


def ticket(upload: dict[str, Any]) -> dict[str, Any]:
    return {name: upload[name] for name in ("key", "uploadId", "uploadToken")}


def held(api: SearchApi, upload: dict[str, Any]) -> list[int]:
    path = f"/me/uploads/parts?key={upload['key']}&uploadId={upload['uploadId']}"
    status, body, _ = call(api, "GET", path)
    assert status == 200, body
    return [part["partNumber"] for part in body["parts"]]


def test_part_sizes_fit_s3s_limits() -> None:
    assert part_size_for(BIG) == MIN_PART_BYTES
    assert part_size_for(5 * 1024**4) == 525 * MiB  # 5 TiB in 10,000 parts at most
    assert keep_both_name("report.pdf", 1) == "report (1).pdf"
    assert keep_both_name("archive.tar.gz", 2) == "archive.tar (2).gz"
    assert keep_both_name("README", 1) == "README (1)"
    assert keep_both_name(".env", 3) == ".env (3)"


def test_a_file_up_to_the_threshold_is_one_form(me_api: SearchApi) -> None:
    status, body = start(me_api, "small.txt", MULTIPART_THRESHOLD_BYTES)
    assert status == 200, body
    assert set(body) == {"key", "url", "fields"}
    assert body["key"] == "USER001/small.txt"


@pytest.mark.parametrize(("size", "seconds"), [(1, 61), (1_000_000, 68), (MULTIPART_THRESHOLD_BYTES, 195)])
def test_a_form_lives_as_long_as_its_upload_needs(me_api: SearchApi, size: int, seconds: int) -> None:
    """S3 takes a form again and again while it is valid: a minute, and the file's time at 1 Mbit/s."""
    before = datetime.now(UTC)
    status, body = start(me_api, "small.txt", size)
    after = datetime.now(UTC)
    assert status == 200, body
    policy = json.loads(base64.b64decode(body["fields"]["policy"]))
    expiration = datetime.fromisoformat(policy["expiration"])
    # Signed at some moment between before and after (a loaded machine took 2 s), to the whole second.
    assert before + timedelta(seconds=seconds - 2) <= expiration <= after + timedelta(seconds=seconds + 2)


def test_a_large_file_uploads_in_parts_resumes_and_completes(me_api: SearchApi) -> None:
    content = bytes(range(256)) * (BIG // 256)
    status, upload = start(me_api, "big.bin", BIG, contentType="application/zip", folder="backups")
    assert status == 200, upload
    assert upload["key"] == "USER001/backups/big.bin"
    assert (upload["size"], upload["partSize"], upload["partCount"]) == (BIG, 8 * MiB, 3)

    # Each part's URL signs its exact length: the last part is what is left.
    status, answer, _ = call(
        me_api, "POST", "/me/uploads/parts", body={**ticket(upload), "partNumbers": [3, 1]}
    )
    assert status == 200, answer
    assert [(part["partNumber"], part["size"]) for part in answer["parts"]] == [(1, 8 * MiB), (3, 1 * MiB)]
    query = parse_qs(urlsplit(answer["parts"][0]["url"]).query)
    assert query["X-Amz-SignedHeaders"] == ["content-length;host"]
    assert query["partNumber"] == ["1"]

    put_parts(me_api, upload, [1, 3], content)
    # The connection dropped: the page asks which parts S3 holds, and completing now says what is missing.
    assert held(me_api, upload) == [1, 3]
    status, body, _ = call(me_api, "POST", "/me/uploads/complete", body=ticket(upload))
    assert status == 400
    assert "part(s) 2 are not uploaded yet (9437184 of 17825792 bytes)" in body["message"]
    assert held(me_api, upload) == [1, 3]  # still there to resume

    put_parts(me_api, upload, [2], content)
    status, body, _ = call(me_api, "POST", "/me/uploads/complete", body=ticket(upload))
    assert status == 200, body
    assert body == {"key": "USER001/backups/big.bin", "size": BIG}
    stored = me_api.s3.get_object(Bucket=BUCKET, Key="USER001/backups/big.bin")
    assert stored["ContentLength"] == BIG
    assert stored["ContentType"] == "application/zip"
    assert stored["Body"].read() == content


def test_parts_that_do_not_add_up_abort_the_upload(me_api: SearchApi) -> None:
    _, upload = start(me_api, "odd.bin", BIG)
    # A part of another size, sent past the API (with the bucket's own credentials).
    me_api.s3.upload_part(
        Bucket=BUCKET, Key=upload["key"], UploadId=upload["uploadId"], PartNumber=1, Body=b"x" * (9 * MiB)
    )
    status, body, _ = call(me_api, "POST", "/me/uploads/complete", body=ticket(upload))
    assert status == 400
    assert "not the declared 17825792" in body["message"]
    assert "the upload is aborted" in body["message"]
    path = f"/me/uploads/parts?key={upload['key']}&uploadId={upload['uploadId']}"
    status, body, _ = call(me_api, "GET", path)
    assert status == 404
    assert "no multipart upload" in body["message"]


def test_an_upload_is_cancelled(me_api: SearchApi) -> None:
    _, upload = start(me_api, "cancel.bin", BIG)
    status, body, _ = call(
        me_api, "POST", "/me/uploads/abort", body={"key": upload["key"], "uploadId": upload["uploadId"]}
    )
    assert (status, body) == (204, None)
    status, body, _ = call(me_api, "POST", "/me/uploads/complete", body=ticket(upload))
    assert status == 404
    assert not me_api.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_the_token_and_the_key_are_the_persons_own(me_api: SearchApi) -> None:
    _, upload = start(me_api, "mine.bin", BIG)
    forged = upload["uploadToken"].replace(str(BIG), str(BIG + 1), 1)
    for body, message in (
        ({**ticket(upload), "uploadToken": forged, "partNumbers": [1]}, "uploadToken is not the one"),
        ({**ticket(upload), "uploadToken": "garbage", "partNumbers": [1]}, "uploadToken is not the one"),
        ({**ticket(upload), "partNumbers": [4]}, "part number(s) 4 outside 1 to 3"),
        ({**ticket(upload), "partNumbers": []}, "partNumbers must be a non-empty list"),
        ({**ticket(upload), "partNumbers": [1], "size": 3}, "unknown field(s) size"),
        ({**ticket(upload), "key": "USER001/other.bin", "partNumbers": [1]}, "uploadToken is not the one"),
    ):
        status, answer, _ = call(me_api, "POST", "/me/uploads/parts", body=body)
        assert status == 400, body
        assert message in answer["message"]
    # Another person cannot use it: the key is not in their folder.
    others: list[tuple[str, str, dict[str, Any] | None]] = [
        ("POST", "/me/uploads/parts", {**ticket(upload), "partNumbers": [1]}),
        ("POST", "/me/uploads/complete", ticket(upload)),
        ("POST", "/me/uploads/abort", {"key": upload["key"], "uploadId": upload["uploadId"]}),
        ("GET", f"/me/uploads/parts?key={upload['key']}&uploadId={upload['uploadId']}", None),
    ]
    for method, path, request in others:
        status, answer, _ = call(me_api, method, path, BOB, body=request)
        assert status == 400, (method, path)
        assert "is not in your own folder 'USER002/'" in answer["message"]
    assert held(me_api, upload) == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"name": "a.txt", "size": 3, "onConflict": "overwrite"},
            "onConflict must be one of replace, keepBoth, ask",
        ),
        (
            {"name": "a.txt", "size": 6 * 1024**4},
            "over this deployment's upload limit of 5497558138880 bytes",
        ),
        ({"name": "a.txt", "size": 3, "mode": "x"}, "unknown field(s) mode"),
    ],
)
def test_a_bad_upload_request_is_a_400(me_api: SearchApi, body: dict[str, Any], message: str) -> None:
    status, answer, _ = call(me_api, "POST", "/me/uploads", body=body)
    assert status == 400
    assert message in answer["message"]


def test_a_taken_name_is_replaced_kept_beside_or_asked_about(me_api: SearchApi) -> None:
    me_api.put_file("USER001/cv.pdf", size=39_000)
    # replace, the default: the same key, as before.
    assert start(me_api, "cv.pdf", 12)[1]["key"] == "USER001/cv.pdf"
    assert start(me_api, "cv.pdf", 12, onConflict="replace")[1]["key"] == "USER001/cv.pdf"
    # ask: 409 with the file that is there; nothing is signed.
    status, body = start(me_api, "cv.pdf", 12, onConflict="ask")
    assert status == 409
    assert body["message"] == "a file named 'cv.pdf' already exists: replace it or keep both"
    assert body["existing"]["objectKey"] == "USER001/cv.pdf"
    assert body["existing"]["size"] == 39_000
    assert "url" not in body
    # keepBoth: the next free name, for a form and for parts alike.
    assert start(me_api, "cv.pdf", 12, onConflict="keepBoth")[1]["key"] == "USER001/cv (1).pdf"
    me_api.put_file("USER001/cv (1).pdf")
    status, upload = start(me_api, "cv.pdf", BIG, onConflict="keepBoth")
    assert upload["key"] == "USER001/cv (2).pdf"
    assert "uploadId" in upload
    # A free name is simply used, whatever onConflict says; another person's same name is no conflict.
    assert start(me_api, "new.pdf", 12, onConflict="ask")[1]["key"] == "USER001/new.pdf"
    status, body, _ = call(
        me_api, "POST", "/me/uploads", BOB, body={"name": "cv.pdf", "size": 1, "onConflict": "ask"}
    )
    assert (status, body["key"]) == (200, "USER002/cv.pdf")
