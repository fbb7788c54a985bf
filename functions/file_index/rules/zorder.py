"""Z-order (Morton) addresses of upload time and object size, for one index that answers both at once.

A bucket box ("between 1 MB and 10 MB, uploaded in August") is two ranges on two attributes; one index
sorted by one of them reads every item of its range and filters the other. A Z-order address interleaves
the bits of both attributes into one sort key, so a box becomes a few contiguous key ranges that a Query
can read with `BETWEEN`, reading little outside the box.

The address
-----------
Each attribute is first mapped to a 42-bit *code* whose order is the attribute's order:

- time: epoch milliseconds, as is (the resolution of `uploadDate`). 42 bits reach 2109-05-15, and
  codes are exact, so time adds no false positives. A coarser quantum (seconds) would save 10 bits but
  read the whole second at each edge of a time bound, for no gain: empty code space costs nothing to read.
- size: a base-2 floating-point code, the bit length (6 bits, 0-63) above the 36 bits that follow the
  leading one. Sizes below 2**37 (128 GiB) are exact; larger ones keep 36 significant bits (one code
  spans at most 2**-36 of the size, 64 bytes per 4 TiB). The log scale matches the box shapes people
  ask: "1-10 MB" and "100 MB-1 GB" are ranges of the same width in the code, where in a linear size
  the second is a thousand times wider. Any size up to 2**63-1 is accepted.

The two codes are interleaved into an 84-bit number: the top 7 time bits first, then a time bit above a
size bit in each pair, then the last 7 size bits (`UPLOAD_SIZE_CURVE`). Which time bit meets which size
bit decides which box shapes need few ranges; this alignment pairs one size octave (the lowest bit of the
bit length) with 2**29 ms (6.2 days), so boxes from a day to a year wide and from one to ten octaves
tall all decompose well (docs/scaling.md has the measurements; the time quantum and the size precision
barely matter, the alignment does). The number is written as a fixed-width 21-digit lower-case hex
string (`ADDRESS_WIDTH`), so DynamoDB's byte-wise string order is the numeric order of the address. (A
Number would fit too, 84 bits being 26 digits, but a string keeps one representation end to end and
leaves room for a third attribute.)

Because both codes are monotone, an item inside a box always has its address inside the box's code box,
so the decomposition below never misses a match. Items whose codes are in the box but whose exact values
are not (only sizes of 128 GiB and more, at a box edge) are read and must be filtered by the reader
(`Box.contains`).

Box decomposition
-----------------
`ZCurve.ranges` splits the z-space like a quadtree, one bit at a time, largest cells first, dropping
cells that lie outside the box while the number of ranges stays within `max_ranges`, then trims each
range's ends to the first and last in-box address (BIGMIN/LITMAX: `next_in_box`, `prev_in_box`). The
result covers every in-box address, starts and ends on in-box addresses, and, when `max_ranges` is large
enough, holds only in-box addresses. `DEFAULT_MAX_RANGES` is the bound when none is given
(docs/scaling.md gives the measurements behind it). Each range costs at least one Query per shard, so
the reader walks `WALK_MAX_RANGES` and jumps where it meets data outside the box (`next_address_in_box`,
`prev_address_in_box`): the stretches it does not need cost nothing.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

TIME_BITS = 42
SIZE_BITS = 42
SIZE_MANTISSA_BITS = 36  # SIZE_BITS minus the 6 bits of the bit length (0-63)
# Time bits above the first size bit: aligns one size octave with 2**29 ms (see the module docstring).
TIME_LEAD_BITS = 7
MAX_TIME_MS = 2**TIME_BITS - 1
MAX_SIZE = 2**63 - 1
ADDRESS_BITS = TIME_BITS + SIZE_BITS
ADDRESS_WIDTH = (ADDRESS_BITS + 3) // 4  # hex digits

# Ranges per box: see the module docstring and docs/scaling.md.
DEFAULT_MAX_RANGES = 32
# Ranges per box for the reader's adaptive walk, which jumps over what lies outside the box where it meets
# data (BIGMIN/LITMAX): every range costs at least one Query per shard, so the walk starts from few.
WALK_MAX_RANGES = 1
# Work bound for one decomposition (cells split); the measured bucket boxes stop well before it.
DEFAULT_MAX_SPLITS = 4096


class ZOrderError(ValueError):
    """A value, box or address the Z-order index cannot represent."""


@dataclass(frozen=True)
class CodeBox:
    """An inclusive box of codes: `x` (time code) in `x_lo..x_hi`, `y` (size code) in `y_lo..y_hi`."""

    x_lo: int
    x_hi: int
    y_lo: int
    y_hi: int

    def contains(self, x: int, y: int) -> bool:
        return self.x_lo <= x <= self.x_hi and self.y_lo <= y <= self.y_hi


# An aligned cell of z-space: (its first address, x_lo, x_hi, y_lo, y_hi).
Cell = tuple[int, int, int, int, int]


class ZCurve:
    """A Morton order of two unsigned integers x and y, on any bit layout.

    `axes` names the axis of each address bit from the most significant down ("x" or "y"); each
    axis's own bits keep their order. `ZCurve.interleaved(x_bits, y_bits)` is the usual curve. Works on
    plain integers, so it can be checked against brute force on small grids; `UPLOAD_SIZE_CURVE` is the
    curve of the index.
    """

    def __init__(self, axes: str) -> None:
        if not axes or set(axes) - {"x", "y"} or len(axes) > 256:
            raise ZOrderError(f"axes must be 1-256 of 'x'/'y', not {axes!r}")
        self.axes = axes
        bits = len(axes)
        positions: dict[str, list[int]] = {"x": [], "y": []}
        below = [0] * bits
        seen = {"x": 0, "y": 0}
        # From the least significant bit up: each bit's mask of the lower bits of its own axis.
        for position in range(bits):
            axis = axes[bits - 1 - position]
            below[position] = seen[axis]
            seen[axis] |= 1 << position
            positions[axis].append(position)
        self._x_positions = tuple(positions["x"])
        self._y_positions = tuple(positions["y"])
        self._below = tuple(below)

    def __repr__(self) -> str:
        return f"ZCurve({self.axes!r})"

    @classmethod
    def interleaved(cls, x_bits: int, y_bits: int, *, x_lead: int = 0) -> ZCurve:
        """`x_lead` bits of x on top, then x's bit above y's in each pair, then the longer axis's rest."""
        if not 0 <= x_lead <= x_bits:
            raise ZOrderError(f"x_lead must be 0..{x_bits}, not {x_lead}")
        pairs = min(x_bits - x_lead, y_bits)
        return cls("x" * x_lead + "xy" * pairs + "x" * (x_bits - x_lead - pairs) + "y" * (y_bits - pairs))

    @property
    def x_bits(self) -> int:
        return self.axes.count("x")

    @property
    def y_bits(self) -> int:
        return self.axes.count("y")

    @property
    def max_address(self) -> int:
        return (1 << len(self.axes)) - 1

    def interleave(self, x: int, y: int) -> int:
        if not (0 <= x < 1 << self.x_bits and 0 <= y < 1 << self.y_bits):
            raise ZOrderError(f"coordinates ({x}, {y}) are outside the {self.x_bits}x{self.y_bits}-bit grid")
        z = 0
        for bit, position in enumerate(self._x_positions):
            z |= ((x >> bit) & 1) << position
        for bit, position in enumerate(self._y_positions):
            z |= ((y >> bit) & 1) << position
        return z

    def deinterleave(self, z: int) -> tuple[int, int]:
        if not 0 <= z <= self.max_address:
            raise ZOrderError(f"address {z} is outside 0..{self.max_address}")
        x = y = 0
        for bit, position in enumerate(self._x_positions):
            x |= ((z >> position) & 1) << bit
        for bit, position in enumerate(self._y_positions):
            y |= ((z >> position) & 1) << bit
        return x, y

    def check_box(self, box: CodeBox) -> None:
        if not (
            0 <= box.x_lo <= box.x_hi < 1 << self.x_bits and 0 <= box.y_lo <= box.y_hi < 1 << self.y_bits
        ):
            raise ZOrderError(f"{box} is empty or outside the {self.x_bits}x{self.y_bits}-bit grid")

    def outer_bounds(self, box: CodeBox) -> tuple[int, int]:
        """The smallest and largest address inside `box`: every in-box address lies between them."""
        self.check_box(box)
        return self.interleave(box.x_lo, box.y_lo), self.interleave(box.x_hi, box.y_hi)

    # BIGMIN (Tropf and Herzog, 1981; LITMAX is its mirror): walk the address bits from the top, comparing
    # `z` with the box's outer bounds; a bit where the bounds differ splits the box in two along that bit's
    # axis.
    def _load_1000(self, value: int, position: int) -> int:
        # This axis's bit at `position` set, its lower bits cleared: the low corner of the upper half.
        return (value | (1 << position)) & ~self._below[position]

    def _load_0111(self, value: int, position: int) -> int:
        # This axis's bit at `position` cleared, its lower bits set: the high corner of the lower half.
        return (value & ~(1 << position)) | self._below[position]

    def next_in_box(self, z: int, box: CodeBox) -> int | None:
        """The smallest in-box address >= `z` (BIGMIN when `z` is outside the box), or None."""
        zmin, zmax = self.outer_bounds(box)
        if z <= zmin:
            return zmin
        if z > zmax:
            return None
        if box.contains(*self.deinterleave(z)):
            return z
        best: int | None = None
        for position in range(len(self.axes) - 1, -1, -1):
            mask = 1 << position
            bits = (bool(z & mask), bool(zmin & mask), bool(zmax & mask))
            if bits == (False, False, True):
                best = self._load_1000(zmin, position)
                zmax = self._load_0111(zmax, position)
            elif bits == (False, True, True):
                return zmin
            elif bits == (True, False, False):
                return best
            elif bits == (True, False, True):
                zmin = self._load_1000(zmin, position)
        return best

    def prev_in_box(self, z: int, box: CodeBox) -> int | None:
        """The largest in-box address <= `z` (LITMAX when `z` is outside the box), or None.

        LITMAX is BIGMIN on the grid turned end for end: flipping every address bit reverses the order of
        the addresses and mirrors each axis (code c becomes its axis's largest code minus c).
        """
        self.check_box(box)
        x_top, y_top = (1 << self.x_bits) - 1, (1 << self.y_bits) - 1
        mirrored = CodeBox(x_top - box.x_hi, x_top - box.x_lo, y_top - box.y_hi, y_top - box.y_lo)
        flipped = self.next_in_box(self.max_address - z, mirrored)
        return None if flipped is None else self.max_address - flipped

    def ranges(
        self, box: CodeBox, max_ranges: int, *, max_splits: int = DEFAULT_MAX_SPLITS
    ) -> list[tuple[int, int]]:
        """Sorted, disjoint, non-adjacent address ranges (inclusive) covering every address of `box`.

        At most `max_ranges` ranges; each starts and ends on an in-box address. Cells (aligned address
        intervals, each a rectangle of codes) are split one address bit at a time, largest first; a cell
        outside the box is dropped unless that would need more than `max_ranges` ranges, where the
        refinement stops. `max_splits` bounds the work: the result is then looser, never wrong.
        """
        if max_ranges < 1:
            raise ZOrderError(f"max_ranges must be at least 1, not {max_ranges}")
        self.check_box(box)
        bits = len(self.axes)
        top = self.max_address
        gap_end_at_start: dict[int, int] = {}  # dropped intervals: start -> end
        gap_start_at_end: dict[int, int] = {}  # end -> start
        runs = 1
        # A cell is (level, lo, x_lo, x_hi, y_lo, y_hi): `level` address bits are fixed, so the heap
        # pops the largest cells first, and a split halves one axis of the rectangle.
        partial = [(0, 0, 0, (1 << self.x_bits) - 1, 0, (1 << self.y_bits) - 1)]
        splits = 0
        while partial and splits < max_splits:
            level, lo, x_lo, x_hi, y_lo, y_hi = heapq.heappop(partial)
            splits += 1
            half = 1 << (bits - level - 1)
            children = self.halves(level, lo, x_lo, x_hi, y_lo, y_hi)
            refused = False
            for child_lo, cx_lo, cx_hi, cy_lo, cy_hi in children:
                if cx_hi < box.x_lo or cx_lo > box.x_hi or cy_hi < box.y_lo or cy_lo > box.y_hi:
                    child_hi = child_lo + half - 1
                    left = child_lo > 0 and (child_lo - 1) not in gap_start_at_end
                    right = child_hi < top and (child_hi + 1) not in gap_end_at_start
                    change = int(left) + int(right) - 1
                    if runs + change > max_ranges:
                        refused = True
                        continue
                    runs += change
                    start, end = child_lo, child_hi
                    if not left and start > 0:
                        start = gap_start_at_end.pop(child_lo - 1)
                        del gap_end_at_start[start]
                    if not right and end < top:
                        end = gap_end_at_start.pop(child_hi + 1)
                        del gap_start_at_end[end]
                    gap_end_at_start[start] = end
                    gap_start_at_end[end] = start
                elif not (
                    box.x_lo <= cx_lo and cx_hi <= box.x_hi and box.y_lo <= cy_lo and cy_hi <= box.y_hi
                ):
                    heapq.heappush(partial, (level + 1, child_lo, cx_lo, cx_hi, cy_lo, cy_hi))
            if refused:
                break
        return self._trimmed_runs(gap_end_at_start, box)

    def halves(self, level: int, lo: int, x_lo: int, x_hi: int, y_lo: int, y_hi: int) -> tuple[Cell, Cell]:
        """The two halves of the aligned cell starting at address `lo` with `level` bits fixed (the codes
        `x_lo..x_hi` by `y_lo..y_hi`): split along the axis of address bit `level`, each as (its first
        address, x_lo, x_hi, y_lo, y_hi)."""
        half = 1 << (len(self.axes) - level - 1)
        if self.axes[level] == "x":
            middle = (x_lo + x_hi + 1) // 2
            return (lo, x_lo, middle - 1, y_lo, y_hi), (lo + half, middle, x_hi, y_lo, y_hi)
        middle = (y_lo + y_hi + 1) // 2
        return (lo, x_lo, x_hi, y_lo, middle - 1), (lo + half, x_lo, x_hi, middle, y_hi)

    def _trimmed_runs(self, gaps: dict[int, int], box: CodeBox) -> list[tuple[int, int]]:
        result: list[tuple[int, int]] = []
        cursor = 0
        for start in sorted(gaps):
            if cursor < start:
                result.extend(self._trim(cursor, start - 1, box))
            cursor = gaps[start] + 1
        if cursor <= self.max_address:
            result.extend(self._trim(cursor, self.max_address, box))
        return result

    def _trim(self, lo: int, hi: int, box: CodeBox) -> list[tuple[int, int]]:
        first = self.next_in_box(lo, box)
        if first is None or first > hi:
            return []
        last = self.prev_in_box(hi, box)
        # `first` is an in-box address inside [lo, hi], so `last` exists and is at least `first`.
        return [(first, first if last is None else last)]


