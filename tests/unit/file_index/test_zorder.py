"""Z-order addresses: order per attribute, round trip, box ranges and BIGMIN/LITMAX, against brute force."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.models import read_cost
from file_index.rules.zorder import (
    ADDRESS_WIDTH,
    DEFAULT_MAX_RANGES,
    MAX_SIZE,
    MAX_TIME_MS,
    UPLOAD_SIZE_CURVE,
    Box,
    CodeBox,
    ZCurve,
    ZOrderError,
    ZRange,
    decode,
    encode,
    epoch_millis,
    next_address_in_box,
    size_code,
    z_ranges,
)

EXACT_SIZES = 2**37  # sizes below this have a code of their own
times = st.integers(0, MAX_TIME_MS)
sizes = st.one_of(st.integers(0, 2**40), st.integers(0, MAX_SIZE))


# --- the address -------------------------------------------------------------------------------------


@given(times, sizes, sizes)
def test_a_larger_size_never_gets_a_smaller_address(time: int, size_a: int, size_b: int) -> None:
    low, high = sorted((size_a, size_b))
    assert encode(time, low) <= encode(time, high)
    if low < high < EXACT_SIZES:
        assert encode(time, low) < encode(time, high)


@given(times, times, sizes)
def test_a_later_time_always_gets_a_larger_address(time_a: int, time_b: int, size: int) -> None:
    low, high = sorted((time_a, time_b))
    assert (encode(low, size) < encode(high, size)) == (low < high)


@given(times, sizes)
def test_decode_gives_back_the_time_and_the_size_down_to_its_quantum(time: int, size: int) -> None:
    address = encode(time, size)
    assert len(address) == ADDRESS_WIDTH
    assert address == address.lower()
    decoded_time, decoded_size = decode(address)
    assert decoded_time == time
    if size < EXACT_SIZES:
        assert decoded_size == size
    else:
        # 36 bits kept after the leading one: the quantum is 2**(bit length - 37).
        assert 0 <= size - decoded_size < 2 ** (size.bit_length() - 37)
        assert size_code(decoded_size) == size_code(size)


def test_the_address_string_order_is_its_numeric_order() -> None:
    addresses = [encode(t, s) for t in (0, 1, 2**30, MAX_TIME_MS) for s in (0, 1, 2**20, MAX_SIZE)]
    assert sorted(addresses) == sorted(addresses, key=lambda text: int(text, 16))


def test_epoch_millis_reads_the_upload_date_format() -> None:
    moment = datetime(2017, 8, 20, 9, 15, 2, 113000, tzinfo=UTC)
    assert epoch_millis("2017-08-20T09:15:02.113Z") == int(moment.timestamp() * 1000)


@pytest.mark.parametrize(
    "call",
    [
        lambda: encode(-1, 0),
        lambda: encode(MAX_TIME_MS + 1, 0),
        lambda: encode(0, -1),
        lambda: encode(0, MAX_SIZE + 1),
        lambda: decode("xyz"),
        lambda: decode("G" * ADDRESS_WIDTH),
        lambda: decode("0" * (ADDRESS_WIDTH + 1)),
        lambda: epoch_millis("20 August"),
        lambda: epoch_millis("2017-08-20T09:15:02"),
        lambda: Box(from_ms=10, to_ms=9),
        lambda: Box(min_size=10, max_size=9),
        lambda: Box(from_ms=-1),
        lambda: z_ranges(Box(), max_ranges=0),
        lambda: ZCurve(""),
        lambda: ZCurve("xz"),
        lambda: ZCurve.interleaved(2, 2, x_lead=3),
        lambda: ZCurve("xy").interleave(2, 0),
        lambda: ZCurve("xy").ranges(CodeBox(1, 0, 0, 0), 4),
    ],
)
def test_what_cannot_be_represented_is_refused_with_a_clear_error(call: object) -> None:
    with pytest.raises(ZOrderError):
        call()  # type: ignore[operator]


# --- small grids against brute force -----------------------------------------------------------------


@st.composite
def curves_and_boxes(draw: st.DrawFn) -> tuple[ZCurve, CodeBox]:
    x_bits, y_bits = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    placement = draw(st.permutations("x" * x_bits + "y" * y_bits))
    curve = ZCurve("".join(placement))
    x_lo, x_hi = sorted(draw(st.integers(0, 2**x_bits - 1)) for _ in range(2))
    y_lo, y_hi = sorted(draw(st.integers(0, 2**y_bits - 1)) for _ in range(2))
    return curve, CodeBox(x_lo, x_hi, y_lo, y_hi)


def in_box_addresses(curve: ZCurve, box: CodeBox) -> list[int]:
    return sorted(
        curve.interleave(x, y) for x in range(box.x_lo, box.x_hi + 1) for y in range(box.y_lo, box.y_hi + 1)
    )


@given(curves_and_boxes())
def test_interleave_round_trips_and_keeps_each_axis_in_order(case: tuple[ZCurve, CodeBox]) -> None:
    curve, _ = case
    addresses = {}
    for x in range(2**curve.x_bits):
        for y in range(2**curve.y_bits):
            z = curve.interleave(x, y)
            assert curve.deinterleave(z) == (x, y)
            addresses[x, y] = z
            if x:
                assert addresses[x - 1, y] < z
            if y:
                assert addresses[x, y - 1] < z
    assert sorted(addresses.values()) == list(range(curve.max_address + 1))


@given(curves_and_boxes())
def test_bigmin_and_litmax_match_brute_force(case: tuple[ZCurve, CodeBox]) -> None:
    curve, box = case
    inside = in_box_addresses(curve, box)
    for z in range(curve.max_address + 1):
        assert curve.next_in_box(z, box) == next((a for a in inside if a >= z), None)
        assert curve.prev_in_box(z, box) == next((a for a in reversed(inside) if a <= z), None)


@given(curves_and_boxes(), st.integers(1, 6))
def test_the_ranges_cover_the_box_exactly_within_the_bound(case: tuple[ZCurve, CodeBox], bound: int) -> None:
    curve, box = case
    inside = set(in_box_addresses(curve, box))
    zmin, zmax = curve.outer_bounds(box)
    ranges = curve.ranges(box, bound)
    assert 1 <= len(ranges) <= bound
    covered = {z for lo, hi in ranges for z in range(lo, hi + 1)}
    assert inside <= covered  # no match is ever missed
    for (lo, hi), following in zip(ranges, [*ranges[1:], None], strict=True):
        assert zmin <= lo <= hi <= zmax
        assert lo in inside
        assert hi in inside
        if following is not None:
            assert hi + 1 < following[0]  # sorted, disjoint, not adjacent


@given(curves_and_boxes())
def test_with_enough_ranges_the_ranges_hold_only_the_box(case: tuple[ZCurve, CodeBox]) -> None:
    curve, box = case
    ranges = curve.ranges(box, max_ranges=2**8)
    assert {z for lo, hi in ranges for z in range(lo, hi + 1)} == set(in_box_addresses(curve, box))


def test_a_split_budget_too_small_still_covers_the_box() -> None:
    curve = ZCurve.interleaved(4, 4)
    box = CodeBox(3, 12, 5, 9)
    ranges = curve.ranges(box, 64, max_splits=1)
    covered = {z for lo, hi in ranges for z in range(lo, hi + 1)}
    assert set(in_box_addresses(curve, box)) <= covered
    assert len(ranges) < len(curve.ranges(box, 64))


# --- the index's curve ---------------------------------------------------------------------------------


@st.composite
def boxes(draw: st.DrawFn) -> Box:
    base = draw(st.integers(1_400_000_000_000, 1_800_000_000_000))
    span = draw(st.sampled_from([0, 1, 60_000, 3_600_000, 86_400_000, 31 * 86_400_000, 365 * 86_400_000]))
    low = draw(st.integers(0, 2**34))
    width = draw(st.sampled_from([0, 1, 1024, 2**20, 2**30, 2**40]))
    return Box(
        from_ms=draw(st.one_of(st.none(), st.just(base))),
        to_ms=draw(st.one_of(st.none(), st.just(base + span))),
        min_size=draw(st.one_of(st.none(), st.just(low))),
        max_size=draw(st.one_of(st.none(), st.just(low + width))),
    )


@settings(max_examples=60, deadline=None)
@given(boxes(), st.sampled_from([1, 4, DEFAULT_MAX_RANGES]), st.data())
def test_every_entry_in_a_box_has_its_address_in_a_range(box: Box, bound: int, data: st.DataObject) -> None:
    ranges = z_ranges(box, bound)
    assert 1 <= len(ranges) <= bound
    assert ranges == sorted(ranges)
    assert all(lo <= hi for lo, hi in ranges)
    codes = box.codes()
    for _ in range(25):
        time = data.draw(st.integers(codes.x_lo, codes.x_hi))
        size = data.draw(st.integers(box.min_size or 0, MAX_SIZE if box.max_size is None else box.max_size))
        assert box.contains(time, size)
        address = encode(time, size)
        assert any(lo <= address <= hi for lo, hi in ranges)
        assert next_address_in_box(address, box) == address


def test_next_address_in_box_jumps_over_what_is_outside() -> None:
    box = Box(from_ms=1_000, to_ms=2_000, min_size=10, max_size=20)
    outside = encode(500, 15)
    jump = next_address_in_box(outside, box)
    assert jump is not None
    assert jump > outside
    time, size = decode(jump)
    assert box.contains(time, size)
    assert next_address_in_box(encode(3_000, 30), box) is None


def test_the_default_bound_reads_little_outside_a_bucket_box() -> None:
    # Uploads each hour of August 2017, of every power-of-two size from 1 B to 1 GiB.
    august = epoch_millis("2017-08-01T00:00:00.000Z")
    entries = [(august + hour * 3_600_000, 2**power) for hour in range(31 * 24) for power in range(31)]
    box = Box(from_ms=august + 7 * 86_400_000, to_ms=august + 14 * 86_400_000, min_size=2**20, max_size=2**24)
    exact = read_cost(z_ranges(box, max_ranges=10_000), entries, box)
    cost = read_cost(z_ranges(box), entries, box)
    assert cost.matched == 169 * 5
    assert cost.ranges <= DEFAULT_MAX_RANGES
    assert cost.matched <= cost.read <= 2 * cost.matched
    assert exact.read >= exact.matched


def test_read_cost_counts_what_the_ranges_read_and_what_the_box_holds() -> None:
    box = Box(from_ms=100, to_ms=200, min_size=0, max_size=10)
    entries = [(150, 5), (150, 50), (300, 5)]
    everything = [ZRange("0" * ADDRESS_WIDTH, encode(MAX_TIME_MS, MAX_SIZE))]
    cost = read_cost(everything, entries, box)
    assert (cost.read, cost.matched, cost.ranges, cost.amplification) == (3, 1, 1, 3.0)
    assert read_cost([], [], box).amplification == 1.0
    assert read_cost(everything, [(300, 5)], box).amplification == float("inf")


def test_the_index_curve_is_84_bits_with_seven_time_bits_on_top() -> None:
    assert UPLOAD_SIZE_CURVE.axes == "x" * 7 + "xy" * 35 + "y" * 7
    assert ADDRESS_WIDTH == 21
