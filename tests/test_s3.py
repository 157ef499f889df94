"""Object storage: s3 targets through fio's http engine (S3 mode). The signing and job texts are checked here;
the real PUT/GET/DELETE cases run against the Ceph lab's radosgw (tests/test_s3_lab.py)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.config import load_plan_text
from storbench.fio.jobfile import FILL_JOB, JobBinding, render_job
from storbench.fio.merge import client_measurement
from storbench.fio.parse import parse_fio_json
from storbench.plan import expand
from storbench.s3sign import EMPTY_SHA256, S3Credentials, signed_headers
from storbench.targets.s3 import S3Access, S3Service, load_credentials, s3_binding

AWS_EXAMPLE = S3Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")


@pytest.mark.parametrize(("query", "signature"), [
    # AWS's published examples of header-based Signature Version 4 for S3 (GET Bucket, GET Bucket lifecycle)
    ({"max-keys": "2", "prefix": "J"}, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
    ({"lifecycle": ""}, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
])
def test_signature_v4_matches_the_published_examples(query: dict[str, str], signature: str) -> None:
    headers = signed_headers("GET", "examplebucket.s3.amazonaws.com", "/", query, EMPTY_SHA256, AWS_EXAMPLE,
                             "us-east-1", datetime(2013, 5, 24))
    assert headers["authorization"].endswith(f"Signature={signature}")
    assert headers["x-amz-date"] == "20130524T000000Z"
    assert "EXAMPLEKEY" not in repr(AWS_EXAMPLE)


PLAN = """
name: objects
targets:
  store: {{kind: s3, endpoint: "http://127.0.0.1:9", bucket: bench}}
