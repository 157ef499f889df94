"""FigureSpec -> PNG or SVG bytes with matplotlib, for slides and blogs. Pure (renders in memory).

matplotlib draws the text between two ``$`` as mathtext (and refuses an unknown command in it): each text of a
spec passes through ``mathtext_text`` (``_m``) here, so a name from a plan, a fio output or a database shows as
written.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, Formatter, LogFormatter, NullFormatter

from storbench.report.figures import FigureSpec, x_error_arms, y_error_arms
from storbench.report.plotly_render import COLORS
from storbench.safe_text import mathtext_text as _m


class PlainFormatter(Formatter):
    """Tick labels as plain numbers with thousands separators ("3,000", "2,999.5"), never matplotlib's offset
    or scientific notation ("+3e3", "1e6"); as many decimals as the ticks' spacing needs."""

    def __init__(self, log: bool = False) -> None:
        self.log = log  # on a log axis each tick has the decimals it needs itself (0.01, 0.1, 1, 10)
        self.ticks: list[float] = []

    def set_locs(self, locs: Sequence[float]) -> None:
        self.ticks = [float(v) for v in locs]

    def __call__(self, x: float, pos: int | None = None) -> str:
        steps = [abs(b - a) for a, b in zip(self.ticks, self.ticks[1:], strict=False) if b != a]
        step = abs(x) if self.log or not steps else min(steps)
        decimals = _decimals(step)
        text = f"{x:,.{decimals}f}"
        return "0" if text.lstrip("-").strip("0.,") == "" else text


def _decimals(step: float) -> int:
    """The fewest decimals (up to 9) that write ``step`` exactly: 0.25 -> 2, 0.5 -> 1, 1000 -> 0."""
    decimals = 0
    while decimals < 9 and step and abs(round(step, decimals) - step) > abs(step) * 1e-6:
        decimals += 1
    return decimals


