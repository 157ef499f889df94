"""The plan reference, generated from the schema (docs/plan-reference.md). Pure."""

from __future__ import annotations

from storbench.config import (
    MANAGED_FIO_OPTIONS,
    BlockTargetConfig,
    CephfsTargetConfig,
    CephLabConfig,
    CompareConfig,
    ExpectConfig,
    HostsConfig,
    HostsLabConfig,
    K8sLabConfig,
    LabConfig,
    NfsLabConfig,
    NfsTargetConfig,
    PathTargetConfig,
    PlanConfig,
    PreconditionConfig,
    PrometheusConfig,
    PvcTargetConfig,
    RbdTargetConfig,
    RepeatConfig,
    S3TargetConfig,
    SearchConfig,
    SteadyStateConfig,
    TelemetryConfig,
    VolumeLabConfig,
    WorkloadConfig,
)
from storbench.config.faults import CheckWritesConfig, FaultConfig
from storbench.fio.allowlist import ALLOWED_FIO_OPTIONS, ENGINES_BY_TARGET_KIND, REFUSAL_REASONS
from storbench.model.ceph_options import CEPH_OPTIONS
from storbench.reference_tables import option_grammar, table
from storbench.telemetry.prometheus import DEFAULT_QUERIES

AT_WRITE = (" (applied as BlueStore writes: swept only with writes, as the lab writes each target once, under "
            "its first case's options)")


