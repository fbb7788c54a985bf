"""Box queries through the local stack, in each shard placement, against a brute-force truth.

For each placement the CDK app can be given (one shard; 16 shards, the default; 16 with a hot user; 16 with
the Z-order index) one local stack starts with that context. A few hundred files of several users go in
through S3, sizes spread over six orders of magnitude (many of them equal), upload times over twelve days
(moto's event clock is set per upload); some are then overwritten or deleted. Random boxes (a bucket or a
user; any of `minSize`/`maxSize` and `from`/`to` or `date`; both orders; random page sizes) go to
`GET /files` over plain HTTP, following every `nextCursor` to the end. Each answer must hold exactly the
live files inside the box, each once, in the order its `orderedBy` names, with the bucket and the user as
they are, never a shard's partition value.

The users include a hot one (`USER009`, 4 shards in the hot-user placement) and one literally named like
that user's shard 2 (`USER009#2`), which shares its partition value and must never mix with it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import random
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from file_index.rules.key_pattern import KeyPattern
from file_index.rules.zorder import encode, epoch_millis
from local_stack.stack import LocalFileSearch

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`, so each placement's stack starts
# once, not once per worker.
pytestmark = [pytest.mark.xdist_group("local_stack_box_queries"), pytest.mark.slow]

EXAMPLES = int(os.environ.get("BOX_QUERY_EXAMPLES", "20"))
HTTP_TIMEOUT_S = 60
INDEXING_TIMEOUT_S = 120.0
DEFAULT_LIMIT = 100  # the API's page size when `limit` is not given

HOT_USER = "USER009"
# The default key pattern takes everything before the first `_` as the user, `#` included.
SHARD_NAMED_USER = "USER009#2"
NORMAL_USERS = ("USER001", "USER002", "USER003", "USER004", "USER005")
USERS = (*NORMAL_USERS, HOT_USER, SHARD_NAMED_USER)
USER_WITHOUT_FILES = "USER404"

PLACEMENTS = [
    pytest.param({"bucketIndexShards": 1, "hotUsers": {}, "multiAttributeIndex": False}, id="one-shard"),
    pytest.param({"bucketIndexShards": 16, "hotUsers": {}, "multiAttributeIndex": False}, id="16-shards"),
    pytest.param(
        {"bucketIndexShards": 16, "hotUsers": {HOT_USER: 4}, "multiAttributeIndex": False}, id="hot-user"
    ),
    pytest.param({"bucketIndexShards": 16, "hotUsers": {}, "multiAttributeIndex": True}, id="z-order"),
]

# Uploads fall in these twelve days (UTC); boxes also ask for the day before and the day after.
FIRST_DAY = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
DAYS = 12
# Sizes: a few values shared by many files (ties in every index), the rest log-uniform up to ~300 KB.
COMMON_SIZES = (0, 1, 1000, 4096, 65536)
MAX_RANDOM_SIZE = 300_000
# An upload's stored time is its clock's start plus the time the request took.
CLOCK_SLACK = dt.timedelta(seconds=30)


@dataclass(frozen=True)
class Upload:
    """One PutObject: the key, its size in bytes, and the clock its event is stamped by."""

    key: str
    size: int
    at: dt.datetime


@dataclass(frozen=True)
class StoredFile:
    """A live file as the index must show it: its size, and the upload time its event carried."""

    key: str
    user: str | None
    size: int
    upload_date: str


@dataclass
class Corpus:
    """One running stack of one placement and what was put into its bucket."""

    stack: LocalFileSearch
    z_order: bool
    files: dict[str, StoredFile] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    # Each live file's last upload, and its item as `GET /files/{key}` answered once everything was indexed.
    uploads: dict[str, Upload] = field(default_factory=dict)
    read_back: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def bucket(self) -> str:
        return self.stack.bucket

    @property
    def api_url(self) -> str:
        return self.stack.api_url


@pytest.fixture(scope="module", autouse=True)
def _aws_credentials(module_aws_environment: None) -> None:
    """The shared AWS environment of a module whose stack lives through many tests (conftest)."""


def upload_plan(rng: random.Random) -> tuple[list[Upload], list[Upload], list[str]]:
    """First uploads, overwrites (new size, later time) and deletes (later still) of the corpus."""
    counts = dict.fromkeys(NORMAL_USERS, 28) | {HOT_USER: 60, SHARD_NAMED_USER: 20}
    keys = [f"{user}_FILE{n:03d}.dat" for user, count in counts.items() for n in range(count)]
    keys += [f"{user}/reports/r{n}.csv" for user in (NORMAL_USERS[0], HOT_USER) for n in range(3)]
    # Keys the placement cannot split have no user: in the bucket index only.
    keys += [f"orphan-{n}.bin" for n in range(8)]
    # Spaces and plus signs arrive URL-encoded from S3; the index holds the decoded key.
    keys += ["USER002_annual report+final.pdf", "USER009_a b.txt"]
    span_ms = DAYS * 24 * 3600 * 1000

    def size() -> int:
        if rng.random() < 0.35:
            return rng.choice(COMMON_SIZES)
        return int(MAX_RANDOM_SIZE ** rng.random())

    def moment(after_ms: int = 0) -> dt.datetime:
        offset = rng.randrange(after_ms, span_ms)
        return FIRST_DAY + dt.timedelta(milliseconds=offset)

    first = [Upload(key, size(), moment()) for key in keys]
    later = rng.sample(first, 30)
    overwrites = [
        Upload(upload.key, size(), upload.at + dt.timedelta(hours=rng.randrange(1, 72)))
        for upload in later[:20]
    ]
    deletes = [upload.key for upload in later[20:]]
    return first, overwrites, deletes


def api_get(api_url: str, path: str, params: Mapping[str, Any] | None = None) -> tuple[int, Any]:
    """One plain HTTP GET on the stack's API: the status and the JSON body."""
    url = f"{api_url}{path}"
    if params:
        url += "?" + urlencode({name: str(value) for name, value in params.items()})
    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response:  # noqa: S310 (local stack)
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


