"""Rows of the benchmark table and how they are printed.

Every figure is a row: what was measured, in which unit, our figure, the figure of what we compare against,
and the ratio between the two. The table goes to stdout twice: aligned for a terminal, then as markdown so
the README can quote it verbatim.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Row:
    """One figure side by side with its comparison; `ratio` is comparison / ours unless said otherwise."""

    measure: str
    unit: str
    ours: float | None
    comparison: float | None
    compared_with: str
    ratio: float | None = None
    note: str = ""

    @classmethod
    def versus(
        cls,
        measure: str,
        unit: str,
        ours: float | None,
        comparison: float | None,
        compared_with: str,
        *,
        note: str = "",
    ) -> Row:
        """A row whose ratio is comparison ÷ ours: above 1 means ours is smaller (fewer, faster, cheaper)."""
        return cls(measure, unit, ours, comparison, compared_with, ratio_of(comparison, ours), note)


@dataclass(frozen=True)
class Measured:
    """What a measure returns: its rows, and the raw samples its chart is drawn from (JSON values).

    `samples` maps a chart's name (`bench.charts.CHARTS`) to that chart's data; a measure without a
    chart may return its rows alone.
    """

    rows: list[Row]
    samples: dict[str, Any] = field(default_factory=dict)


def ratio_of(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def format_number(value: float | None) -> str:
    """Three significant digits are all a benchmark on a shared machine can claim."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if float(value).is_integer():
        return f"{value:.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01:
        return f"{value:.2f}"
    return f"{value:.2g}"


def format_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{format_number(value)}×"


HEADER = ("measure", "unit", "ours", "comparison", "ratio", "note")


def _cells(row: Row) -> tuple[str, ...]:
    comparison = format_number(row.comparison)
    if row.compared_with:
        comparison = f"{comparison} ({row.compared_with})"
    return (
        row.measure,
        row.unit,
        format_number(row.ours),
        comparison,
        format_ratio(row.ratio),
        row.note,
    )


def text_table(rows: Sequence[Row]) -> str:
    """Columns aligned for a terminal."""
    lines = [HEADER, *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    rendered = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in lines
    ]
    rendered.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in rendered)


def markdown_table(rows: Sequence[Row]) -> str:
    """A GitHub markdown table; `|` inside a cell is escaped."""

    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    out = [line(HEADER), line("---" for _ in HEADER)]
    out.extend(line(_cells(row)) for row in rows)
    return "\n".join(out)


def progress(message: str) -> None:
    """Progress goes to stderr, so stdout holds only the table."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)
