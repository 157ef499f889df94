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

# Built-in node_exporter queries. ``$rate`` is replaced by the plan's rate window (>= 4 scrape intervals).
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


@dataclass(frozen=True)
class PrometheusQuery:
    metric: str
    promql: str


def queries_for(custom: Mapping[str, str] | None, rate_window: str, use_defaults: bool = True) -> list[PrometheusQuery]:
    chosen = dict(DEFAULT_QUERIES) if use_defaults else {}
    chosen.update(custom or {})
    return [PrometheusQuery(metric, text.replace("$rate", rate_window)) for metric, text in chosen.items()]


def range_parameters(query: PrometheusQuery, start_s: float, end_s: float, step_s: float) -> dict[str, str]:
    return {"query": query.promql, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": f"{step_s:g}"}


def entity_from_labels(labels: Mapping[str, str]) -> str:
    """``instance`` first, then the labels that tell series of one instance apart (device, ...)."""
    parts = [labels.get("instance", "")]
    parts.extend(f"{key}={value}" for key, value in sorted(labels.items())
                 if key not in ("instance", "__name__", "job"))
    return " ".join(p for p in parts if p) or "all"


def parse_range_response(metric: str, text: str, step_s: float) -> list[TelemetrySeries]:
    """A ``query_range`` answer -> one series per returned label set. Each value stands for the step
    before its timestamp. Raises ValueError on an error answer."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a Prometheus answer: {error}") from error
    if not isinstance(document, dict) or document.get("status") != "success":
        message = document.get("error", "unknown error") if isinstance(document, dict) else "unknown error"
        raise ValueError(f"Prometheus refused the query for {metric}: {message}")
    out: list[TelemetrySeries] = []
    for item in document.get("data", {}).get("result", []):
        labels = {str(k): str(v) for k, v in item.get("metric", {}).items()}
        samples = []
        for stamp, value in item.get("values", []):
            number = float(value)
            if math.isfinite(number):
                samples.append((float(stamp) - step_s, float(stamp), number))
        if samples:
            out.append(TelemetrySeries("prometheus", entity_from_labels(labels), metric,
                                       tuple(s[0] for s in samples), tuple(s[1] for s in samples),
                                       tuple(s[2] for s in samples)))
    return out
