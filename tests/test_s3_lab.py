"""S3 for real: the Ceph lab's radosgw (lab.ceph.rgw), PUT, GET, DELETE and a mix through fio's http engine;
then the same radosgw named as any S3 service (endpoint, bucket, keys from the environment), a missing bucket and
wrong keys refused in one line, nothing left in the bucket, no key in the results.

Runs in CI (scripts/test.sh installs Ceph, radosgw and builds fio with libcurl)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import every_stored_text, run_cli, write_plan
from storbench.lab.ceph import CephLab
from storbench.lab.ceph_daemons import rgw_endpoint
from storbench.lab.hosts import HostsLab
from storbench.s3sign import S3Credentials
from storbench.targets.s3 import LAB_BUCKET, S3Service, list_objects

pytestmark = [
    pytest.mark.fio,
    pytest.mark.ceph,
    pytest.mark.skipif(shutil.which("radosgw") is None or os.geteuid() != 0,
                       reason="needs root, Ceph and radosgw (scripts/setup.sh --labs)"),
]

LAB_PLAN = """
name: rgw
targets:
  objects: {kind: s3}
# 4 GiB: at 1 GiB a fast run's PUTs filled the memstore OSD (HEALTH_ERR OSD_FULL) and the getput runs hung until
# their watchdog; memstore holds in memory only what is written
lab:
  ceph: {osds: 1, osd_size: 4GiB, objectstore: memstore, pool_size: 1, rgw: true}
workload:
  rw: [put, get, delete_object, getput]
  bs: [4k, 256k]
  objects: 8
  numjobs: 2
  runtime: 1s
repeat: 1
# radosgw's counters read every 0.2 s: a 1 s window read once a second may count as little as half its
# operations (an interval belongs to the window when half of it lies inside), and the layer that saw under half
# of the client's operations is not named
telemetry: {interval: 0.2s}
"""

ENDPOINT_PLAN = """
name: rgw-endpoint
targets:
  objects: {{kind: s3, endpoint: "{endpoint}", bucket: {bucket}}}
workload:
  rw: [put, get]
  bs: 64k
  objects: 4
  runtime: 1s