def plan_reference_markdown() -> str:
    out = [
        "# Plan reference",
        "",
        "Generated from storbench's schema (`src/storbench/config/schema.py`); a test keeps it current.",
        "Sizes: `4k`, `64KiB`, `1m`, `256MiB`, `2g` (powers of 1024, as fio) or `10GB`, `500MB`, `4kB` "
        "(powers of 1000: 10GB is 10^10 bytes); a lower-case unit such as `10gb` is refused as ambiguous "
        "(write `10GiB` or `10GB`). "
        "Options under `fio:` go to fio as written, in fio's units. Durations: `5s`, `500ms`, `2m`.",
        "Unknown keys are errors, with a \"did you mean\" hint.",
        "",
        "## Top level",
        "",
        *table(PlanConfig),
        "",
        "## Targets",
        "",
        "### `kind: path`",
        "",
        PathTargetConfig.__doc__ or "",
        "",
        *table(PathTargetConfig),
        "",
        "### `kind: block`",
        "",
        BlockTargetConfig.__doc__ or "",
        "Writes (write, randwrite, rw, randrw, trim ...) are refused without `destructive: true`, and refused "
        "anyway while the device or one of its partitions is mounted, used as swap, or held by device-mapper.",
        "",
        *table(BlockTargetConfig),
        "",
        "### `expect` (every target kind)",
        "",
        ExpectConfig.__doc__ or "",
        "",
        *table(ExpectConfig),
        "",
        "### `precondition` (every target kind)",
        "",
        PreconditionConfig.__doc__ or "",
        "It runs on each lab bring-up before the target's first measurement (on each fresh cluster of "
        "`bring_up: each_repetition`), with the largest numjobs, clients and size of that target's cases, and is "
        "stored with the run (`storbench show` lists it). `storbench plan` shows its estimated time.",
        "",
        *table(PreconditionConfig),
        "",
        "```yaml",
        "targets:",
        "  ssd: {kind: path, path: /mnt/ssd, size: 1GiB, precondition: {fill: 2x, bs: 128k}}",
        "  rbd: {kind: rbd, pool: bench, size: 1GiB, precondition: {workload: randwrite 4k, for: 10m}}",
        "```",
        "",
        "### `kind: rbd`",
        "",
        RbdTargetConfig.__doc__ or "",
        "The job uses `ioengine=rbd` (whatever `workload.ioengine` says) with `CEPH_CONF` set to the cluster's conf.",
        "",
        *table(RbdTargetConfig),
        "",
        "### `kind: nfs`",
        "",
        NfsTargetConfig.__doc__ or "",
        "The job uses `ioengine=nfs` with a fio built with libnfs (`storbench setup --labs`, or "
        "`$STORBENCH_FIO_NFS`); storbench lays the files out first (fio 3.33's nfs engine creates files only "
        "for rw=write).",
        "",
        *table(NfsTargetConfig),
        "",
        "### `kind: cephfs`",
        "",
        CephfsTargetConfig.__doc__ or "",
        "",
        *table(CephfsTargetConfig),
        "",
        "### `kind: pvc`",
        "",
        PvcTargetConfig.__doc__ or "",
        "",
        *table(PvcTargetConfig),
        "",
        "### `kind: s3`",
        "",
        S3TargetConfig.__doc__ or "",
        "",
        *table(S3TargetConfig),
        "",
        "## `clients` and `hosts`",
        "",
        "`clients: N` (a list sweeps) runs each case on N fio servers at once; `hosts` names them, or `lab.hosts` "
        "makes them on this machine. For `pvc` targets the clients are pods.",
        "",
        *table(HostsConfig),
        "",
        "## `workload`",
        "",
        WorkloadConfig.__doc__ or "",
        "",
        *table(WorkloadConfig, sweep=True),
        "",
        "**Metadata operations** (`rw: create`, `stat`, `delete`) run fio's `filecreate`, `filestat` and "
        "`filedelete` engines on `path` and `cephfs` targets: each job creates, stats or deletes each of its `files` "
        "once per repetition (size based; `runtime` only caps it), and every operation's latency is recorded, so "
        "IOPS are operations per second and the percentiles are exact as for block I/O. They work in a private "
        "directory storbench makes in the target (`storbench-files/<operation>`, mode 0700) and removes after the "
        "run; `create` makes empty files and removes them after each repetition, `stat` finds files of `file_size` "
        "laid out before fio measures, `delete` empty ones (its job writes: fio lays a written file out empty). "
        "`bs`, `iodepth`, `direct` and `ramp` do not apply (points that "
        "differ only there are one case); load them with `numjobs` (or `clients`). Give enough files that a job "
        "runs for a second or more: fio times a job in whole milliseconds.",
        "",
        "### `workload.fio`: other fio options",
        "",
        "A plan is untrusted input, and storbench runs as root: only options that shape the I/O storbench already "
        "aims at its own test files pass through, each value in its option's grammar (checked again when the job "
        "file is written, and against `fio --cmdhelp`/`fio --enghelp=ENGINE` of the fio in use). A list sweeps.",
        "",
        "| option | value | what it does |",
        "|---|---|---|",
        *(f"| `{name}` | {option.grammar.name} | {option.what}"
          + (f" (only with ioengine {', '.join(sorted(option.engines))})" if option.engines else "") + " |"
          for name, option in sorted(ALLOWED_FIO_OPTIONS.items())),
        "",
        "Set by storbench, so not accepted here: "
        + ", ".join(f"`{name}`" for name in sorted(MANAGED_FIO_OPTIONS)) + ".",
        "",
        "Every other option is refused, with the reason; for example: "
        + "; ".join(f"{reason}: " + ", ".join(f"`{n}`" for n in sorted(names)) for reason, names in REFUSAL_REASONS)
        + ".",
        "",
        "Engines per target kind (`workload.ioengine`): "
        + "; ".join(f"`{kind}`: " + ", ".join(f"`{e}`" for e in engines)
                    for kind, engines in ENGINES_BY_TARGET_KIND.items())
        + ". rbd and nfs targets always use their own engine; `exec` and network engines are never accepted.",
        "",
        "## `lab`",
        "",
        LabConfig.__doc__ or "",
        "",
        "### `lab.ceph`",
        "",
        CephLabConfig.__doc__ or "",
        "The parameters are stored with each result (`lab` field) and can be used in `exclude` rules and `compare` "
        "selectors, e.g. `--baseline pool_size=2 --candidate pool_size=3`. How a swept value is run (`storbench "
        "plan` says it per axis):",
        "",
        "- `pool_size`: one cluster holds a pool per value side by side; the values alternate on it (A B B A).",
        "- `osd_cpus`, `osd_cpuset`: a cgroup per OSD daemon with that CPU quota or those CPUs, changed on the "
        "running cluster at once (no restart); the values alternate on one cluster (A B B A).",
        "- `cache_size`, `osd_memory_target` and every `config` option: applied to the running cluster with `ceph "
        "config set` and an OSD restart before each value's turn (waiting for all PGs active+clean, then read back "
        "from every OSD's admin socket); the values alternate on one cluster (A B B A).",
        "- `osds`, `osd_size`, `objectstore`: each value needs a cluster of its own (a bring-up takes about 6 s "
        "for 3 OSDs). With `bring_up: once` each is brought up once and measured: the setting is confounded with "
        "that cluster instance and with time, and `compare` says so. With `bring_up: each_repetition` a fresh "
        "cluster per value and round, in the order A B B A: the instance is sampled, `compare` pairs the rounds, "
        "and `repeat: {until: decided}` can decide such a setting. With `bring_up: side_by_side` the clusters "
        "are up at once on their own ports and alternate A B B A: time cancels, each value is one instance.",
        "",
        *table(CephLabConfig, sweep=True),
        "",
        "```yaml",
        "targets:",
        "  rbd: {kind: rbd, pool: bench, image: img, size: 1GiB}",
        "lab:",
        "  ceph: {osds: 3, pool_size: [2, 3]}",
        "```",
        "",
        "#### Ceph options (`lab.ceph.config`)",
        "",
        "Only these OSD options may be set (a plan is untrusted and the lab runs as root: options that name paths "
        "are never accepted). Sizes as elsewhere (`1GiB`).",
        "",
        "| option | value | meaning |",
        "|---|---|---|",
        *(f"| `{o.name}` | {option_grammar(o)} | {o.help}{AT_WRITE if o.at_write else ''} |"
          for o in CEPH_OPTIONS.values()),
        "",
        "### `lab.hosts`",
        "",
        HostsLabConfig.__doc__ or "",
        "",
        *table(HostsLabConfig),
        "",
        "### `lab.k8s`",
        "",
        K8sLabConfig.__doc__ or "",
        "",
        *table(K8sLabConfig),
        "",
        "### `lab.nfs`",
        "",
        NfsLabConfig.__doc__ or "",
        "It takes no parameters: `lab: {nfs: {}}`. `kind: nfs` targets without a url use it.",
        "",
        "### `lab.volume`",
        "",
        VolumeLabConfig.__doc__ or "",
        "",
        *table(VolumeLabConfig),
        "",
        "```yaml",
        "targets:",
        "  capped: {kind: block}",
        "lab:",
        "  volume: {size: 2GiB, iops: 3000}",
        "```",
        "",
        "## `telemetry`",
        "",
        TelemetryConfig.__doc__ or "",
        "On by default: host CPU by mode (/proc/stat), the CPU of the named processes (/proc/PID/stat), every "
        "block device (/proc/diskstats), network interfaces (/proc/net/dev) and memory, every `interval`, "
        "summarised over fio's measured window; OSD counters from Ceph admin sockets where there are any. "
        "The bottleneck verdict of every point is judged from them.",
        "",
        *table(TelemetryConfig),
        "",
        "### `telemetry.prometheus`",
        "",
        PrometheusConfig.__doc__ or "",
        "Built-in queries (`$rate` is the window each value is a rate over: see `rate_window`): "
        + "; ".join(f"`{name}`: `{query}`" for name, query in DEFAULT_QUERIES).replace("|", "\\|") + ".",
        "",
        *table(PrometheusConfig),
        "",
        "```yaml",
        "telemetry:",
        "  processes: [fio, ceph-osd, ganesha.nfsd]",
        "  client_ceiling: true",
        "  prometheus: {url: http://prometheus.example:9090}",
        "```",
        "",
        "## `faults`: a part fails during the measured section",
        "",
        FaultConfig.__doc__ or "",
        "Every repetition of every case gets the plan's faults, at the same times. A plan may only name what a lab "
        "of its own offers (faults on your own systems are not a plan's to ask): the volume lab offers `freeze` "
        "(every I/O held until the thaw), `lose-writes` (a copy kept at the fault is served again at the "
        "restore) and `throttle` (`to:` an IOPS cap, its own caps again at the restore); a Ceph lab `kill`, "
        "`freeze`, `stop` and `out` on `osd.N`, and with `lab.ceph.hosts` on `host.N` (every OSD of that "
        "emulated host); the NFS lab `cut` (its links down), `crash` (SIGKILL, started again at the restore) and "
        "`stop` (SIGTERM, a clean stop; started again) on `server`; the hosts lab `cut` on `client.N` (one fio "
        "server's link down) and `slow` (`to:` a link rate, e.g. `{at: 10s, do: slow, on: client.2, to: 10Mbit, "
        "restore_after: 5s}`); the Kubernetes lab `delete` on `client.N` (that client's fio pod deleted, made "
        "again at once on its claim for the rest of the measured section: its gap is the time to the new pod's "
        "first I/O), `fail` on `node.N` (the node powered off: its pods made again elsewhere once Kubernetes "
        "deletes them, see `lab.k8s.out_of_service_after`; on again after the repetition) and `taint` on `node.N` "
        "(Kubernetes' out-of-service taint: its pods deleted and their volumes detached). "
        "`storbench plan` lists what the plan's labs offer and shows when each fault "
        "happens. With `lab.ceph`, the cluster's placement groups are watched once a second through each "
        "repetition and its healing: the time to every PG active+clean after the fault is a figure of its own.",
        "",
        *table(FaultConfig),
        "",
        "```yaml",
        "lab:",
        "  volume: {size: 1GiB, iops: 3000}",
        "faults:",
        "  - {at: 10s, do: freeze, on: volume, restore_after: 5s}",
        "```",
        "",
        "## `check_writes`: nothing acknowledged lost",
        "",
        CheckWritesConfig.__doc__ or "",
        "Its writer runs on this machine: path and cephfs targets get a file of its own in their directory "
        "(`storbench.check`, removed after each repetition); a block target needs a `size` (fio's region) and room "
        "past it on the device, which the writer zeroes before each repetition; an rbd target gets an image of "
        "its own, `<image>.check` in its pool (through librbd), removed after each repetition. `show` and the "
        "report's failover table say how many writes were acknowledged and how many blocks were lost, stale, torn "
        "or corrupt, with the first bad offsets (definitions: "
        "`storbench docs methodology \"nothing acknowledged lost\"`).",
        "",
        *table(CheckWritesConfig),
        "",
        "```yaml",
        "targets:",
        "  volume: {kind: block, size: 900MiB}",
        "lab:",
        "  volume: {size: 1GiB, iops: 3000}",
        "faults:",
        "  - {at: 10s, do: lose-writes, on: volume, restore_after: 5s}",
        "check_writes: {blocks: 4096, bs: 4k}",
        "```",
        "",
        "## `repeat` and `compare`: stop when the answer is known",
        "",
        "`repeat: N` runs every case N times. `repeat: {min, max, until}` runs balanced rounds instead (every case "
        "once per round, the order alternating round by round) and looks after each round from `min` on, with a "
        "stopping rule that stays valid however often it looks (`storbench docs methodology paired-changes`).",
        "",
        RepeatConfig.__doc__ or "",
        "",
        *table(RepeatConfig),
        "",
        "### `compare`",
        "",
        CompareConfig.__doc__ or "",
        "With `until: decided`, both sides must run on one cluster (a pool-size sweep does; an OSD-count sweep does "
        "not). With a fixed `repeat` they need not: `compare` then says what else is in the change.",
        "",
        *table(CompareConfig),
        "",
        "```yaml",
        "repeat: {min: 3, max: 20, until: decided}",
        "compare: {baseline: pool_size=2, candidate: pool_size=3, metrics: [iops, lat_p99_ns], margin: 5%}",
        "```",
        "",
        "## `steady_state`: measure until the point is steady",
        "",
        SteadyStateConfig.__doc__ or "",
        "Each round is one repetition of the point, run back to back; `steady_state` replaces `repeat`. "
        "`storbench show` and the report mark points that never became steady, and call a point steady only where "
        "its level's change across the window and the rounds after it is shown within +-10 % (90 % interval; "
        "otherwise \"steady by SNIA's rule\", with the change); the report plots each point's metric per round "
        "with the window, its fitted line and the rounds after it.",
        "",
        *table(SteadyStateConfig),
        "",
        "```yaml",
        "steady_state: {metric: iops, window: 5, range: 20%, slope: 10%, max_rounds: 25, confirm: 5}",
        "```",
        "",
        "## `search`: the saturation point without the whole grid",
        "",
        SearchConfig.__doc__ or "",
        "The cases of every grid value exist (`storbench plan` lists them); `run` measures the values the search "
        "asks for, one at a time with all its repetitions, prints its answer and how many grid values it "
        "measured, and stores them like any other case, so `show`, `saturation`, `compare` and `report` work "
        "on them. A point meets the objective when its latency interval is within the limit, misses when the "
        "interval is above it; one that straddles the limit counts as missed. A mixed workload meets it only "
        "when reads and writes both do. `repeat` must be a number (3 or more gives each point an interval).",
        "",
        *table(SearchConfig),
        "",
        "```yaml",
        "repeat: 3",
        "search: {axis: iodepth, range: [1, 256], slo: p99<=10ms}",
        "```",
        "",
        "## `exclude`",
        "",
        "A list of rules. Each rule maps sweep parameters (`target`, `rw`, `bs`, `iodepth`, `numjobs`, `runtime`, "
        "`ramp`, `direct`, `ioengine`, `rwmixread`, a `workload.fio` option, or a `lab.ceph` parameter) to a "
        "value or a list of values; "
        "a point of the sweep is dropped when it matches every key of some rule. A rule naming a parameter or value "
        "the plan never sweeps is an error.",
        "",
        "```yaml",
        "exclude:",
        "  - {rw: randrw, bs: [1m, 4m]}   # no mixed large-block points",
        "  - {target: nvme, iodepth: 1}",
        "```",
        "",
    ]
    return "\n".join(out)
