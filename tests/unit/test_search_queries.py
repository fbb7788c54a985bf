"""From list parameters to index queries: bounds, days and timestamps, orders."""

from __future__ import annotations

import pytest

from file_index.reader import BucketQuery, UserQuery
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
        build_query(ListParameters(user="\ud800"))