class PlainLogMinor(LogFormatter):
    """A log axis' minor ticks: labelled where matplotlib would label them (an axis spanning less than a decade
    has no major tick to read), but as plain numbers ("0.4", not "4x10^-1")."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return PlainFormatter(log=True)(x) if super().__call__(x, pos) else ""


def plain_ticks(axis: Axis) -> None:
    """Plain tick labels on a linear or log axis (``PlainFormatter``)."""
    log = axis.get_scale() == "log"
    axis.set_major_formatter(PlainFormatter(log))
    if log:
        axis.set_minor_formatter(PlainLogMinor(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def render_image(spec: FigureSpec, fmt: str = "png") -> bytes:
    figure = draw_figure(spec)
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt)
        return buffer.getvalue()
    finally:
        plt.close(figure)


def draw_figure(spec: FigureSpec) -> Figure:
    """``spec`` drawn on a new matplotlib figure (the caller closes it: ``plt.close``)."""
    figure, axes = plt.subplots(figsize=(9, 5.2), dpi=110)
    try:
        bars = [s for s in spec.series if s.mode == "bar"]
        categories = list(spec.x_categories)
        width = 0.8 if spec.stacked else 0.8 / max(1, len(bars))
        stack_base = [0.0] * len(categories)
        right = axes.twinx() if spec.y2_label else None  # the second y axis, for the series marked y2
        main_axes = axes
        for index, series in enumerate(spec.series):
            color = series.color or ("#000000" if series.name == "knee" else COLORS[index % len(COLORS)])
            axes = right if series.y2 and right is not None else main_axes
            if series.mode == "bar":
                slot = 0 if spec.stacked else bars.index(series)
                xs = [categories.index(str(x)) - 0.4 + width * (slot + 0.5) for x in series.x]
                y_arms = y_error_arms(series, spec.y_log)
                bottoms = [stack_base[categories.index(str(x))] for x in series.x] if spec.stacked else None
                axes.bar(xs, series.y, width=width, yerr=None if y_arms is None else list(y_arms), capsize=3,
                         color=color, label=_m(series.name), bottom=bottoms)
                if spec.stacked:
                    for x, y in zip(series.x, series.y, strict=True):
                        stack_base[categories.index(str(x))] += y
                if series.show_text and series.text:
                    tops = [y + (e if series.error_y else 0.0) + (b or 0.0) for y, e, b in
                            zip(series.y, series.error_y or [0.0] * len(series.y), bottoms or [0.0] * len(series.y),
                                strict=True)]
                    for x, top, label in zip(xs, tops, series.text, strict=True):
                        axes.annotate(_m(label), (x, top), textcoords="offset points", xytext=(0, 3), ha="center",
                                      fontsize=7, color=color)
                continue
            xs_line: list[float | str] = list(series.x)
            if categories:  # lines over categories: the categories' positions, as the bars use
                xs_line = [float(categories.index(str(x))) for x in series.x]
            style = "--" if series.dash else "-"
            marker = "*" if series.marker_size > 10 else "o"
            if series.mode == "markers" and series.error_y:  # markers with their intervals, no line between them
                y_arms = y_error_arms(series, spec.y_log)
                axes.errorbar(xs_line, series.y, yerr=None if y_arms is None else list(y_arms), fmt=marker,
                              linestyle="none", color=color, label=_m(series.name), markersize=series.marker_size / 2,
                              capsize=3, zorder=3)
            elif series.mode == "markers":
                axes.scatter(xs_line, series.y, s=series.marker_size**2, color=color, marker=marker,
                             label=_m(series.name), zorder=3)
            else:
                fmt_line = style + ("" if series.mode == "lines" else marker)
                y_arms, x_arms = y_error_arms(series, spec.y_log), x_error_arms(series)
                axes.errorbar(xs_line, series.y, yerr=None if y_arms is None else list(y_arms),
                              xerr=None if x_arms is None else list(x_arms), fmt=fmt_line,
                              color=color, label=_m(series.name), markersize=4, capsize=2, linewidth=1.4)
            if series.show_text and series.text:
                for point_x, point_y, label in zip(xs_line, series.y, series.text, strict=True):
                    axes.annotate(_m(label), (point_x, point_y), textcoords="offset points",
                                  xytext=(0, -8) if series.text_below else (0, 6), ha="center",
                                  va="top" if series.text_below else "baseline", fontsize=7, color=color)
        axes = main_axes
        for band in spec.y_bands:
            axes.axhspan(band.low, band.high, color="#2ca02c", alpha=0.12, linewidth=0, zorder=0)
            axes.annotate(_m(band.label), (0.01, band.high), xycoords=("axes fraction", "data"), fontsize=7,
                          color="#2b6b2b", va="bottom")
        for y in spec.y_lines:
            axes.axhline(y, color="#5b6673", linewidth=1.0, linestyle=":", zorder=1)
        for mark in spec.y_marks:
            axes.axhline(mark.value, color=mark.color, linewidth=1.3, linestyle="--", zorder=1)
            axes.annotate(_m(mark.label), (0.01, mark.value), xycoords=("axes fraction", "data"), fontsize=7,
                          color=mark.color, ha="left", va="top", xytext=(0, -2), textcoords="offset points",
                          bbox=dict(boxstyle="square,pad=0.1", facecolor="white", alpha=0.85, linewidth=0))
        for mark in spec.x_marks:
            axes.axvline(mark.value, color=mark.color, linewidth=1.3, linestyle="--", zorder=1)
            axes.annotate(_m(mark.label), (mark.value, 0.99), xycoords=("data", "axes fraction"), fontsize=7,
                          color=mark.color, ha="left", va="top", xytext=(3, 0), textcoords="offset points")
        if categories:
            axes.set_xticks(range(len(categories)))
            # slanted labels end at their tick; level ones are centred under it, while they fit side by side
            rotated = len(categories) > 4 or len(categories) * max(len(c) for c in categories) > 90
            axes.set_xticklabels([_m(c) for c in categories], rotation=20 if rotated else 0,
                                 ha="right" if rotated else "center")
        if spec.x_log and not categories:
            axes.set_xscale("log", base=2 if spec.x_tickvals else 10)
        if spec.x_tickvals and len(spec.x_ticktext) == len(spec.x_tickvals):  # the ticks' own words ("run 4", "4k")
            axes.set_xticks(list(spec.x_tickvals), [_m(t) for t in spec.x_ticktext])
            axes.xaxis.set_minor_formatter(NullFormatter())
        elif spec.x_tickvals:
            axes.xaxis.set_major_locator(FixedLocator(list(spec.x_tickvals)))
            axes.xaxis.set_major_formatter(PlainFormatter(log=True))  # each tick its own decimals
        if spec.y_log:
            axes.set_yscale("log")
        plain_ticks(axes.yaxis)
        if not categories and not spec.x_tickvals:
            plain_ticks(axes.xaxis)
        if spec.y_range is not None:
            axes.set_ylim(*spec.y_range)
        if spec.x_range is not None:
            axes.set_xlim(*spec.x_range)
        elif spec.x_from_zero and not spec.x_log and not categories:
            axes.set_xlim(left=0)
        axes.set_title(_m(spec.title), fontsize=11)
        axes.set_xlabel(_m(spec.x_label))
        axes.set_ylabel(_m(spec.y_label))
        axes.grid(True, alpha=0.3)
        handles, labels = axes.get_legend_handles_labels()
        if spec.y_range is None and not spec.y_log and axes.has_data():
            # zero in range, as the HTML draws it (a flat line looks flat), with room above for the labels
            low, high = (float(v) for v in axes.dataLim.intervaly)
            low, high = min(low, 0.0), max(high, 0.0)
            span = (high - low) or 1.0
            axes.set_ylim(low - (0.05 * span if low < 0 else 0.0), high + 0.1 * span)
        if right is not None:
            right.set_ylabel(_m(spec.y2_label))
            right.set_ylim(bottom=0)
            plain_ticks(right.yaxis)
            more = right.get_legend_handles_labels()
            handles, labels = handles + more[0], labels + more[1]
            left_color = next((s.color for s in spec.series if not s.y2 and s.color), None)
            right_color = next((s.color for s in spec.series if s.y2 and s.color), None)
            if left_color:
                axes.yaxis.label.set_color(left_color)
            if right_color:
                right.yaxis.label.set_color(right_color)
        if len(spec.series) > 1 or (spec.series and spec.series[0].name):
            # "best" sees only the left axis' lines; with two axes, the middle left is clear of a flat line at the
            # top and a latency rising from the bottom left
            axes.legend(handles, labels, fontsize=7, loc="center left" if right is not None else "best",
                        ncol=2 if len(spec.series) > 8 else 1)
        figure.tight_layout()
        return figure
    except BaseException:
        plt.close(figure)
        raise