workload:
  rw: [put, get, delete_object, getput]
  bs: [4k, 1m]
  objects: 8
  numjobs: 2
  iodepth: [1, 16]
  runtime: 2s
  rwmixread: 70
{extra}
"""


def test_object_cases_render_the_http_engine_with_keys_only_in_the_environment() -> None:
    cases = expand(load_plan_text(PLAN.format(extra=""), "plan.yaml"))
    # iodepth does not apply to the http engine (one request at a time per job): 4 operations x 2 sizes
    assert len(cases) == 8 and {c.workload.iodepth for c in cases} == {1}
    service = S3Service("http://127.0.0.1:9", "us-east-1", S3Credentials("KEYID123", "sEcReT/KEY"))
    binding = s3_binding(service, "bench", "/opt/fio", "storbench.0123456789ab.")
    assert dict(binding.env) == {"STORBENCH_S3_KEY_ID": "KEYID123", "STORBENCH_S3_KEY": "sEcReT/KEY",
                                 "no_proxy": "*", "NO_PROXY": "*"}
    texts = {(c.workload.rw, c.workload.bs_bytes): render_job(c, binding, 0) for c in cases}
    for text in texts.values():
        assert "sEcReT" not in text and "KEYID123" not in text
        assert "http_s3_key=${STORBENCH_S3_KEY}\n" in text and "http_s3_keyid=${STORBENCH_S3_KEY_ID}\n" in text
        assert "ioengine=http\n" in text and "filename_format=/bench/storbench.0123456789ab.$jobnum.$filenum\n" in text
    put, get = texts[("put", 4096)], texts[("get", 1 << 20)]
    assert FILL_JOB not in put and "rw=write\n" in put and "time_based=1\n" in put and "size=32k\n" in put
    # get PUTs its objects first (same geometry: the same object names), then reads them for runtime
    fill, measured = get.split(f"[{FILL_JOB}]")[1].split("\n[", 1)
    assert "rw=write\n" in fill and "time_based=0\n" in fill and "size=8m\n" in fill and "numjobs=2\n" in fill
    # every object PUT, however long it takes: fio's http engine reads a missing object as zeros (a fast "success")
    assert "\nruntime=0" in fill and "runtime=0" not in measured
    assert "stonewall=1\n" in measured and "rw=read\n" in measured and "size=8m\n" in measured
    delete = texts[("delete_object", 4096)]
    assert "rw=trim\n" in delete.split(f"[{FILL_JOB}]")[1].split("\n[", 1)[1]
    assert "\nruntime=0" in delete.split(f"[{FILL_JOB}]")[1].split("\n[", 1)[0]
    assert "time_based=0\n" in delete.split("[", 2)[1]  # each object deleted once, not for a runtime
    mixed = texts[("getput", 4096)]
    assert "rw=randrw\n" in mixed and "rwmixread=70\n" in mixed


def test_the_unmeasured_put_of_a_get_job_is_left_out_of_the_measurement() -> None:
    def job(name: str, reads: int, writes: int) -> dict[str, object]:
        def direction(ios: int) -> dict[str, object]:
            return {"total_ios": ios, "io_bytes": ios * 4096, "runtime": 1000, "iops": float(ios), "bw_bytes": 1.0,
                    "lat_ns": {"N": ios, "mean": 1000.0, "min": 1, "max": 2000, "bins": {"1000": ios}},
                    "clat_ns": {"N": ios, "mean": 900.0, "min": 1, "max": 1900, "bins": {"900": ios}}}
        return {"jobname": name, "error": 0, "read": direction(reads), "write": direction(writes)}

    text = json.dumps({"fio version": "fio-3.33", "jobs": [job(FILL_JOB, 0, 16), job("abc", 40, 0)]})
    measured = client_measurement(parse_fio_json(text))
    assert measured.jobs == 1
    assert [(d.direction.value, d.total_ios) for d in measured.directions] == [("read", 40)]


def test_credentials_come_from_the_operators_environment_or_credentials_file(tmp_path: Path) -> None:
    keys = load_credentials(S3Access(), {"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"})
    assert (keys.access_key, keys.secret_key) == ("id", "secret")
    (tmp_path / "creds").write_text("[default]\naws_access_key_id = a1\naws_secret_access_key = s1\n"
                                    "[bench]\naws_access_key_id = a2\naws_secret_access_key = s%2\n")
    keys = load_credentials(S3Access(credentials_file=str(tmp_path / "creds"), profile="bench"), {})
    assert (keys.access_key, keys.secret_key) == ("a2", "s%2")  # no interpolation of '%'


@pytest.mark.parametrize(("extra", "target", "message"), [
    ("", None, "no S3 credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set)"),
    ("", '{kind: s3, endpoint: "http://127.0.0.1:9", bucket: bench, credentials_file: /root/.aws/credentials}',
     "credentials_file is not a plan setting: S3 keys come from the operator"),
    ("", '{kind: s3, endpoint: "http://127.0.0.1:9", bucket: bench, profile: prod}',
     "profile is not a plan setting"),
    ("", '{kind: s3, endpoint: "http://127.0.0.2:9", bucket: bench}',
     "endpoint http://127.0.0.2:9 is not one the operator allows S3 keys to go to"),
    ("", "{kind: s3}", "has no endpoint and the plan's Ceph lab runs no radosgw"),
    ("", '{kind: s3, endpoint: "http://127.0.0.1:9"}', "has an endpoint but no bucket"),
    ("", '{kind: s3, endpoint: "http://h;rm -rf /", bucket: b}', "is not an http(s)://host[:port] endpoint"),
    ("", '{kind: s3, endpoint: "http://h", bucket: "../etc"}', "is not an S3 bucket name"),
    ("  fio: {http_host: evil}", None, "'http_host' names a cluster, pool, image, URL or host"),
])
def test_bad_s3_plans_give_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch, extra: str, target: str | None,
                                               message: str) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    text = PLAN.format(extra=extra)
    if target is not None:
        text = text.replace('{kind: s3, endpoint: "http://127.0.0.1:9", bucket: bench}', target)
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, text)), "--db", str(db),
                             "--s3-endpoint", "http://127.0.0.1:9")
    assert code == 2, out + err
    assert message in err and len(err.strip().splitlines()) <= 2, err  # the line and its hint
    assert not db.exists()


@pytest.mark.parametrize(("rw", "target", "message"), [
    ("put", "{kind: path, path: ./d, size: 1MiB}", "object operations go to s3 targets"),
    ("randread", '{kind: s3, endpoint: "http://h", bucket: bench}', "an s3 target takes object operations"),
])
def test_object_operations_and_s3_targets_only_go_together(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           rw: str, target: str, message: str) -> None:
    text = f"name: x\ntargets:\n  t: {target}\nworkload: {{rw: {rw}, runtime: 1s}}\n"
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, text)))
    assert code == 2 and message in err, out + err


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  numjobs: 2", "  numjobs: 4\n  fio: {offset: 1k}", "workload.fio.offset: not with rw: put: fio names each "
     "object by its offset and size: GETs and DELETEs would go to objects never written"),
    ("  numjobs: 2", "  numjobs: 4\n  fio: {bssplit: 4k/50:64k/50}", "workload.fio.bssplit: not with rw: put"),
    ("  objects: 8\n  numjobs: 2", "  objects: 300000\n  numjobs: 4", "name up to 2,400,000 objects (bs values x "
     "objects x numjobs x clients), more than the 1,000,000 storbench removes after a run"),
    # a search goes up to its range's end: 1,000 objects at 1,024 jobs (the plan's numjobs 1 had passed)
    ("  objects: 8\n  numjobs: 2\n  iodepth: [1, 16]\n  runtime: 2s\n  rwmixread: 70",
     "  objects: 1000\n  runtime: 2s\n  rwmixread: 70\nsearch: {slo: p99<=50ms, axis: numjobs, range: [1, 1024]}",
     "name up to 2,048,000 objects (bs values x objects x numjobs x clients, the search at its range)"),
    ("http://127.0.0.1:9", "http://127.0.0.1:99999", "(a port from 1 to 65535)"),
    ("http://127.0.0.1:9", "http://127.0.0.1:09", "(a port from 1 to 65535)"),
    ("bucket: bench}", "bucket: bench, region: EU_WEST}", "'EU_WEST' is not a region name"),
    ('{kind: s3, endpoint: "http://127.0.0.1:9", bucket: bench}', "{kind: s3, bucket: bench}\nlab: {ceph: {rgw: "
     "true}}", "bucket 'bench' on the lab's radosgw, which has only the bucket storbench makes"),
])
def test_object_plans_that_would_measure_missing_objects_or_leave_them_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, message: str) -> None:
    text = PLAN.format(extra="")
    assert old in text
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, text.replace(old, new))))
    assert code == 2 and message in err and len(err.strip().splitlines()) <= 2, out + err


def test_an_operator_endpoint_that_is_not_one_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for endpoint in ("http://127.0.0.1:99999", "s3.example.com:9000", "ftp://h"):
        code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, PLAN.format(extra=""))), "--db",
                                 str(tmp_path / "r.db"), "--s3-endpoint", endpoint)
        assert code == 2 and f"S3 endpoint {endpoint!r} is not http(s)://host[:port]" in err, out + err
        assert "Traceback" not in err


def test_binding_refuses_a_region_that_could_change_the_job_file() -> None:
    from storbench.errors import UserError

    service = S3Service("http://h:1", "us-east-1\n[evil]", S3Credentials("a", "b"))
    with pytest.raises(UserError):
        s3_binding(service, "bench", "/opt/fio", "storbench.0123456789ab.")
    with pytest.raises(ValueError, match="not an object prefix"):
        s3_binding(S3Service("http://h:1", "us-east-1", S3Credentials("a", "b")), "bench", "/opt/fio", "x\n[e]")
    assert JobBinding(options=()).env == ()


def test_plan_estimates_size_based_operations_from_their_count_not_their_runtime_cap() -> None:
    from storbench.schedule import FIO_STARTUP_S, repetition_seconds

    cases = {c.workload.rw: c for c in expand(load_plan_text(PLAN.format(extra="").replace("runtime: 2s",
                                                                                         "runtime: 10m"), "p.yaml"))
             if c.workload.bs_bytes == 4096}
    assert repetition_seconds(cases["delete_object"]) < 5 + FIO_STARTUP_S  # 8 objects, not a 10 minute cap
    assert repetition_seconds(cases["put"]) == 600 + FIO_STARTUP_S  # time based
    assert repetition_seconds(cases["get"]) > 600 + FIO_STARTUP_S  # its PUT of the objects first


def test_the_watchdog_waits_for_an_unmeasured_put_of_every_object_whatever_the_runtime() -> None:
    """The fill before a GET or delete is no longer cut at the runtime: the watchdog gives it its bytes at the
    slowest layout speed (20 MiB/s) and its requests at 10 a second, beside the measured section's runtime."""
    from storbench.watchdog import watchdog_seconds

    text = PLAN.format(extra="").replace("objects: 8", "objects: 1000").replace("bs: [4k, 1m]", "bs: 4m")
    cases = {c.workload.rw: c for c in expand(load_plan_text(text, "p.yaml")) if c.workload.iodepth == 1}
    fill_s = 1000 * 4 * 2 / 20 + 1000 / 10  # 8,000 MiB at 20 MiB/s, 1,000 PUTs a job at 10/s
    for rw in ("get", "getput", "delete_object"):
        assert fill_s + 2 <= watchdog_seconds(cases[rw], 0.0) <= fill_s + 2 + 5, rw
    assert watchdog_seconds(cases["put"], 0.0) <= 2 + 5  # no fill: its runtime
    # 16 clients of 32 jobs: their 512,000 PUTs reach one radosgw, at 50 a second together, not 10 a job at once
    from dataclasses import replace

    many = replace(cases["get"], clients=16, workload=replace(cases["get"].workload, numjobs=32, bs_bytes=4096))
    assert watchdog_seconds(many, 0.0) >= 1000 * 32 * 16 / 50


def test_each_clients_objects_stay_under_the_runs_prefix() -> None:
    """Many clients name their objects storbench.<run>.c<N>.<job>.<file>: the run's removal finds all of them."""
    from storbench.fio.jobfile import client_binding

    prefix = "storbench.0123456789ab."
    binding = s3_binding(S3Service("http://h:1", "us-east-1", S3Credentials("a", "b")), "bench", "/opt/fio", prefix)
    formats = {dict(client_binding(binding, index).options)["filename_format"] for index in (1, 2)}
    assert formats == {f"/bench/{prefix}c1.$jobnum.$filenum", f"/bench/{prefix}c2.$jobnum.$filenum"}
    local = client_binding(JobBinding(options=(("filename_format", "storbench.$jobnum.$filenum"),)), 3)
    assert dict(local.options)["filename_format"] == "storbench.c3.$jobnum.$filenum"  # as before
