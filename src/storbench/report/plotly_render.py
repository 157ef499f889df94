"""FigureSpec -> plotly figure JSON (for the HTML report). Pure.

plotly reads a subset of HTML in every text it draws (``<a href>``, ``<b>``, ``<br>``): each text of a spec passes
through ``plotly_text`` here, so a name from a plan, a fio output or a database shows as written.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go

from storbench.report.figures import FigureSpec, Series, x_error_arms, y_error_arms
from storbench.safe_text import plotly_text

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf", "#393b79", "#ad494a", "#637939", "#e7ba52", "#7b4173", "#3182bd", "#e6550d", "#31a354",
          "#756bb1", "#636363")
# past as many series as colours, each round of them its own marker: two series never share both (a figure of 56
# lines had drawn "rbd qd1" and "nvme qd8" alike)
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "triangle-down", "pentagon")


TOP_MARGIN = 96  # px above the plot: a two-line title (about 40 px) and, above it, the toolbar (about 30 px)



_MARK_POSITIONS = ("top left", "bottom right", "bottom left", "top right")
# a label at a mark's top left runs left from its line, about this many px a character (11 px type) on a plot about
# this wide (a figure in a two-column grid): nearer to the mark before it than that, it would run over its label
MARK_CHAR_PX, PLOT_PX = 6.5, 560.0


def _mark_positions(spec: FigureSpec) -> list[str]:
    """Where each vertical mark's label sits: top left, and for a mark close to the one before it the next corner
    ("undone" and "every PG active+clean" a second apart had read as one word)."""
    xs = [float(x) for series in spec.series for x in series.x if isinstance(x, int | float)]
    values = [m.value for m in spec.x_marks]
    span = (max(xs + values) - min(xs + values)) if xs or values else 0.0
    order = sorted(range(len(values)), key=lambda i: values[i])
    found = ["top left"] * len(values)
    corner, previous = 0, None
    for i in order:
        width = (len(spec.x_marks[i].label) * MARK_CHAR_PX + 12) / PLOT_PX * span
        corner = (corner + 1) % len(_MARK_POSITIONS) if previous is not None and values[i] - previous < width else 0
        found[i], previous = _MARK_POSITIONS[corner], values[i]
    return found

def _texts(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else [plotly_text(v) for v in values]


def _xs(values: tuple[float | str, ...]) -> list[float | str]:
    return [plotly_text(v) if isinstance(v, str) else v for v in values]


def _trace(series: Series, color: str, y_log: bool, symbol: str = "circle") -> go.BaseTraceType:
    name = plotly_text(series.name)
    # plotly.js has no "%%": only "%{" starts a substitution, so only that is broken (by a zero-width space); the
    # doubled signs had been shown as they were ("all (95 %% CI)")
    extra = "<extra>" + name.replace("%{", "%\u200b{") + "</extra>"
    y_arms, x_arms = y_error_arms(series, y_log), x_error_arms(series)
    error_y = None if y_arms is None else dict(type="data", array=y_arms[1], arrayminus=y_arms[0], symmetric=False,
                                               visible=True)
    error_x = None if x_arms is None else dict(type="data", array=x_arms[1], arrayminus=x_arms[0], symmetric=False,
                                               visible=True)
    if series.mode == "bar":
        shown = series.show_text and series.text
        return go.Bar(name=name, x=_xs(series.x), y=list(series.y), error_y=error_y, marker_color=color,
                      text=_texts(series.text) if shown else None,
                      textposition="outside" if shown else None, cliponaxis=False,
                      hovertemplate="%{x}: %{y:,.4g}" + extra)
    return go.Scatter(
        name=name, x=_xs(series.x), y=list(series.y), yaxis="y2" if series.y2 else None,
        mode=series.mode + ("+text" if series.show_text else ""), error_y=error_y, error_x=error_x,
        text=_texts(series.text) or None, textposition="bottom center" if series.text_below else "top center",
        textfont=dict(size=11, color=color),
        line=dict(color=color, dash="dash" if series.dash else "solid"),
        marker=dict(size=series.marker_size, color=color,
                    symbol="star" if series.marker_size > 10 else symbol),
        hovertemplate=("%{text}<br>" if series.text else "") + "x=%{x:,.4g}<br>y=%{y:,.4g}" + extra,
    )


def plotly_figure(spec: FigureSpec) -> go.Figure:
    figure = go.Figure()
    for index, series in enumerate(spec.series):
        color = series.color or ("#000000" if series.name == "knee" else COLORS[index % len(COLORS)])
        figure.add_trace(_trace(series, color, spec.y_log, SYMBOLS[index // len(COLORS) % len(SYMBOLS)]))
    for band in spec.y_bands:
        figure.add_hrect(y0=band.low, y1=band.high, fillcolor="#2ca02c", opacity=0.12, line_width=0, layer="below",
                         annotation=dict(text=plotly_text(band.label), font=dict(size=11, color="#2b6b2b")),
                         annotation_position="top left")
    for y in spec.y_lines:
        figure.add_hline(y=y, line=dict(color="#5b6673", width=1.2, dash="dot"), layer="below")
    for mark in spec.y_marks:
        figure.add_hline(y=mark.value, line=dict(color=mark.color, width=1.6, dash="dash"), layer="below",
                         annotation=dict(text=plotly_text(mark.label), font=dict(size=11, color=mark.color),
                                         bgcolor="rgba(255,255,255,0.85)"),
                         annotation_position="bottom left")
    for mark, position in zip(spec.x_marks, _mark_positions(spec), strict=True):
        figure.add_vline(x=mark.value, line=dict(color=mark.color, width=1.6, dash="dash"), layer="below",
                         annotation=dict(text=plotly_text(mark.label), font=dict(size=11, color=mark.color),
                                         bgcolor="rgba(255,255,255,0.85)"),
                         annotation_position=position)
    # a rate's axis from zero (rangemode): a flat cap at 2,999-3,000 IOPS looks flat, not steep
    # plain numbers on the ticks ("3,000", not "3×10^3"): the axis title carries the unit
    plain = {"exponentformat": "none", "separatethousands": True}
    xaxis: dict[str, object] = {"title": plotly_text(spec.x_label), **plain}
    if spec.x_categories:
        xaxis.update(type="category", categoryorder="array", categoryarray=_texts(spec.x_categories))
    elif spec.x_log:
        xaxis["type"] = "log"
    elif spec.x_from_zero:
        xaxis["rangemode"] = "tozero"
    if spec.x_tickvals:
        xaxis.update(tickvals=list(spec.x_tickvals), ticktext=_texts(spec.x_ticktext))
    figure.update_layout(
        # the title sits on the plot's top edge, left, under a top margin the toolbar (modebar, top right, shown
        # on hover) has to itself: the toolbar never covers it
        title=dict(text=plotly_text(spec.title).replace("\n", "<br>"), x=0, xanchor="left", xref="paper", y=1,
                   yanchor="bottom", yref="paper", pad=dict(b=14), font=dict(size=15)), xaxis=xaxis,
        yaxis=dict(title=plotly_text(spec.y_label), type="log" if spec.y_log else "linear", rangemode="tozero",
                   **plain),
        barmode="stack" if spec.stacked else "group", template="plotly_white", height=480,
        margin=dict(l=70, r=20, t=TOP_MARGIN, b=60),
        legend=dict(font=dict(size=11)),
    )
    if spec.y2_label:  # a second y axis on the right, for the series marked y2; the legend goes below the plot
        left = next((s.color for s in spec.series if not s.y2 and s.color), None)
        right = next((s.color for s in spec.series if s.y2 and s.color), None)
        figure.update_layout(
            yaxis=dict(title=dict(text=plotly_text(spec.y_label), font=dict(color=left))),
            yaxis2=dict(title=dict(text=plotly_text(spec.y2_label), font=dict(color=right)), overlaying="y",
                        side="right", rangemode="tozero", showgrid=False, tickmode="auto"),
            height=500, margin=dict(l=70, r=70, t=TOP_MARGIN, b=110),
            legend=dict(orientation="h", x=0, y=-0.2, yanchor="top", font=dict(size=11)))
    if spec.y_range is not None:
        figure.update_layout(yaxis_range=list(spec.y_range))
    if spec.x_range is not None:
        figure.update_xaxes(range=list(spec.x_range))
    return figure


def plotly_json(spec: FigureSpec) -> str:
    """The figure as JSON, safe to embed in a <script> element, without its template (every figure has the same
    one: the report carries it once, ``template_json``, and the page puts it back before drawing)."""
    figure = json.loads(plotly_figure(spec).to_json())
    figure.get("layout", {}).pop("template", None)
    return json.dumps(figure, separators=(",", ":")).replace("</", "<\\/")


def template_json() -> str:
    """The plotly template every figure is drawn with, as JSON safe to embed in a <script> element."""
    template = json.loads(go.Figure().to_json())["layout"]["template"]
    return json.dumps(template, separators=(",", ":")).replace("</", "<\\/")
