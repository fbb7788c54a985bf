"""`python -m local_stack.demo` (`make demo`): the product working end to end, checked as it goes.

Starts the local stack on free ports (so a running `make serve` does not clash), uploads files of two
users over two days, deletes one, waits until the indexer has caught up, then runs the guideline's four
searches over HTTP against the search API, shows that the deleted file is gone and that a download
redirect serves the uploaded bytes. Then it builds the index from the bucket: files uploaded while the
bucket sent no events are invisible until `file_search_admin backfill` (run in this process, through
the command line's own entry point) indexes them; and it breaks two entries on purpose (a wrong size, a
removed entry) and shows `file_search_admin reconcile` finding and repairing both. Every answer is
compared with what the uploads imply: any difference ends the demo with a message and exit status 1, so
CI can run it as a test.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import http.client
import io
import json
import secrets
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from file_search_admin.cli import main as admin
from local_stack.stack import SEPARATE_PROCESSES, IndexingTimeoutError, LocalFileSearch, StackStartError
from local_stack.web import post_form

DAY_1 = dt.datetime(2017, 8, 20, 9, 15, tzinfo=dt.UTC)  # the guideline's example day
DAY_2 = dt.datetime(2017, 8, 21, 10, 30, tzinfo=dt.UTC)
REDIRECTS = frozenset({301, 302, 303, 307, 308})


class DemoCheckFailed(Exception):
    """An answer of the API differs from what the uploads imply."""


@dataclass(frozen=True)
class SampleFile:
    key: str
    user: str
    file_id: str
    size: int
    day: dt.datetime

    @property
    def body(self) -> bytes:
        line = f"{self.key} uploaded by {self.user}\n".encode()
        return (line * (self.size // len(line) + 1))[: self.size]


# Both key shapes the default key pattern reads: `{user}_{file}` (the guideline's) and `{user}/{file}`.
# Sizes differ so that "by size" has one right order; one key has a space, which S3 sends URL-encoded.
SAMPLES = (
    SampleFile("USER001_FILE001.txt", "USER001", "FILE001.txt", 12, DAY_1),
    SampleFile("USER001_FILE002.csv", "USER001", "FILE002.csv", 48, DAY_1),
    SampleFile("USER001_FILE003.txt", "USER001", "FILE003.txt", 30, DAY_1),
    SampleFile("USER002/reports/2017-08.pdf", "USER002", "reports/2017-08.pdf", 2048, DAY_1),
    SampleFile("USER001_FILE004.txt", "USER001", "FILE004.txt", 300, DAY_2),
    SampleFile("USER002/photos/cat 1.jpg", "USER002", "photos/cat 1.jpg", 1500, DAY_2),
    SampleFile("USER002/notes.md", "USER002", "notes.md", 90, DAY_2),
)
DELETED = "USER001_FILE003.txt"  # deleted on day 2
DOWNLOADED = "USER002/photos/cat 1.jpg"
# Uploaded while the bucket sent no events, as files already in a bucket before it was indexed.
# Their uploadDate is the object's LastModified (a listing has no event time): today.
EXISTING = (
    ("USER003_old-report.pdf", "USER003", "old-report.pdf", 640),
    ("USER003_old-notes.txt", "USER003", "old-notes.txt", 64),
    ("USER003/archive/2016.zip", "USER003", "archive/2016.zip", 4096),
)
BROKEN_SIZE = "USER001_FILE002.csv"  # its entry's size is changed in the table
BROKEN_REMOVED = "USER002/notes.md"  # its entry is deleted from the table


def say(line: str = "") -> None:
    print(line, flush=True)


def run() -> None:
    started = time.monotonic()
    say("S3 File Search demo: the real indexer and search handlers on moto (S3, SQS, DynamoDB), locally.")
    say("- starting the local stack on free ports ...")
    # As `make serve` runs it: moto and the indexer in processes of their own.
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", **SEPARATE_PROCESSES) as stack:
        say(f"  search API {stack.api_url}, AWS endpoint {stack.aws_endpoint}, bucket {stack.bucket}")
        upload_and_delete(stack)
        say("- waiting until the indexer has caught up (queue empty, nothing in flight) ...")
        waited = time.monotonic()
        stack.wait_until_indexed(timeout=60)
        say(f"  caught up in {time.monotonic() - waited:.1f} s")
        api = SearchApi(stack.api_url)
        search_all(api, stack.bucket)
        check_deleted_and_download(api, stack)
        backfill_existing_files(api, stack)
        reconcile_broken_entries(api, stack)
        signed_in_people(stack)
        say("- stopping the local stack")
    say(f"Demo passed: every answer matched the uploads ({time.monotonic() - started:.1f} s).")


def upload_and_delete(stack: LocalFileSearch) -> None:
    s3 = stack.client("s3")
    say(
        "- moto stamps each S3 event with its own clock, which reads today. To show two days, the demo sets "
        "that clock"
    )
    say(
        f"  to {DAY_1:%Y-%m-%d %H:%M} UTC for day 1 and {DAY_2:%Y-%m-%d %H:%M} UTC for day 2 "
        "(from there it runs in real time)."
    )
    for day in (DAY_1, DAY_2):
        with stack.s3_event_clock(day):
            say(f"- day {day:%Y-%m-%d}: uploading to s3://{stack.bucket}/")
            for sample in SAMPLES:
                if sample.day == day:
                    s3.put_object(Bucket=stack.bucket, Key=sample.key, Body=sample.body)
                    say(f"    PUT    {sample.key} ({sample.size} bytes)")
            if day == DAY_2:
                s3.delete_object(Bucket=stack.bucket, Key=DELETED)
                say(f"    DELETE {DELETED}")


class SearchApi:
    """A small HTTP client of the search API that never follows redirects (the demo checks them)."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self._host, self._port, timeout=30)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def get_json(self, path: str) -> Any:
        status, _, body = self.get(path)
        if status != 200:
            raise DemoCheckFailed(f"GET {path} answered {status}: {body.decode(errors='replace')}")
        return json.loads(body)

    def list_files(self, **query: str) -> tuple[str, list[dict[str, Any]]]:
        """Every item of a list search, following `nextCursor`; returns the first request's path too."""
        first = path = f"/files?{urlencode(query)}"
        items: list[dict[str, Any]] = []
        while True:
            page = self.get_json(path)
            items.extend(page["items"])
            if not page.get("nextCursor"):
                return first, items
            path = f"/files?{urlencode({**query, 'cursor': page['nextCursor']})}"


