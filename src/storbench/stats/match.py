"""The one `KEY=VALUE` matcher behind `--where`, `--baseline`/`--candidate` and report selectors. Pure.

A key is a field of the export record that identifies a result (`target`, `rw`, `bs`, `direct`, `direction`,
`status`, ...), a metric (`iops`, ...), a lab setting of the case's typed lab point (`pool_size`, `osd_size`,
`cephfs`), `run` or `tag`. Values are compared by type: sizes as sizes (`bs=4k` is `bs=4096` is `bs=4KiB`,
`osd_size=2GiB`), booleans as booleans (`true`, `1`, `yes`), numbers as numbers, text as text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

from storbench.model import K8S_SETTINGS, NEVER, is_object, size_setting
from storbench.model.ceph_options import CEPH_OPTIONS
from storbench.stats.metric_values import METRIC_VALUES, busiest_names, lat_percentiles_from, observed_storage
from storbench.stats.observations import PERCENTILES, Observation
from storbench.units import (
    RENAMED_METRICS,
    format_block_size,
    format_link_rate,
    link_rate_bits,
    parse_duration_s,
    parse_size_bytes,
)


class Kind(StrEnum):
    TEXT = "text"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    SIZE = "size"
    LINK = "link"  # bits per second: 1Gbit, 100Mbit
    DURATION = "duration"  # seconds: 1.5, 1500ms, 2s, 1m


def _pairs_text(pairs: Sequence[tuple[str, object]]) -> str:
    return " ".join(f"{k}={v}" for k, v in pairs)


def _latency(prefix: str, stat: str) -> Callable[[Observation], object]:
    def value(o: Observation) -> object:
        if o.measurement is None:
            return None
        summary = o.measurement.lat if prefix == "lat" else o.measurement.clat
        return getattr(summary, f"{stat}_ns")  # stddev_ns, min_ns, max_ns of LatencySummary
    return value


def _clat_percentile(percent: float) -> Callable[[Observation], object]:
    def value(o: Observation) -> object:
        return o.measurement.clat.percentile_ns(percent) if o.measurement else None
    return value


def _write_check(name: str) -> Callable[[Observation], object]:
    def value(o: Observation) -> object:
        check = o.write_check
        return None if check is None or check.error else getattr(check, name)  # a field of WriteCheck
    return value


# Fields a result is matched on, every field of the export record: (how its value compares, its value).
FIELDS: Mapping[str, tuple[Kind, Callable[[Observation], object]]] = {
    "case_id": (Kind.TEXT, lambda o: o.case.case_id),
    "run_id": (Kind.INT, lambda o: o.run_id),
    "target": (Kind.TEXT, lambda o: o.case.target.name),
    "target_kind": (Kind.TEXT, lambda o: o.case.target.kind),
    "rw": (Kind.TEXT, lambda o: o.case.workload.rw),
    "rwmixread": (Kind.INT, lambda o: o.case.workload.rwmixread),
    "bs": (Kind.SIZE, lambda o: o.case.workload.bs_bytes),
    "bs_bytes": (Kind.SIZE, lambda o: o.case.workload.bs_bytes),
    "iodepth": (Kind.INT, lambda o: o.case.workload.iodepth),
    "numjobs": (Kind.INT, lambda o: o.case.workload.numjobs),
    "clients": (Kind.INT, lambda o: o.case.clients),
    "ioengine": (Kind.TEXT, lambda o: o.case.workload.ioengine),
    "direct": (Kind.BOOL, lambda o: o.case.workload.direct),
    "runtime_s": (Kind.DURATION, lambda o: o.case.workload.runtime_s),
    "ramp_s": (Kind.DURATION, lambda o: o.case.workload.ramp_s),
    "size_bytes": (Kind.SIZE, lambda o: o.case.workload.size_bytes),
    "files": (Kind.INT, lambda o: o.case.workload.files),
    "dirs": (Kind.INT, lambda o: o.case.workload.dirs or (1 if o.case.workload.file_size_bytes else None)),
    "objects": (Kind.INT, lambda o: o.case.workload.files if is_object(o.case.workload.rw) else None),
    "file_size": (Kind.SIZE, lambda o: o.case.workload.file_size_bytes),
    "file_size_bytes": (Kind.SIZE, lambda o: o.case.workload.file_size_bytes),
    "fio_options": (Kind.TEXT, lambda o: _pairs_text(o.case.workload.fio_options)),
    "lab": (Kind.TEXT, lambda o: _pairs_text(o.case.lab.pairs())),
    "repeat": (Kind.INT, lambda o: o.rep_index + 1),  # from 1, as progress and exports number it
    "direction": (Kind.TEXT, lambda o: o.direction_name),
    "status": (Kind.TEXT, lambda o: o.status.value),
    "fio_version": (Kind.TEXT, lambda o: o.fio_version),
    "client": (Kind.TEXT, lambda o: o.client),
    "error": (Kind.TEXT, lambda o: o.error),
    "started_at_s": (Kind.FLOAT, lambda o: o.started_at_s),
    "finished_at_s": (Kind.FLOAT, lambda o: o.finished_at_s),
    "total_ios": (Kind.INT, lambda o: o.measurement.total_ios if o.measurement else None),
    "io_bytes": (Kind.SIZE, lambda o: o.measurement.io_bytes if o.measurement else None),
    **{f"{prefix}_{stat}_ns": (Kind.FLOAT, _latency(prefix, stat)) for prefix in ("lat", "clat")
       for stat in ("stddev", "min", "max")},
    **{f"clat_{suffix}_ns": (Kind.FLOAT, _clat_percentile(percent)) for percent, suffix in PERCENTILES},
    "lat_percentiles_from": (Kind.TEXT, lambda o: lat_percentiles_from(o.measurement)),
    "clat_mean_ns": (Kind.FLOAT, lambda o: o.measurement.clat.mean_ns if o.measurement else None),
    "disk_busiest": (Kind.TEXT, lambda o: busiest_names(o)[0]),
    "net_busiest": (Kind.TEXT, lambda o: busiest_names(o)[1]),
    "node_busiest": (Kind.TEXT, lambda o: busiest_names(o)[2]),
    "storage_layer": (Kind.TEXT, lambda o: found.layer if (found := observed_storage(o)) is not None else ""),
    "process_cpu_cores": (Kind.TEXT, lambda o: _pairs_text(o.telemetry.process_cpu_cores if o.telemetry else ())),
    "mem_used_bytes": (Kind.SIZE, lambda o: o.telemetry.mem_used_bytes if o.telemetry else None),
    "page_cache_bytes": (Kind.SIZE, lambda o: o.telemetry.page_cache_bytes if o.telemetry else None),
    "clients_reporting": (Kind.INT, lambda o: o.fio.reporting),
    "slowest_client": (Kind.TEXT, lambda o: o.fio.slowest),
    **{name: (Kind.FLOAT, value) for name, value in METRIC_VALUES.items()},
    # a plan with faults: what the repetition's fault did (`stats.failover_points`; its figures: METRIC_VALUES)
    "fault": (Kind.TEXT, lambda o: f"{f.action} {f.target}" if o.failover and (f := o.failover.fault) else ""),
    "recovery": (Kind.TEXT, lambda o: f.recovery.value if o.failover and (f := o.failover.figures) else ""),
    # a plan with `check_writes`: what its writer had acknowledged and the blocks found bad after the repetition
    **{f"writes_{name}": (Kind.INT, _write_check(name)) for name in ("acknowledged", "read_back", "lost", "stale",
                                                                      "torn", "corrupt")},
}
RUN_KEYS = ("run", "tag")
# The column names tables show, and the plan's own words, for the fields they stand for.
ALIASES: Mapping[str, str] = {"qd": "iodepth", "jobs": "numjobs", "dir": "direction", "runtime": "runtime_s",
                              "ramp": "ramp_s", "size": "size_bytes", "engine": "ioengine",
                              **RENAMED_METRICS}


def canonical_key(key: str) -> str:
    """``key`` as the matcher knows it: a table's column name (``qd``) or a plan's word (``runtime``) becomes
    its field."""
    return ALIASES.get(key, key)
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


def lab_keys(observations: Sequence[Observation]) -> list[str]:
    """The lab settings the observations' cases have (``pool_size``, ``cephfs``, ...), first seen first."""
    keys: dict[str, None] = {}
    for o in observations:
        keys.update((k, None) for k, _ in o.case.lab.pairs() if k != "lab")
    return list(keys)