@pytest.fixture(scope="module", params=PLACEMENTS)
def corpus(request: pytest.FixtureRequest, _aws_credentials: None) -> Iterator[Corpus]:
    """A stack of one placement with its files indexed; the truth read back once per key."""
    context: dict[str, Any] = request.param
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context=context) as stack:
        stack.wait_until_indexed()  # the s3:TestEvent of the notification configuration
        first, overwrites, deletes = upload_plan(random.Random(20240301))
        s3 = stack.client("s3")
        latest: dict[str, Upload] = {}
        for upload in [*first, *overwrites]:
            with stack.s3_event_clock(upload.at):
                s3.put_object(Bucket=stack.bucket, Key=upload.key, Body=b"x" * upload.size)
            latest[upload.key] = upload
        for key in deletes:
            # A delete after the key's last upload: moto's events carry no sequencer, so time orders them.
            with stack.s3_event_clock(latest[key].at + dt.timedelta(days=1)):
                s3.delete_object(Bucket=stack.bucket, Key=key)
        stack.wait_until_indexed(timeout=INDEXING_TIMEOUT_S)

        corpus = Corpus(stack=stack, z_order=context["multiAttributeIndex"], deleted=set(deletes))
        key_pattern = KeyPattern.parse(None)
        for key, upload in latest.items():
            if key in corpus.deleted:
                continue
            status, item = api_get(stack.api_url, f"/files/{quote(key, safe='')}")
            assert status == 200, (key, item)
            corpus.uploads[key] = upload
            corpus.read_back[key] = item
            corpus.files[key] = StoredFile(
                key, key_pattern.split(key).upload_user, upload.size, item["uploadDate"]
            )
        yield corpus


# -- the truth and the checks ---------------------------------------------------------------------------


def iso(moment: dt.datetime) -> str:
    """`moment` in the stored form of `uploadDate` (UTC, milliseconds, the rest dropped)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def day_start(day: str) -> str:
    return f"{day}T00:00:00.000Z"


def day_end(day: str) -> str:
    return f"{day}T23:59:59.999Z"


def time_bounds(box: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The box's inclusive time bounds in the stored form: a day bound covers the whole day."""
    if "date" in box:
        return day_start(box["date"]), day_end(box["date"])

    def bound(value: str | None, *, upper: bool) -> str | None:
        if value is None:
            return None
        if len(value) == len("YYYY-MM-DD"):
            return day_end(value) if upper else day_start(value)
        moment = dt.datetime.fromisoformat(value).astimezone(dt.UTC)
        if not upper and moment.microsecond % 1000:
            # A lower bound between two milliseconds starts at the next one.
            moment += dt.timedelta(microseconds=1000 - moment.microsecond % 1000)
        return iso(moment)

    return bound(box.get("from"), upper=False), bound(box.get("to"), upper=True)


