"""Finding files by name, folder and extension, black-box through the local stack's HTTP API.

A corpus of random names (unicode, digits, separators, camelCase, very long names, names made only of
separators) is uploaded, partly overwritten and deleted; every list (`q`, `prefix`, `delimiter`, `ext`,
with bounds, limits and both orders) is followed to its end and compared with the brute-force truth of
the uploads: exactly the matching files, each once, in order, and each sub-folder once. The same corpus
runs on moto and on DynamoDB Local, under one shard and under 16 shards with a hot user.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import random
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from file_index.rules import name_terms
from file_index.rules.name_items import key_digest, name_of
from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.signed_in import retry_delay

HOT_USER = "bot"
USERS = ("USER001", "USER002", "anna", HOT_USER)
FIRST_DAY = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
DAYS = 10
HTTP_TIMEOUT_S = 30
INDEXING_TIMEOUT_S = 120
EXAMPLES = int(os.environ.get("NAME_SEARCH_EXAMPLES", "60"))


def _placement(context: dict[str, Any], engine: str, name: str, *, slow: bool = False) -> Any:
    """A corpus placement; its tests run on one worker, which builds its stack once (xdist --dist loadgroup);
    a `slow` placement's tests run in the slow tier (`make test-slow`)."""
    marks = [pytest.mark.xdist_group(f"name-search-{name}"), *([pytest.mark.slow] if slow else [])]
    return pytest.param((context, engine), id=name, marks=marks)


# moto's Query walks the whole table: the many-shard placements run on DynamoDB Local. The 16-shard placement
# is in the slow tier; the 4-shard one (a hot user too) keeps sharded name lists in `make test`.
PLACEMENTS = [
    _placement({"bucketIndexShards": 1, "hotUsers": {}}, "moto", "one-shard"),
    _placement(
        {"bucketIndexShards": 16, "hotUsers": {HOT_USER: 4}},
        "dynamodb-local",
        "16-shards-hot-user",
        slow=True,
    ),
    _placement(
        {
            "bucketIndexShards": 4,
            "hotUsers": {HOT_USER: 2},
            "tableName": "NamesFileMetaData",
            "nameTableName": "NamesFileNameIndex",
        },
        "dynamodb-local",
        "dynamodb-local",
    ),
]
PIECES = [
    "Invoice",
    "invoice",
    "March",
    "2024",
    "report",
    "Q3",
    "final",
    "reportQ3final",
    "HTMLParser",
    "Café",
    "Straße",
    "İstanbul",
    "請求書",
    "ÅNGSTRÖM",
    "x",
    "v2",
    "draft",
    "budget",
    "photo",
    "IMG",
    "0042",
]
SEPARATORS = ["_", "-", " ", ".", "+", "(", ")", "__", "--", "·"]
EXTENSIONS = ["pdf", "PDF", "txt", "tar.gz", "jpg", "", "docx", "md"]
FOLDERS = ["", "reports/", "reports/old/", "photos/2024/", "a b/", "Ü/"]


@dataclass(frozen=True)
class Upload:
    key: str
    size: int
    at: dt.datetime

    @property
    def upload_date(self) -> str:
        return self.at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.at.microsecond // 1000:03d}Z"


@dataclass
class Corpus:
    stack: LocalFileSearch
    files: dict[str, Upload] = field(default_factory=dict)

    @property
    def bucket(self) -> str:
        return self.stack.bucket


