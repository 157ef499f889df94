"""Lab configuration rendering (pure): what the Ceph and NFS labs are told, checked without daemons."""

from __future__ import annotations

import collections
import itertools
from dataclasses import replace

import pytest

from storbench.errors import UserError
from storbench.lab.ceph_conf import MIN_OSD_MEMORY_TARGET, CephLabSpec, ceph_spec_for, osd_options, render_ceph_conf
from storbench.lab.nfs_conf import (
    ANONYMOUS_UID,
    HOST_ADDRESS,
    SERVER_ADDRESS,
    NfsLabSpec,
    nfs_url,
    render_ganesha_conf,
)
from storbench.model import CephLabPoint, LabPoint, ScheduledRepetition, cluster_of


def _spec(**changes: object) -> CephLabSpec:
    """Three bluestore OSDs of 2 GiB and a size-3 pool, with ``changes``."""
    values: dict[str, object] = {"osds": 3, "osd_size_bytes": 2 << 30, "objectstore": "bluestore",
                                 "pools": (("rbd", 3),), **changes}
    return CephLabSpec(**values)  # type: ignore[arg-type]

def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
        elif line.strip():
            sections.setdefault(current, []).append(line)
    return sections


def test_ceph_conf_keeps_client_settings_out_of_global() -> None:
    sections = _sections(render_ceph_conf(_spec(), "f00", "/lab"))
    glob = "\n".join(sections["global"])
    # clients (fio's rbd engine, the CLI) read [global]: an admin socket there makes them collide
    assert "admin socket" not in glob and "log file" not in glob
    for daemon in ("mon", "mgr", "osd", "mds"):
        assert any(line.startswith("admin socket = /lab/run/") for line in sections[daemon])
    assert "osd crush chooseleaf type = 0" in glob and "paxos propose interval = 0.1" in glob
    assert "mon osd reporter subtree level = osd" in glob  # a hung OSD is reported by its peers (failover)
    assert "mon host = [v2:127.0.0.1:13300,v1:127.0.0.1:16789]" in glob
    # the symlink trap: never set bluestore block path
    assert not any("bluestore block path" in line for lines in sections.values() for line in lines)


def test_a_lab_for_namespace_hosts_listens_on_their_bridge() -> None:
    glob = "\n".join(_sections(render_ceph_conf(_spec(), "f", "/lab", "10.214.0.1"))["global"])
    assert "mon host = [v2:10.214.0.1:13300,v1:10.214.0.1:16789]" in glob
    assert "public addr = 10.214.0.1" in glob and "cluster addr = 10.214.0.1" in glob and "127.0.0.1" not in glob


def test_objectstore_settings_and_no_osd_options_in_the_file() -> None:
    blue = "\n".join(_sections(render_ceph_conf(_spec(osd_config=osd_options(None)), "f", "/lab"))["osd"])
    assert "bluestore block create = true" in blue
    # a local file wins over `ceph config set`: OSD options must live in the monitors' database only
    assert "memory target" not in blue and "cache" not in blue and "op num" not in blue
    mem = "\n".join(_sections(render_ceph_conf(_spec(objectstore="memstore"), "f", "/lab"))["osd"])
    assert "osd objectstore = memstore" in mem and "memstore device bytes" in mem and "bluestore block" not in mem


def _point(**changes: object) -> CephLabPoint:
    return replace(CephLabPoint(osds=3, osd_size_bytes=2 << 30, objectstore="bluestore", pool_size=2), **changes)


def test_osd_options_of_a_lab_point() -> None:
    base = dict(osd_options(_point()))
    assert base == {"osd_memory_target": str(MIN_OSD_MEMORY_TARGET), "osd_op_num_shards": "1",
                    "osd_op_num_threads_per_shard": "2"}
    cache = dict(osd_options(_point(cache_size_bytes=64 << 20)))
    assert cache["bluestore_cache_size"] == str(64 << 20) and cache["bluestore_cache_autotune"] == "false"
    assert dict(osd_options(_point(osd_memory_target_bytes=100 << 20)))["osd_memory_target"] == str(
        MIN_OSD_MEMORY_TARGET)  # Ceph's minimum wins
    # lab.ceph.config: given options override the base; the cache size alone turns autotune off (Ceph ignores it
    # otherwise)
    given = dict(osd_options(_point(config=(("bluestore_cache_size", 1 << 30), ("osd_op_num_shards", 4)))))
    assert given["osd_op_num_shards"] == "4" and given["bluestore_cache_size"] == str(1 << 30)
    assert given["bluestore_cache_autotune"] == "false"
    assert list(osd_options(_point(config=(("osd_op_queue", "wpq"),)))) == sorted(osd_options(_point(config=(
        ("osd_op_queue", "wpq"),))))


def test_live_settings_share_one_cluster_and_cluster_settings_do_not() -> None:
    a, b = LabPoint(ceph=_point(cache_size_bytes=1 << 30)), LabPoint(ceph=_point(config=(("osd_op_queue", "wpq"),)))
    assert cluster_of(a) == cluster_of(b) == cluster_of(LabPoint(ceph=_point(pool_size=3)))
    assert cluster_of(LabPoint(ceph=_point(osds=4))) != cluster_of(a)
    assert cluster_of(LabPoint(ceph=_point(objectstore="memstore"))) != cluster_of(a)
    # the option survives the store's text form
    point = LabPoint(ceph=_point(config=(("bluestore_cache_size", 1 << 30), ("osd_op_queue", "wpq"))))
    assert LabPoint.from_pairs(point.pairs()) == point
    assert "bluestore_cache_size=1GiB" in point.describe() and "osd_op_queue=wpq" in point.describe()


