"""Where the time of an I/O goes, by layer (pure): the client's mean latency beside the storage's own latency for
the same I/O, from the storage daemons' counters over the repetition's measured window.

The storage is the outermost layer that served the I/O: radosgw for objects (its GET latency to the first byte,
its PUT latency), an MDS for metadata operations (its requests' reply latency), the OSDs for data (their client
reads' or writes' op latency, queue included; the part without the queue beside it). A layer served the I/O when
it answered at least SERVED_SHARE of the client's operations per second in that direction: an OSD that saw a
tenth of the reads (a page cache in front of it, or someone else's traffic) says nothing about this I/O. What
the client waited beyond that layer is outside the storage: the client stack of its host (a kernel or FUSE
client, the client library) and the network between them. A layer that held more requests in flight than the
client had outstanding (Little's law) was not in the I/O's path: a client cache acknowledged it and wrote it back
later (librbd's writeback cache), so no storage latency is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from storbench.telemetry.digest import TelemetryDigest


@dataclass(frozen=True)
class StorageLayer:
    name: str  # as shown: "radosgw", "MDS", "OSDs"
    read_counter: str  # telemetry.digest COUNTERS
    write_counter: str


# outermost first: the first one that served the I/O is where the client's request was answered
LAYERS = (StorageLayer("radosgw", "rgw_get", "rgw_put"), StorageLayer("MDS", "mds_reply", "mds_reply"),
          StorageLayer("OSDs", "op_r", "op_w"))
SERVED_SHARE = 0.5
IN_FLIGHT_SLACK = 1.25  # sampling windows and ops split in parts allow the storage a little more in flight
# processes that are a client stack of their own on the client's host (a FUSE client), named in verdicts
CLIENT_DAEMONS = ("ceph-fuse",)
CLIENT_DAEMON_MIN_CORES = 0.01


@dataclass(frozen=True)
class StorageLatency:
    layer: str
    lat_ns: float


def _counter_name(layer: StorageLayer, direction: str) -> str:
    return layer.write_counter if direction == "write" else layer.read_counter


def storage_latency(digest: TelemetryDigest, direction: str, client_ops_per_s: float,
                    client_lat_ns: float) -> StorageLatency | str | None:
    """The outermost layer that served this direction's I/O and its mean latency. Otherwise why the storage's
    latency is not this I/O's, when its counters were read: too few of the client's operations reached it (a cache
    in front answered the rest), or it held more requests in flight than the client had outstanding (Little's law:
    its requests per second x their latency above IN_FLIGHT_SLACK x the client's IOPS x mean latency) — a
    client-side cache acknowledged the I/O (librbd's writeback cache) and wrote it back later. None: no counters
    for this direction."""
    if client_ops_per_s <= 0 or client_lat_ns <= 0 or direction not in ("read", "write"):
        return None
    noun = "writes" if direction == "write" else "reads"
    client_in_flight = client_ops_per_s * client_lat_ns
    reason: str | None = None
    for layer in LAYERS:
        counter = digest.counter(_counter_name(layer, direction))
        if counter is None or counter.latency_ns is None or counter.per_s <= 0:
            continue
        if counter.per_s < SERVED_SHARE * client_ops_per_s:
            reason = reason or (f"the {layer.name} saw {counter.per_s / client_ops_per_s:.0%} of the client's {noun}: "
                                "a cache in front answered the rest, so their latency is not this I/O's")
            continue
        if counter.per_s > IN_FLIGHT_SLACK * client_ops_per_s:  # one I/O, several ops (beyond an object's size):
            return (f"the {layer.name} did {counter.per_s / client_ops_per_s:.1f} {noun} for each of the client's: "
                    "an I/O spans several of them, whose latency is not the I/O's")  # nor a cache's sign
        if counter.per_s * counter.latency_ns > IN_FLIGHT_SLACK * client_in_flight:
            return (f"the {layer.name} held {counter.per_s * counter.latency_ns / 1e9:.0f} {noun} in flight against "
                    f"the client's {client_in_flight / 1e9:.0f}: a writeback cache acknowledged them and wrote them "
                    "back later, so their latency is not the client's")
        return StorageLatency(layer.name, counter.latency_ns)
    return reason


def osd_latency_ns(digest: TelemetryDigest, direction: str, process_only: bool = False) -> float | None:
    """The OSDs' op latency for this direction's client ops (``process_only``: without their time in the queue)."""
    if direction not in ("read", "write"):
        return None
    name = ("op_w" if direction == "write" else "op_r") + ("_process" if process_only else "")
    counter = digest.counter(name)
    return None if counter is None else counter.latency_ns


def client_daemon(process_cpu_cores: tuple[tuple[str, float], ...]) -> str:
    """The client-side daemon that is the client stack on this host (ceph-fuse), '' when none was busy."""
    cores = dict(process_cpu_cores)
    return next((name for name in CLIENT_DAEMONS if cores.get(name, 0.0) >= CLIENT_DAEMON_MIN_CORES), "")
