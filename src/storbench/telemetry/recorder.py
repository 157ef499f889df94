"""Telemetry around one repetition (shell): start the sampler before fio, stop it after, query Prometheus
over the measured window, and hand everything to the pure assembly in ``collect``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from storbench.config import TelemetryConfig
from storbench.model import Case, RepetitionOutcome
from storbench.telemetry.collect import measured_window, repetition_telemetry
from storbench.telemetry.cycles import CycleCounter
from storbench.telemetry.proc import LinkRates
from storbench.telemetry.prometheus import queries_for, query_window
from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries, TelemetrySource
from storbench.telemetry.sources import (
    Sampler,
    ceph_admin_sockets,
    clock_ticks_per_s,
    fetch_prometheus_series,
    link_speeds_bits_per_s,
)

# Where a Ceph cluster on this host keeps its admin sockets when the plan does not say.
SYSTEM_CEPH_SOCKETS = ("/run/ceph/*.asok", "/var/run/ceph/*.asok")


class TelemetryRecorder:
    """One per lab session: knows what to sample; ``start``/``finish`` bracket each repetition."""

    def __init__(self, config: TelemetryConfig, ceph_socket_patterns: Sequence[str]) -> None:
        self.config = config
        patterns = config.ceph_admin_sockets if config.ceph_admin_sockets is not None else ceph_socket_patterns
        self.ceph_sockets = sorted({os.path.realpath(p) for p in ceph_admin_sockets(patterns)})
        self.clock_ticks = clock_ticks_per_s()
        self.links = link_speeds_bits_per_s()
        # interfaces whose rate a lab set (a shaped veth), from each moment on: before the repetition, at a fault
        self.shaped_bits_per_s: list[tuple[float, dict[str, int]]] = []
        self.queries = (queries_for(config.prometheus.queries, config.prometheus.builtin_queries)
                        if config.prometheus else [])
        self._sampler: Sampler | None = None
        self._beside: TelemetrySource | None = None
        self._cycles = CycleCounter(config.processes) if config.cycles else None
        self.link_problems: list[str] = []

    def links_shaped(self, rates_bits_per_s: dict[str, int], at_s: float | None = None) -> None:
        """The rates a lab has shaped interfaces to, from ``at_s`` (epoch seconds: a fault that changed them during
        the repetition; None: before it, from its start) until the next change."""
        if at_s is None:
            self.shaped_bits_per_s, self.link_problems = [(0.0, rates_bits_per_s)], []
        elif not self.shaped_bits_per_s or self.shaped_bits_per_s[-1][1] != rates_bits_per_s:
            self.shaped_bits_per_s.append((at_s, rates_bits_per_s))

    def links_shaped_by(self, read: Callable[[], dict[str, int]], at_s: float) -> None:
        """`links_shaped` with the rates ``read()`` gives after a fault; one that cannot be read is a problem of
        this repetition's telemetry, not of the fault (its intervals stay judged against the rates before)."""
        try:
            self.links_shaped(read(), at_s)
        except Exception as exc:  # a lab's state file unreadable: said with the telemetry
            self.link_problems.append(f"link rates after a fault not read: {exc}")

    def start(self, beside: TelemetrySource | None = None) -> None:
        """Start this host's sampler and ``beside`` (the executor's remote machines, `Executor.telemetry`)."""
        self._sampler = Sampler(self.config.interval, self.config.processes, self.config.pids, self.ceph_sockets)
        self._sampler.start()
        if self._cycles is not None:
            self._cycles.start()
        self._beside = beside
        if beside is not None:
            beside.start()

    def stop(self) -> None:
        """Stop sampling without recording (fio could not even start)."""
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler = None
        if self._cycles is not None:
            self._cycles.stop()
        if self._beside is not None:
            self._beside.stop()
            self._beside = None

    def finish(self, outcome: RepetitionOutcome, case: Case, ceiling_iops: float | None) -> RepetitionTelemetry:
        assert self._sampler is not None, "finish() without start()"
        readings = self._sampler.stop()
        self._sampler = None
        window = measured_window(outcome, case)
        remote: list[TelemetrySeries] = []
        problems = list(readings.problems)
        if self._cycles is not None:
            counted, uncounted = self._cycles.stop()
            remote.extend(counted)
            problems.extend(uncounted)
        if self._beside is not None:
            beside_series, beside_problems = self._beside.stop()
            self._beside = None
            remote.extend(beside_series)
            problems.extend(beside_problems)
        if self.config.prometheus is not None:
            prometheus = self.config.prometheus
            evaluated = query_window(window[0], window[1], prometheus.rate_window, prometheus.step)
            if isinstance(evaluated, str):
                problems.append(evaluated)
            else:
                queried, failed = fetch_prometheus_series(prometheus.url, self.queries, evaluated)
                remote.extend(queried)
                problems.extend(failed)
        return repetition_telemetry(window, readings.proc, readings.ceph, remote, ceiling_iops, self.clock_ticks,
                                    LinkRates(self.links, tuple(sorted(self.shaped_bits_per_s, key=lambda c: c[0]))),
                                    [*problems, *self.link_problems])