def test_spec_from_a_sweep_point() -> None:
    lab = (("lab", "ceph"), ("objectstore", "memstore"), ("osd_size", str(3 << 30)), ("osds", "6"),
           ("pool_size", "2"), ("cache_size", str(1 << 30)), ("cephfs", "1"))
    point = LabPoint.from_pairs(lab)
    assert point.ceph is not None and LabPoint.from_pairs(point.pairs()) == point and not point.nfs
    spec = ceph_spec_for(point.ceph, (("bench", 2), ("other", 2), ("bench", 2)))
    assert spec.osds == 6 and spec.objectstore == "memstore" and spec.osd_size_bytes == 3 << 30
    assert spec.pools == (("bench", 2), ("other", 2)) and spec.cephfs
    assert dict(spec.osd_config)["bluestore_cache_size"] == str(1 << 30)


REPLICA_PLAN = """
name: replica
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
workload: {rw: [randwrite, randread], bs: 4k}
repeat: 4
lab:
  ceph: {osds: [3, 4], pool_size: [2, 3]}
"""


def _mirrored_pairs(values: list[object], per_round: int) -> bool:
    """Rounds of ``per_round`` values in mirrored pairs (A B | B A): every pair of rounds runs each order once."""
    step = 2 * per_round
    return all(values[i:i + per_round] == values[i + per_round:i + step][::-1] for i in range(0, len(values), step))


def test_pool_sizes_share_a_cluster_and_alternate_on_it_while_osd_counts_do_not() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import schedule
    from storbench.sessions import group_by_lab, rbd_pools

    cases = expand(load_plan_text(REPLICA_PLAN, "replica.yaml"))
    groups = group_by_lab(schedule(cases, 4, "interleaved", 0))
    assert len(groups) == 2  # one cluster per OSD count, not four
    for cluster, items in groups:
        assert cluster.ceph is not None and cluster.ceph.pool_size == 0
        for rw in ("randwrite", "randread"):  # per workload the two sizes run A B B A, then B A A B or A B B A
            sizes = [i.case.lab.ceph.pool_size for i in items if i.case.lab.ceph and i.case.workload.rw == rw]
            assert _mirrored_pairs(sizes, 2) and sizes[:4] == [2, 3, 3, 2]
        pools = rbd_pools([item.case for item in items])
        assert {pools[i.case.case_id] for i in items} == {("bench-size2", 2), ("bench-size3", 3)}
        for item in items:
            assert pools[item.case.case_id][1] == item.case.lab.ceph.pool_size  # type: ignore[union-attr]
    one_size = expand(load_plan_text(REPLICA_PLAN.replace("pool_size: [2, 3]", "pool_size: 2"), "r.yaml"))
    assert set(rbd_pools(one_size).values()) == {("bench", 2)}  # a single size keeps the plan's pool name


def test_live_settings_switch_once_per_round_and_alternate() -> None:
    """Two workloads x two cache sizes: within a round the cases of one cache size run together, so the OSDs
    restart once per round (not once per workload), and per workload the sizes still go A B B A."""
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import schedule
    from storbench.sessions import group_by_lab

    plan = REPLICA_PLAN.replace("osds: [3, 4], pool_size: [2, 3]}", "osds: 3, cache_size: [64MiB, 1GiB]}")
    order = schedule(expand(load_plan_text(plan, "cache.yaml")), 4, "interleaved", 0)
    assert len(group_by_lab(order)) == 1  # one cluster
    sizes = [i.case.lab.ceph.cache_size_bytes for i in order]  # type: ignore[union-attr]
    restarts = sum(1 for a, b in itertools.pairwise(sizes) if a != b)
    assert restarts == 5  # one per round (64M 64M 1G 1G | 1G 1G 64M 64M | ...), one more as the blocks turn
    for rw in ("randwrite", "randread"):
        per_rw = [i.case.lab.ceph.cache_size_bytes >> 20 for i in order if i.case.workload.rw == rw]  # type: ignore[union-attr]
        assert _mirrored_pairs(per_rw, 2) and per_rw[:4] == [64, 1024, 1024, 64]
    # the first case after each restart (or the bring-up) meets a cold cache: over 2 x 4 rounds each of the four
    # cases as often (before, randread at 1GiB every other round and randwrite at 1GiB never)
    eight = schedule(expand(load_plan_text(plan, "cache.yaml")), 8, "interleaved", 0)
    cold = [b.case.case_id for a, b in itertools.pairwise(eight)
            if a.case.lab.ceph.cache_size_bytes != b.case.lab.ceph.cache_size_bytes]  # type: ignore[union-attr]
    counts = collections.Counter([eight[0].case.case_id, *cold])
    assert len(counts) == 4 and len(set(counts.values())) == 1, counts


def test_each_cluster_is_interleaved_on_its_own_so_its_balance_and_restarts_are_the_estimates() -> None:
    """Two clusters (brought up once each) with a live OSD option: each cluster's cases take their rounds among
    themselves, so over 2 x cases rounds each meets the cold cache after a restart equally often, and the OSDs
    restart as often as the estimate counts. Interleaved over both clusters' cases at once (as before), one
    cluster's cases met it 1, 1, 4, 4, 4 and 4 times."""
    from storbench.config import load_plan_text
    from storbench.demands import lab_group_key
    from storbench.lab.ceph_conf import osd_options
    from storbench.plan import expand
    from storbench.schedule import _restarts, schedule
    from storbench.sessions import group_by_lab

    plan = REPLICA_PLAN.replace("workload: {rw: [randwrite, randread], bs: 4k}",
                                "workload: {rw: [randwrite, randread, read], bs: 4k}").replace(
        "osds: [3, 4], pool_size: [2, 3]}", "osds: [3, 4], cache_size: [64MiB, 1GiB]}")
    cases = expand(load_plan_text(plan, "two.yaml"))

    def cold_and_restarts(order: list[ScheduledRepetition]) -> list[tuple[list[int], int, int]]:
        out = []
        for cluster, items in group_by_lab(order):
            keys = [osd_options(i.case.lab.ceph) for i in items]  # type: ignore[arg-type]
            cold = collections.Counter([items[0].case.case_id] + [
                b.case.case_id for (a, b), (ka, kb) in zip(itertools.pairwise(items), itertools.pairwise(keys),
                                                           strict=True) if ka != kb])
            restarts = sum(1 for a, b in itertools.pairwise(keys) if a != b)
            on_it = [c for c in cases if cluster_of(c.lab) == cluster]
            out.append((sorted(cold.values()), restarts, _restarts(on_it, 12, "interleaved", 0)))
        return out

    per_cluster = cold_and_restarts(schedule(cases, 12, "interleaved", 0, lambda c: lab_group_key(c.lab, "once")))
    assert len(per_cluster) == 2
    for cold, restarts, estimated in per_cluster:
        assert cold == [3] * 6 and restarts == estimated
    together = cold_and_restarts(schedule(cases, 12, "interleaved", 0))
    assert any(len(set(cold)) > 1 for cold, _, _ in together)  # the balance lost, which this test would see


