"""Ceph daemons' own counters (``perf dump`` over the admin socket) -> per-interval series. Pure.

From each OSD: client ops and their latency (``osd.op``, ``osd.op_latency``, reads and writes apart, and their
processing part without the queue, ``op_r_process_latency``/``op_w_process_latency``) and the BlueStore cache
(``bluestore.bluestore_buffer_hit_bytes`` / ``..._miss_bytes`` for data, onode hits/misses for metadata). From an
MDS: its requests' reply latency (``mds.reply_latency``); from radosgw: GET latency to the first byte and PUT
latency (``rgw.get_initial_lat``, ``rgw.put_initial_lat``). Latency counters are (count, sum seconds) pairs, so an
interval's mean latency is delta sum / delta count — the same as Ceph's own ``avgcount``/``sum`` arithmetic.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storbench.telemetry.series import TelemetrySeries


@dataclass(frozen=True)
class LatencyCounter:
    count: int
    sum_s: float


@dataclass(frozen=True)
class CephDaemonCounters:
    """The counters storbench reads from one daemon's ``perf dump``."""

    daemon: str
    ops: int | None
    op_latency: LatencyCounter | None
    op_r_latency: LatencyCounter | None
    op_w_latency: LatencyCounter | None
    buffer_hit_bytes: int | None
    buffer_miss_bytes: int | None
    onode_hits: int | None
    onode_misses: int | None
    # further latency counters by their series name (LATENCY_COUNTERS): the layers above and inside the OSD op
    latencies: tuple[tuple[str, LatencyCounter], ...] = ()
    # when its dump was read (epoch s; None: the snapshot's time). The sockets are read one after another, each
    # within a timeout: a frozen OSD's holds the ones after it 2 s, whose counters had been stamped with the
    # snapshot's earlier time, their rates over too short an interval
    t_s: float | None = None


@dataclass(frozen=True)
class CephSnapshot:
    t_s: float
    daemons: tuple[CephDaemonCounters, ...]


def _int(section: object, key: str) -> int | None:
    if isinstance(section, Mapping):
        value = section.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return None


def _latency(section: object, key: str) -> LatencyCounter | None:
    if isinstance(section, Mapping):
        value = section.get(key)
        if isinstance(value, Mapping):
            count, total = value.get("avgcount"), value.get("sum")
            if isinstance(count, int | float) and isinstance(total, int | float):
                return LatencyCounter(int(count), float(total))
    return None


# series name -> (perf dump section, counter): each gives ``<name>_per_s`` and ``<name>_latency_ns`` series
LATENCY_COUNTERS = {
    "op_r_process": ("osd", "op_r_process_latency"),
    "op_w_process": ("osd", "op_w_process_latency"),
    "mds_reply": ("mds", "reply_latency"),
    "rgw_get": ("rgw", "get_initial_lat"),
    "rgw_put": ("rgw", "put_initial_lat"),
}
# The daemons whose counters are read: OSDs, MDSs and radosgw (mon and mgr sockets have none of them).
COUNTED_DAEMONS = ("osd.", "mds.", "client.rgw.")


def parse_perf_dump(daemon: str, text: str) -> CephDaemonCounters:
    """Raises ValueError when the text is not a perf dump."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{daemon}: perf dump is not JSON ({error})") from error
    if not isinstance(document, Mapping):
        raise ValueError(f"{daemon}: perf dump is not a JSON object")
    osd, bluestore = document.get("osd"), document.get("bluestore")
    return CephDaemonCounters(
        daemon=daemon, ops=_int(osd, "op"), op_latency=_latency(osd, "op_latency"),
        op_r_latency=_latency(osd, "op_r_latency"), op_w_latency=_latency(osd, "op_w_latency"),
        buffer_hit_bytes=_int(bluestore, "bluestore_buffer_hit_bytes"),
        buffer_miss_bytes=_int(bluestore, "bluestore_buffer_miss_bytes"),
        # Pacific calls them onode_hits/onode_misses; later releases add the bluestore_ prefix.
        onode_hits=_int(bluestore, "onode_hits") if _int(bluestore, "onode_hits") is not None
        else _int(bluestore, "bluestore_onode_hits"),
        onode_misses=_int(bluestore, "onode_misses") if _int(bluestore, "onode_misses") is not None
        else _int(bluestore, "bluestore_onode_misses"),
        latencies=tuple((name, counter) for name, (section, key) in LATENCY_COUNTERS.items()
                        if (counter := _latency(document.get(section), key)) is not None),
    )


def daemon_name_from_socket(path: str) -> str:
    """``/run/ceph/ceph-osd.3.asok`` -> ``osd.3``."""
    base = path.rsplit("/", 1)[-1].removesuffix(".asok")
    cluster_and_name = base.split("-", 1)
    return cluster_and_name[1] if len(cluster_and_name) == 2 else base


def _delta(after: int | None, before: int | None) -> int | None:
    """The counter's change over an interval; None when it went down: the daemon started again (a `restart`
    fault) and counts from 0, so the interval's change is not known (it had been a large negative rate)."""
    return None if after is None or before is None or after < before else after - before