UPLOAD_SIZE_CURVE = ZCurve.interleaved(TIME_BITS, SIZE_BITS, x_lead=TIME_LEAD_BITS)


def time_code(epoch_ms: int) -> int:
    """The time code of an upload time in epoch milliseconds: the value itself, range-checked."""
    if not 0 <= epoch_ms <= MAX_TIME_MS:
        raise ZOrderError(f"upload time {epoch_ms} ms is outside 0..{MAX_TIME_MS} (1970 to 2109)")
    return epoch_ms


def size_code(size: int) -> int:
    """The order-preserving 42-bit code of a size: bit length, then the 36 bits after the leading one."""
    if not 0 <= size <= MAX_SIZE:
        raise ZOrderError(f"size {size} is outside 0..{MAX_SIZE}")
    length = size.bit_length()
    if length == 0:
        return 0
    lead = length - 1
    without_lead = size ^ (1 << lead)
    if lead <= SIZE_MANTISSA_BITS:
        mantissa = without_lead << (SIZE_MANTISSA_BITS - lead)
    else:
        mantissa = without_lead >> (lead - SIZE_MANTISSA_BITS)
    return (length << SIZE_MANTISSA_BITS) | mantissa


def size_floor(code: int) -> int:
    """The smallest size with this code (the size itself below 2**37)."""
    length, mantissa = code >> SIZE_MANTISSA_BITS, code & ((1 << SIZE_MANTISSA_BITS) - 1)
    if length == 0:
        return 0
    lead = length - 1
    if lead <= SIZE_MANTISSA_BITS:
        return (1 << lead) | (mantissa >> (SIZE_MANTISSA_BITS - lead))
    return (1 << lead) | (mantissa << (lead - SIZE_MANTISSA_BITS))