def truth(corpus: Corpus, box: Mapping[str, Any]) -> set[str]:
    """The live files inside `box`, by brute force over what was uploaded."""
    start, end = time_bounds(box)
    return {
        file.key
        for file in corpus.files.values()
        if ("user" not in box or file.user == box["user"])
        and ("bucket" not in box or box["bucket"] == corpus.bucket)
        and box.get("minSize", 0) <= file.size <= box.get("maxSize", file.size)
        and (start is None or file.upload_date >= start)
        and (end is None or file.upload_date <= end)
    }


def expected_order(corpus: Corpus, box: Mapping[str, Any]) -> tuple[set[str], bool]:
    """The `orderedBy` values docs/scaling.md allows for the box's plan, and whether it ascends.

    With time and size bounds on a bucket the planner weighs every plan the deployment has by the
    bucket's statistics (here the upload statistics the indexer keeps), so any of them may answer.
    """
    if "user" in box:
        return {"uploadDate"}, box.get("order") != "desc"
    if box.get("sort") == "size":
        return {"size"}, box.get("order") == "asc"
    has_time = any(bound in box for bound in ("from", "to", "date"))
    has_size = box.get("minSize", 0) > 0 or "maxSize" in box  # minSize=0 is no bound
    if has_time and not has_size:  # the bucket's time index (bucketTimeIndex, on in every corpus)
        return {"uploadDate"}, box.get("order") == "asc"
    if not has_time:
        return {"size"}, box.get("order") == "asc"
    plans = {"uploadDate", "size", "zAddress"} if corpus.z_order else {"uploadDate", "size"}
    return plans, box.get("order") == "asc"


def sort_value(ordered_by: str, item: Mapping[str, Any]) -> Any:
    if ordered_by == "zAddress":
        return encode(epoch_millis(item["uploadDate"]), item["size"])
    return item[ordered_by]