def test_a_fresh_cluster_per_round_brings_osd_counts_up_a_b_b_a() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import estimate, lab_designs, schedule
    from storbench.sessions import group_by_lab

    plan = REPLICA_PLAN.replace("pool_size: [2, 3]}", "pool_size: 2, bring_up: each_repetition}")
    cases = expand(load_plan_text(plan, "osds.yaml"))
    groups = group_by_lab(schedule(cases, 4, "interleaved", 0), bring_up="each_repetition")
    # one bring-up per OSD count and round, in the order A B B A A B B A; each runs both workloads of its round
    osds = [cluster.ceph.osds for cluster, _ in groups]  # type: ignore[union-attr]
    assert _mirrored_pairs(osds, 2) and osds[:4] == [3, 4, 4, 3]
    assert [{i.rep_index for i in items} for _, items in groups] == [{0}, {0}, {1}, {1}, {2}, {2}, {3}, {3}]
    assert all(len(items) == 2 for _, items in groups)
    # brought up once, the same plan is blocked and confounded; the plan says which and what it costs
    assert len(group_by_lab(schedule(cases, 4, "interleaved", 0))) == 2
    fresh = lab_designs(cases, bring_up="each_repetition", rounds=4)
    assert fresh == ("osds: blocked, a fresh cluster per value and round, A B B A (4 bring-ups per arm): the "
                     "cluster instance is sampled, repetitions paired round by round",)
    assert "brought up once" in lab_designs(cases)[0]
    assert estimate(cases, 4, bring_up="each_repetition").seconds > estimate(cases, 4).seconds + 6 * 20 - 1


def test_clusters_side_by_side_run_in_one_group_on_their_own_ports() -> None:
    from storbench.config import load_plan_text
    from storbench.lab.ceph_conf import daemon_ports, mon_ports
    from storbench.plan import expand
    from storbench.schedule import lab_designs, schedule
    from storbench.sessions import clusters_of, group_by_lab

    plan = REPLICA_PLAN.replace("pool_size: [2, 3]}", "pool_size: 2, bring_up: side_by_side}")
    cases = expand(load_plan_text(plan, "osds.yaml"))
    groups = group_by_lab(schedule(cases, 4, "interleaved", 0), bring_up="side_by_side")
    assert len(groups) == 1  # both clusters up at once
    [(_, items)] = groups
    assert [c.ceph.osds for c in clusters_of([i.case for i in items])] == [3, 4]  # type: ignore[union-attr]
    per_rw = [i.case.lab.ceph.osds for i in items if i.case.workload.rw == "randwrite"]  # type: ignore[union-attr]
    assert _mirrored_pairs(per_rw, 2) and per_rw[:4] == [3, 4, 4, 3]
    assert "clusters side by side" in lab_designs(cases, bring_up="side_by_side")[0]
    # each slot its own monitor ports and a daemon port range that overlaps no other's
    assert len({mon_ports(slot) for slot in range(4)}) == 4
    ranges = sorted(daemon_ports(slot) for slot in range(4))
    assert all(high < next_low for (_, high), (next_low, _) in itertools.pairwise(ranges))
    second = render_ceph_conf(_spec(slot=1), "f", "/lab2")
    assert f"mon host = [v2:127.0.0.1:{mon_ports(1)[0]},v1:127.0.0.1:{mon_ports(1)[1]}]" in second
    assert f"ms bind port min = {daemon_ports(1)[0]}" in second and "/lab2/run" in second


def test_a_fresh_cluster_per_round_pairs_a_blocked_comparison() -> None:
    """osds 3 vs 4 measured round by round on fresh clusters: the interval comes from the per-round pairs (and
    says so); brought up once, the same numbers get Welch's interval and the confounding note."""
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_design import design_note
    from storbench.stats.selectors import parse_selector
    from synthetic import observation

    drift = [1.0, 0.8, 0.6, 0.9]  # slow drift shared by both sides of a round
    seen = [observation(case_id=f"osds{osds}", target="rbd", target_kind="rbd", rw="randwrite", direction="write",
                        lab=f"lab=ceph osds={osds}", repeat=rep, iops=1000 * drift[rep] * (1.2 if osds == 4 else 1.0))
            for osds in (3, 4) for rep in range(4)]
    base, cand = parse_selector("osds=3"), parse_selector("osds=4")
    paired = compare_observations(seen, base, cand, {}, interleaved_runs=frozenset({1}),
                                  bring_ups={1: "each_repetition"})
    cell = next(c for c in paired[0].cells if c.metric.field == "iops")
    assert cell.difference is not None and cell.difference.method == "paired" and cell.difference.pairs == 4
    assert abs(cell.difference.change_pct - 20) < 0.01 and cell.verdict.value == "better"
    blocked = compare_observations(seen, base, cand, {}, interleaved_runs=frozenset({1}))
    welch = next(c for c in blocked[0].cells if c.metric.field == "iops")
    assert welch.difference is not None and welch.difference.method == "welch"
    assert "confounded" in (design_note(base, cand) or "")
    assert "fresh cluster per value and round" in (design_note(base, cand, bring_up="each_repetition") or "")
    assert "one cluster instance" in (design_note(base, cand, bring_up="side_by_side") or "")


