"""The Ceph OSD options a plan may set or sweep (`lab.ceph.config`), each with its value grammar. Pure.

A plan is untrusted and the lab runs as root: an option naming a path (admin socket, log file, keyring, data
directory) would let a plan write where it likes. So options are allow-listed, like fio's, and only those that
tune performance are listed. Values are checked against their grammar and handed to `ceph config set osd NAME
VALUE` as one argument (never through a shell); Ceph checks them again.

Every option here is applied on a running cluster: `ceph config set` (for the OSDs, or for every daemon when the
monitors read it too), then the OSDs restart and the lab waits for all PGs active+clean, then the value is read
back from every OSD's admin socket.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from storbench.units import parse_size_bytes

OptionKind = Literal["size", "int", "float", "bool", "choice"]


@dataclass(frozen=True)
class CephOption:
    name: str
    kind: OptionKind
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    section: str = "osd"  # who it is set for in the config database: "global" when the monitors read it too
    at_write: bool = False  # BlueStore applies it as it writes a block: data written before keeps the old value's


_OPTIONS = (
    CephOption("bluestore_cache_size", "size", "BlueStore cache per OSD (turns bluestore_cache_autotune off, as "
               "Ceph honours it only then)", minimum=16 << 20),
    CephOption("bluestore_cache_autotune", "bool", "size BlueStore's caches from osd_memory_target"),
    CephOption("bluestore_cache_meta_ratio", "float", "share of the cache for onode metadata", 0, 1),
    CephOption("bluestore_cache_kv_ratio", "float", "share of the cache for RocksDB", 0, 1),
    CephOption("bluestore_prefer_deferred_size_hdd", "size", "writes up to this size go through the WAL first",
               minimum=0),
    CephOption("bluestore_prefer_deferred_size_ssd", "size", "writes up to this size go through the WAL first",
               minimum=0),
    CephOption("bluestore_deferred_batch_ops", "int", "deferred writes batched before submitting", 0, 65536),
    CephOption("bluestore_throttle_bytes", "size", "bytes in flight before BlueStore throttles", minimum=0),
    CephOption("bluestore_throttle_deferred_bytes", "size", "deferred bytes in flight before throttling",
               minimum=0),
    CephOption("bluestore_csum_type", "choice", "checksum of each block",
               choices=("none", "crc32c", "crc32c_16", "crc32c_8", "xxhash32", "xxhash64"), at_write=True),
    CephOption("bluestore_compression_mode", "choice", "when BlueStore compresses",
               choices=("none", "passive", "aggressive", "force"), at_write=True),
    CephOption("bluestore_compression_algorithm", "choice", "how BlueStore compresses",
               choices=("snappy", "zlib", "zstd", "lz4"), at_write=True),
    CephOption("osd_op_num_shards", "int", "op queue shards per OSD (the lab's default: 1)", 1, 64),
    CephOption("osd_op_num_threads_per_shard", "int", "worker threads per shard (the lab's default: 2)", 1, 32),
    CephOption("osd_op_queue", "choice", "the OSD's op scheduler", choices=("wpq", "mclock_scheduler")),
    CephOption("osd_mclock_profile", "choice", "mClock's built-in profile",
               choices=("balanced", "high_client_ops", "high_recovery_ops")),
    CephOption("osd_client_message_cap", "int", "client messages in flight per OSD", 0, 1 << 20),
    CephOption("osd_client_message_size_cap", "size", "client message bytes in flight per OSD", minimum=0),
    CephOption("ms_async_op_threads", "int", "messenger worker threads", 1, 24),
    # failure detection and recovery (what a fault's blackout and the recovery after it depend on)
    CephOption("osd_heartbeat_grace", "int", "seconds without a heartbeat before an OSD's peers report it down "
               "(the monitors read it too: set for every daemon)", 2, 600, section="global"),
    CephOption("osd_heartbeat_interval", "int", "seconds between heartbeats to peers", 1, 60, section="global"),
    CephOption("osd_recovery_max_active", "int", "recovery operations in flight per OSD", 0, 1000),
    CephOption("osd_recovery_sleep", "float", "seconds of sleep between recovery operations", 0, 10),
    CephOption("osd_max_backfills", "int", "backfills to or from one OSD at once", 1, 1000),
    CephOption("osd_recovery_op_priority", "int", "priority of recovery operations (client ops: 63)", 1, 63),
)
CEPH_OPTIONS: dict[str, CephOption] = {option.name: option for option in _OPTIONS}

# Options that have a lab key of their own, with more than the bare option behind it.
OWN_KEYS = {"osd_memory_target": "lab.ceph.osd_memory_target"}

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,79}")


def option_value(name: str, value: object) -> int | str:
    """A plan's value of option ``name`` in the form Ceph reads (bytes and integers as int, the rest as text);
    ValueError (with the grammar) for anything else."""
    option = CEPH_OPTIONS[name]
    if option.kind == "bool":
        if isinstance(value, bool):
            return "true" if value else "false"
        raise ValueError(f"{name} takes true or false, not {value!r}")
    if option.kind == "choice":
        if isinstance(value, str) and value in option.choices:
            return value
        raise ValueError(f"{name} takes one of {', '.join(option.choices)}, not {value!r}")
    if isinstance(value, bool):
        raise ValueError(f"{name} takes a number, not {value!r}")
    number: float
    if option.kind == "size":
        number = parse_size_bytes(value)
    elif option.kind == "int":
        if not isinstance(value, int):
            raise ValueError(f"{name} takes a whole number, not {value!r}")
        number = value
    else:
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{name} takes a number, not {value!r}")
        number = float(value)
    if option.minimum is not None and number < option.minimum:
        raise ValueError(f"{name} must be at least {option.minimum:g}, not {value!r}")
    if option.maximum is not None and number > option.maximum:
        raise ValueError(f"{name} must be at most {option.maximum:g}, not {value!r}")
    return repr(number) if option.kind == "float" else int(number)


def config_section(name: str) -> str:
    """Who an option is set for in the monitors' config database: "osd", or "global" for those the monitors read
    too (`osd_heartbeat_grace`)."""
    option = CEPH_OPTIONS.get(name)
    return option.section if option is not None else "osd"


def same_value(wanted: str, shown: str) -> bool:
    """Whether Ceph's ``shown`` value (from an admin socket) is the ``wanted`` one: numbers compared as numbers
    (Ceph prints 0.4 as 0.400000), the rest as text."""
    if wanted == shown:
        return True
    try:
        return math.isclose(float(wanted), float(shown), rel_tol=1e-6)
    except ValueError:
        return wanted.lower() == shown.lower()
