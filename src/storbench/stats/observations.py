"""What statistics are computed over: one repetition of a case in one direction, typed. Pure.

An `Observation` keeps the model's own types (the `Case` with its workload and lab point, the merged
`DirectionMeasurement`, the repetition's `TelemetryDigest`); a metric's value is read through
`stats.metric_values.METRIC_VALUES`, one accessor per metric field. The flat export record (`records.Record`) is
built from observations, not the other way round.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from storbench.fio.merge import merge_clients
from storbench.lab.hosts_conf import is_lab_server
from storbench.model import (
    Case,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    PvcTarget,
    Status,
    StoredRepetition,
    is_size_based,
    moves_data,
)
from storbench.model.fault_record import WriteCheck
from storbench.stats.failover_points import RepetitionFailover, repetition_failover
from storbench.stats.sequential import rounds_run
from storbench.stats.steady import SteadyState, SteadyStatus
from storbench.telemetry.digest import TelemetryDigest, digest

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
    disks: tuple[str, ...] = ()  # the devices fio reported (its files'), by name: "sda", "dm-0"
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
    filesystem: str = ""  # its target's filesystem as the run found it ('' unknown): tmpfs measures memory
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
    """(the client with the fewest IOPS, its IOPS in % of the median of the other clients'); ('', None) below 2
    clients. The others': counted in its own median, a slow client of two at 40 against 100 read 57 %."""
    if len(clients) < 2:
        return "", None
    totals = sorted((sum(d.iops for d in c.directions), c.client) for c in clients)
    values = [t for t, _ in totals[1:]]
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
                   disk_util_pct=max(utils) if utils else None, disks=tuple(sorted({d.name for d in client.disks})),
                   fio_cores=fio_cores([client]), reporting=1,
                   ios_per_s=sum(d.iops for d in client.directions),
                   bytes_per_s=None if not moves_data(case.workload.rw)
                   else sum(d.bw_bytes_per_s for d in client.directions))


def observations(repetitions: Iterable[StoredRepetition], per_client: bool = False,
                 host_cpus: Mapping[int, int | None] | None = None,
                 run_hosts: Mapping[int, str] | None = None) -> list[Observation]:
    """One observation per stored repetition and direction. Several clients are merged exactly (I/O summed,
    bins merged); ``per_client`` adds each client's own observations (``client`` names it) after the merged
    ones of its repetition."""
    out: list[Observation] = []
    for rep in repetitions:
        ok = rep.status == Status.OK
        merged = merge_clients(rep.clients, size_based=is_size_based(rep.case.workload.rw)) if ok else ()
        utils = [d.util_pct for c in rep.clients for d in c.disks]
        slowest, slowest_pct = slowest_client(rep.clients)
        figures = ClientFigures(
            cpu_usr_pct=sum(c.cpu_usr_pct for c in rep.clients) if rep.clients else None,
            cpu_sys_pct=sum(c.cpu_sys_pct for c in rep.clients) if rep.clients else None,
            disk_util_pct=max(utils) if utils else None, fio_cores=fio_cores(rep.clients) if ok else None,
            disks=tuple(sorted({d.name for c in rep.clients for d in c.disks})),
            reporting=len(rep.clients), start_skew_s=rep.start_skew_s, slowest=slowest,
            slowest_pct_of_median=slowest_pct,
            ios_per_s=sum(m.iops for m in merged) if merged else None,
            # a create, stat or delete, an object deleted, moves no data: its "bandwidth" is operations x bs
            bytes_per_s=(sum(m.bw_bytes_per_s for m in merged) if merged and moves_data(rep.case.workload.rw)
                         else None),
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
                    write_check=rep.write_check, host_cpus=(host_cpus or {}).get(rep.run_id),
                    filesystem=rep.filesystem))
    return out


# (run id, repetition index, stretch): repetition i of a run that alternated its cases is round i, run in one
# stretch of the run's order (``_stretches``)
Round = tuple[int, ...]


def _stretches(observations: Iterable[Observation]) -> dict[tuple[int, str, int], int]:
    """(run, case id, repetition index) -> the stretch of its run it ran in: the run's repetitions in the order they
    started, a new stretch wherever the repetition index changes. Round i of an interleaved run is one stretch (a
    lab group's, a resumed run's rest of it); repetitions that ran apart from their round (points a resume added,
    run after every round; a failed repetition run again) are in another: two repetitions pair only within one,
    else "paired, drift cancels" would be said of points measured an hour apart."""
    by_run: dict[int, dict[tuple[str, int], float]] = {}
    for o in observations:
        found = by_run.setdefault(o.run_id, {})
        key = (o.case.case_id, o.rep_index)
        found[key] = min(found.get(key, o.started_at_s), o.started_at_s)
    out: dict[tuple[int, str, int], int] = {}
    for run, started in by_run.items():
        stretch, previous = -1, None
        # repetitions that started at one time (imported, or made up) in round order: nothing says they ran apart
        for (case_id, rep_index), _ in sorted(started.items(), key=lambda item: (item[1], item[0][1], item[0][0])):
            if rep_index != previous:
                stretch, previous = stretch + 1, rep_index
            out[(run, case_id, rep_index)] = stretch
    return out


def alternated_rounds(observations: Iterable[Observation], runs: Container[int]
                      ) -> dict[tuple[str, str], dict[Round, Observation]]:
    """Each point's (case id, direction) ok observations (all clients merged) by round, for the points whose
    repetitions all ran in one run of ``runs`` (runs that alternated their cases round by round): repetition i of
    two such points of one run ran in the same round, next to each other in a balanced order, so their ratio
    cancels slow drift and carry-over; a round is keyed by its stretch of the run too (``_stretches``), so only
    repetitions that ran together pair. The one pairing rule of `compare` and of the curves (`stats.trend`);
    `stats.sequential.paired_values` pairs two points' values from it."""
    chosen = [o for o in observations if not o.client]
    stretches = _stretches(chosen)
    found: dict[tuple[str, str], dict[Round, Observation]] = {}
    case_runs: dict[str, set[int]] = {}
    for o in chosen:
        case_runs.setdefault(o.case.case_id, set()).add(o.run_id)
        if o.ok and o.direction is not None:
            stretch = stretches[(o.run_id, o.case.case_id, o.rep_index)]
            found.setdefault((o.case.case_id, o.direction.value), {})[(*o.repetition, stretch)] = o
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
