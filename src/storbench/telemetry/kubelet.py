"""Kubernetes nodes' own figures from each kubelet's summary API (`/stats/summary?only_cpu_and_memory=true`), as
telemetry series. Pure.

A node's CPU here is what its pods use: the sum over the node's pods of cAdvisor's rate of each (`usageNanoCores`,
computed over its housekeeping interval, every few seconds), taken at each new reading: a summary read twice
between two housekeepings adds nothing. Not the node's own total (`node.cpu`), nor the kubelet's `pods` system
container: on nodes that share one machine, as storbench's lab's do (no QoS cgroup hierarchy, one cgroup root),
both are the whole machine's. Each node is its own entity, so a verdict names the busy node; its CPU is also a share
of the node's own capacity (`status.capacity.cpu`). The lighter summary is asked for (no filesystem or network
figures): the full one fails where cAdvisor cannot read the root filesystem's device, as in a VM.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from storbench.telemetry.series import TelemetrySeries

SOURCE = "kubelet"


@dataclass(frozen=True)
class KubeletReading:
    """One node's summary: at ``t_s`` (the latest of its pods' times, epoch s), its pods' CPU in nanocores (None:
    no pod with CPU figures)."""

    node: str
    capacity_cores: float
    t_s: float
    pods_nanocores: float | None


def _epoch_s(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _pod_rate(pod: object) -> tuple[float, float] | None:
    """(time, nanocores) of one pod's CPU, None without them."""
    cpu = pod.get("cpu") if isinstance(pod, dict) else None
    if not isinstance(cpu, dict):
        return None
    t_s, value = _epoch_s(cpu.get("time")), cpu.get("usageNanoCores")
    if t_s is None or not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return t_s, float(value)


def parse_summary(node: str, capacity_cores: float, text: str) -> KubeletReading:
    """A kubelet's `/stats/summary` JSON. Raises ValueError when it is not a summary."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"node {node}: the kubelet's summary is not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("node"), dict):
        raise ValueError(f"node {node}: the kubelet's answer has no node summary")
    pods = document.get("pods")
    rates = [rate for pod in pods if (rate := _pod_rate(pod)) is not None] if isinstance(pods, list) else []
    if not rates:
        return KubeletReading(node, capacity_cores, 0.0, None)
    return KubeletReading(node, capacity_cores, max(t for t, _ in rates), sum(v for _, v in rates))


def kubelet_series(readings: Sequence[KubeletReading]) -> list[TelemetrySeries]:
    """Per node: ``pods_cpu_cores`` and ``cpu_busy_pct`` (% of its capacity), each new reading covering the time
    since the one before it (the first only marks the start); a node with fewer than two has none."""
    series: list[TelemetrySeries] = []
    for node in sorted({r.node for r in readings}):
        mine = sorted((r for r in readings if r.node == node and r.pods_nanocores is not None), key=lambda r: r.t_s)
        capacity = max((r.capacity_cores for r in readings if r.node == node), default=0.0)
        starts: list[float] = []
        times: list[float] = []
        cores: list[float] = []
        previous: float | None = None
        for reading in mine:
            if previous is not None and reading.t_s > previous:
                starts.append(previous)
                times.append(reading.t_s)
                cores.append((reading.pods_nanocores or 0.0) / 1e9)
            if previous is None or reading.t_s > previous:
                previous = reading.t_s
        if not cores:
            continue
        series.append(TelemetrySeries(SOURCE, node, "pods_cpu_cores", tuple(starts), tuple(times), tuple(cores)))
        if capacity > 0:
            series.append(TelemetrySeries(SOURCE, node, "cpu_busy_pct", tuple(starts), tuple(times),
                                          tuple(100.0 * c / capacity for c in cores)))
    return series


def capacity_cores(quantity: str) -> float:
    """A node's `status.capacity.cpu` ("2", "1500m") in cores; 0 when unreadable."""
    text = quantity.strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0