def known_keys(observations: Sequence[Observation]) -> list[str]:
    return [*FIELDS, *lab_keys(observations), *RUN_KEYS]


def unknown_keys(keys: Sequence[str], observations: Sequence[Observation]) -> list[str]:
    """The keys that are neither fields (or their aliases), `run`/`tag`, nor a lab setting of any of the
    observations."""
    known = set(known_keys(observations))
    return [k for k in keys if canonical_key(k) not in known]


def _lab_setting(o: Observation, key: str) -> tuple[Kind, object] | None:
    """(kind, value) of a lab setting of the case's typed lab point; None when the case does not have it."""
    if key == "link":
        return None if o.case.lab.link_bits_per_s is None else (Kind.LINK, o.case.lab.link_bits_per_s)
    if key == "link_delay":
        return None if o.case.lab.link_delay_s is None else (Kind.FLOAT, o.case.lab.link_delay_s)
    k8s = o.case.lab.k8s
    if key in K8S_SETTINGS:
        if k8s is None:
            return None
        if key == "nodes":
            return Kind.INT, k8s.nodes
        after = k8s.out_of_service_after_s
        return (Kind.TEXT, NEVER) if after is None else (Kind.DURATION, after)
    volume = o.case.lab.volume
    volume_value = dict(volume.settings()).get(key) if volume is not None else None
    if volume_value is not None:
        return (Kind.SIZE if size_setting(key) else Kind.INT if isinstance(volume_value, int) else Kind.TEXT,
                volume_value)
    ceph = o.case.lab.ceph
    if ceph is None:
        return None
    if key == "cephfs":
        return Kind.BOOL, ceph.cephfs
    value = dict(ceph.settings()).get(key)
    if value is None:
        return None
    if (option := CEPH_OPTIONS.get(key)) is not None and option.kind == "float":  # 0 names 0.0
        return Kind.FLOAT, float(value)
    kind = Kind.SIZE if size_setting(key) else Kind.INT if isinstance(value, int) else Kind.TEXT
    return kind, value