def key_path(prefix: str, key: str) -> str:
    return f"{prefix}/{quote(key, safe='')}"


def search_all(api: SearchApi, bucket: str) -> None:
    live = [sample for sample in SAMPLES if sample.key != DELETED]
    user1 = [sample for sample in live if sample.user == "USER001"]

    path = key_path("/files", "USER001_FILE001.txt")
    item = api.get_json(path)
    show("1. A file by its exact key", path, [item])
    expect_items("exact key", [item], [SAMPLES[0]], bucket)

    day = f"{DAY_1:%Y-%m-%d}"
    path, items = api.list_files(user="USER001", date=day)
    show(f"2. USER001's files uploaded on {day} (the deleted {DELETED} is not among them)", path, items)
    expect_items("user and day", items, [s for s in user1 if s.day == DAY_1], bucket)

    path, items = api.list_files(user="USER001")
    show("3. USER001's files in upload order", path, items)
    expect_items("user", items, user1, bucket)

    path, items = api.list_files(bucket=bucket)
    show(f"4. The files of bucket {bucket}, largest first", path, items)
    expect_items("bucket by size", items, sorted(live, key=lambda s: s.size, reverse=True), bucket)

    path, items = api.list_files(bucket=bucket, q="CAT")
    show("4a. Files by a word of their name (q=CAT finds 'cat 1.jpg')", path, items)
    expect_items("name", items, [s for s in live if s.key == DOWNLOADED], bucket)

    query = {"bucket": bucket, "prefix": "USER002/", "delimiter": "/"}
    page = api.get_json(f"/files?{urlencode(query)}")
    path = f"/files?{urlencode(query)}"
    show("4b. The folder USER002/: its files, then its sub-folders (commonPrefixes)", path, page["items"])
    say(f"   sub-folders: {', '.join(page.get('commonPrefixes') or [])}")
    expect_items("folder", page["items"], [s for s in live if s.key == "USER002/notes.md"], bucket)
    if page.get("commonPrefixes") != ["USER002/photos/", "USER002/reports/"]:
        raise DemoCheckFailed(f"folder USER002/: sub-folders {page.get('commonPrefixes')}")


def check_deleted_and_download(api: SearchApi, stack: LocalFileSearch) -> None:
    path = key_path("/files", DELETED)
    status, _, body = api.get(path)
    say()
    say(f"- GET {path} -> {status} {body.decode(errors='replace')}")
    if status != 404:
        raise DemoCheckFailed(f"the deleted {DELETED} answered {status}, not 404")

    path = key_path("/download", DOWNLOADED)
    status, headers, _ = api.get(path)
    location = headers.get("location", "")
    say(f"- GET {path} -> {status}, redirect to a presigned S3 URL:")
    say(f"    {location[:100]}{'...' if len(location) > 100 else ''}")
    if status not in REDIRECTS or not location.startswith(stack.aws_endpoint):
        raise DemoCheckFailed(f"download answered {status} with Location {location!r}, not a redirect to S3")
    with urllib.request.urlopen(location, timeout=30) as response:  # noqa: S310 (the stack's own S3)
        data = response.read()
    expected = next(sample for sample in SAMPLES if sample.key == DOWNLOADED).body
    if data != expected:
        raise DemoCheckFailed(f"the presigned URL served {len(data)} bytes that differ from the upload")
    say(f"  fetched it: {len(data)} bytes, identical to what was uploaded")