def test_ganesha_conf() -> None:
    text = render_ganesha_conf("/lab/export", "/lab", NfsLabSpec())
    assert "Graceless = true;" in text and "Path = /lab/export;" in text and "Protocols = 3, 4;" in text
    assert f"Bind_addr = {SERVER_ADDRESS};" in text
    assert nfs_url() == f"nfs://{SERVER_ADDRESS}/export"


def test_ganesha_export_squashes_root_and_serves_only_the_lab() -> None:
    text = render_ganesha_conf("/lab/export", "/lab", NfsLabSpec())
    export = text.split("EXPORT {", 1)[1].split("\nLOG {", 1)[0]
    own, client = export.split("CLIENT {", 1)
    # the export grants nothing by itself; only the host end of the lab's veth may read and write
    assert "Access_Type = None;" in own and "Access_Type = RW;" not in own
    assert f"Clients = {HOST_ADDRESS};" in client and "Access_Type = RW;" in client
    assert "Squash = Root_Squash;" in own and "No_Root_Squash" not in text
    assert f"Anonymous_Uid = {ANONYMOUS_UID};" in own and ANONYMOUS_UID != 0
    assert "PrivilegedPort = true;" in own  # only root binds a port below 1024
    assert "SecType = sys;" in own


def test_a_veth_that_vanishes_with_its_namespace_is_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host end of the NFS lab's veth pair goes away by itself once the namespace is deleted, sometimes just
    after `ip link show` listed it: deleting it then fails, and `down` must not."""
    from storbench.errors import UserError
    from storbench.lab import nfs

    listings = iter(["2: sbnfs0@if3: <BROADCAST>", "1: lo: <LOOPBACK>"])

    def fake_run(argv: list[str], **_: object) -> str:
        if argv[:3] == ["ip", "link", "delete"]:
            raise UserError('`ip link delete sbnfs0` failed (1): Cannot find device "sbnfs0"')
        return next(listings)

    monkeypatch.setattr(nfs, "run", fake_run)
    nfs._delete_link("sbnfs0")  # gone by the time it was deleted: fine
    listings = iter(["2: sbnfs0@if3: <BROADCAST>", "2: sbnfs0@if3: <BROADCAST>"])
    with pytest.raises(UserError):
        nfs._delete_link("sbnfs0")  # still there: a real failure


def test_cpu_quota_files_for_cgroup_v1_and_v2() -> None:
    from storbench.lab.cpu_quota import parse_quota, quota_line

    assert quota_line(0.5, v2=False) == ("cpu.cfs_quota_us", "50000")
    assert quota_line(None, v2=False) == ("cpu.cfs_quota_us", "-1")
    assert quota_line(2, v2=True) == ("cpu.max", "200000 100000")
    assert quota_line(None, v2=True) == ("cpu.max", "max 100000")
    assert parse_quota("cpu.cfs_quota_us", "50000\n") == 0.5 and parse_quota("cpu.cfs_quota_us", "-1") is None
    assert parse_quota("cpu.max", "150000 100000\n") == 1.5 and parse_quota("cpu.max", "max 100000") is None


def test_osd_cpus_is_a_live_setting_on_one_cluster() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import lab_designs, schedule
    from storbench.sessions import group_by_lab

    plan = REPLICA_PLAN.replace("osds: [3, 4], pool_size: [2, 3]}", "osds: 3, osd_cpus: [0.5, 1]}")
    cases = expand(load_plan_text(plan, "cpus.yaml"))
    assert {c.lab.ceph.osd_cpus for c in cases} == {0.5, 1.0}  # type: ignore[union-attr]
    assert len(group_by_lab(schedule(cases, 2, "interleaved", 0))) == 1
    assert lab_designs(cases)[0].startswith("osd_cpus: interleaved on one cluster")
    point = cases[0].lab
    assert LabPoint.from_pairs(point.pairs()) == point and "osd_cpus=0.5" in point.describe()


def test_link_shaping_commands_and_a_live_link_axis() -> None:
    from storbench.config import load_plan_text
    from storbench.lab.hosts_conf import lab_host, link_commands
    from storbench.plan import expand
    from storbench.schedule import lab_designs, schedule
    from storbench.sessions import group_by_lab
    from storbench.units import format_link_rate as format_link

    host = lab_host(2)
    shaped = link_commands(host, 10**9, 0.0005)
    assert shaped == [(None, ["qdisc", "replace", "dev", "sbh2a", "root", "netem", "limit", "100000", "delay",
                              "500us", "rate", "1000000000bit"]),
                      (host.namespace, ["qdisc", "replace", "dev", "sbh2b", "root", "netem", "limit", "100000",
                                        "delay", "500us", "rate", "1000000000bit"])]
    assert link_commands(host, 10**8, None)[0] == (None, ["qdisc", "replace", "dev", "sbh2a", "root", "tbf", "rate",
                                                          "100000000bit", "burst", "125000", "latency", "50ms"])
    # at least 96 KiB, above a 64 KiB offloaded packet: a 32 KiB bucket at 20 Mbit/s had passed almost none of them
    assert link_commands(host, 20 * 10**6, None)[0][1][8:10] == ["burst", str(96 * 1024)]
    assert [args[:2] for _, args in link_commands(host, None, None)] == [["qdisc", "del"]] * 2
    assert format_link(10**9) == "1Gbit" and format_link(2_500_000_000) == "2.5Gbit" and format_link(10**8) == "100Mbit"
    plan = """
name: links
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
workload: {rw: read, bs: 1m}
clients: 1
lab:
  ceph: {osds: 1, pool_size: 1}
  hosts: {count: 1, link: [100Mbit, 1Gbit]}
