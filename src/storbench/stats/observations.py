"""What statistics are computed over: one repetition of a case in one direction, typed. Pure.

An `Observation` keeps the model's own types (the `Case` with its workload and lab point, the merged
`DirectionMeasurement`, the repetition's `TelemetryDigest`); a metric's value is read through `METRIC_VALUES`,
one accessor per metric field. The flat export record (`records.Record`) is built from observations, not the
other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from storbench.fio.parse import merge_clients
from storbench.lab.hosts_conf import is_lab_server
from storbench.model import (
    Case,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    PvcTarget,
    Status,
    StoredRepetition,
    is_metadata,
    is_volume_operation,
)
from storbench.model.fault_record import WriteCheck
from storbench.stats.cost import COMPONENTS, HOST_KEY, KERNEL, OSD, OTHER, TOTAL_KEY, RepetitionCost, repetition_cost
from storbench.stats.failover_points import RepetitionFailover, repetition_failover
from storbench.stats.layers import StorageLatency, osd_latency_ns, storage_latency
from storbench.stats.sequential import rounds_run
from storbench.stats.steady import SteadyState, SteadyStatus
from storbench.telemetry.digest import CEPH_OSD_PROCESS, TelemetryDigest, digest

# (percent, field suffix) of the latency percentiles every export record carries.
PERCENTILES: tuple[tuple[float, str], ...] = (
    (50.0, "p50"), (90.0, "p90"), (95.0, "p95"), (99.0, "p99"), (99.9, "p999"), (99.99, "p9999"),
)


@dataclass(frozen=True)
class ClientFigures:
    """fio's own accounting of a repetition's clients (not telemetry): CPU, the devices it saw, and how far
    apart the clients were."""

    cpu_usr_pct: float | None = None  # summed over the clients; None without clients
    cpu_sys_pct: float | None = None
    disk_util_pct: float | None = None  # the busiest device fio reported
    fio_cores: float | None = None  # the observation's clients' fio jobs in cores; None unless ok
    reporting: int = 0  # clients that reported
    start_skew_s: float | None = None
    slowest: str = ""  # the client with the fewest IOPS ('' below 2 clients)
    slowest_pct_of_median: float | None = None
    ios_per_s: float | None = None  # the repetition's I/Os per second in every direction together; None unless ok
    bytes_per_s: float | None = None
    ran_here: bool = True  # every client ran on this machine (telemetry's): locally, in the hosts or k8s lab


@dataclass(frozen=True)
class Observation:
    """One repetition of a case in one direction, all its clients merged (or one client's own, ``client``).

    A repetition that failed (or measured nothing) is one observation with no direction and no measurement.
    """

    run_id: int
    case: Case
    rep_index: int
    status: Status
    direction: Direction | None
    measurement: DirectionMeasurement | None
    started_at_s: float
    finished_at_s: float
    fio_version: str
    error: str
    fio: ClientFigures
    telemetry: TelemetryDigest | None = None  # over fio's measured window; None when not sampled or not ok
    client: str = ""  # '' = all clients merged
    steady: SteadyStatus | None = None  # the point's steady state, when its run measured until steady
    # the point's figures are its steady-state window's: rounds chosen for their small spread, no interval
    window_only: bool = False
    # the point's rounds judged by its run's steady-state rule, when its run measured until steady
    steady_state: SteadyState | None = None
    # what its fault did (a plan with faults): read from its timeline logs (`stats.failover_points`)
    failover: RepetitionFailover | None = None
    # what `check_writes` read back after its repetition
    write_check: WriteCheck | None = None
    # its run alternated the cases' repetitions round by round (order: interleaved): repetition i of every case
    # of the run ran in round i, so two cases' repetitions i pair up (`alternated_rounds`)
    alternated: bool = False
    host_cpus: int | None = None  # the CPUs of the machine its run ran on (`RunInfo.cpu_count`)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    @property
    def repetition(self) -> tuple[int, int]:
        """Which repetition this is: (run id, repetition index)."""
        return self.run_id, self.rep_index

    @property
    def direction_name(self) -> str:
        return "" if self.direction is None else self.direction.value


def fio_cores(clients: Sequence[ClientMeasurement]) -> float | None:
    """CPU of the fio jobs in cores, from fio's own accounting (usr + sys % of one CPU, summed over jobs):
    exact over each job's run, where sampling /proc would miss jobs shorter than its interval."""
    if not clients:
        return None
    return sum(c.cpu_usr_pct + c.cpu_sys_pct for c in clients) / 100.0


def slowest_client(clients: Sequence[ClientMeasurement]) -> tuple[str, float | None]:
    """(the client with the fewest IOPS, its IOPS in % of the median client's); ('', None) below 2 clients."""
    if len(clients) < 2:
        return "", None
    totals = sorted((sum(d.iops for d in c.directions), c.client) for c in clients)
    values = [t for t, _ in totals]
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    return totals[0][1], (100.0 * totals[0][0] / median if median > 0 else None)


def ran_here(clients: Sequence[ClientMeasurement], run_host: str | None, case: Case) -> bool:
    """Whether every client ran on the machine the run's telemetry read: local fio; a fio server of the hosts lab
    (its network namespaces, on this machine's CPUs) or named as this machine; a pod on the k8s lab's nodes."""
    for client in clients:
        if client.client == "local":
            continue
        if "@" in client.client or isinstance(case.target, PvcTarget):  # a pod: on the lab's nodes, or a cluster's
            if case.lab.k8s is None:
                return False
            continue
        server = client.client.rsplit(":", 1)[0]  # fio names a server by its address and port
        if not is_lab_server(server) and server != run_host:
            return False
    return True


def _client_figures(figures: ClientFigures, client: ClientMeasurement, case: Case) -> ClientFigures:
    """One client's own figures (its CPU, its busiest device, its I/O rate), the repetition's for the rest."""
    utils = [d.util_pct for d in client.disks]
    return replace(figures, cpu_usr_pct=client.cpu_usr_pct, cpu_sys_pct=client.cpu_sys_pct,
                   disk_util_pct=max(utils) if utils else None, fio_cores=fio_cores([client]), reporting=1,
                   ios_per_s=sum(d.iops for d in client.directions),
                   bytes_per_s=None if is_metadata(case.workload.rw) else sum(d.bw_bytes for d in client.directions))


def observations(repetitions: Iterable[StoredRepetition], per_client: bool = False,
                 host_cpus: Mapping[int, int | None] | None = None,
                 run_hosts: Mapping[int, str] | None = None) -> list[Observation]:
    """One observation per stored repetition and direction. Several clients are merged exactly (I/O summed,
    bins merged); ``per_client`` adds each client's own observations (``client`` names it) after the merged
    ones of its repetition."""
    out: list[Observation] = []
    for rep in repetitions:
        ok = rep.status == Status.OK
        merged = merge_clients(rep.clients) if ok else ()
        utils = [d.util_pct for c in rep.clients for d in c.disks]
        slowest, slowest_pct = slowest_client(rep.clients)
        figures = ClientFigures(
            cpu_usr_pct=sum(c.cpu_usr_pct for c in rep.clients) if rep.clients else None,
            cpu_sys_pct=sum(c.cpu_sys_pct for c in rep.clients) if rep.clients else None,
            disk_util_pct=max(utils) if utils else None, fio_cores=fio_cores(rep.clients) if ok else None,
            reporting=len(rep.clients), start_skew_s=rep.start_skew_s, slowest=slowest,
            slowest_pct_of_median=slowest_pct,
            ios_per_s=sum(m.iops for m in merged) if merged else None,
            # a create, stat or delete moves no data: its "bandwidth" is operations x bs
            bytes_per_s=sum(m.bw_bytes for m in merged) if merged and not is_metadata(rep.case.workload.rw) else None,
            ran_here=ran_here(rep.clients, (run_hosts or {}).get(rep.run_id), rep.case))
        telemetry = digest(rep.telemetry) if ok and rep.telemetry is not None else None
        failover = repetition_failover(rep) if ok and rep.faults else None
        groups: list[tuple[str, Sequence[DirectionMeasurement | None], ClientFigures]] = [
            ("", merged or [None], figures)]
        if per_client and ok and len(rep.clients) > 1:
            groups += [(c.client, c.directions or [None], _client_figures(figures, c, rep.case))
                       for c in rep.clients]
        for client, measured, own in groups:
            for m in measured:
                out.append(Observation(
                    run_id=rep.run_id, case=rep.case, rep_index=rep.rep_index, status=rep.status,
                    direction=m.direction if m else None, measurement=m, started_at_s=rep.started_at_s,
                    finished_at_s=rep.finished_at_s, fio_version=rep.fio_version, error=rep.error, fio=own,
                    telemetry=telemetry, client=client, failover=failover,
                    write_check=rep.write_check, host_cpus=(host_cpus or {}).get(rep.run_id)))
    return out


Round = tuple[int, int]  # (run id, repetition index): repetition i of a run that alternated its cases is round i


def alternated_rounds(observations: Iterable[Observation], runs: Container[int]
                      ) -> dict[tuple[str, str], dict[Round, Observation]]:
    """Each point's (case id, direction) ok observations (all clients merged) by round, for the points whose
    repetitions all ran in one run of ``runs`` (runs that alternated their cases round by round): repetition i of
    two such points of one run ran in the same round, next to each other in a balanced order, so their ratio
    cancels slow drift and carry-over. The one pairing rule of `compare` and of the curves (`stats.trend`);
    `stats.sequential.paired_values` pairs two points' values from it."""
    found: dict[tuple[str, str], dict[Round, Observation]] = {}
    case_runs: dict[str, set[int]] = {}
    for o in observations:
        if o.client:
            continue
        case_runs.setdefault(o.case.case_id, set()).add(o.run_id)
        if o.ok and o.direction is not None:
            found.setdefault((o.case.case_id, o.direction.value), {})[o.repetition] = o
    return {key: rounds for key, rounds in found.items()
            if len(case_runs[key[0]]) == 1 and next(iter(case_runs[key[0]])) in runs}


Attempts = Mapping[tuple[int, str], frozenset[int]]  # (run, case) -> the rounds it was run in, ok or failed


def attempts_of(repetitions: Iterable[StoredRepetition]) -> dict[tuple[int, str], frozenset[int]]:
    """Each (run, case)'s rounds (repetition indices) as stored, ok or failed, whatever a `--where` keeps of them."""
    found: dict[tuple[int, str], set[int]] = {}
    for rep in repetitions:
        found.setdefault((rep.run_id, rep.case.case_id), set()).add(rep.rep_index)
    return {key: frozenset(value) for key, value in found.items()}


def attempted_rounds(observations: Iterable[Observation], run_id: int, case_id: str,
                     attempts: Attempts | None = None) -> frozenset[int]:
    """The rounds (repetition indices) a case was run in in a run, ok or failed (all clients merged): what the
    stopping rule counts its looks by (`stats.sequential.rounds_run`). ``attempts``: read from the stored
    repetitions (`attempts_of`), so a `--where` that drops failed ones (status=ok, direction=read) drops no look."""
    if attempts is not None and (run_id, case_id) in attempts:
        return attempts[(run_id, case_id)]
    return frozenset(o.rep_index for o in observations
                     if not o.client and o.run_id == run_id and o.case.case_id == case_id)


def looks_made(observations: Sequence[Observation], run_id: int, baseline_case: str, candidate_case: str,
               attempts: Attempts | None = None) -> int:
    """The looks the stopping rule of run ``run_id`` made at one pair of its cases (`stats.sequential.rounds_run`
    of the rounds each was run in, `attempted_rounds`)."""
    return rounds_run(attempted_rounds(observations, run_id, baseline_case, attempts),
                      attempted_rounds(observations, run_id, candidate_case, attempts))


# ---------------------------------------------------------------------------------------------------------------
# Metric values: one accessor per metric field (stats.metrics names them; exports carry the same names)

MetricValue = Callable[[Observation], "float | int | None"]


def lat_percentile_ns(m: DirectionMeasurement, percent: float) -> int | None:
    """A total-latency percentile; where fio wrote neither total-latency bins nor percentiles (its default
    json+ without lat_percentiles=1, as imported files often are), the completion latency's, which differs by
    the submission latency only (``lat_percentiles_from`` says which)."""
    value = m.lat.percentile_ns(percent)
    return value if value is not None else m.clat.percentile_ns(percent)


def lat_percentiles_from(m: DirectionMeasurement | None) -> str:
    """"lat" (total latency), "clat" (completion latency stands in) or "" (no percentiles at all)."""
    if m is None:
        return ""
    if m.lat.percentile_ns(50.0) is not None:
        return "lat"
    return "clat" if m.clat.percentile_ns(50.0) is not None else ""


def _lat_percentile(percent: float) -> MetricValue:
    def value(o: Observation) -> int | None:
        return lat_percentile_ns(o.measurement, percent) if o.measurement else None
    return value


def _telemetry(read: Callable[[TelemetryDigest], float | None]) -> MetricValue:
    def value(o: Observation) -> float | None:
        return read(o.telemetry) if o.telemetry is not None else None
    return value


def _remote_mean(metric: str) -> Callable[[TelemetryDigest], float | None]:
    def read(d: TelemetryDigest) -> float | None:
        found = d.remote_max(metric)
        return found.mean if found else None
    return read


def _busiest_device(read: Callable[[float, float], float]) -> Callable[[TelemetryDigest], float | None]:
    def value(d: TelemetryDigest) -> float | None:
        device = d.busiest_device
        return None if device is None else read(device.util_pct, device.queue_depth)
    return value


def _interface_util(d: TelemetryDigest) -> float | None:
    interface = d.busiest_interface
    return None if interface is None else interface.util_pct


def _interface_bytes(d: TelemetryDigest) -> float | None:
    interface = d.busiest_interface
    return None if interface is None else interface.rx_bytes_per_s + interface.tx_bytes_per_s


def observed_storage(o: Observation) -> StorageLatency | None:
    """The storage's own latency for this observation's I/O (`stats.layers.storage_latency`)."""
    found = _storage(o)
    return found if isinstance(found, StorageLatency) else None


def unseparated_storage(o: Observation) -> str:
    """Why the storage's counters do not give this observation's latency by layer ('' when they do, or none)."""
    found = _storage(o)
    return found if isinstance(found, str) else ""


def _storage(o: Observation) -> StorageLatency | str | None:
    if o.telemetry is None or o.measurement is None or o.direction is None:
        return None
    return storage_latency(o.telemetry, o.direction.value, o.measurement.iops, o.measurement.lat.mean_ns)


def _storage_lat(o: Observation) -> float | None:
    found = observed_storage(o)
    return None if found is None else found.lat_ns


def _outside_storage(share: bool) -> MetricValue:
    """The client's mean latency beyond the storage's (ns), or its share of the client's mean (%)."""
    def value(o: Observation) -> float | None:
        found = observed_storage(o)
        if found is None or o.measurement is None or o.measurement.lat.mean_ns <= 0:
            return None
        outside = max(o.measurement.lat.mean_ns - found.lat_ns, 0.0)
        return 100 * outside / o.measurement.lat.mean_ns if share else outside
    return value


def _osd_lat(process_only: bool) -> MetricValue:
    def value(o: Observation) -> float | None:
        if o.telemetry is None or o.direction is None:
            return None
        return osd_latency_ns(o.telemetry, o.direction.value, process_only)
    return value


def _failover(attribute: str) -> MetricValue:
    """A figure of what the repetition's fault did (`stats.timeline.Failover`); None without a fault."""
    def value(o: Observation) -> float | None:
        figures = o.failover.figures if o.failover is not None else None
        found = getattr(figures, attribute) if figures is not None else None
        return float(found) if found is not None else None
    return value


def _cluster_clean(o: Observation) -> float | None:
    """Seconds from the fault to every PG of the lab cluster active+clean again (None: not watched, or never)."""
    cluster = o.failover.cluster if o.failover is not None else None
    return cluster.clean_after_s if cluster is not None else None


def observation_cost(o: Observation) -> RepetitionCost | None:
    """What the repetition's I/O cost in CPU by component (`stats.cost`); None for one client's own observation
    (the host's CPU is every client's), without telemetry, without I/O, or where fio ran on other machines (this
    machine's CPU is not theirs: real fio servers, a cluster's nodes); a Kubernetes volume operation has none
    (one operation per client, timed whole: its host's CPU is the cluster's controllers' and not per operation)."""
    if o.client or o.fio.ios_per_s is None or not o.fio.ran_here or is_volume_operation(o.case.workload.rw):
        return None
    ceph = o.case.lab.ceph
    return repetition_cost(o.fio.ios_per_s, o.fio.bytes_per_s or 0.0, o.telemetry, o.fio.fio_cores, o.host_cpus,
                           ceph.osd_cores_allocated if ceph is not None else None)


def _cost(read: Callable[[RepetitionCost], float | None]) -> MetricValue:
    def value(o: Observation) -> float | None:
        cost = observation_cost(o)
        return None if cost is None else read(cost)
    return value


def _cost_values() -> dict[str, MetricValue]:
    values: dict[str, MetricValue] = {"ios_per_s": lambda o: o.fio.ios_per_s if observation_cost(o) else None}
    for component in (*COMPONENTS, KERNEL):
        values[f"{component.key}_cpu_us_per_io"] = _cost(partial(RepetitionCost.us_per_io, key=component.key))
    values[f"{TOTAL_KEY}_cpu_us_per_io"] = _cost(lambda c: c.us_per_io(TOTAL_KEY))
    values[f"{OSD.key}_cpu_us_per_mib"] = _cost(lambda c: c.us_per_mib(OSD.key))
    values[f"{TOTAL_KEY}_cpu_us_per_mib"] = _cost(lambda c: c.us_per_mib(TOTAL_KEY))
    values["iops_per_core_used"] = _cost(lambda c: c.iops_per_core(TOTAL_KEY))
    values["iops_per_osd_core"] = _cost(lambda c: c.iops_per_core(OSD.key))
    values["iops_per_core_allocated"] = _cost(lambda c: c.iops_per_core_allocated)
    for component in (*COMPONENTS, KERNEL, OTHER):
        values[f"{component.key}_host_cpu_pct"] = _cost(partial(RepetitionCost.host_pct, key=component.key))
    for key in (*(c.key for c in COMPONENTS), HOST_KEY):
        values[f"{key}_cycles_per_io"] = _cost(partial(RepetitionCost.cycles_per_io, key=key))
    return values


METRIC_VALUES: Mapping[str, MetricValue] = {
    "iops": lambda o: o.measurement.iops if o.measurement else None,
    "bw_bytes": lambda o: o.measurement.bw_bytes if o.measurement else None,
    "lat_mean_ns": lambda o: o.measurement.lat.mean_ns if o.measurement else None,
    **{f"lat_{suffix}_ns": _lat_percentile(percent) for percent, suffix in PERCENTILES},
    "cpu_usr": lambda o: o.fio.cpu_usr_pct,
    "cpu_sys": lambda o: o.fio.cpu_sys_pct,
    "disk_util_pct": lambda o: o.fio.disk_util_pct,
    "host_cpu_busy_pct": _telemetry(lambda d: d.host_cpu_busy_pct),
    "host_cpu_iowait_pct": _telemetry(lambda d: d.host_cpu_iowait_pct),
    "host_cpu_pressure_pct": _telemetry(lambda d: d.host_cpu_pressure_pct),
    "client_cpu_cores": lambda o: o.fio.fio_cores,
    "disk_busiest_util_pct": _telemetry(_busiest_device(lambda util, _queue: util)),
    "disk_busiest_queue_depth": _telemetry(_busiest_device(lambda _util, queue: queue)),
    "net_busiest_util_pct": _telemetry(_interface_util),
    "net_busiest_bytes_per_s": _telemetry(_interface_bytes),
    "ceph_osd_cpu_cores": _telemetry(lambda d: d.process_cores(CEPH_OSD_PROCESS)),
    "ceph_op_latency_ns": _telemetry(lambda d: d.ceph_op_latency_ns),
    "ceph_cache_hit_pct": _telemetry(lambda d: d.ceph_cache_hit_pct),
    "storage_lat_ns": _storage_lat,
    "outside_storage_lat_ns": _outside_storage(share=False),
    "outside_storage_pct": _outside_storage(share=True),
    "osd_lat_ns": _osd_lat(process_only=False),
    "osd_process_lat_ns": _osd_lat(process_only=True),
    "node_cpu_busy_pct": _telemetry(_remote_mean("cpu_busy_pct")),
    "node_disk_util_pct": _telemetry(_remote_mean("disk_util_pct")),
    "client_ceiling_iops": _telemetry(lambda d: d.ceiling_iops),
    "start_skew_s": lambda o: o.fio.start_skew_s,
    "slowest_client_pct_of_median": lambda o: o.fio.slowest_pct_of_median,
    **{name: _failover(attribute) for name, attribute in (
        ("blackout_s", "blackout_s"), ("first_io_after_fault_s", "first_completion_s"),
        ("undo_blackout_s", "restore_blackout_s"), ("dip_pct", "dip_pct"), ("degraded_pct", "degraded_pct"),
        ("end_pct", "end_pct"), ("recovery_s", "recovery_s"))},
    "cluster_clean_s": _cluster_clean,
    **_cost_values(),
}


def metric_value(observation: Observation, field: str) -> float | int | None:
    """The value of metric ``field`` (a `stats.metrics.Metric` field) in one observation."""
    return METRIC_VALUES[field](observation)


def busiest_names(observation: Observation) -> tuple[str, str, str]:
    """(busiest device, busiest interface, busiest storage node) of the repetition's telemetry ('' unknown)."""
    d = observation.telemetry
    if d is None:
        return "", "", ""
    device, interface = d.busiest_device, d.busiest_interface
    node_cpu, node_disk = d.remote_max("cpu_busy_pct"), d.remote_max("disk_util_pct")
    node = node_cpu.entity if node_cpu else node_disk.entity if node_disk else ""
    return device.name if device else "", interface.name if interface else "", node
