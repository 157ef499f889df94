"""Figures of drift: each repetition against the time it started, relative to its case, with the run's trend as a
change over the run's own length. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from storbench.report.figures import FigureSpec, Series
from storbench.stats.drift import Drift


def drift_trend_label(d: Drift) -> str:
    """The trend as a change over the run's own length ("-2.1 % over the run's 3.2 min [95 % CI -3.0, -1.2]"),
    not per a fixed span (a "%/10 min" on a 3-minute run reads as more than happened)."""
    change = d.over_run()
    if change is None:
        return "trend"
    return (f"trend {change[0]:+.1f} % over the run's {d.span_minutes:.1f} min "
            f"[95 % CI {change[1]:+.1f}, {change[2]:+.1f}]")


def drift_figures(drifts: Sequence[Drift]) -> list[FigureSpec]:
    figures = []
    for d in drifts:
        if not d.samples:
            continue
        series = [Series(name="repetitions", x=tuple(s.minutes for s in d.samples),
                         y=tuple(s.deviation_pct for s in d.samples), mode="markers",
                         text=tuple(f"{s.case_id} #{s.repeat + 1}" for s in d.samples))]
        if d.slope_pct_per_10min is not None:
            xs = tuple(d.span_minutes * i / 20 for i in range(21))  # a ratio per minute: a gentle curve in %
            series.append(Series(name=drift_trend_label(d), x=xs, y=tuple(d.trend_pct(x) or 0.0 for x in xs),
                                 mode="lines", dash=True))
        figures.append(FigureSpec(
            figure_id=f"drift-run{d.run_id}-{d.direction}{f'-{d.operation.lower()}' if d.operation else ''}",
            title=f"Drift — run {d.run_id} {d.rate}",
            x_label="minutes since the run started", y_label="% from its case's geometric mean", series=tuple(series),
            section="Drift", caption=f"Each repetition's {d.rate} relative to the geometric mean of its case, against "
            "the time it started; the trend is fitted to the logarithms, so it and its interval are ratios (never "
            "below -100 %), given as the change from the first to the last repetition of this run with its 95 % CI. "
            "One that excludes zero means results depend on when they ran."))
    return figures
