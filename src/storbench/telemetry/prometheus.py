"""Storage-node figures from a Prometheus server (node_exporter metrics) over a repetition's window.

Pure: the built-in queries, the query text for a window, and Prometheus' ``query_range`` answer -> series.
Fetching (the effect) lives in ``telemetry.sources``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from storbench.telemetry.series import TelemetrySeries

# Built-in node_exporter queries. ``$rate`` is replaced by the window each value is a rate over (``query_window``).
# The metric names are the ones the bottleneck rules read for storage nodes.
DEFAULT_QUERIES: tuple[tuple[str, str], ...] = (
    ("cpu_busy_pct", '100 * (1 - sum by (instance) (rate(node_cpu_seconds_total{mode=~"idle|iowait"}[$rate]))'
                     ' / count by (instance) (node_cpu_seconds_total{mode="idle"}))'),
    ("disk_util_pct", "100 * rate(node_disk_io_time_seconds_total[$rate])"),
    ("disk_queue_depth", "rate(node_disk_io_time_weighted_seconds_total[$rate])"),
    ("net_rx_bytes_per_s", 'rate(node_network_receive_bytes_total{device!="lo"}[$rate])'),
    ("net_tx_bytes_per_s", 'rate(node_network_transmit_bytes_total{device!="lo"}[$rate])'),
    ("memory_used_bytes", "node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes"),
)


RATE = "$rate"


@dataclass(frozen=True)
class PrometheusQuery:
    """A query as the plan (or the built-ins) wrote it: ``$rate`` is filled in per repetition (``text``)."""

    metric: str
    promql: str

    @property
    def rates(self) -> bool:
        """Its values are rates over the window ``$rate`` (else gauges, each of its moment)."""
        return RATE in self.promql

    def text(self, rate_s: float) -> str:
        return self.promql.replace(RATE, f"{max(1, round(rate_s * 1000))}ms")


def queries_for(custom: Mapping[str, str] | None, use_defaults: bool = True) -> list[PrometheusQuery]:
    chosen = dict(DEFAULT_QUERIES) if use_defaults else {}
    chosen.update(custom or {})
    return [PrometheusQuery(metric, text) for metric, text in chosen.items()]


@dataclass(frozen=True)
class QueryWindow:
    """Where a repetition's queries are evaluated: from ``first_s`` to ``last_s`` every ``step_s``, each value of
    a ``$rate`` query the rate over the ``rate_s`` before its time, so that every value lies inside the measured
    window (a rate over a minute before a 5 s repetition had described the idle gap and the case before it)."""

    first_s: float
    last_s: float
    step_s: float
    rate_s: float


MAX_POINTS = 10_000  # evaluations a range query asks for at most (Prometheus' own limit: 11,000)


def query_window(start_s: float, end_s: float, rate_window_s: float | None, step_s: float) -> QueryWindow | str:
    """The evaluations inside the measured window ``(start_s, end_s]``: without a rate window, one at its end over
    the whole of it; with one, every step from ``rate_window_s`` after its start. A window shorter than the rate
    window has none: why, in words."""
    length = end_s - start_s
    if rate_window_s is None:
        return QueryWindow(end_s, end_s, step_s, length)
    if length < rate_window_s:
        return (f"Prometheus: the measured window ({length:.1f} s) is shorter than telemetry.prometheus.rate_window "
                f"({rate_window_s:g} s), so no storage-node figure lies inside it (leave rate_window out to take "
                "each repetition's window)")
    # Prometheus refuses more than 11,000 points a series: a long run's step is widened (a 4 h soak at 1 s had
    # lost every storage-node figure to an HTTP 400)
    first = start_s + rate_window_s
    return QueryWindow(first, end_s, max(step_s, (end_s - first) / MAX_POINTS), rate_window_s)


def range_parameters(query: PrometheusQuery, window: QueryWindow) -> dict[str, str]:
    return {"query": query.text(window.rate_s), "start": f"{window.first_s:.3f}", "end": f"{window.last_s:.3f}",
            "step": f"{window.step_s:g}"}


def entity_from_labels(labels: Mapping[str, str]) -> str:
    """``instance`` first, then the labels that tell series of one instance apart (device, ...)."""
    parts = [labels.get("instance", "")]
    parts.extend(f"{key}={value}" for key, value in sorted(labels.items())
                 if key not in ("instance", "__name__", "job"))
    return " ".join(p for p in parts if p) or "all"


def parse_range_response(metric: str, text: str, covers_s: float) -> list[TelemetrySeries]:
    """A ``query_range`` answer -> one series per returned label set. Each value stands for the ``covers_s``
    before its timestamp (0: a gauge, of its moment). Raises ValueError on an error answer or one of another
    shape."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a Prometheus answer: {error}") from error
    if not isinstance(document, dict) or document.get("status") != "success":
        message = document.get("error", "unknown error") if isinstance(document, dict) else "unknown error"
        raise ValueError(f"Prometheus refused the query for {metric}: {message}")
    data = document.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, list):
        raise ValueError(f"Prometheus answered the query for {metric} with no list of results")
    out: list[TelemetrySeries] = []
    for item in result:
        labels, values = (item.get("metric"), item.get("values")) if isinstance(item, dict) else (None, None)
        if not isinstance(labels, dict) or not isinstance(values, list):
            raise ValueError(f"Prometheus answered the query for {metric} with a result of another shape: "
                             f"{str(item)[:80]}")
        samples = []
        for pair in values:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int | float)
                    and isinstance(pair[1], str)):
                raise ValueError(f"Prometheus answered the query for {metric} with a value of another shape: "
                                 f"{str(pair)[:80]}")
            number = float(pair[1])
            if math.isfinite(number):
                samples.append((float(pair[0]) - covers_s, float(pair[0]), number))
        if samples:
            out.append(TelemetrySeries("prometheus", entity_from_labels({str(k): str(v) for k, v in labels.items()}),
                                       metric, tuple(s[0] for s in samples), tuple(s[1] for s in samples),
                                       tuple(s[2] for s in samples)))
    return out