def epoch_millis(upload_date: str) -> int:
    """Epoch milliseconds of an `uploadDate` (`2017-08-20T09:15:02.113Z`)."""
    try:
        moment = datetime.fromisoformat(upload_date.replace("Z", "+00:00"))
    except ValueError as error:
        raise ZOrderError(f"upload date {upload_date!r} is not ISO-8601") from error
    if moment.tzinfo is None:
        raise ZOrderError(f"upload date {upload_date!r} has no time zone")
    delta = moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return delta // _ONE_MILLISECOND


_ONE_MILLISECOND = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)


def _address_text(z: int) -> str:
    return format(z, f"0{ADDRESS_WIDTH}x")


def encode(upload_ms: int, size: int) -> str:
    """The address of an entry: fixed-width hex whose string order is the Z-order."""
    return _address_text(UPLOAD_SIZE_CURVE.interleave(time_code(upload_ms), size_code(size)))


def address_value(address: str) -> int:
    """The integer of an address string; ZOrderError if it is not `ADDRESS_WIDTH` lower-case hex digits."""
    if len(address) != ADDRESS_WIDTH or address.strip("0123456789abcdef"):
        raise ZOrderError(f"address {address!r} is not {ADDRESS_WIDTH} lower-case hex digits")
    # 21 hex digits are exactly the 84-bit space: every such string is an address.
    return int(address, 16)