def random_name(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return "".join(rng.choice(SEPARATORS) for _ in range(rng.randint(1, 4)))  # only separators
    count = rng.randint(1, 4) if roll > 0.1 else rng.randint(30, 60)  # some very long names
    parts = [rng.choice(PIECES) for _ in range(count)]
    name = parts[0]
    for part in parts[1:]:
        name += rng.choice(["", *SEPARATORS]) + part
    ext = rng.choice(EXTENSIONS)
    return f"{name}.{ext}" if ext else name


def random_key(rng: random.Random) -> str:
    user = rng.choice(USERS)
    name = random_name(rng)
    if rng.random() < 0.3:
        return f"{user}_{name}"[:300]
    return f"{user}/{rng.choice(FOLDERS)}{name}"[:300]


@pytest.fixture(scope="module", autouse=True)
def module_credentials(module_aws_environment: None) -> None:
    """The shared AWS environment of a module whose stacks live through many tests (conftest)."""


@pytest.fixture(scope="module", params=PLACEMENTS)
def corpus(request: pytest.FixtureRequest, module_credentials: None) -> Iterator[Corpus]:
    context, engine = request.param
    endpoint = None
    if engine == "dynamodb-local":
        endpoint = request.getfixturevalue("dynamodb_local").endpoint_url
        # The worker's DynamoDB Local outlives this fixture, which pytest may set up again for a later test:
        # fresh tables each time (the local stack never takes over a table it did not create).
        suffix = uuid.uuid4().hex[:8]
        context = {
            **context,
            "tableName": f"{context.get('tableName', 'FileMetaData')}-{suffix}",
            "nameTableName": f"{context.get('nameTableName', 'FileNameIndex')}-{suffix}",
        }
    with LocalFileSearch(
        aws_port=0, api_port=0, log_level="WARNING", context=context, dynamodb_endpoint=endpoint
    ) as stack:
        stack.wait_until_indexed()
        rng = random.Random(20241124)
        keys = list(dict.fromkeys(random_key(rng) for _ in range(260)))
        keys += ["USER001_Invoice_March_2024.pdf", "USER002/reportQ3final.docx", "anna/___.txt", "anna/--"]
        s3 = stack.client("s3")
        latest: dict[str, Upload] = {}
        span_ms = DAYS * 24 * 3600 * 1000
        for key in keys:
            upload = Upload(
                key,
                int(50_000 ** rng.random()),
                FIRST_DAY + dt.timedelta(milliseconds=rng.randrange(span_ms)),
            )
            with stack.s3_event_clock(upload.at):
                s3.put_object(Bucket=stack.bucket, Key=key, Body=b"x" * upload.size)
            latest[key] = upload
        # Overwrites (a new size, later) and deletes, some deleted keys uploaded again.
        for key in rng.sample(keys, 25):
            upload = Upload(
                key, rng.randrange(10, 5000), latest[key].at + dt.timedelta(hours=rng.randrange(1, 48))
            )
            with stack.s3_event_clock(upload.at):
                s3.put_object(Bucket=stack.bucket, Key=key, Body=b"y" * upload.size)
            latest[key] = upload
        deleted = rng.sample(keys, 30)
        for key in deleted:
            with stack.s3_event_clock(latest[key].at + dt.timedelta(days=1)):
                s3.delete_object(Bucket=stack.bucket, Key=key)
            del latest[key]
        for key in deleted[:5]:
            upload = Upload(key, 77, FIRST_DAY + dt.timedelta(days=DAYS + 3))
            with stack.s3_event_clock(upload.at):
                s3.put_object(Bucket=stack.bucket, Key=key, Body=b"z" * upload.size)
            latest[key] = upload
        stack.wait_until_indexed(timeout=INDEXING_TIMEOUT_S)
        # The clock moves on while an upload is made: its upload time is read back once, by exact key.
        for key, upload in list(latest.items()):
            status, item = api_get(stack.api_url, {}, path=f"/files/{quote(key, safe='')}")
            assert status == 200, item
            assert item["size"] == upload.size
            assert abs(dt.datetime.fromisoformat(item["uploadDate"]) - upload.at) < dt.timedelta(seconds=5)
            latest[key] = Upload(key, upload.size, dt.datetime.fromisoformat(item["uploadDate"]))
        yield Corpus(stack=stack, files=latest)


def api_get(api_url: str, params: Mapping[str, Any], path: str = "/files") -> tuple[int, Any]:
    """(status, JSON answer) of a GET, tried again after a 429 or 503 as its Retry-After says."""
    url = f"{api_url}{path}"
    if params:
        url += "?" + urlencode({name: str(value) for name, value in params.items()})
    attempt = 1
    while True:
        try:
            with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response:  # noqa: S310 (local stack)
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            with error:
                status, answer, headers = error.code, json.load(error), dict(error.headers)
        delay = retry_delay(status, headers, attempt)
        if delay is None:
            return status, answer
        time.sleep(delay)
        attempt += 1


def follow(corpus: Corpus, params: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str], str]:
    """Every page of a list: its items, its sub-folders and its orderedBy."""
    items: list[dict[str, Any]] = []
    folders: list[str] = []
    cursor = None
    ordered_by = ""
    for _ in range(1000):
        status, body = api_get(corpus.stack.api_url, {**params, **({"cursor": cursor} if cursor else {})})
        assert status == 200, body
        items.extend(body["items"])
        folders.extend(body.get("commonPrefixes") or [])
        ordered_by = body["orderedBy"]
        cursor = body["nextCursor"]
        if cursor is None:
            return items, folders, ordered_by
    raise AssertionError("the list never ended")


