"""Telemetry shell: read /proc, Ceph admin sockets and Prometheus; a sampler thread beside each fio run.

Effects only: every reading is handed as text to the pure parsers in ``proc``, ``ceph_counters`` and
``prometheus``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import socket
import struct
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from storbench.shell import read_text
from storbench.telemetry.ceph_counters import (
    COUNTED_DAEMONS,
    CephDaemonCounters,
    CephSnapshot,
    daemon_name_from_socket,
    parse_perf_dump,
)
from storbench.telemetry.proc import (
    ProcessTicks,
    ProcSnapshot,
    parse_diskstats,
    parse_meminfo,
    parse_net_dev,
    parse_pid_stat,
    parse_pressure_some_us,
    parse_proc_stat,
)
from storbench.telemetry.prometheus import PrometheusQuery, QueryWindow, parse_range_response, range_parameters
from storbench.telemetry.series import TelemetrySeries

ADMIN_SOCKET_TIMEOUT_S = 2.0


def whole_block_devices() -> frozenset[str]:
    try:
        return frozenset(os.listdir("/sys/block"))
    except OSError:
        return frozenset()


def link_speeds_bits_per_s(root: str = "/sys/class/net") -> dict[str, int]:
    """Link rates of the interfaces with a device below them (NICs). A virtual interface's is none: a veth reports
    10 Gbit whatever carries it, and a bridge its fastest port's; judged against them, the hosts lab's bridge had
    read "network-bound at 128 %" while its shaped links ran at 64 %."""
    speeds: dict[str, int] = {}
    for path in glob.glob(f"{root}/*/speed"):
        if "/devices/virtual/" in os.path.realpath(Path(path).parent):
            continue
        text = read_text(path).strip()
        with contextlib.suppress(ValueError):
            megabits = int(text)
            if megabits > 0:
                speeds[Path(path).parent.name] = megabits * 1_000_000
    return speeds


def clock_ticks_per_s() -> int:
    return int(os.sysconf("SC_CLK_TCK"))


def read_processes(names: frozenset[str], pids: frozenset[int]) -> tuple[ProcessTicks, ...]:
    found: list[ProcessTicks] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid not in pids and read_text(f"/proc/{entry}/comm").strip() not in names:
            continue
        ticks = parse_pid_stat(pid, read_text(f"/proc/{entry}/stat"))
        if ticks is not None:
            if pid in pids:  # a pid the plan names is reported under its pid, whatever it is called
                ticks = ProcessTicks(pid=pid, name=f"pid {pid}", ticks=ticks.ticks)
            found.append(ticks)
    return tuple(found)


def read_proc_snapshot(names: frozenset[str], pids: frozenset[int], devices: frozenset[str]) -> ProcSnapshot:
    t_s = time.time()
    used, cache = parse_meminfo(read_text("/proc/meminfo"))
    return ProcSnapshot(t_s=t_s, cpu=parse_proc_stat(read_text("/proc/stat")),
                        disks=parse_diskstats(read_text("/proc/diskstats"), devices or None),
                        nets=parse_net_dev(read_text("/proc/net/dev")), mem_used_bytes=used, page_cache_bytes=cache,
                        processes=read_processes(names, pids),
                        cpu_pressure_us=parse_pressure_some_us(read_text("/proc/pressure/cpu")))


def admin_socket_command(path: str, prefix: str, timeout_s: float = ADMIN_SOCKET_TIMEOUT_S,
                         **arguments: str) -> str:
    """Ceph's admin socket protocol: send the JSON command (``prefix`` and its ``arguments``) and a NUL; the
    answer is a 4-byte big-endian length and that many bytes. Raises OSError."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout_s)
        connection.connect(path)
        connection.sendall(json.dumps({"prefix": prefix, **arguments}).encode() + b"\0")
        header = b""
        while len(header) < 4:
            chunk = connection.recv(4 - len(header))
            if not chunk:
                raise OSError(f"{path}: connection closed before the answer")
            header += chunk
        size = struct.unpack(">I", header)[0]
        body = bytearray()
        while len(body) < size:
            chunk = connection.recv(min(1 << 20, size - len(body)))
            if not chunk:
                raise OSError(f"{path}: answer cut short")
            body.extend(chunk)
    return body.decode(errors="replace")


