"""The `telemetry` section: what is sampled beside every repetition, and Prometheus. Pure."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from storbench.config.values import PID_MAX, Duration, StrictModel, matching

__all__ = ["DEFAULT_PROCESSES", "METRIC_NAME_RE", "PROCESS_NAME_RE", "PrometheusConfig", "TelemetryConfig"]

DEFAULT_PROCESSES = ("fio", "ceph-osd", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-fuse", "radosgw",
                     "ganesha.nfsd")
METRIC_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
PROCESS_NAME_RE = re.compile(r"^[^/\x00-\x1f]{1,15}$")


# where a plan may point telemetry at Ceph admin sockets: this machine's daemons' directory, one level of fsid
# (cephadm's /var/run/ceph/<fsid>/), no '..' and no reaching through /proc/*/root into other containers
ADMIN_SOCKET_RE = re.compile(r"^(?!.*\.\.)/(?:var/)?run/ceph/(?:[A-Za-z0-9_*?.-]+/)?[A-Za-z0-9_*?.-]+\.asok$")


class PrometheusConfig(StrictModel):
    """A Prometheus server with node_exporter targets (the storage nodes): queried over each repetition's
    measured window once it ends."""

    url: Annotated[str, matching(r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?$", "url must be "
                                 "http(s)://host[:port][/path]")] = Field(
        description="Base URL of the Prometheus server, e.g. http://prometheus:9090.")
    rate_window: Duration | None = Field(None, description="Window of `rate()` ($rate): by default each "
                                         "repetition's measured window (one value over all of it; it needs 2 "
                                         "scrapes inside it); given (at least 4 scrape intervals, at most the "
                                         "runtime), a value every `step` from that long after the window's start, "
                                         "each the rate over the `rate_window` before it.")
    step: Duration = Field(1.0, description="Resolution of the range queries (with `rate_window`).")
    queries: Annotated[dict[str, str], matching(METRIC_NAME_RE, "query name {value!r} must be lowercase letters, "
                                                "digits and '_'", each=True)] = Field(
        default_factory=dict, description="More queries, name -> PromQL (may use $rate); a name of a built-in "
        "query replaces it.")
    builtin_queries: bool = Field(True, description="Run the built-in node_exporter queries (CPU busy, disk "
                                  "utilisation and queue, network bytes, memory).")


class TelemetryConfig(StrictModel):
    """What is sampled beside every repetition (see `storbench docs methodology telemetry`)."""

    enabled: bool = Field(True, description="Sample host CPU, processes, devices, network and memory.")
    interval: Duration = Field(1.0, description="Sampling interval (0.2s .. 60s).")
    processes: Annotated[list[str], matching(PROCESS_NAME_RE, "process name {value!r} must be 1-15 characters "
                                             "without '/' (as in /proc/PID/comm)", each=True)] = Field(
        list(DEFAULT_PROCESSES), description="Process names (as in /proc/PID/comm) whose CPU is measured, all "
        "processes of a name together, in cores.")
    pids: list[Annotated[int, Field(ge=1, le=PID_MAX)]] = Field(default_factory=list, description="Process ids "
                                                                "to measure as well.")
    ceph_admin_sockets: Annotated[list[str], matching(
        ADMIN_SOCKET_RE, "admin socket pattern {value!r} must be under /run/ceph or /var/run/ceph, end in .asok and "
        "hold no '..' (a socket of this machine's Ceph daemons, not any file another container shows)",
        each=True)] | None = Field(None, description="Glob patterns of Ceph OSD admin sockets whose counters are "
                                   "read, under /run/ceph or /var/run/ceph; default: the Ceph lab's, else "
                                   "/var/run/ceph/*.asok for rbd and cephfs targets.")
    prometheus: PrometheusConfig | None = Field(None, description="Storage nodes' figures from Prometheus.")
    cycles: bool = Field(False, description="Count CPU cycles with `perf stat` beside every repetition (each "
                         "process name running when it starts, and the whole machine): cycles per I/O. Needs perf "
                         "(linux-perf) and a CPU with performance counters (a VM may have none).")
    client_ceiling: bool = Field(False, description="Before a case's first repetition, measure what this "
                                 "client alone can drive: the same job on fio's null engine (a few seconds).")

    @field_validator("interval")
    @classmethod
    def _interval(cls, value: float) -> float:
        if not 0.2 <= value <= 60:
            raise ValueError("interval must be between 0.2s and 60s")
        return value