"""
    cases = expand(load_plan_text(plan, "links.yaml"))
    assert sorted(c.lab.link_bits_per_s for c in cases) == [10**8, 10**9]  # type: ignore[type-var]
    assert len(group_by_lab(schedule(cases, 2, "interleaved", 0))) == 1  # one Ceph cluster for both rates
    assert any(line.startswith("link: interleaved") for line in lab_designs(cases))
    assert LabPoint.from_pairs(cases[0].lab.pairs()) == cases[0].lab


def test_a_fast_db_device_is_a_cluster_setting_rendered_on_tmpfs() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import lab_designs, schedule
    from storbench.sessions import group_by_lab

    plan = REPLICA_PLAN.replace("osds: [3, 4], pool_size: [2, 3]}", "osds: 3, db_device: [none, fast], "
                                "db_size: 256MiB, bring_up: each_repetition}")
    cases = expand(load_plan_text(plan, "db.yaml"))
    assert {c.lab.ceph.db_device for c in cases} == {"none", "fast"}  # type: ignore[union-attr]
    groups = group_by_lab(schedule(cases, 2, "interleaved", 0), bring_up="each_repetition")
    assert [g.ceph.db_device for g, _ in groups] == ["none", "fast", "fast", "none"]  # type: ignore[union-attr]
    designs = lab_designs(cases, bring_up="each_repetition", rounds=2)
    assert designs[0].startswith("db_device: blocked, a fresh cluster per value and round")
    assert "emulated" in designs[-1]
    fast = next(c for c in cases if c.lab.ceph and c.lab.ceph.db_device == "fast")
    assert fast.lab.ceph is not None and fast.lab.ceph.db_size_bytes == 256 << 20
    assert LabPoint.from_pairs(fast.lab.pairs()) == fast.lab and "db_size=256MiB" in fast.lab.describe()
    osd = "\n".join(_sections(render_ceph_conf(ceph_spec_for(fast.lab.ceph, (("bench", 2),)), "f", "/lab"))["osd"])
    assert "bluestore block db path = /lab/fastdb/$cluster-$id.db" in osd and "bluestore block db create = true" in osd
    assert f"bluestore block db size = {256 << 20}" in osd
    slow = next(c for c in cases if c.lab.ceph and c.lab.ceph.db_device == "none")
    assert slow.lab.ceph is not None
    assert "block db" not in render_ceph_conf(ceph_spec_for(slow.lab.ceph, (("bench", 2),)), "f", "/lab")


def test_osds_per_device_keeps_devices_and_capacity_fixed() -> None:
    from storbench.config import load_plan_text
    from storbench.lab.devices import layout
    from storbench.plan import expand

    plan = REPLICA_PLAN.replace("osds: [3, 4], pool_size: [2, 3]}", "pool_size: 2, devices: 2, device_size: 8GiB, "
                                "osds_per_device: [1, 2, 4], bring_up: each_repetition}")
    cases = [c for c in expand(load_plan_text(plan, "opd.yaml")) if c.workload.rw == "randread"]
    shapes = sorted((c.lab.ceph.osds_per_device, c.lab.ceph.osds, c.lab.ceph.osd_size_bytes)  # type: ignore[union-attr]
                    for c in cases)
    assert shapes == [(1, 2, 8 << 30), (2, 4, 4 << 30), (4, 8, 2 << 30)]  # capacity 16 GiB each time
    point = cases[0].lab
    assert LabPoint.from_pairs(point.pairs()) == point and "devices=2" in point.describe()
    spec = ceph_spec_for(point.ceph, (("bench", 2),))  # type: ignore[arg-type]
    assert spec.devices == 2 and spec.device_size_bytes == 8 << 30
    parts = layout(2, 4, 8 << 30)
    assert [(p.device, p.part) for p in parts][:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    assert all(p.size_bytes == 2 << 30 for p in parts) and parts[1].offset_bytes == 2 << 30
    assert parts[4].offset_bytes == 0  # the second device starts its own slices
    with pytest.raises(UserError, match="under 1 GiB per OSD"):
        layout(1, 4, 2 << 30)


def test_osd_cpuset_is_a_live_setting_and_cpu_lists_parse() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import lab_designs, schedule
    from storbench.sessions import group_by_lab
    from storbench.units import parse_cpu_list

    assert parse_cpu_list("0-2,5") == [0, 1, 2, 5] and parse_cpu_list("1") == [1]
    for bad in ("1-", "a", "3-1", "0;1"):
        with pytest.raises(ValueError):
            parse_cpu_list(bad)
    plan = REPLICA_PLAN.replace("osds: [3, 4], pool_size: [2, 3]}", "osds: 3, osd_cpuset: [1, 0-1]}")
    cases = expand(load_plan_text(plan, "pin.yaml"))
    assert {c.lab.ceph.osd_cpuset for c in cases} == {"1", "0-1"}  # type: ignore[union-attr]
    assert len(group_by_lab(schedule(cases, 2, "interleaved", 0))) == 1
    assert lab_designs(cases)[0].startswith("osd_cpuset: interleaved on one cluster (a cpuset per OSD")
    assert LabPoint.from_pairs(cases[0].lab.pairs()) == cases[0].lab


def test_a_bridged_nfs_lab_serves_the_hosts_subnet_too() -> None:
    """With a hosts lab, the NFS server joins its bridge: it listens in its namespace on every address and the
    export admits the hosts' subnet beside the host end of its own veth, nothing wider."""
    from storbench.lab.hosts_conf import BRIDGE, SUBNET, lab_host
    from storbench.lab.nfs_conf import BRIDGED_ADDRESS

    text = render_ganesha_conf("/lab/export", "/lab", NfsLabSpec(bridge=BRIDGE))
    client = text.split("CLIENT {", 1)[1]
    assert f"Clients = {HOST_ADDRESS}, {SUBNET};" in client and "Bind_addr = 0.0.0.0;" in text
    assert nfs_url(bridged=True) == f"nfs://{BRIDGED_ADDRESS}/export"
    assert BRIDGED_ADDRESS.startswith(SUBNET.split("0.0/")[0]) and BRIDGED_ADDRESS not in {
        lab_host(i).address for i in range(1, 400)}