def _read(kind: Kind, text: str) -> object:
    """``text`` (as people write it) as a value of a field of this kind; ValueError when it is none."""
    if kind == Kind.BOOL:
        if text.lower() not in (*TRUE, *FALSE):
            raise ValueError(f"{text} is not true or false")
        return text.lower() in TRUE
    readers: dict[Kind, Callable[[str], object]] = {Kind.SIZE: parse_size_bytes, Kind.INT: int, Kind.FLOAT: float,
                                                    Kind.DURATION: parse_duration_s, Kind.LINK: link_rate_bits}
    return readers[kind](text) if kind in readers else text


def value_matches(kind: Kind, actual: object, text: str) -> bool:
    """Whether ``text`` (as people write it) names the value ``actual`` of a field of this kind."""
    text = text.strip()
    if actual is None:
        return text.lower() in ("", "none")
    try:
        wanted = _read(kind, text)
    except ValueError:
        return False
    if kind == Kind.BOOL:
        return wanted == bool(actual)
    if kind == Kind.DURATION:
        return isinstance(actual, int | float) and isinstance(wanted, float) and abs(actual - wanted) < 1e-9
    return actual == wanted if kind in (Kind.SIZE, Kind.INT, Kind.FLOAT, Kind.LINK) else str(actual) == text


def matches(o: Observation, key: str, value: str, tags: Mapping[int, tuple[str, ...]]) -> bool:
    """Whether one observation has ``key=value``. Unknown keys match nothing (see ``unknown_keys``)."""
    if key == "run":
        return value_matches(Kind.INT, o.run_id, value)
    if key == "tag":
        return value in tags.get(o.run_id, ())
    key = canonical_key(key)
    field = FIELDS.get(key)
    if field is not None:
        kind, read = field
        return value_matches(kind, read(o), value)
    setting = _lab_setting(o, key)  # a Ceph setting or lab.ceph.config option
    return setting is not None and value_matches(setting[0], setting[1], value)