def decode(address: str) -> tuple[int, int]:
    """(upload time in epoch ms, size) of an address: the time exactly, the size down to its code."""
    time, size = UPLOAD_SIZE_CURVE.deinterleave(address_value(address))
    return time, size_floor(size)


@dataclass(frozen=True)
class Box:
    """Upload time `from_ms..to_ms` and size `min_size..max_size`, inclusive; None leaves a side open."""

    from_ms: int | None = None
    to_ms: int | None = None
    min_size: int | None = None
    max_size: int | None = None

    def __post_init__(self) -> None:
        low_time, high_time = self.from_ms or 0, MAX_TIME_MS if self.to_ms is None else self.to_ms
        low_size, high_size = self.min_size or 0, MAX_SIZE if self.max_size is None else self.max_size
        time_code(low_time), time_code(high_time), size_code(low_size), size_code(high_size)
        if low_time > high_time:
            raise ZOrderError(f"the time range {self.from_ms}..{self.to_ms} is empty")
        if low_size > high_size:
            raise ZOrderError(f"the size range {self.min_size}..{self.max_size} is empty")

    def contains(self, upload_ms: int, size: int) -> bool:
        """True if an entry lies in the box (by its exact values: what the reader keeps)."""
        return (
            (self.from_ms is None or upload_ms >= self.from_ms)
            and (self.to_ms is None or upload_ms <= self.to_ms)
            and (self.min_size is None or size >= self.min_size)
            and (self.max_size is None or size <= self.max_size)
        )

    def codes(self) -> CodeBox:
        """The box in code space: it holds the codes of every entry the box contains."""
        return CodeBox(
            x_lo=time_code(self.from_ms or 0),
            x_hi=time_code(MAX_TIME_MS if self.to_ms is None else self.to_ms),
            y_lo=size_code(self.min_size or 0),
            y_hi=size_code(MAX_SIZE if self.max_size is None else self.max_size),
        )


class ZRange(NamedTuple):
    """An inclusive range of addresses, for `sortKey BETWEEN lo AND hi`."""

    lo: str
    hi: str


def z_ranges(box: Box, max_ranges: int = DEFAULT_MAX_RANGES) -> list[ZRange]:
    """At most `max_ranges` sorted, disjoint address ranges holding the address of every entry in `box`."""
    return [
        ZRange(_address_text(lo), _address_text(hi))
        for lo, hi in UPLOAD_SIZE_CURVE.ranges(box.codes(), max_ranges)
    ]


def next_address_in_box(address: str, box: Box) -> str | None:
    """BIGMIN: the first address at or after `address` whose codes are inside `box`, or None."""
    z = UPLOAD_SIZE_CURVE.next_in_box(address_value(address), box.codes())
    return None if z is None else _address_text(z)


def prev_address_in_box(address: str, box: Box) -> str | None:
    """LITMAX: the last address at or before `address` whose codes are inside `box`, or None."""
    z = UPLOAD_SIZE_CURVE.prev_in_box(address_value(address), box.codes())
    return None if z is None else _address_text(z)