def test_leftover_lab_veths_are_found_by_name() -> None:
    from storbench.lab.hosts_conf import lab_veths

    listing = ("1: lo: <LOOPBACK,UP> mtu 65536\n4703: sbh1a@if4702: <BROADCAST> mtu 1500\n"
               "4705: sbh12a@if4704: <BROADCAST>\n9: sbhosts0: <BROADCAST>\n10: sbnfs2@if9: <BROADCAST>\n"
               "11: sbh3b: <BROADCAST>\n")
    assert lab_veths(listing) == ["sbh1a", "sbh12a"]




def test_emulated_hosts_spread_the_osds_and_make_the_host_the_failure_domain() -> None:
    """`lab.ceph.hosts: 2` with 4 OSDs: osd.0 and osd.2 on the first host, osd.1 and osd.3 on the second, each
    placing itself there at start (its `crush location`); placement then chooses hosts (chooseleaf type 1), so a
    size-2 pool keeps one copy on each; failure reports still count per OSD. A plan without hosts keeps its case
    ids and its one-OSD failure domains."""
    from storbench.config import load_plan_text
    from storbench.lab.ceph_conf import host_osds
    from storbench.plan import expand

    plan = REPLICA_PLAN.replace("osds: [3, 4], pool_size: [2, 3]}", "osds: 4, pool_size: 2, hosts: 2}")
    case = next(c for c in expand(load_plan_text(plan, "hosts.yaml")) if c.workload.rw == "randread")
    assert case.lab.ceph is not None and case.lab.ceph.hosts == 2
    assert LabPoint.from_pairs(case.lab.pairs()) == case.lab and "hosts=2" in case.lab.describe()
    spec = ceph_spec_for(case.lab.ceph, (("bench", 2),))
    assert host_osds(spec, 1) == ["osd.0", "osd.2"] and host_osds(spec, 2) == ["osd.1", "osd.3"]
    assert host_osds(spec, 3) == [] and host_osds(_spec(), 1) == []  # no such host; no hosts at all
    sections = _sections(render_ceph_conf(spec, "f", "/lab"))
    assert "osd crush chooseleaf type = 1" in sections["global"]
    assert "mon osd reporter subtree level = osd" in sections["global"]
    assert sections["osd.3"] == ["crush location = root=default host=storbench-host2"]
    plain = _sections(render_ceph_conf(_spec(), "f", "/lab"))
    assert "osd crush chooseleaf type = 0" in plain["global"] and "osd.0" not in plain
    without = next(c for c in expand(load_plan_text(plan.replace(", hosts: 2", ""), "p.yaml"))
                   if c.workload.rw == "randread")
    assert "hosts" not in dict(without.lab.pairs()) and without.case_id != case.case_id


def test_hosts_whose_link_is_down_are_those_without_the_up_flag() -> None:
    from storbench.lab.hosts_conf import hosts_down

    listing = ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536\n"
               "4703: sbh1a@if4702: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP\n"
               "4705: sbh12a@if4704: <BROADCAST,MULTICAST> mtu 1500 state DOWN\n"
               "4707: sbh3a@if4706: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 state LOWERLAYERDOWN\n"
               "9: sbhosts0: <BROADCAST,MULTICAST> mtu 1500\n11: sbh4b: <BROADCAST> mtu 1500\n")
    assert hosts_down(listing) == [12]  # up but its peer down is not a cut; the bridge and inner ends are not hosts


def test_link_flags_read_each_links_flags_by_its_name_for_both_labs() -> None:
    """The NFS lab's server links and the hosts lab's client links are read from one parse of `ip -o link show`:
    the name without its peer, the flags; a link set down has no UP (LOWER_UP is another flag)."""
    from storbench.lab.hosts_conf import is_down, link_flags

    listing = ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536\n"
               "52: sbnfs0@if51: <BROADCAST,MULTICAST,LOWER_UP> mtu 1500 state DOWN\n"
               "54: sbnfs2@if53: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master sbhosts0 state UP\n"
               "not a link line\n")
    flags = link_flags(listing)
    assert set(flags) == {"lo", "sbnfs0", "sbnfs2"}
    assert "UP" not in flags["sbnfs0"] and "LOWER_UP" in flags["sbnfs0"] and "UP" in flags["sbnfs2"]
    assert is_down(flags["sbnfs0"]) and not is_down(flags["sbnfs2"]) and not is_down(set())  # unread: not down


def test_the_k8s_labs_host_path_volumes_are_found_for_down() -> None:
    """kube-controller-manager's host-path provisioner makes every volume under /tmp/hostpath_pv, outside the
    lab's directory: `down` had left them all (43 of them, 1.6 GB, on one machine). It removes the ones its volumes
    name and the ones made since `up`, and nothing else there or elsewhere."""
    from storbench.lab.k8s_conf import HOSTPATH_ROOT, hostpath_leftovers

    before = ["theirs"]
    now = ["theirs", "a1", "b2", "c3"]
    assert hostpath_leftovers(before, now, [f"{HOSTPATH_ROOT}/a1", "/srv/x/b2", f"{HOSTPATH_ROOT}/gone"]) == [
        "a1", "b2", "c3"]
    assert hostpath_leftovers(now, now, [f"{HOSTPATH_ROOT}/a1", f"{HOSTPATH_ROOT}/../etc"]) == ["a1"]
    assert hostpath_leftovers(now, now, ["/srv/x/b2", f"{HOSTPATH_ROOT}/theirs/../a1"]) == []