def ceph_admin_sockets(patterns: Sequence[str]) -> list[str]:
    """The sockets of daemons whose counters are read (OSDs, MDSs, radosgw) among the glob patterns."""
    return sorted({path for pattern in patterns for path in glob.glob(pattern)
                   if daemon_name_from_socket(path).startswith(COUNTED_DAEMONS)})


def read_ceph_snapshot(sockets: Sequence[str], problems: list[str]) -> CephSnapshot:
    daemons: list[CephDaemonCounters] = []
    t_s = time.time()
    for path in sockets:
        name = daemon_name_from_socket(path)
        try:
            dump = admin_socket_command(path, "perf dump")
            daemons.append(replace(parse_perf_dump(name, dump), t_s=time.time()))  # read now, not at t_s
        except (OSError, ValueError) as error:
            problems.append(f"{name}: {error}")
    return CephSnapshot(t_s=t_s, daemons=tuple(daemons))


def fetch_range(base_url: str, query: PrometheusQuery, window: QueryWindow, timeout_s: float = 10.0) -> str:
    """GET /api/v1/query_range (no redirect followed, the answer capped). Raises OSError when the server cannot
    be reached or is refused."""
    from storbench.netclient import request  # lazy: only a request needs the HTTP client

    url = base_url.rstrip("/") + "/api/v1/query_range?" + urllib.parse.urlencode(range_parameters(query, window))
    try:  # Prometheus answers bad queries with 400 and a JSON error: that body is read like any other
        return request(url, timeout_s=timeout_s).body.decode(errors="replace")
    except OSError as error:
        raise OSError(f"cannot reach Prometheus at {base_url}: {error}") from error


def fetch_prometheus_series(base_url: str, queries: Sequence[PrometheusQuery],
                            window: QueryWindow) -> tuple[list[TelemetrySeries], list[str]]:
    """All queries over the window; (series, problems): a failing query is a problem, not a failed run."""
    series: list[TelemetrySeries] = []
    problems: list[str] = []
    for query in queries:
        try:
            found = parse_range_response(query.metric, fetch_range(base_url, query, window),
                                         window.rate_s if query.rates else 0.0)
        except (OSError, ValueError) as error:
            problems.append(str(error))
            continue
        if not found:  # an answer with no series (fewer than two scrapes in a short window): said, not silent
            problems.append(f"Prometheus: {query.metric} gave no series over the measured window")
        series.extend(found)
    return series, problems


@dataclass
class SamplerReadings:
    proc: list[ProcSnapshot] = field(default_factory=list)
    ceph: list[CephSnapshot] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Sampler:
    """Reads /proc (and Ceph admin sockets) every ``interval_s`` in a background thread, from ``start``
    to ``stop``, which also takes a last reading so the final interval is covered."""

    def __init__(self, interval_s: float, process_names: Sequence[str], pids: Sequence[int],
                 ceph_sockets: Sequence[str]) -> None:
        self.interval_s = interval_s
        self.names = frozenset(process_names)
        self.pids = frozenset(pids)
        self.ceph_sockets = tuple(ceph_sockets)
        self.devices = whole_block_devices()
        self.readings = SamplerReadings()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read_once(self) -> None:
        try:
            self.readings.proc.append(read_proc_snapshot(self.names, self.pids, self.devices))
        except OSError as error:  # /proc vanishing under us is a problem to report, not a crash
            self.readings.problems.append(f"/proc: {error}")
        if self.ceph_sockets:
            self.readings.ceph.append(read_ceph_snapshot(self.ceph_sockets, self.readings.problems))

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self._read_once()
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="storbench-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> SamplerReadings:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read_once()
        return self.readings

