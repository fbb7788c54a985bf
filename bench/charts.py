"""The benchmark's figures as PNG charts, drawn from the raw samples the measures return.

`write_charts(samples, folder)` draws one chart per measure that returned samples for it (`CHARTS`) and
returns the files it wrote. matplotlib draws with its Agg backend: no display, same pixels everywhere.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, never a window

import matplotlib.pyplot as plt  # after use(): pyplot reads the backend when imported
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bench.freshness import percentile

DPI = 120
SIZE_INCHES = (8.0, 4.5)
# Fixed metadata: a chart drawn twice from the same samples is the same file.
_METADATA = {"Software": None}


class ChartDataError(ValueError):
    """A measure's samples lack what its chart needs; the message names the chart and the field."""


def _field(data: dict[str, Any], chart: str, name: str) -> Any:
    try:
        return data[name]
    except KeyError:
        raise ChartDataError(f"chart {chart!r}: the samples have no {name!r}") from None


def freshness(axes: Axes, data: dict[str, Any]) -> None:
    samples = sorted(_field(data, "freshness", "samplesMs"))
    one_get = float(_field(data, "freshness", "oneGetMs"))
    if not samples:
        raise ChartDataError("chart 'freshness': no samples")
    axes.hist(samples, bins=min(40, max(5, len(samples) // 5)), color="tab:blue", alpha=0.8)
    # The table's percentiles, so the chart and the rows agree.
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    for value, label, style in ((one_get, "one GET", ":"), (p50, "p50", "--"), (p99, "p99", "-")):
        axes.axvline(value, color="black", linestyle=style, label=f"{label}: {value:.1f} ms")
    axes.set_xlabel("put_object returned → found by GET /files/{key} (ms)")
    axes.set_ylabel("uploads")
    axes.set_title(f"Freshness on the local stack ({len(samples)} uploads)")
    axes.legend()


def read_amplification(axes: Axes, data: dict[str, Any]) -> None:
    sizes = _field(data, "read_amplification", "sizes")
    listed = _field(data, "read_amplification", "listed")
    modelled = _field(data, "read_amplification", "modelled")
    for query, read in sorted(_field(data, "read_amplification", "itemsRead").items()):
        axes.plot(sizes, read, marker="o", label=f"ours: {query}")
    axes.plot(sizes, listed, marker="s", color="black", label="list bucket + filter")
    hollow = [(size, count) for size, count, model in zip(sizes, listed, modelled, strict=True) if model]
    if hollow:
        xs, ys = [size for size, _ in hollow], [count for _, count in hollow]
        axes.scatter(xs, ys, s=90, facecolors="white", edgecolors="black", zorder=3)
        axes.annotate("modelled: N/1000 LIST", hollow[-1], textcoords="offset points", xytext=(-120, -14))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("objects in the bucket (and entries in the table)")
    axes.set_ylabel("items read for one page of 100")
    axes.set_title("Read amplification as the table grows")
    axes.legend(fontsize="small")


def batch_latency(axes: Axes, data: dict[str, Any]) -> None:
    sizes = _field(data, "batch_latency", "batchSizes")
    runs: dict[str, list[list[float]]] = _field(data, "batch_latency", "ms")
    latency = float(_field(data, "batch_latency", "latencyMs"))
    width = 0.8 / max(1, len(runs))
    for offset, (writer, per_size) in enumerate(runs.items()):
        xs = [index + (offset - (len(runs) - 1) / 2) * width for index in range(len(sizes))]
        medians = [statistics.median(samples) for samples in per_size]
        spread = [
            [median - min(samples) for median, samples in zip(medians, per_size, strict=True)],
            [max(samples) - median for median, samples in zip(medians, per_size, strict=True)],
        ]
        axes.bar(xs, medians, width, yerr=spread, capsize=3, label=writer)
    axes.axhline(latency, color="black", linestyle=":", label=f"floor: one round trip ({latency:g} ms)")
    axes.set_xticks(range(len(sizes)), [f"batch of {size}" for size in sizes])
    axes.set_yscale("log")
    axes.set_ylabel("wall time per batch (ms, median; bars: min–max)")
    axes.set_title(f"Indexer batch latency, {latency:g} ms per DynamoDB call")
    axes.legend(fontsize="small")


def backfill(axes: Axes, data: dict[str, Any]) -> None:
    sizes = _field(data, "backfill", "sizes")
    series = {
        "backfill (list + conditional writes)": _field(data, "backfill", "backfillPerSecond"),
        "listing alone": _field(data, "backfill", "listingPerSecond"),
    }
    width = 0.4
    for offset, (label, rates) in enumerate(series.items()):
        xs = [index + (offset - 0.5) * width for index in range(len(sizes))]
        axes.bar(xs, rates, width, label=label)
    axes.set_xticks(range(len(sizes)), [f"{size:,} objects" for size in sizes])
    axes.set_ylabel("objects per second")
    axes.set_title("Backfill throughput on the local stack (moto, one machine)")
    axes.legend(fontsize="small")


def name_layouts(axes: Axes, data: dict[str, Any]) -> None:
    layouts = _field(data, "name_layouts", "layouts")
    targets = _field(data, "name_layouts", "targets")
    if not layouts:
        raise ChartDataError("chart 'name_layouts': no layouts")
    for number, layout in enumerate(layouts, start=1):
        marker = "s" if layout["secondStage"] else "o"
        axes.scatter(layout["busyUnits"], layout["p90ItemsRead"], marker=marker, color="tab:blue", zorder=3)
        axes.scatter(
            layout["aloneUnits"], layout["p90ItemsRead"], marker=marker, color="tab:orange", zorder=3
        )
        axes.plot(
            [layout["busyUnits"], layout["aloneUnits"]],
            [layout["p90ItemsRead"], layout["p90ItemsRead"]],
            color="grey",
            linewidth=0.6,
        )
        axes.annotate(
            str(number),
            (layout["busyUnits"], layout["p90ItemsRead"]),
            textcoords="offset points",
            xytext=(-4, 5),
            fontsize="x-small",
        )
    for value, label, style in (
        (targets["busy"], f"busy target: {targets['busy']:g}", "-"),
        (targets["ceiling"], f"busy, at most: {targets['ceiling']:g}", "--"),
        (targets["alone"], f"one at a time, at most: {targets['alone']:g}", ":"),
    ):
        axes.axvline(value, color="black", linestyle=style, linewidth=0.8, label=label)
    axes.scatter([], [], marker="o", color="tab:blue", label="busy bucket (batches of 100)")
    axes.scatter([], [], marker="o", color="tab:orange", label="one at a time")
    axes.scatter([], [], marker="s", color="grey", label="a second stage (names after its window)")
    axes.set_xlim(left=0)
    axes.set_yscale("log")
    axes.set_xlabel("write units per new key, with the entry (numbers: the layouts in the table's order)")
    axes.set_ylabel("items read per file found (p90)")
    axes.set_title("The name index's layouts: write units against reads (a model)")
    axes.legend(fontsize="x-small")


# chart name (the key a measure's samples use) -> how it is drawn; the file is `<name>.png`.
CHARTS: dict[str, Callable[[Axes, dict[str, Any]], None]] = {
    "freshness": freshness,
    "read_amplification": read_amplification,
    "batch_latency": batch_latency,
    "backfill": backfill,
    "name_layouts": name_layouts,
}


def write_charts(samples: dict[str, Any], folder: Path) -> list[Path]:
    """One PNG per chart whose samples are present; unknown sample names are an error."""
    unknown = sorted(set(samples) - set(CHARTS))
    if unknown:
        raise ChartDataError(f"no chart draws the samples {unknown}; charts: {sorted(CHARTS)}")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in CHARTS.items():
        if name not in samples:
            continue
        figure: Figure = plt.figure(figsize=SIZE_INCHES, dpi=DPI)
        try:
            draw(figure.add_subplot(), samples[name])
            figure.tight_layout()
            path = folder / f"{name}.png"
            figure.savefig(path, format="png", metadata=_METADATA)
        finally:
            plt.close(figure)
        written.append(path)
    return written