def test_a_tear_down_runs_every_step_and_raises_the_first_error_after() -> None:
    """The hosts, NFS and Ceph labs' `down` stopped at their first failing step: a namespace that would not go left
    the bridge, the firewall tables and the directory; an unmount that failed left the loop devices and cgroups."""
    from storbench.lab.labdir import every_step

    ran: list[str] = []

    def fails(name: str) -> None:
        ran.append(name)
        raise UserError(f"{name} would not go")

    with pytest.raises(UserError, match="namespace would not go"):
        every_step(lambda: ran.append("servers"), lambda: fails("namespace"), lambda: ran.append("bridge"),
                   lambda: fails("firewall"), lambda: ran.append("directory"))
    assert ran == ["servers", "namespace", "bridge", "firewall", "directory"]
    every_step(lambda: ran.append("again"))  # nothing failing: nothing raised


def test_a_kept_cluster_with_an_osd_marked_out_is_not_ready() -> None:
    """A run killed while an `out osd.N` fault was on, its lab kept: the OSD is up, its PGs clean again on the
    others, and the next run had reused the cluster as whole. Ready means every OSD up and in."""
    from pathlib import Path

    from storbench.lab.ceph_daemons import CephDaemons

    answers = {"osd stat": {"num_osds": 3, "num_up_osds": 3, "num_in_osds": 2}, "mgr stat": {"available": True},
               "osd pool ls": ["device_health_metrics", "rbd"],
               "pg stat": {"num_pgs": 33, "num_pg_by_state": [{"name": "active+clean", "num": 33}]}}
    daemons = CephDaemons(None, Path("/nonexistent"))
    daemons.mon = lambda prefix, **arguments: answers[prefix]  # type: ignore[method-assign]
    assert not daemons._ready(_spec(osds=3))
    answers["osd stat"]["num_in_osds"] = 3
    assert daemons._ready(_spec(osds=3))


@pytest.mark.parametrize(("targets", "lab", "extra", "refused"), [
    ("fs: {kind: cephfs, size: 4MiB}", "osds: 3, pool_size: [1, 3], cephfs: true", "", "asks for pool_size 1"),
    ("fs: {kind: cephfs, size: 4MiB}", "osds: 4, pool_size: [2], cephfs: true", "", None),  # its pools keep 2
    ("o: {kind: s3}", "osds: 3, pool_size: [2, 3], rgw: true", "", "runs on the lab's radosgw pools"),
    ("fs: {kind: cephfs, size: 4MiB}\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}",
     "osds: 3, pool_size: [2, 3], cephfs: true", "", "asks for pool_size 2"),
    ("fs: {kind: cephfs, size: 4MiB}\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}",
     "osds: 3, pool_size: [2, 3], cephfs: true", "exclude: [{target: fs, pool_size: 2}]\n", None),
    ("fs: {kind: cephfs, size: 4MiB}", "osds: 3, pool_size: [3], cephfs: true", "", None),
    ("fs: {kind: cephfs, path: /mnt/own, size: 4MiB}", "osds: 3, pool_size: [1, 3]", "", None),  # the user's own
])
def test_pool_size_is_refused_where_the_lab_does_not_apply_it(targets: str, lab: str, extra: str,
                                                             refused: str | None) -> None:
    """The lab's CephFS and radosgw pools keep the cluster's default size (its largest rbd pool's, else min(3,
    osds)): a pool_size sweep on them had measured one size twice, and compare had judged it as two."""
    from storbench.checks import check_pool_sizes
    from storbench.config import load_plan_text
    from storbench.plan import expand

    rw = "get" if "s3" in targets else "randread"
    loaded = load_plan_text(f"name: p\ntargets:\n  {targets}\nworkload: {{rw: {rw}}}\nlab:\n  ceph: {{{lab}}}\n"
                            + extra, "p.yaml")
    if refused is None:
        check_pool_sizes(loaded, expand(loaded))
        return
    with pytest.raises(UserError, match=refused) as caught:
        check_pool_sizes(loaded, expand(loaded))
    assert "pool_size sets the rbd targets' pools only" in caught.value.message and caught.value.hint


@pytest.mark.parametrize(("targets", "rw", "config", "refused"), [
    ("img: {kind: rbd, pool: b, image: i, size: 64MiB}", "randread", "bluestore_compression_mode: [none, force]",
     "bluestore_compression_mode"),
    ("img: {kind: rbd, pool: b, image: i, size: 64MiB}", "[randwrite, randrw]", "bluestore_csum_type: [none, crc32c]",
     "bluestore_csum_type"),  # the mixed case reads what the lab wrote once
    ("fs: {kind: cephfs, size: 4MiB}", "read", "bluestore_compression_algorithm: [lz4, zstd]",
     "bluestore_compression_algorithm"),
    ("img: {kind: rbd, pool: b, image: i, size: 64MiB}", "randwrite", "bluestore_compression_mode: [none, force]",
     None),  # each value's writes are its own
    ("img: {kind: rbd, pool: b, image: i, size: 64MiB}", "randread", "bluestore_compression_mode: force", None),
    ("img: {kind: rbd, pool: b, image: i, size: 64MiB}", "randread", "osd_op_num_shards: [1, 2]", None),  # live
])
def test_an_option_bluestore_applies_as_it_writes_is_not_swept_under_reads(targets: str, rw: str, config: str,
                                                                          refused: str | None) -> None:
    """Compression and checksums take effect as BlueStore writes a block, and the lab writes a target once, under
    its first case's options: reads under each value of a sweep had read the same data and been compared as two."""
    from storbench.checks import check_write_time_options
    from storbench.config import load_plan_text
    from storbench.plan import expand

    loaded = load_plan_text(f"name: p\ntargets:\n  {targets}\nworkload: {{rw: {rw}}}\n"
                            f"lab:\n  ceph: {{osds: 3, cephfs: true, config: {{{config}}}}}\n", "p.yaml")
    if refused is None:
        check_write_time_options(loaded, expand(loaded))
        return
    with pytest.raises(UserError, match=f"BlueStore applies {refused} as it writes") as caught:
        check_write_time_options(loaded, expand(loaded))
    assert "with writes only" in caught.value.hint and "config" in (caught.value.where or ""), caught.value