repeat: 1
"""


@pytest.fixture
def lab_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "lab"
    monkeypatch.setattr("storbench.lab.ceph.DEFAULT_LAB_DIR", directory)
    monkeypatch.setattr("storbench.lab.hosts.DEFAULT_LAB_DIR", directory)
    yield directory
    CephLab(directory / "ceph").down()
    HostsLab(directory / "hosts").down()


def test_put_get_delete_on_the_labs_radosgw_then_as_any_s3_service(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, LAB_PLAN)), "--db", str(db), "--keep-lab")
    assert code == 0, out + err
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0, err
    records = json.loads(out)
    done = {(r["rw"], r["bs_bytes"], r["direction"]): r for r in records}
    assert all(r["status"] == "ok" for r in records) and len(done) == 10  # getput: a GET and a PUT row
    for (rw, bs, direction), record in done.items():
        assert record["iops"] > 0 and record["lat_p99_ns"] > 0, (rw, bs, direction)
    assert {d for (rw, _, d) in done if rw == "delete_object"} == {"trim"}
    # a GET moved whole objects of bs: its bytes are its operations times the object size
    get = done[("get", 256 * 1024, "read")]
    assert get["io_bytes"] == get["total_ios"] * 256 * 1024
    # where the time goes: radosgw answered the GETs and PUTs (its own counters), within the client's latency
    for rw, direction in (("get", "read"), ("put", "write")):
        record = done[(rw, 4096, direction)]
        assert record["storage_layer"] == "radosgw", record
        assert 0 < record["storage_lat_ns"] < record["lat_mean_ns"] * 1.05, record

    lab = CephLab(lab_dir / "ceph")
    info = lab.info()
    assert info is not None and info.spec.rgw
    service = S3Service(rgw_endpoint(info), "us-east-1", S3Credentials(*lab.s3_credentials()))
    assert list_objects(service, LAB_BUCKET, "") == []  # nothing of the run is left in the bucket
    stored = every_stored_text(db)  # fio's raw output is compressed: look inside
    assert '"http_s3_key"' in stored  # fio echoed its options: the keys' values redacted
    assert service.credentials.secret_key not in stored and service.credentials.access_key not in stored
    with sqlite3.connect(db) as conn:
        texts = [row[0] for row in conn.execute("SELECT job_text FROM repetitions")]
    assert len(texts) == 8 and all("http_s3_key=${STORBENCH_S3_KEY}\n" in text for text in texts)

    # the same radosgw named as an S3 service: keys from the environment, the bucket checked before any I/O
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", service.credentials.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", service.credentials.secret_key)
    plan = write_plan(tmp_path, ENDPOINT_PLAN.format(endpoint=service.endpoint, bucket=LAB_BUCKET), "e.yaml")
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "e.db"))
    assert code == 2 and "not one the operator allows" in err, err  # the plan cannot pick where the keys go
    allow = ("--s3-endpoint", service.endpoint)
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "e.db"), *allow)
    assert code == 0, out + err
    assert "removed 4 objects from bucket storbench" in out
    assert list_objects(service, LAB_BUCKET, "") == []

    missing = write_plan(tmp_path, ENDPOINT_PLAN.format(endpoint=service.endpoint, bucket="no-such-bucket"), "m.yaml")
    code, out, err = run_cli(capsys, "run", str(missing), "--db", str(tmp_path / "m.db"), *allow)
    assert code == 2 and "bucket 'no-such-bucket' does not exist" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m.db").exists()

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "w.db"), *allow)
    assert code == 2 and "the credentials may not use bucket 'storbench'" in err, err
    assert "wrong" not in err


CLIENTS_PLAN = """
name: rgw-clients
targets:
  objects: {kind: s3}
lab:
  ceph: {osds: 1, osd_size: 4GiB, objectstore: memstore, pool_size: 1, rgw: true}
  hosts: {count: 2}
workload:
  rw: [put, get]
  bs: 4k
  objects: 4
  numjobs: 2
  runtime: 1s
clients: 2
repeat: 1
"""


@pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2 (network namespaces)")
def test_put_and_get_from_many_clients_on_namespace_hosts(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """clients is a sweep axis of object operations: the fio servers (with the http engine) reach the lab's
    radosgw over the bridge; the keys go to them inside the job files sent, never into the results."""
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, CLIENTS_PLAN)), "--db", str(db), "--keep-lab")
    assert code == 0, out + err
    assert "removed 16 objects from bucket storbench" in out  # 2 clients x 2 jobs x 4 objects, PUT then GET's fill
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json", "--per-client")
    records = json.loads(out)
    merged = {r["rw"]: r for r in records if not r["client"]}
    assert set(merged) == {"put", "get"} and all(r["status"] == "ok" and r["clients"] == 2 for r in merged.values())
    per_client = [r for r in records if r["client"]]
    assert len({r["client"] for r in per_client}) == 2 and all(r["total_ios"] > 0 for r in per_client)
    for rw, record in merged.items():
        assert record["total_ios"] == sum(r["total_ios"] for r in per_client if r["rw"] == rw)
    lab = CephLab(lab_dir / "ceph")
    access_key, secret_key = lab.s3_credentials()
    stored = every_stored_text(db)
    assert secret_key not in stored and access_key not in stored
    with sqlite3.connect(db) as conn:
        texts = [row[0] for row in conn.execute("SELECT job_text FROM repetitions")]
    assert all(text.count("http_s3_key=${STORBENCH_S3_KEY}\n") == 2 and "client 2" in text for text in texts)
    assert "storbench-host-" in os.popen("ip netns list").read()  # kept (--keep-lab) until the fixture's down
