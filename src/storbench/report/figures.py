"""Figures as plain data (which series, which axes, which scale), built from statistics. Pure.

Two renderers draw the same specs: plotly for the interactive HTML report, matplotlib for PNG/SVG images. Here:
the spec (`FigureSpec`, `Series`, `Band`, `Mark`) and its axes and labels (the latency unit, log2 ticks, labels kept
apart); what a figure draws of a point is `report.figure_values`; the families are `report.point_figures`,
`report.saturation_figures`, `report.utilisation_figures` and `report.drift_figures`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BOTTLENECK_SECTION = "Bottlenecks"  # the report draws this section's figures under the verdicts' table
MIB = 1048576.0
THROUGHPUT_COLOR, LATENCY_COLOR, EXPECTED_COLOR = "#1f77b4", "#d62728", "#2ca02c"


@dataclass(frozen=True)
class Series:
    name: str
    x: tuple[float | str, ...]
    y: tuple[float, ...]
    error_y: tuple[float, ...] | None = None
    error_x: tuple[float, ...] | None = None
    text: tuple[str, ...] | None = None
    mode: str = "lines+markers"  # "lines+markers", "markers", "lines", "bar"
    marker_size: int = 7
    dash: bool = False
    show_text: bool = False  # write ``text`` beside each point or on each bar (verdicts), not only on hover
    error_y_minus: tuple[float, ...] | None = None  # the error bars' lower arms, when not ``error_y`` (asymmetric)
    color: str = ""  # '' = the renderer's next colour
    y2: bool = False  # drawn against the second y axis, on the right (``FigureSpec.y2_label``)
    text_below: bool = False  # ``show_text`` labels below the points, not above (another series' labels share x)


def y_error_arms(series: Series, y_log: bool) -> tuple[list[float], list[float]] | None:
    """(lower, upper) arms of a series' y error bars, for every renderer: the lower from ``error_y_minus`` when
    given; on a log axis cut short of zero (an interval reaching zero cannot be drawn there)."""
    if not series.error_y:
        return None
    lower = list(series.error_y_minus or series.error_y)
    if y_log:
        lower = [min(e, 0.95 * y) for e, y in zip(lower, series.y, strict=True)]
    return lower, list(series.error_y)


def x_error_arms(series: Series) -> tuple[list[float], list[float]] | None:
    """(lower, upper) arms of a series' x error bars (IOPS along x: the lower arm stops at zero)."""
    if not series.error_x:
        return None
    return [min(e, float(x)) for e, x in zip(series.error_x, series.x, strict=True)], list(series.error_x)


@dataclass(frozen=True)
class Band:
    """A horizontal band across the plot (an equivalence margin), labelled."""

    low: float
    high: float
    label: str


@dataclass(frozen=True)
class Mark:
    """A labelled reference line across the plot at ``value`` (a target's declared limit, `expect:`)."""

    value: float
    label: str
    color: str = EXPECTED_COLOR


@dataclass(frozen=True)
class FigureSpec:
    figure_id: str
    title: str  # a line break ("\n") where it is long
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    x_log: bool = False
    y_log: bool = False
    x_categories: tuple[str, ...] = ()
    x_tickvals: tuple[float, ...] = ()
    x_ticktext: tuple[str, ...] = ()
    section: str = ""
    caption: str = ""
    y_range: tuple[float, float] | None = None
    x_range: tuple[float, float] | None = None
    y_lines: tuple[float, ...] = ()  # horizontal reference lines (zero change)
    y_bands: tuple[Band, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()  # (what, text) shown beside the figure in the report
    y_marks: tuple[Mark, ...] = ()  # labelled horizontal lines on the (left) y axis
    x_marks: tuple[Mark, ...] = ()  # labelled vertical lines
    y2_label: str = ""  # the right y axis, for the series with ``y2`` (none when '')
    stacked: bool = False  # bar series stacked on each other (parts of one whole), not side by side
    x_from_zero: bool = False  # a rate along x (IOPS): the axis starts at zero, so a flat cap looks flat

    @property
    def points(self) -> int:
        return sum(len(s.y) for s in self.series)


def latency_unit(values_ns: Iterable[float | None]) -> tuple[float, str]:
    """(divisor, unit) for latencies in nanoseconds: ms once the largest reaches 1 ms (an axis reads "3 ms",
    not "3,000 µs"), else µs."""
    largest = max((v for v in values_ns if v is not None and not math.isnan(v)), default=0.0)
    return (1e6, "ms") if largest >= 1e6 else (1e3, "µs")


def log2_ticks(values: Sequence[int]) -> tuple[tuple[float, ...], tuple[str, ...]]:
    ordered = sorted(set(values))
    return tuple(float(v) for v in ordered), tuple(str(v) for v in ordered)


def spread_labels(series: Sequence[Series]) -> tuple[list[Series], bool]:
    """Series whose written labels (``show_text``) would sit on each other at a shared x kept apart: with two
    such series, the second's labels go below its points; with more, every label is shown on hover only. Also
    says whether labels were moved to hover."""
    labelled = [s for s in series if s.show_text and s.text]
    xs = [x for s in labelled for x, t in zip(s.x, s.text or (), strict=True) if t]
    if len(xs) == len(set(xs)):
        return list(series), False
    if len(labelled) == 2:
        second = labelled[1]
        return [dataclasses.replace(s, text_below=True) if s is second else s for s in series], False
    return [dataclasses.replace(s, show_text=False) if s.show_text else s for s in series], True
