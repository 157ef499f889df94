"""Kubernetes nodes' own figures from each kubelet's summary API (`/stats/summary`), as telemetry series. Pure.

A kubelet reports counters, each with the time cAdvisor read it (its housekeeping, every few seconds): the CPU its
pods used and the bytes its network interfaces moved. Rates come from two readings of a cumulative counter with
different times, over the interval between those times, so a summary read twice between housekeepings adds nothing.
The pods' CPU is the kubelet's `pods` system container (every pod's cgroup on the node together) where it has one;
a kubelet without the QoS cgroup hierarchy (`cgroupsPerQOS: false`, as storbench's lab runs) has none, and then it
is the sum of cAdvisor's own rate of each pod (`usageNanoCores`) at each new reading. Each node is its own entity, so
a verdict names the busy node; its CPU is a share of the node's own capacity (`status.capacity.cpu`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from storbench.telemetry.series import TelemetrySeries

SOURCE = "kubelet"
PODS_CONTAINER = "pods"  # the kubelet's system container holding every pod's cgroup


class Counter(NamedTuple):
    """A cumulative counter as the kubelet read it: at ``t_s`` (epoch s), ``value``."""

    t_s: float
    value: float


@dataclass(frozen=True)
class KubeletReading:
    """One node's summary: its pods' CPU (core-nanoseconds, cumulative; else the pods' own rates summed, in
    nanocores, at the latest of their times) and its interfaces' bytes received and sent."""

    node: str
    capacity_cores: float
    pods_cpu_ns: Counter | None
    rx_bytes: Counter | None
    tx_bytes: Counter | None
    pods_nanocores: Counter | None = None


def _epoch_s(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _counter(stats: object, key: str) -> Counter | None:
    if not isinstance(stats, dict):
        return None
    t_s, value = _epoch_s(stats.get("time")), stats.get(key)
    if t_s is None or not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return Counter(t_s, float(value))


def _interfaces_total(network: object, key: str) -> Counter | None:
    """Bytes over every interface of the node (its own network namespace's), at the network reading's time."""
    if not isinstance(network, dict):
        return None
    t_s = _epoch_s(network.get("time"))
    interfaces = network.get("interfaces")
    if t_s is None or not isinstance(interfaces, list):
        return None
    values = [i.get(key) for i in interfaces if isinstance(i, dict)]
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return Counter(t_s, sum(numbers)) if numbers else None


def parse_summary(node: str, capacity_cores: float, text: str) -> KubeletReading:
    """A kubelet's `/stats/summary` JSON. Raises ValueError when it is not a summary."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"node {node}: the kubelet's summary is not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("node"), dict):
        raise ValueError(f"node {node}: the kubelet's answer has no node summary")
    summary = document["node"]
    containers = summary.get("systemContainers") or []
    pods = next((c for c in containers if isinstance(c, dict) and c.get("name") == PODS_CONTAINER), None)
    network = summary.get("network")
    return KubeletReading(node, capacity_cores, _counter((pods or {}).get("cpu"), "usageCoreNanoSeconds"),
                          _interfaces_total(network, "rxBytes"), _interfaces_total(network, "txBytes"),
                          _pods_rate(document.get("pods")))


def _pods_rate(pods: object) -> Counter | None:
    """Every pod's CPU rate as cAdvisor last computed it, summed, at the latest of their times."""
    if not isinstance(pods, list):
        return None
    rates = [c for pod in pods if isinstance(pod, dict) and (c := _counter(pod.get("cpu"), "usageNanoCores"))]
    return Counter(max(c.t_s for c in rates), sum(c.value for c in rates)) if rates else None


def _gauge(readings: Sequence[Counter], scale: float) -> tuple[tuple[float, ...], tuple[float, ...],
                                                                tuple[float, ...]]:
    """(starts, times, values x scale) of a rate the kubelet computed, each new reading covering the time since the
    one before it (the first only marks the start)."""
    starts: list[float] = []
    times: list[float] = []
    values: list[float] = []
    previous: float | None = None
    for reading in sorted(readings, key=lambda c: c.t_s):
        if previous is not None and reading.t_s > previous:
            starts.append(previous)
            times.append(reading.t_s)
            values.append(scale * reading.value)
        if previous is None or reading.t_s > previous:
            previous = reading.t_s
    return tuple(starts), tuple(times), tuple(values)


def _rates(counters: Sequence[Counter], scale: float) -> tuple[tuple[float, ...], tuple[float, ...],
                                                                 tuple[float, ...]]:
    """(starts, times, rates x scale) between successive readings of a different time; a counter that went
    back (a restarted kubelet) starts over."""
    starts: list[float] = []
    times: list[float] = []
    values: list[float] = []
    previous: Counter | None = None
    for counter in sorted(counters, key=lambda c: c.t_s):
        if previous is not None and counter.t_s > previous.t_s and counter.value >= previous.value:
            starts.append(previous.t_s)
            times.append(counter.t_s)
            values.append(scale * (counter.value - previous.value) / (counter.t_s - previous.t_s))
        if previous is None or counter.t_s > previous.t_s:
            previous = counter
    return tuple(starts), tuple(times), tuple(values)


def kubelet_series(readings: Sequence[KubeletReading]) -> list[TelemetrySeries]:
    """Per node: ``cpu_busy_pct`` (its pods' CPU, % of its capacity), ``pods_cpu_cores``, ``rx_bytes_per_s`` and
    ``tx_bytes_per_s``; a node with fewer than two readings of a counter has no series of it."""
    series: list[TelemetrySeries] = []
    for node in sorted({r.node for r in readings}):
        mine = [r for r in readings if r.node == node]
        capacity = max((r.capacity_cores for r in mine), default=0.0)
        cumulative = [r.pods_cpu_ns for r in mine if r.pods_cpu_ns is not None]
        rated = [r.pods_nanocores for r in mine if r.pods_nanocores is not None]
        cpu = _rates if cumulative else _gauge
        wanted = [("pods_cpu_cores", cpu, cumulative or rated, 1e-9)]
        if capacity > 0:
            wanted.append(("cpu_busy_pct", cpu, cumulative or rated, 100e-9 / capacity))
        wanted += [("rx_bytes_per_s", _rates, [r.rx_bytes for r in mine if r.rx_bytes is not None], 1.0),
                   ("tx_bytes_per_s", _rates, [r.tx_bytes for r in mine if r.tx_bytes is not None], 1.0)]
        for metric, rate, counters, scale in wanted:
            starts, times, values = rate(counters, scale)
            if values:
                series.append(TelemetrySeries(SOURCE, node, metric, starts, times, values))
    return series


def capacity_cores(quantity: str) -> float:
    """A node's `status.capacity.cpu` ("2", "1500m") in cores; 0 when unreadable."""
    text = quantity.strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0