def select(observations: Sequence[Observation], pairs: Sequence[tuple[str, str]],
           tags: Mapping[int, tuple[str, ...]]) -> list[Observation]:
    """The observations for which every ``key=value`` pair holds."""
    return [o for o in observations if all(matches(o, k, v, tags) for k, v in pairs)]


STORED_VALUES_SHOWN = 12  # a field with more distinct values (latencies, times) lists these and a count


def _value_text(kind: Kind, value: object) -> str:
    """A stored value as one would write it after ``KEY=``: ``4k``, ``true``, ``1.5s``, ``1Gbit``."""
    if value is None:
        return "none"
    if kind == Kind.SIZE and isinstance(value, int):
        return format_block_size(value)
    if kind == Kind.BOOL:
        return "true" if value else "false"
    if kind == Kind.DURATION and isinstance(value, int | float):
        return f"{value:g}s"
    if kind == Kind.LINK and isinstance(value, int):
        return format_link_rate(value)
    return str(value)


def stored_values(observations: Sequence[Observation], key: str) -> list[str] | None:
    """The distinct values ``key`` has among ``observations``, as one would write them (sorted), or None for a
    key whose values are no list to choose from (a metric, a time, a tag)."""
    if key == "run":
        return [str(run) for run in sorted({o.run_id for o in observations})]
    key = canonical_key(key)
    field = FIELDS.get(key)
    found: dict[object, str] = {}
    for o in observations:
        if field is not None:
            kind, read = field
            if kind == Kind.FLOAT:
                return None
            value: object = read(o)
        else:
            setting = _lab_setting(o, key)
            if setting is None:
                continue
            kind, value = setting
        found.setdefault(value, _value_text(kind, value))
    return [found[v] for v in sorted(found, key=lambda v: (v is None, str(type(v)), v))]


# what a value of each kind is, for one that does not read as one
_KIND_WORDS = {Kind.SIZE: "a size (e.g. 4k, 64KiB, 1m)", Kind.INT: "a whole number", Kind.FLOAT: "a number",
               Kind.DURATION: "a duration (e.g. 30s, 500ms)", Kind.BOOL: "true or false"}


def _unread(key: str, value: str) -> str | None:
    """Why ``value`` cannot be a value of the field ``key`` ("4kb" for bs: the size parser's words); None when it
    reads."""
    kind = FIELDS.get(canonical_key(key), (Kind.TEXT, None))[0]
    if kind not in _KIND_WORDS or value.strip().lower() in ("", "none"):
        return None
    try:  # read as value_matches reads it
        _read(kind, value.strip())
    except ValueError as exc:
        return str(exc) if kind in (Kind.SIZE, Kind.DURATION) else f"{value} is not {_KIND_WORDS[kind]}"
    return None


def no_match_line(observations: Sequence[Observation], pairs: Sequence[tuple[str, str]],
                  tags: Mapping[int, tuple[str, ...]]) -> str:
    """Why ``pairs`` select nothing of ``observations``, in a line that leads somewhere: the first KEY=VALUE that
    alone matches nothing with the values that field has ("no results match ioengine=uring; stored values:
    io_uring, libaio"), or that each matches some results but not all together."""
    for key, value in pairs:
        if select(observations, [(key, value)], tags):
            continue
        line = f"no results match {key}={value}"
        if (unread := _unread(key, value)) is not None:  # `bs=4kb`, `iodepth=abc`: no value of the field at all
            return f"{line}: {unread}"
        listed = stored_values(observations, key)  # None: a metric, whose values are no list to choose from
        values = [v for v in listed or () if v]
        if values:
            more = len(values) - STORED_VALUES_SHOWN
            shown = ", ".join(values[:STORED_VALUES_SHOWN]) + (f" and {more} more" if more > 0 else "")
            line += f"; stored values: {shown}"
        elif listed is not None:  # a field no result has a value of ("client" of results summed over the clients)
            line += f"; no stored result has a {key}"
        return line
    together = " ".join(f"{k}={v}" for k, v in pairs)
    return f"no results match {together}: each matches some results, but none all of them together"