def run_admin(*argv: str) -> None:
    """`python -m file_search_admin ...` in this process: the stack's environment points it at moto."""
    say(f"    $ python -m file_search_admin {' '.join(argv)}")
    if admin(list(argv)) != 0:
        raise DemoCheckFailed(f"file_search_admin {argv[0]} failed (its message is above)")


def backfill_existing_files(api: SearchApi, stack: LocalFileSearch) -> None:
    say()
    say("5. Files that were in the bucket before the index: uploaded with the bucket's notifications off")
    s3 = stack.client("s3")
    existing = [SampleFile(*sample, day=dt.datetime.now(dt.UTC)) for sample in EXISTING]
    with stack.notifications_disabled():
        for sample in existing:
            s3.put_object(Bucket=stack.bucket, Key=sample.key, Body=sample.body)
            say(f"    PUT    {sample.key} ({sample.size} bytes, no event)")
    stack.wait_until_indexed(timeout=60)
    path, items = api.list_files(user="USER003")
    say(f"   GET {path} -> {len(items)} items: no event, no entry")
    if items:
        raise DemoCheckFailed(f"USER003's files were found before the backfill: {items}")
    say("- building the index from the bucket (live events keep winning over the listing):")
    run_admin("backfill", "--bucket", stack.bucket, "--table", stack.table_name)
    path, items = api.list_files(user="USER003")
    show("   USER003's files after the backfill", path, items)
    expected = sorted(existing, key=lambda sample: sample.key)
    got = sorted(items, key=lambda item: str(item.get("objectKey")))
    expect_items("user after backfill", got, expected, stack.bucket)


def reconcile_broken_entries(api: SearchApi, stack: LocalFileSearch) -> None:
    say()
    say(f"6. A broken index: {BROKEN_SIZE}'s size changed in the table, {BROKEN_REMOVED}'s entry deleted")
    dynamodb = stack.client("dynamodb")
    dynamodb.update_item(
        TableName=stack.table_name,
        Key={"objectKey": {"S": BROKEN_SIZE}},
        UpdateExpression="SET #size = :size",
        ExpressionAttributeNames={"#size": "size"},
        ExpressionAttributeValues={":size": {"N": "999999"}},
    )
    dynamodb.delete_item(TableName=stack.table_name, Key={"objectKey": {"S": BROKEN_REMOVED}})
    broken = api.get_json(key_path("/files", BROKEN_SIZE))
    status, _, _ = api.get(key_path("/files", BROKEN_REMOVED))
    say(f"   {BROKEN_SIZE}: size {broken.get('size')}; {BROKEN_REMOVED}: {status}")
    if broken.get("size") != 999999 or status != 404:
        raise DemoCheckFailed("the entries were not broken as the demo meant")
    say("- comparing the bucket with the index and repairing it (one HEAD and one write per difference):")
    run_admin("reconcile", "--bucket", stack.bucket, "--table", stack.table_name)
    say("  (a repaired entry's uploadDate is the object's LastModified; the demo moved moto's event clock)")
    for key in (BROKEN_SIZE, BROKEN_REMOVED):
        uploaded = next(sample for sample in SAMPLES if sample.key == key)
        sample = dataclasses.replace(uploaded, day=dt.datetime.now(dt.UTC))
        item = api.get_json(key_path("/files", key))
        say(f"   GET {key_path('/files', key)} -> size {item.get('size')}, {item.get('uploadDate')}")
        expect_items("key after reconcile", [item], [sample], stack.bucket)
    argv = ["reconcile", "--bucket", stack.bucket, "--table", stack.table_name, "--dry-run", "--json"]
    say(f"- a second reconcile finds nothing:\n    $ python -m file_search_admin {' '.join(argv)}")
    out = io.StringIO()
    if admin(argv, stdout=out) != 0:
        raise DemoCheckFailed("file_search_admin reconcile failed (its message is above)")
    found = json.loads(out.getvalue())["found"]
    say(f"    found {found}")
    if any(found.values()):
        raise DemoCheckFailed(f"a second reconcile still found differences: {found}")