def user_of(key: str) -> str | None:
    for index, ch in enumerate(key):
        if ch in "_/":
            return key[:index] or None
    return None


def file_id_of(key: str) -> str:
    for index, ch in enumerate(key):
        if ch in "_/":
            return key[index + 1 :]
    return key


def truth(corpus: Corpus, params: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The keys (in the answer's order) and sub-folders a list must answer, from the uploads alone: query
    words by the term rules (`name_terms`; the local stack's name table starts complete); files uploaded
    at one millisecond in their key digest's order."""
    query_words = name_terms.query_words(params.get("q", ""))
    prefix = params.get("prefix")
    delimiter = params.get("delimiter")
    ext = params.get("ext")
    matching: list[Upload] = []
    for upload in corpus.files.values():
        key = upload.key
        if "user" in params and user_of(key) != params["user"]:
            continue
        name = name_of(file_id_of(key))
        if query_words and not name_terms.matches(name, query_words):
            continue
        if ext is not None and not name.casefold().endswith("." + ext.removeprefix(".").casefold()):
            continue
        if prefix is not None and not key.startswith(prefix):
            continue
        if "minSize" in params and upload.size < params["minSize"]:
            continue
        if "maxSize" in params and upload.size > params["maxSize"]:
            continue
        if "from" in params and upload.upload_date < params["from"]:
            continue
        if "to" in params and upload.upload_date > params["to"]:
            continue
        matching.append(upload)
    if prefix is not None or delimiter is not None:
        descending = params.get("order") == "desc"
        matching.sort(key=lambda upload: upload.key, reverse=descending)
        keys, folders = [], []
        for upload in matching:
            rest = upload.key[len(prefix or "") :]
            if delimiter and delimiter in rest:
                folder = (prefix or "") + rest[: rest.index(delimiter) + 1]
                if folder not in folders:
                    folders.append(folder)
            else:
                keys.append(upload.key)
        return keys, folders
    if query_words or (ext is not None and "user" not in params):
        ascending = params.get("order") == "asc"
        matching.sort(key=lambda upload: (upload.upload_date, key_digest(upload.key)), reverse=not ascending)
    elif "user" in params:
        matching.sort(
            key=lambda upload: (upload.upload_date, upload.key), reverse=params.get("order") == "desc"
        )
    else:
        matching.sort(key=lambda upload: (upload.size, upload.key), reverse=params.get("order") != "asc")
    return [upload.key for upload in matching], []


def check(corpus: Corpus, params: dict[str, Any]) -> None:
    params = {"bucket": corpus.bucket, **params} if "user" not in params else params
    items, folders, _ = follow(corpus, params)
    keys = [item["objectKey"] for item in items]
    expected_keys, expected_folders = truth(corpus, params)
    assert len(keys) == len(set(keys)), "a file answered twice"
    assert keys == expected_keys
    assert folders == expected_folders
    for item in items:
        upload = corpus.files[item["objectKey"]]
        assert item["size"] == upload.size
        assert item["uploadDate"] == upload.upload_date


def word_prefixes(corpus: Corpus) -> list[str]:
    found = sorted(
        {
            word
            for upload in corpus.files.values()
            for word in name_terms.folded_words(name_of(file_id_of(upload.key)))
        }
    )
    return found


@st.composite
def name_queries(draw: st.DrawFn, corpus: Corpus) -> dict[str, Any]:
    known = word_prefixes(corpus)
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        params["user"] = draw(st.sampled_from(USERS))
    kind = draw(st.sampled_from(["q", "q", "q", "prefix", "ext", "q+prefix"]))
    if "q" in kind:
        chosen = draw(st.lists(st.sampled_from(known), min_size=1, max_size=2))
        cut = [word[: draw(st.integers(1, max(1, len(word))))] for word in chosen]
        params["q"] = draw(st.sampled_from([" ", "_", "-", "."])).join(
            draw(st.sampled_from([w, w.upper(), w.title()])) for w in cut
        )
    if "prefix" in kind:
        user = params.get("user") or draw(st.sampled_from(USERS))
        params["prefix"] = draw(
            st.sampled_from([f"{user}/", f"{user}/reports/", f"{user}_", f"{user}/photos/"])
        )
        if draw(st.booleans()):
            params["delimiter"] = "/"
    if kind == "ext":
        params["ext"] = draw(st.sampled_from(["pdf", ".PDF", "gz", "tar.gz", "TXT", "md"]))
    if draw(st.booleans()):
        params["minSize"] = draw(st.integers(0, 3000))
    if draw(st.booleans()):
        day = draw(st.integers(1, 9))
        params["from"] = f"2024-03-{day:02d}T00:00:00.000Z"
    if draw(st.booleans()):
        params["order"] = draw(st.sampled_from(["asc", "desc"]))
    params["limit"] = draw(st.sampled_from([1, 3, 7, 100]))
    return params


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_name_lists_answer_exactly_the_brute_force_truth(corpus: Corpus, data: st.DataObject) -> None:
    check(corpus, data.draw(name_queries(corpus), label="list"))


@pytest.mark.parametrize(
    "params",
    [
        {"q": "inv"},
        {"q": "march 2024"},
        {"q": "INVOICE_march"},
        {"q": "voice"},
        {"q": "report q3 final"},
        {"q": "reportQ3"},
        {"q": "cafe"},
        {"q": "CAFÉ"},
        {"q": "strasse"},
        {"q": "istanbul"},
        {"q": "請求"},
        {"q": "angstrom"},
        {"q": "html parser"},
        {"q": "inv", "order": "asc", "limit": 2},
        {"q": "pdf", "minSize": 100, "maxSize": 20000, "limit": 5},
        {"q": "report", "from": "2024-03-03T00:00:00.000Z", "to": "2024-03-06T23:59:59.999Z"},
        {"user": "USER001", "q": "invoice"},
        {"user": HOT_USER, "q": "v", "limit": 3},
        {"ext": "pdf"},
        {"ext": "tar.gz", "limit": 2},
        {"user": "anna", "ext": "TXT"},
        {"prefix": "USER001/"},
        {"prefix": "USER001/", "delimiter": "/", "limit": 1},
        {"prefix": "USER001/", "delimiter": "/", "limit": 2, "order": "desc"},
        {"delimiter": "/", "limit": 3},
        {"prefix": "bot/reports/", "delimiter": "/", "q": "report"},
        {"user": HOT_USER, "prefix": "bot/", "delimiter": "/", "limit": 2},
        {"prefix": "nobody/"},
    ],
    ids=lambda params: urlencode(params),
)
def test_name_lists(corpus: Corpus, params: dict[str, Any]) -> None:
    check(corpus, params)


def test_the_issue_examples(corpus: Corpus) -> None:
    items, _, _ = follow(corpus, {"bucket": corpus.bucket, "q": "inv"})
    assert "USER001_Invoice_March_2024.pdf" in [item["objectKey"] for item in items]
    items, _, ordered_by = follow(corpus, {"bucket": corpus.bucket, "q": "march 2024"})
    assert "USER001_Invoice_March_2024.pdf" in [item["objectKey"] for item in items]
    assert ordered_by == "uploadDate"
    items, _, _ = follow(corpus, {"bucket": corpus.bucket, "q": "voice"})
    assert "USER001_Invoice_March_2024.pdf" not in [item["objectKey"] for item in items]
    items, _, _ = follow(corpus, {"bucket": corpus.bucket, "q": "report q 3 final"})
    assert "USER002/reportQ3final.docx" in [item["objectKey"] for item in items]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": ""}, "q has no word in it"),
        ({"q": "__ -- ."}, "q has no word in it"),
        ({"q": "a" * 300}, "q is longer than 256 characters"),
        ({"q": " ".join(f"w{n}" for n in range(20))}, "q has more than 16 words"),
        ({"delimiter": ","}, "delimiter must be '/'"),
        ({"ext": "."}, "ext must be a file extension"),
        ({"ext": "a/b"}, "ext must be a file extension"),
        ({"q": "x", "qq": "y"}, "unknown query parameter 'qq'"),
    ],
)
def test_a_bad_name_list_is_a_400_naming_the_parameter(
    corpus: Corpus, params: dict[str, Any], message: str
) -> None:
    status, body = api_get(corpus.stack.api_url, {"bucket": corpus.bucket, **params})
    assert status == 400
    assert message in body["message"]


@pytest.mark.parametrize(
    "prefix",
    ["a" * 1020, "é" * 510, "請" * 340, "USER001/" + "😀" * 253, "😀" * 255],
    ids=["1020-ascii", "1020-two-byte", "1020-three-byte", "1020-four-byte", "1020-all-four-byte"],
)
def test_a_prefix_of_1020_bytes_is_listed(corpus: Corpus, prefix: str) -> None:
    assert len(prefix.encode()) == 1020
    scopes = ({"bucket": corpus.bucket}, {"user": "USER001"}, {"bucket": corpus.bucket, "delimiter": "/"})
    for params in scopes:
        status, body = api_get(corpus.stack.api_url, {**params, "prefix": prefix})
        assert (status, body["items"]) == (200, []), body


@pytest.mark.parametrize(
    "prefix",
    ["a" * 1021, "a" * 1024, "é" * 511, "請" * 341, "a" + "😀" * 255, "a" * 1025],
    ids=["1021-ascii", "1024-ascii", "1022-two-byte", "1023-three-byte", "1021-four-byte", "1025-ascii"],
)
def test_a_longer_prefix_is_a_400_naming_the_limit(corpus: Corpus, prefix: str) -> None:
    for params in ({"bucket": corpus.bucket}, {"user": "USER001"}):
        status, body = api_get(corpus.stack.api_url, {**params, "prefix": prefix})
        assert status == 400, body
        assert f"prefix is {len(prefix.encode())} bytes of UTF-8; at most 1020 are allowed" in body["message"]


def test_a_cursor_of_another_query_is_refused(corpus: Corpus) -> None:
    status, body = api_get(corpus.stack.api_url, {"bucket": corpus.bucket, "q": "report", "limit": 1})
    assert status == 200
    assert body["nextCursor"]
    status, refused = api_get(
        corpus.stack.api_url, {"bucket": corpus.bucket, "q": "invoice", "cursor": body["nextCursor"]}
    )
    assert status == 400
    assert "cursor is not valid" in refused["message"]


def test_the_client_searches_by_name_folder_and_extension(corpus: Corpus) -> None:
    from file_search_client.cli import main

    cases: list[tuple[list[str], dict[str, Any]]] = [
        (["--q", "march 2024"], {"q": "march 2024"}),
        (["--prefix", "USER001/", "--delimiter", "/"], {"prefix": "USER001/", "delimiter": "/"}),
        (["--ext", "PDF", "--min-size", "100"], {"ext": "PDF", "minSize": 100}),
    ]
    for flags, params in cases:
        out = io.StringIO()
        argv = [
            "--api-url",
            corpus.stack.api_url,
            "search",
            "--bucket",
            corpus.bucket,
            *flags,
            "--all",
            "--json",
        ]
        assert main(argv, out=out) == 0
        answer = json.loads(out.getvalue())
        expected_keys, expected_folders = truth(corpus, {"bucket": corpus.bucket, **params})
        assert [item["objectKey"] for item in answer["items"]] == expected_keys
        assert answer.get("commonPrefixes", []) == expected_folders


@pytest.mark.parametrize(
    "params",
    [
        {"user": "USER001", "q": "r", "limit": 3},
        {"user": "USER002", "q": "report", "order": "asc", "limit": 5},
        {"user": HOT_USER, "q": "i", "minSize": 50, "limit": 4},
        {"user": "anna", "ext": "pdf", "limit": 2},
        {"user": "USER001", "q": "x", "from": "2024-03-04T00:00:00.000Z"},
    ],
    ids=lambda params: urlencode(params),
)
def test_a_user_list_of_a_common_word_reads_its_term(corpus: Corpus, params: dict[str, Any]) -> None:
    """A user's list of a word in many of their names reads the word's term whatever the number of
    candidates (the local stack's name table starts complete): the exact answer, each file once, in order."""
    check(corpus, params)


def test_a_filter_the_deployment_does_not_enrich_is_a_400_naming_it(corpus: Corpus) -> None:
    for params, parameter in [
        ({"contentType": "image/png"}, "contentType"),
        ({"meta.project": "x"}, "meta.NAME"),
        ({"tag.team": "x"}, "tag.NAME"),
    ]:
        status, body = api_get(corpus.stack.api_url, {"bucket": corpus.bucket, **params})
        assert status == 400
        assert body["message"].startswith(f"{parameter}: this deployment does not index")


@pytest.mark.parametrize(
    "query",
    [
        "user=a&user=b",
        "bucket=B&limit=1&limit=2",
        "bucket=B&q=x&q=y",
        "user=a&date=2024-01-01&date=2024-01-02",
    ],
)
def test_a_parameter_given_twice_is_a_400_saying_so(corpus: Corpus, query: str) -> None:
    query = query.replace("bucket=B", f"bucket={corpus.bucket}")
    name = query.rsplit("&", 1)[1].split("=")[0]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{corpus.stack.api_url}/files?{query}", timeout=HTTP_TIMEOUT_S)  # noqa: S310
    assert refused.value.code == 400
    assert json.load(refused.value)["message"] == f"query parameter {name} is given 2 times: give each once"
