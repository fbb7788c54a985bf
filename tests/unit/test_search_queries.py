"""From list parameters to index queries: bounds, days and timestamps, orders."""

from __future__ import annotations

import pytest

from file_index.read.file_queries import BucketQuery, UserQuery
from search.errors import BadRequest
from search.queries import ListParameters, build_query, parse_bound


@pytest.mark.parametrize(
    ("value", "upper", "expected"),
    [
        ("2017-08-20", False, "2017-08-20T00:00:00.000Z"),
        ("2017-08-20", True, "2017-08-20T23:59:59.999Z"),
        ("2017-08-20T09:15:02.113Z", False, "2017-08-20T09:15:02.113Z"),
        ("2017-08-20T09:15:02Z", True, "2017-08-20T09:15:02.000Z"),
        ("2017-08-20T09:15:02.1135Z", True, "2017-08-20T09:15:02.113Z"),
        ("2017-08-20T09:15:02.1131Z", False, "2017-08-20T09:15:02.114Z"),
        ("2017-08-20T01:00:00+02:00", False, "2017-08-19T23:00:00.000Z"),
        ("2017-08-20T09:15", False, "2017-08-20T09:15:00.000Z"),
        ("0099-01-01T00:00:00Z", False, "0099-01-01T00:00:00.000Z"),
    ],
)
def test_bounds_are_rendered_like_stored_upload_dates(value: str, upper: bool, expected: str) -> None:
    assert parse_bound("from", value, upper=upper) == expected


@pytest.mark.parametrize(
    "value",
    ["2017-8-20", "20170820", "2017-08-20 09:15:02", "now", "2017-08-20T24:00:01Z", "0001-01-01T00:00+01:00"],
)
def test_unreadable_bounds_are_bad_requests(value: str) -> None:
    with pytest.raises(BadRequest, match="from"):
        parse_bound("from", value, upper=False)


def test_default_orders_follow_the_guideline() -> None:
    assert build_query(ListParameters(user="U")) == UserQuery(user="U", ascending=True)
    assert build_query(ListParameters(bucket="B")) == BucketQuery(bucket="B", ascending=False)
    assert build_query(ListParameters(user="U", order="desc")).ascending is False
    assert build_query(ListParameters(bucket="B", order="asc")).ascending is True


def test_a_day_is_a_prefix_of_its_timestamps() -> None:
    assert build_query(ListParameters(user="U", date="2017-08-20")) == UserQuery(
        user="U", day_prefix="2017-08-20T"
    )


def test_equal_bounds_are_allowed() -> None:
    query = build_query(ListParameters(bucket="B", min_size=5, max_size=5))
    assert query == BucketQuery(bucket="B", min_size=5, max_size=5)


def test_a_lone_surrogate_is_a_bad_request_not_a_crash() -> None:
    with pytest.raises(BadRequest, match="user is not valid text"):
        build_query(ListParameters.model_construct(user="\ud800"))


def test_a_box_bounds_both_attributes_of_a_user_or_a_bucket() -> None:
    assert build_query(ListParameters(user="U", min_size=1, from_="2017-08-20")) == UserQuery(
        user="U", start="2017-08-20T00:00:00.000Z", min_size=1
    )
    assert build_query(ListParameters(user="U", date="2017-08-20", max_size=9)) == UserQuery(
        user="U", day_prefix="2017-08-20T", max_size=9
    )
    # A bucket's day is its first to its last millisecond (the bucket indexes are not keyed on time).
    assert build_query(ListParameters(bucket="B", date="2017-08-20", min_size=3)) == BucketQuery(
        bucket="B", min_size=3, start="2017-08-20T00:00:00.000Z", end="2017-08-20T23:59:59.999Z"
    )
    assert build_query(ListParameters(bucket="B", to="2017-08-21")) == BucketQuery(
        bucket="B", end="2017-08-21T23:59:59.999Z"
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (ListParameters(bucket="B", date="2017-08-20", from_="2017-08-19"), "date cannot be combined"),
        (ListParameters(bucket="B", from_="2017-08-21", to="2017-08-20"), "from must not be after to"),
        (ListParameters(user="U", min_size=2, max_size=1), "minSize must not be greater than maxSize"),
        (ListParameters(bucket="B", date="2017-02-30"), "date is not a valid date"),
    ],
)
def test_each_bound_keeps_its_checks_in_a_box(params: ListParameters, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        build_query(params)


def test_sort_asks_a_bucket_for_an_order_and_is_refused_where_it_cannot_apply() -> None:
    query = build_query(ListParameters(bucket="b", sort="uploadDate"))
    assert query == BucketQuery(bucket="b", order_by="uploadDate")
    assert build_query(ListParameters(user="u", sort="uploadDate")) == UserQuery(
        user="u", order_by="uploadDate"
    )
    # A user's list by size: largest first unless order=asc, and minSize=0 is no bound.
    assert build_query(ListParameters(user="u", sort="size", min_size=0)) == UserQuery(
        user="u", order_by="size", ascending=False
    )
    assert build_query(ListParameters(user="u", sort="size", order="asc")).ascending
    for params, message in [
        (
            ListParameters.model_construct(bucket="b", sort="name"),
            "sort must be uploadDate or size, not 'name'",
        ),
        (ListParameters(bucket="b", q="x", sort="size"), "a list by name"),
    ]:
        with pytest.raises(BadRequest, match=message):
            build_query(params)


@pytest.mark.parametrize("prefix", ["a" * 1020, "é" * 510, "請" * 340, "😀" * 255, ""])
def test_a_prefix_of_up_to_1020_bytes_is_taken(prefix: str) -> None:
    query = build_query(ListParameters(bucket="b", prefix=prefix))
    assert getattr(query, "prefix", None) == prefix


@pytest.mark.parametrize("prefix", ["a" * 1021, "é" * 511, "請" * 341, "a" + "😀" * 255, "a" * 1024])
def test_a_longer_prefix_is_refused_naming_the_limit(prefix: str) -> None:
    with pytest.raises(BadRequest, match=f"prefix is {len(prefix.encode())} bytes of UTF-8; at most 1020"):
        build_query(ListParameters(user="u", prefix=prefix))