def show(title: str, path: str, items: Sequence[dict[str, Any]]) -> None:
    say()
    say(f"{title}\n   GET {path}")
    columns = ("objectKey", "uploadUser", "fileId", "uploadDate", "size")
    rows = [[str(item.get(column, "")) for column in columns] for item in items]
    widths = [max(len(column), *(len(row[i]) for row in rows)) for i, column in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        *text, size = cells
        return (
            "   "
            + "  ".join(cell.ljust(width) for cell, width in zip(text, widths, strict=False))
            + ("  " + size.rjust(widths[-1]))
        )

    say(line(columns))
    say(line(["-" * width for width in widths]))
    for row in rows:
        say(line(row))
    say(f"   ({len(items)} item{'s' if len(items) != 1 else ''})")


def expect_items(
    search: str, items: Sequence[dict[str, Any]], expected: Sequence[SampleFile], bucket: str
) -> None:
    got = [item.get("objectKey") for item in items]
    want = [sample.key for sample in expected]
    if got != want:
        raise DemoCheckFailed(f"search by {search}: expected {want}, got {got}")
    for item, sample in zip(items, expected, strict=True):
        wanted = {
            "bucketName": bucket,
            "uploadUser": sample.user,
            "fileId": sample.file_id,
            "size": sample.size,
        }
        wrong = {name: item.get(name) for name, value in wanted.items() if item.get(name) != value}
        if wrong:
            raise DemoCheckFailed(f"search by {search}: {sample.key} has {wrong}, expected {wanted}")
        day = f"{sample.day:%Y-%m-%d}"
        if not str(item.get("uploadDate", "")).startswith(f"{day}T"):
            raise DemoCheckFailed(
                f"search by {search}: {sample.key} uploadDate {item.get('uploadDate')!r} is not on {day}"
            )


def _me(stack: LocalFileSearch, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    """One request to a route of signed-in people, with the person's ID token."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(  # noqa: S310 (the local stack's API)
        f"{stack.api_url}{path}",
        data=data,
        method=method,
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _id_token(stack: LocalFileSearch, username: str, password: str) -> str:
    ready = stack.describe()
    result = stack.client("cognito-idp").initiate_auth(
        AuthFlow="USER_PASSWORD_AUTH",
        ClientId=ready["userPoolClientId"],
        AuthParameters={"USERNAME": username, "PASSWORD": password},
    )
    return str(result["AuthenticationResult"]["IdToken"])


def signed_in_people(stack: LocalFileSearch) -> None:
    """People sign in at the user pool, upload with a presigned form, and see only their own files."""
    ready = stack.describe()
    if ready.get("webUrl") is None:
        say("- userAccess is off in cdk.json: no sign-in, no page")
        return
    say("- people sign in (Cognito user pool) and see only their own files")
    demo = _id_token(stack, ready["demoUser"], ready["demoPassword"])
    status, form = _me(stack, "POST", "/me/uploads", demo, {"name": "holiday plan.txt", "size": 11})
    if status != 200:
        raise DemoCheckFailed(f"POST /me/uploads answered {status}: {form}")
    if post_form(form["url"], form["fields"], b"sun and sea") != 204:
        raise DemoCheckFailed("the presigned upload form was refused")
    say(f"    {ready['demoUser']} uploaded {form['key']} with the presigned POST form the API signed")
    stack.wait_until_indexed(timeout=60)
    status, page = _me(stack, "GET", "/me/files?q=holiday", demo)
    keys = [item["objectKey"] for item in page["items"]] if status == 200 else page
    say(f"    GET /me/files?q=holiday as {ready['demoUser']}: {keys}")
    if keys != [form["key"]]:
        raise DemoCheckFailed(f"the signed-in person's list: {keys}")
    stack.client("cognito-idp").admin_create_user(
        UserPoolId=ready["userPoolId"], Username="guest", MessageAction="SUPPRESS"
    )
    guest_password = secrets.token_urlsafe(12) + "Aa1!"
    stack.client("cognito-idp").admin_set_user_password(
        UserPoolId=ready["userPoolId"], Username="guest", Password=guest_password, Permanent=True
    )
    guest = _id_token(stack, "guest", guest_password)
    status, page = _me(stack, "GET", "/me/files?q=holiday", guest)
    say(f"    GET /me/files?q=holiday as guest: {page['items'] if status == 200 else page}")
    status_of_file, _ = _me(stack, "GET", key_path("/me/files", form["key"]), guest)
    say(f"    GET /me/files/<{ready['demoUser']}'s key> as guest: {status_of_file} (as if it did not exist)")
    if status != 200 or page["items"] or status_of_file != 404:
        raise DemoCheckFailed("another person saw the file")
    # This stack stops when the demo ends, and its passwords with it: say how to reach one that stays.
    say("  the page: `make serve` keeps a stack up and prints its address (http://127.0.0.1:8080 unless")
    say(f"  WEB_PORT says otherwise) and the passwords of {ready['demoUser']} and of the admin")
    say(f"  {ready['adminUser']}, made afresh each time it starts")


def main() -> int:
    try:
        run()
    except (DemoCheckFailed, IndexingTimeoutError, StackStartError) as error:
        # One line, whatever failed; a configuration error (cdk.json) names its key.
        print(f"Demo FAILED: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