def _mean_latency_ns(after: LatencyCounter | None, before: LatencyCounter | None) -> float | None:
    if after is None or before is None or after.count <= before.count:
        return None
    return (after.sum_s - before.sum_s) / (after.count - before.count) * 1e9


def _count_rate(after: LatencyCounter | None, before: LatencyCounter | None, elapsed_s: float) -> float | None:
    if after is None or before is None or after.count < before.count:
        return None
    return (after.count - before.count) / elapsed_s


def ceph_series(snapshots: Sequence[CephSnapshot]) -> list[TelemetrySeries]:
    """Per daemon: ops_per_s, op_latency_ns (and r/w), cache_hit_bytes_per_s, cache_miss_bytes_per_s,
    onode_hits_per_s, onode_misses_per_s, and ``<name>_per_s`` / ``<name>_latency_ns`` of every LATENCY_COUNTERS
    counter it has. A latency sample exists only for intervals with ops."""
    ordered = sorted(snapshots, key=lambda s: s.t_s)
    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}

    def add(daemon: str, metric: str, begin: float, end: float, value: float | None) -> None:
        if value is not None:
            samples.setdefault((daemon, metric), []).append((begin, end, value))

    for before, after in itertools.pairwise(ordered):
        elapsed = after.t_s - before.t_s
        if elapsed <= 0:
            continue
        earlier = {d.daemon: d for d in before.daemons}
        for b in after.daemons:
            a = earlier.get(b.daemon)
            if a is None:
                continue
            span = (a.t_s or before.t_s, b.t_s or after.t_s)  # each daemon's own reading times
            elapsed = span[1] - span[0]
            if elapsed <= 0:
                continue
            ops = _delta(b.ops, a.ops)
            add(b.daemon, "ops_per_s", *span, None if ops is None else ops / elapsed)
            add(b.daemon, "op_latency_ns", *span, _mean_latency_ns(b.op_latency, a.op_latency))
            add(b.daemon, "op_r_latency_ns", *span, _mean_latency_ns(b.op_r_latency, a.op_r_latency))
            add(b.daemon, "op_w_latency_ns", *span, _mean_latency_ns(b.op_w_latency, a.op_w_latency))
            add(b.daemon, "op_r_per_s", *span, _count_rate(b.op_r_latency, a.op_r_latency, elapsed))
            add(b.daemon, "op_w_per_s", *span, _count_rate(b.op_w_latency, a.op_w_latency, elapsed))
            earlier_latencies = dict(a.latencies)
            for name, latest in b.latencies:
                previous = earlier_latencies.get(name)
                add(b.daemon, f"{name}_per_s", *span, _count_rate(latest, previous, elapsed))
                add(b.daemon, f"{name}_latency_ns", *span, _mean_latency_ns(latest, previous))
            for metric, now, then in (("cache_hit_bytes_per_s", b.buffer_hit_bytes, a.buffer_hit_bytes),
                                      ("cache_miss_bytes_per_s", b.buffer_miss_bytes, a.buffer_miss_bytes),
                                      ("onode_hits_per_s", b.onode_hits, a.onode_hits),
                                      ("onode_misses_per_s", b.onode_misses, a.onode_misses)):
                change = _delta(now, then)
                add(b.daemon, metric, *span, None if change is None else change / elapsed)
    return [TelemetrySeries("ceph", daemon, metric, tuple(s[0] for s in values), tuple(s[1] for s in values),
                            tuple(s[2] for s in values))
            for (daemon, metric), values in sorted(samples.items())]