def list_all(corpus: Corpus, box: Mapping[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    """Every item of the box's list, page after page; also the `orderedBy` values the pages gave."""
    params = dict(box)
    limit = box.get("limit", DEFAULT_LIMIT)
    items: list[dict[str, Any]] = []
    ordered_by: set[str] = set()
    # Pages may be short, even empty, and still carry a cursor; never more pages than files (plus slack).
    for _ in range(len(corpus.files) + len(corpus.deleted) + 20):
        status, page = api_get(corpus.api_url, "/files", params)
        assert status == 200, (params, page)
        assert page["indexState"] == "READY", page
        assert len(page["items"]) <= limit, (params, len(page["items"]))
        items += page["items"]
        ordered_by.add(page["orderedBy"])
        if page["nextCursor"] is None:
            return items, ordered_by
        params["cursor"] = page["nextCursor"]
    pytest.fail(f"the list of {box} did not end")


def check_box(corpus: Corpus, box: Mapping[str, Any]) -> None:
    items, ordered_by = list_all(corpus, box)
    keys = [item["objectKey"] for item in items]

    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    assert not duplicates, f"{box}: listed more than once: {duplicates}"
    expected = truth(corpus, box)
    assert set(keys) == expected, (
        f"{box}: missing {sorted(expected - set(keys))}, outside the box {sorted(set(keys) - expected)}"
    )

    allowed, ascending = expected_order(corpus, box)
    assert len(ordered_by) == 1, f"{box}: the pages changed their order: {ordered_by}"
    (expected_by,) = ordered_by
    assert expected_by in allowed, f"{box}: orderedBy {expected_by}, expected one of {sorted(allowed)}"
    values = [sort_value(expected_by, item) for item in items]
    out_of_order = [(a, b) for a, b in itertools.pairwise(values) if (a > b if ascending else a < b)]
    assert not out_of_order, f"{box}: not {'ascending' if ascending else 'descending'}: {out_of_order[:3]}"

    for item in items:
        stored = corpus.files[item["objectKey"]]
        assert item["bucketName"] == corpus.bucket, item
        assert item.get("uploadUser") == stored.user, item
        assert (item["size"], item["uploadDate"]) == (stored.size, stored.upload_date), item


# -- the boxes ------------------------------------------------------------------------------------------


def ordered_bounds(start: str, end: str) -> tuple[str, str | None]:
    """`from` and `to` values the API accepts: swapped if the first is after the second, and `to` dropped
    if no millisecond lies between them (two values inside one millisecond: `from` rounds up past `to`)."""
    low, high = time_bounds({"from": start, "to": end})
    if low is not None and high is not None and low > high:
        start, end = end, start
    low, high = time_bounds({"from": start, "to": end})
    return (start, None) if low is not None and high is not None and low > high else (start, end)


@st.composite
def boxes(draw: st.DrawFn, corpus: Corpus) -> dict[str, Any]:
    """A random box over the corpus; bounds often sit exactly on a stored size or upload time."""
    files = sorted(corpus.files.values(), key=lambda file: file.key)
    sizes = sorted({file.size for file in files})
    dates = sorted(file.upload_date for file in files)
    days = [(FIRST_DAY + dt.timedelta(days=n)).date().isoformat() for n in range(-1, DAYS + 1)]
    moments = st.datetimes(
        min_value=dt.datetime(2024, 2, 29), max_value=dt.datetime(2024, 3, 14), timezones=st.just(dt.UTC)
    )
    whole_millis = moments.map(lambda moment: moment.replace(microsecond=moment.microsecond // 1000 * 1000))
    # Half a millisecond either side of a stored time: `from` rounds up to the next millisecond, `to` down.
    beside_stored = st.tuples(st.sampled_from(dates), st.sampled_from([-500, 500])).map(
        lambda pair: (dt.datetime.fromisoformat(pair[0]) + dt.timedelta(microseconds=pair[1])).isoformat()
    )

    box: dict[str, Any] = draw(
        st.one_of(
            st.just({"bucket": corpus.bucket}),
            st.sampled_from([*USERS, USER_WITHOUT_FILES]).map(lambda user: {"user": user}),
        )
    )
    size_bound = st.one_of(st.sampled_from(sizes), st.integers(0, MAX_RANDOM_SIZE * 2))
    low = draw(st.none() | size_bound)
    high = draw(st.none() | size_bound)
    if low is not None and high is not None and low > high:
        low, high = high, low
    if low is not None:
        box["minSize"] = low
    if high is not None:
        box["maxSize"] = high

    time_shape = draw(st.sampled_from(["none", "date", "range"]))
    if time_shape == "date":
        box["date"] = draw(st.sampled_from(days))
    elif time_shape == "range":
        time_bound = st.one_of(
            st.sampled_from(dates),  # exactly a stored time: bounds are inclusive
            st.sampled_from(days),
            whole_millis.map(iso),
            beside_stored,
            # With an offset: the API converts it to UTC.
            moments.map(lambda moment: moment.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat()),
        )
        start = draw(st.none() | time_bound)
        end = draw(st.none() | time_bound)
        if start is not None and end is not None:
            start, end = ordered_bounds(start, end)
        if start is not None:
            box["from"] = start
        if end is not None:
            box["to"] = end

    order = draw(st.sampled_from([None, "asc", "desc"]))
    if order is not None:
        box["order"] = order
    limit = draw(st.none() | st.integers(1, 9) | st.integers(10, 150))
    if limit is not None:
        box["limit"] = limit
    return box


# Input validation does not depend on the placement: one stack is enough.
ONE_PLACEMENT = pytest.mark.parametrize("corpus", PLACEMENTS[:1], indirect=True)

# -- the tests ------------------------------------------------------------------------------------------


def test_every_file_reads_back_as_uploaded_with_its_bucket_and_user(corpus: Corpus) -> None:
    assert len(corpus.files) > 200
    for key, item in corpus.read_back.items():
        upload = corpus.uploads[key]
        assert item["objectKey"] == key, item
        assert item["size"] == upload.size, item
        # The event time is the clock the upload was made under, plus the time the request took.
        assert upload.at <= dt.datetime.fromisoformat(item["uploadDate"]) <= upload.at + CLOCK_SLACK, item
        assert item["bucketName"] == corpus.bucket, item
        assert item.get("uploadUser") == corpus.files[key].user, item
    for key in corpus.deleted:
        status, _ = api_get(corpus.api_url, f"/files/{quote(key, safe='')}")
        assert status == 404, key


@pytest.mark.parametrize(
    "box",
    [
        pytest.param({}, id="bucket"),
        pytest.param({"order": "asc", "limit": 30}, id="bucket-asc"),
        pytest.param({"minSize": 1000, "maxSize": 65536, "limit": 13}, id="bucket-size"),
        pytest.param({"date": "2024-03-05", "limit": 5}, id="bucket-date"),
        pytest.param(
            {"from": "2024-03-03", "to": "2024-03-08", "minSize": 1, "maxSize": 4096, "order": "asc"},
            id="bucket-box-asc",
        ),
        pytest.param({"from": "2024-03-10T12:00:00Z", "minSize": 50_000, "limit": 3}, id="bucket-open-box"),
        pytest.param(
            {"from": "2024-03-03", "to": "2024-03-08", "minSize": 1, "maxSize": 4096, "sort": "size"},
            id="bucket-box-by-size",
        ),
    ],
)
def test_bucket_boxes_of_each_plan(corpus: Corpus, box: dict[str, Any]) -> None:
    check_box(corpus, {"bucket": corpus.bucket, **box})


@pytest.mark.parametrize("user", [*USERS, USER_WITHOUT_FILES])
@pytest.mark.parametrize(
    "box",
    [
        pytest.param({"limit": 6}, id="all"),
        pytest.param({"from": "2024-03-02", "to": "2024-03-09", "minSize": 1000, "order": "desc"}, id="box"),
        pytest.param({"date": "2024-03-06", "maxSize": 4096, "limit": 2}, id="day-box"),
    ],
)
def test_user_boxes_of_each_user(corpus: Corpus, user: str, box: dict[str, Any]) -> None:
    check_box(corpus, {"user": user, **box})


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_random_boxes_answer_exactly_the_brute_force_truth(corpus: Corpus, data: st.DataObject) -> None:
    check_box(corpus, data.draw(boxes(corpus), label="box"))


@pytest.mark.parametrize(
    ("box", "message"),
    [
        ({"minSize": 10, "maxSize": 9}, "minSize must not be greater than maxSize"),
        ({"from": "2024-03-05", "to": "2024-03-04"}, "from must not be after to"),
        ({"from": "2024-03-05T10:00:00.001Z", "to": "2024-03-05T10:00:00Z"}, "from must not be after to"),
        ({"date": "2024-03-05", "from": "2024-03-01"}, "date cannot be combined with from or to"),
        ({"date": "2024-03-05", "to": "2024-03-09"}, "date cannot be combined with from or to"),
    ],
)
@pytest.mark.parametrize("target", ["bucket", "user"])
@ONE_PLACEMENT
def test_a_bad_box_is_a_400_that_says_why(
    corpus: Corpus, target: str, box: dict[str, Any], message: str
) -> None:
    name = corpus.bucket if target == "bucket" else HOT_USER
    status, body = api_get(corpus.api_url, "/files", {target: name, **box})

    assert (status, body) == (400, {"message": message})


@pytest.mark.parametrize("target", ["bucket", "user"])
@ONE_PLACEMENT
def test_a_time_range_inside_one_millisecond_is_an_empty_box(corpus: Corpus, target: str) -> None:
    # `from` is before `to`, so the box is valid; it holds no stored time (those are whole milliseconds):
    # `from` starts at the next millisecond, `to` ends at its own.
    name = corpus.bucket if target == "bucket" else HOT_USER
    box = {target: name, "from": "2024-03-05T10:00:00.000200Z", "to": "2024-03-05T10:00:00.000800Z"}

    status, body = api_get(corpus.api_url, "/files", box)

    assert status == 200, body
    assert body["items"] == []
    assert body["nextCursor"] is None
