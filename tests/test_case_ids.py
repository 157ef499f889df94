"""Case ids are a case's identity: `--resume`, comparisons with older runs and the store all key on them. These
literal ids pin every field that makes a case (every target kind, workload fields, pass-through options, lab
settings, clients): a change to what a case is, or to how it is hashed, fails here and needs a store migration.
The ids were computed by storbench before issue 10 (commit 41824ce) and are unchanged since."""

from __future__ import annotations

import pytest

from storbench.config import load_plan_text
from storbench.plan import expand

PLANS: dict[str, str] = {
"labs": """\
name: ids-labs
targets:
  dir: {kind: path, path: /srv/bench, size: 64MiB}
  dev: {kind: block, device: /dev/nvme0n1}
  img: {kind: rbd, pool: bench, image: img, size: 1GiB}
  fs: {kind: cephfs, size: 64MiB}
  exp: {kind: nfs, size: 64MiB}
workload:
  rw: [randread, randrw]
  rwmixread: 70
  bs: [4k, 1m]
  iodepth: 16
  runtime: 5s
  fio: {thinktime: 10}
lab:
  ceph: {osds: 3, pool_size: [2, 3], cephfs: true, cache_size: 1GiB}
  nfs: {}
""",
"clients": """\
name: ids-clients
targets:
  dir: {kind: path, path: /srv/bench, size: 64MiB}
  img: {kind: rbd, pool: bench, image: img, size: 256MiB}
workload: {rw: randwrite, bs: 4k, iodepth: [1, 32], numjobs: 2, direct: false, ioengine: io_uring}
clients: [1, 2]
lab:
  ceph: {osds: 1, objectstore: memstore, pool_size: 1}
  hosts: {count: 2}
""",
"pods": """\
name: ids-pods
targets:
  rwo: {kind: pvc, storage_class: fast, size: 1GiB, node_selector: {disk: ssd}}
  raw: {kind: pvc, size: 1GiB, volume_mode: Block}
workload: {rw: randread, bs: 64k, ramp: 2s}
clients: [1, 3]
""",
}

# (target, rw, bs_bytes, iodepth, clients, pool_size) -> case id
GOLDEN: dict[str, dict[tuple[str, str, int, int, int, str], str]] = {
    "labs": {
        ("dir", "randread", 4096, 16, 1, "2"): "247fd465fe5b",
        ("dir", "randread", 4096, 16, 1, "3"): "159ef72bcc4b",
        ("dir", "randread", 1048576, 16, 1, "2"): "df6e5ae5fe2e",
        ("dir", "randread", 1048576, 16, 1, "3"): "3a2a0a83a111",
        ("dir", "randrw", 4096, 16, 1, "2"): "96422f261683",
        ("dir", "randrw", 4096, 16, 1, "3"): "4abb4295d662",
        ("dir", "randrw", 1048576, 16, 1, "2"): "5edeff213616",
        ("dir", "randrw", 1048576, 16, 1, "3"): "20908c9012b2",
        ("dev", "randread", 4096, 16, 1, "2"): "16fa166722dc",
        ("dev", "randread", 4096, 16, 1, "3"): "ed5f00cb9265",
        ("dev", "randread", 1048576, 16, 1, "2"): "abb8a62521f7",
        ("dev", "randread", 1048576, 16, 1, "3"): "1fc522e58bf0",
        ("dev", "randrw", 4096, 16, 1, "2"): "129819b43bff",
        ("dev", "randrw", 4096, 16, 1, "3"): "f42ff8160dba",
        ("dev", "randrw", 1048576, 16, 1, "2"): "117232259b44",
        ("dev", "randrw", 1048576, 16, 1, "3"): "50a08992ddca",
        ("img", "randread", 4096, 16, 1, "2"): "2ecb807dd2cf",
        ("img", "randread", 4096, 16, 1, "3"): "48e894b419e1",
        ("img", "randread", 1048576, 16, 1, "2"): "6b00dabae8fa",
        ("img", "randread", 1048576, 16, 1, "3"): "292699b316c7",
        ("img", "randrw", 4096, 16, 1, "2"): "96d71a362eff",
        ("img", "randrw", 4096, 16, 1, "3"): "4615e5dae520",
        ("img", "randrw", 1048576, 16, 1, "2"): "94cc79d05179",
        ("img", "randrw", 1048576, 16, 1, "3"): "844215ce2092",
        ("fs", "randread", 4096, 16, 1, "2"): "cbafedaca486",
        ("fs", "randread", 4096, 16, 1, "3"): "a0521d21d583",
        ("fs", "randread", 1048576, 16, 1, "2"): "8cc4e38e3692",
        ("fs", "randread", 1048576, 16, 1, "3"): "f697eb9dcf08",
        ("fs", "randrw", 4096, 16, 1, "2"): "c5fb54df102a",
        ("fs", "randrw", 4096, 16, 1, "3"): "b747e532674b",
        ("fs", "randrw", 1048576, 16, 1, "2"): "2e7288af8740",
        ("fs", "randrw", 1048576, 16, 1, "3"): "fb0f38f0ca1e",
        ("exp", "randread", 4096, 16, 1, "2"): "220872a12a3d",
        ("exp", "randread", 4096, 16, 1, "3"): "18c1f417a174",
        ("exp", "randread", 1048576, 16, 1, "2"): "a76eb6185486",
        ("exp", "randread", 1048576, 16, 1, "3"): "d10be215fe97",
        ("exp", "randrw", 4096, 16, 1, "2"): "5bf8fc5c4e5c",
        ("exp", "randrw", 4096, 16, 1, "3"): "7b1a78198381",
        ("exp", "randrw", 1048576, 16, 1, "2"): "2d4ed455104a",
        ("exp", "randrw", 1048576, 16, 1, "3"): "b5dd1253644c",
    },
    "clients": {
        ("dir", "randwrite", 4096, 1, 1, "1"): "f9892b501843",
        ("dir", "randwrite", 4096, 1, 2, "1"): "2dea6f163367",
        ("dir", "randwrite", 4096, 32, 1, "1"): "e975a7b83f49",
        ("dir", "randwrite", 4096, 32, 2, "1"): "d5dcc4036187",
        ("img", "randwrite", 4096, 1, 1, "1"): "3106ff395b64",
        ("img", "randwrite", 4096, 1, 2, "1"): "1a0f52b27140",
        ("img", "randwrite", 4096, 32, 1, "1"): "505dce212718",
        ("img", "randwrite", 4096, 32, 2, "1"): "a1b7d79bc142",
    },
    "pods": {
        ("rwo", "randread", 65536, 1, 1, ""): "d850b7293559",
        ("rwo", "randread", 65536, 1, 3, ""): "b60e5ee67c89",
        ("raw", "randread", 65536, 1, 1, ""): "0ff66a6bb329",
        ("raw", "randread", 65536, 1, 3, ""): "a5464ddd0a84",
    },
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_case_ids_are_pinned(name: str) -> None:
    cases = expand(load_plan_text(PLANS[name], f"{name}.yaml"))
    found = {(c.target.name, c.workload.rw, c.workload.bs_bytes, c.workload.iodepth, c.clients,
              dict(c.lab.pairs()).get("pool_size", "")): c.case_id for c in cases}
    assert found == GOLDEN[name]