def test_an_osd_memory_target_below_cephs_least_is_refused_not_raised(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Ceph runs anything below 896MiB at 896MiB: 256MiB and 512MiB had run as one setting and been compared as two."""
    from helpers import run_cli
    from storbench.config import load_plan_text

    text = ("name: p\ntargets:\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}\nworkload: {rw: randread}\n"
            "lab:\n  ceph: {osds: 3, osd_memory_target: [VALUES]}\n")
    with pytest.raises(UserError, match="osd_memory_target 256MiB is below Ceph's least, 896MiB"):
        load_plan_text(text.replace("VALUES", "256MiB, 1GiB"), "p.yaml")
    load_plan_text(text.replace("VALUES", "896MiB, 2GiB"), "p.yaml")
    code, out, err = run_cli(capsys, "lab", "ceph", "up", "--osd-memory-target", "512MiB", "--dir", str(tmp_path / "l"))
    assert code == 2 and "is below Ceph's least, 896MiB" in err and not (tmp_path / "l").exists(), out + err


def test_an_osd_cpu_quota_below_the_least_a_cgroup_takes_is_refused() -> None:
    """A quota below 1 ms a 100 ms period (0.01 cores) is written as 0.01: 0.001 and 0.005 had run as one."""
    from storbench.config import load_plan_text

    text = ("name: p\ntargets:\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}\nworkload: {rw: randread}\n"
            "lab:\n  ceph: {osds: 3, osd_cpus: [VALUES]}\n")
    with pytest.raises(UserError, match=r"greater than or equal to 0\.01") as caught:
        load_plan_text(text.replace("VALUES", "0.001, 0.5"), "p.yaml")
    assert "lab.ceph.osd_cpus" in (caught.value.where or ""), caught.value.where
    load_plan_text(text.replace("VALUES", "0.01, 0.5"), "p.yaml")


def test_a_clusters_own_pools_keep_the_one_size_its_cephfs_cases_ask() -> None:
    """A CephFS-only plan at 2 copies on 4 OSDs: the cluster's own pools were made at min(3, osds) = 3 and the plan
    refused; they keep the one size the cases ask, with rbd pools their largest."""
    from storbench.config import load_plan_text
    from storbench.lab.ceph_conf import own_pools_size
    from storbench.plan import expand

    text = ("name: p\ntargets:\n  TARGETS\nworkload: {rw: randread}\n"
            "lab:\n  ceph: {osds: 4, pool_size: SIZES, cephfs: true}\n")
    fs = "fs: {kind: cephfs, size: 4MiB}"
    cases = expand(load_plan_text(text.replace("TARGETS", fs).replace("SIZES", "2"), "p.yaml"))
    assert own_pools_size(cases) == 2
    spec = CephLabSpec(osds=4, osd_size_bytes=1 << 30, objectstore="bluestore", pools=(), default_size=2)
    assert "osd pool default size = 2" in render_ceph_conf(spec, "f" * 36, "/tmp/lab")
    assert "osd pool default size = 3" in render_ceph_conf(replace(spec, default_size=None), "f" * 36, "/tmp/lab")
    rbd = "\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}"
    with_rbd = expand(load_plan_text(text.replace("TARGETS", fs + rbd).replace("SIZES", "2"), "p.yaml"))
    assert own_pools_size(with_rbd) is None  # the rbd pools' largest sets it


def test_osds_per_device_has_no_phantom_osds_axis_and_pool_size_reads_its_osd_counts() -> None:
    """With osds_per_device the OSD count is devices x it: the schema's unused osds ([3]) and osd_size had stayed
    sweep axes (an exclude on osds: 4 "never occurs: 3"), pool_size 4 on 4 and 8 OSDs was refused against those
    3 OSDs, and an exclude of the short combination, as the refusal's hint says, was refused all the same."""
    from storbench.config import load_plan_text
    from storbench.plan import expand

    text = ("name: p\ntargets:\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}\nworkload: {rw: randread}\n"
            "lab:\n  ceph: {osds_per_device: [2, 4], devices: 2, device_size: 8GiB, pool_size: 4}\n")
    assert [c.lab.ceph.osds for c in expand(load_plan_text(text, "p.yaml"))] == [4, 8]  # type: ignore[union-attr]
    with pytest.raises(UserError, match="'osds' is not a sweep parameter of this plan"):
        expand(load_plan_text(text + "exclude: [{osds: 4}]\n", "p.yaml"))
    swept = ("name: p\ntargets:\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}\nworkload: {rw: randread}\n"
             "lab:\n  ceph: {osds: [1, 3], pool_size: [1, 3]}\n")
    with pytest.raises(UserError, match="pool_size 3 needs at least 3 OSDs, the sweep has 1"):
        load_plan_text(swept, "p.yaml")
    assert len(expand(load_plan_text(swept + "exclude: [{osds: 1, pool_size: 3}]\n", "p.yaml"))) == 3
    # with osds_per_device the rule names it, not osds: that combination left out is no refusal either
    per_device = ("name: p\ntargets:\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}\nworkload: {rw: randread}\n"
                  "lab:\n  ceph: {osds_per_device: [1, 2], devices: 2, device_size: 8GiB, pool_size: [2, 3]}\n")
    with pytest.raises(UserError, match="pool_size 3 needs at least 3 OSDs, the sweep has 2"):
        load_plan_text(per_device, "p.yaml")
    assert len(expand(load_plan_text(per_device + "exclude: [{osds_per_device: 1, pool_size: 3}]\n", "p.yaml"))) == 3
