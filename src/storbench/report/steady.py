"""Steady state, round by round: for each point of a run measured until steady, its metric per round with the
measurement window, the window's least-squares line and the band the SNIA range rule allows. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from storbench.report.figures import Band, FigureSpec, Series
from storbench.stats.steady import SteadyState, SteadyStatus, what_would_show
from storbench.stats.trend import FLAT_MARGIN

SECTION = "Steady state, round by round"
ROUND_COLOR = "#5b6673"
WINDOW_COLOR = "#1f77b4"
FIT_COLOR = "#ff7f0e"
CONFIRM_COLOR = "#2ca02c"
METRIC_LABELS = {"iops": ("IOPS", 1.0), "bw_bytes_per_s": ("MiB/s", 1.0 / (1024 * 1024)),
                 "lat_mean_ns": ("mean latency (µs)", 1e-3)}


def status_word(state: SteadyState) -> str:
    """'steady' only where the level's change is shown within the margin; "steady by SNIA's rule" where only the
    rule's excursions hold; else the status ('not steady', 'measuring')."""
    if state.status is SteadyStatus.STEADY:
        return "steady" if state.shown_steady else "steady by SNIA's rule"
    return state.status.value


def change_words(state: SteadyState) -> str:
    """The level's change across a steady point's window and the rounds after it, and whether it shows the point
    steady: 'across rounds 4-13 the level changed +2 % [-3, +7] (90 %): steady shown (within +-10 %)'; '' when it
    has no such judgement (not steady, or its window only)."""
    change = state.change
    if change is None or state.window is None:
        return ""
    first, last = state.window.rounds[0] + 1, state.rounds[-1][0] + 1
    said = f"across rounds {first}-{last} the level changed {change.text()}"
    margin = f"+-{100 * FLAT_MARGIN:g} %"
    if state.shown_steady:
        return f"{said}: steady shown (within {margin})"
    return f"{said}: steady by SNIA's rule only, the change not shown within {margin}; {what_would_show(state)}"


def _status_text(state: SteadyState) -> str:
    rounds = len(state.rounds)
    w = state.window
    if w is None:
        return f"{state.status.value}: {rounds} rounds, fewer than the window of {state.rule.window}"
    where = f"rounds {w.rounds[0] + 1}-{w.rounds[-1] + 1}"
    figures = (f"range {100 * w.range_fraction:.1f} % (at most {100 * state.rule.range_fraction:g} %), slope "
               f"excursion {100 * w.slope_excursion_fraction:.1f} % (at most {100 * state.rule.slope_fraction:g} %)")
    if state.status is SteadyStatus.STEADY:
        steady = (f"steady by SNIA's rule after {rounds - len(state.confirmation)} rounds: the window is {where}: "
                  f"{figures}")
        if state.window_only:
            return (f"{steady}; the figures are the window's, rounds chosen for their small spread: no interval "
                    f"({len(state.confirmation)} of {state.rule.confirm} rounds after it measured)")
        first, last = state.confirmation[0][0] + 1, state.confirmation[-1][0] + 1
        return f"{steady}; the figures come from rounds {first}-{last}, measured after it; {change_words(state)}"
    if state.status is SteadyStatus.NOT_STEADY:
        return (f"NOT steady after {rounds} rounds (max_rounds {state.rule.max_rounds}); the figures come from "
                f"the last window, {where}: {figures}")
    return f"still measuring after {rounds} rounds (an interrupted run); last window {where}: {figures}"


def steady_figure(state: SteadyState, figure_id: str, label: str) -> FigureSpec | None:
    """One point's rounds (None when it has fewer than two: one round is no curve)."""
    if len(state.rounds) < 2:
        return None
    name, scale = METRIC_LABELS.get(state.rule.metric, (state.rule.metric, 1.0))
    xs = tuple(float(index + 1) for index, _ in state.rounds)
    ys = tuple(value * scale for _, value in state.rounds)
    series = [Series(name="each round", x=xs, y=ys, color=ROUND_COLOR,
                     text=tuple(f"round {int(x)}: {y:,.4g} {name}" for x, y in zip(xs, ys, strict=True)))]
    bands: tuple[Band, ...] = ()
    w = state.window
    if w is not None:
        wx = tuple(float(r + 1) for r in w.rounds)
        wy = tuple(v * scale for v in w.values)
        series.append(Series(name=f"window ({status_word(state)})", x=wx, y=wy, mode="markers", marker_size=12,
                             color=WINDOW_COLOR))
        fit = tuple((w.intercept + w.slope_per_round * position) * scale for position in range(len(w.rounds)))
        series.append(Series(name="least-squares line over the window", x=(wx[0], wx[-1]), y=(fit[0], fit[-1]),
                             mode="lines", dash=True, color=FIT_COLOR))
        if state.confirmation and not state.window_only:
            cx = tuple(float(r + 1) for r, _ in state.confirmation)
            cy = tuple(v * scale for _, v in state.confirmation)
            series.append(Series(name="after the window (the figures)", x=cx, y=cy, mode="markers", marker_size=12,
                                 color=CONFIRM_COLOR))
        half = state.rule.range_fraction / 2 * w.mean * scale
        mean = w.mean * scale
        bands = (Band(mean - half, mean + half, f"window mean ± {100 * state.rule.range_fraction / 2:g} %"),)
    low = min(ys + tuple(b.low for b in bands))
    high = max(ys + tuple(b.high for b in bands))
    pad = 0.1 * (high - low or abs(high) or 1.0)
    return FigureSpec(
        figure_id=figure_id, title=f"{label}: {name} per round ({status_word(state)})", x_label="round",
        y_label=name, series=tuple(series), section=SECTION, y_bands=bands,
        y_range=(min(0.0, low - pad), high + pad), x_range=(0.5, xs[-1] + 0.5),
        notes=(("state", _status_text(state)), ("rule", state.rule.text())),
        caption="Each round is one repetition of the point, run back to back. Large blue markers: the window the "
        "rule judged; green: the rounds measured after it, which the point's figures come from (the window, chosen "
        "for its small spread, would give too narrow an interval); dashed: the least-squares line fitted over the "
        "window (its excursion is the slope "
        "criterion); band: a spread of ± half the allowed range around the window's mean (the range criterion "
        "asks max - min within the whole range, so a window inside the band meets it). The rule is the SNIA "
        "PTS steady-state rule (storbench docs methodology preconditioning).")


def steady_figures(states: Mapping[tuple[int, str], SteadyState], labels: Mapping[str, str]
                   ) -> list[FigureSpec]:
    """One figure per (run, case) measured until steady; ``labels``: case id -> its point's label."""
    figures = []
    for (run_id, case_id), state in sorted(states.items()):
        figure = steady_figure(state, f"steady-run{run_id}-{case_id}", f"run {run_id} {labels.get(case_id, case_id)}")
        if figure is not None:
            figures.append(figure)
    return figures

