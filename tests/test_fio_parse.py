"""fio output of several shapes, parsed and merged; plus the verdict on one execution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.fio.merge import client_measurement
from storbench.fio.outcome import judge_repetition
from storbench.fio.parse import load_fio_json_lenient, parse_fio_json
from storbench.importer import import_fio_output
from storbench.model import Direction, Status


def test_json_plus_two_jobs_merge_to_one_client(fixtures: Path) -> None:
    text = (fixtures / "randrw-numjobs2.jsonplus.json").read_text()
    raw = json.loads(text)
    output = parse_fio_json(text)
    assert output.fio_version.startswith("fio-3")
    assert len(output.jobs) == 2
    client = client_measurement(output)
    assert client.jobs == 2
    read = client.direction(Direction.READ)
    write = client.direction(Direction.WRITE)
    assert read is not None and write is not None
    assert read.total_ios == sum(j["read"]["total_ios"] for j in raw["jobs"])
    assert read.iops == pytest.approx(sum(j["read"]["iops"] for j in raw["jobs"]))
    assert write.bw_bytes_per_s == pytest.approx(sum(j["write"]["bw_bytes"] for j in raw["jobs"]))
    # every I/O is in the merged bins, for completion and total latency
    assert read.clat.histogram is not None and read.clat.histogram.total == read.total_ios
    assert read.lat.histogram is not None and read.lat.histogram.total == read.total_ios
    assert read.lat.min_ns == min(j["read"]["lat_ns"]["min"] for j in raw["jobs"])
    assert client.cpu_sys_pct == pytest.approx(sum(j["sys_cpu"] for j in raw["jobs"]))
    assert client.disks and 0 <= client.disks[0].util_pct <= 100
    # rwmixread=70: reads are about 70 % of the I/O
    assert 0.6 < read.total_ios / (read.total_ios + write.total_ios) < 0.8


def test_plain_json_keeps_fios_percentiles_for_a_single_job(fixtures: Path) -> None:
    output = parse_fio_json((fixtures / "randread-plain.json").read_text())
    read = client_measurement(output).direction(Direction.READ)
    assert read is not None
    assert read.clat.histogram is None
    raw = json.loads((fixtures / "randread-plain.json").read_text())
    assert read.clat.percentile_ns(99.0) == raw["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"]
    assert client_measurement(output).direction(Direction.WRITE) is None


def test_leading_text_is_tolerated_on_import_only(fixtures: Path) -> None:
    text = (fixtures / "with-leading-text.txt").read_text()
    with pytest.raises(ValueError):
        parse_fio_json(text)
    assert load_fio_json_lenient(text, "x").jobs


def test_garbage_is_a_user_error() -> None:
    with pytest.raises(UserError) as info:
        load_fio_json_lenient("hello\nworld\n", "notes.txt")
    assert "notes.txt" in info.value.one_line()


def test_import_groups_numjobs_clones_into_one_case(fixtures: Path) -> None:
    text = (fixtures / "randrw-numjobs2.jsonplus.json").read_text()
    items = import_fio_output(parse_fio_json(text), text, "old-array")
    assert len(items) == 1
    case = items[0].case
    assert (case.workload.rw, case.workload.bs_bytes, case.workload.iodepth, case.workload.numjobs) == (
        "randrw", 4096, 4, 2)
    assert case.workload.rwmixread == 70 and case.target.name == "old-array"
    assert items[0].outcome.status == Status.OK


def _judge(output_text: str, returncode: int | None = 0, timed_out: bool = False, rw: str = "randrw",
           stderr: str = ""):  # type: ignore[no-untyped-def]
    return judge_repetition(rw=rw, returncode=returncode, timed_out=timed_out, timeout_s=9, output_text=output_text,
                            stderr_tail=stderr, started_at_s=1.0, finished_at_s=2.0, job_text="[x]\n",
                            command=("fio",), fio_version="fio-3.33")


def test_judge_ok_failed_timeout(fixtures: Path) -> None:
    text = (fixtures / "randrw-numjobs2.jsonplus.json").read_text()
    assert _judge(text).status == Status.OK
    failed = _judge("", returncode=1, stderr="fio: something\nfio: pid=1, err=22/file:filesetup.c\n")
    assert failed.status == Status.FAILED and "err=22" in failed.error
    assert _judge("", returncode=None, timed_out=True).status == Status.TIMEOUT
    # exit 0 but the pattern's write direction did nothing: a failure, not a silent zero
    reads_only = (fixtures / "randread-plain.json").read_text()
    judged = _judge(reads_only, rw="randrw")
    assert judged.status == Status.FAILED and "no write" in judged.error


def test_job_error_is_a_failure(fixtures: Path) -> None:
    raw = json.loads((fixtures / "randread-plain.json").read_text())
    raw["jobs"][0]["error"] = 5
    judged = _judge(json.dumps(raw), rw="randread")
    assert judged.status == Status.FAILED and "error 5" in judged.error


def test_a_failed_fio_says_what_went_wrong_not_what_it_did_about_it(fixtures: Path) -> None:
    """fio's first error line says what went wrong, its last only "job global dropped" (all a user had seen); a fio
    that said nothing and exited 1 with its document (randtrim on a file: error 25) had read "status 1: }"."""
    said = "fio: CPU 999 too large (max=1)\nfio: failed parsing cpus_allowed=999\nfio: job global dropped\n"
    failed = _judge("", returncode=1, stderr=said)
    assert failed.error == ("fio exited with status 1: fio: CPU 999 too large (max=1); fio: failed parsing "
                            "cpus_allowed=999; fio: job global dropped"), failed.error
    raw = json.loads((fixtures / "randread-plain.json").read_text())
    raw["jobs"][0]["error"] = 25
    quiet = _judge(json.dumps(raw, indent=2), returncode=1, rw="randread")
    assert quiet.error == "fio exited with status 1: fio job error 25 (ENOTTY)", quiet.error
    noted = _judge("note: a warning\n" + json.dumps(raw, indent=2), returncode=1, rw="randread")
    assert noted.error == "fio exited with status 1: note: a warning", noted.error  # what it wrote before its report


def test_a_clients_cpu_adds_jobs_that_ran_together_and_weighs_sections_run_in_turn() -> None:
    """rw: metadata's create, stat and delete are stonewalled sections: their CPU figures (each over its own
    runtime) had been added as if at once, three phases at 0.35 cores making 1.05 cores a job ("client-bound")."""
    from storbench.fio.merge import client_cpu_pct
    from storbench.model import JobOutput

    def job(name: str, runtime_ms: int, usr: float) -> JobOutput:
        return JobOutput(jobname=name, error=0, usr_cpu_pct=usr, sys_cpu_pct=usr / 5, directions=(),
                         runtime_ms=runtime_ms)

    phases = [job(f"c.{phase}", ms, 35.0) for phase, ms in (("create", 4000), ("stat", 1000), ("delete", 3000))
              for _ in range(2)]  # numjobs 2: two clones of each section at once
    usr, system = client_cpu_pct(phases)
    assert usr == pytest.approx(70.0) and system == pytest.approx(14.0)
    busy_create = [job("c.create", 4000, 80.0), job("c.stat", 1000, 20.0), job("c.delete", 3000, 40.0)]
    assert client_cpu_pct(busy_create)[0] == pytest.approx((4 * 80 + 20 + 3 * 40) / 8)
    one_section = [job("c", 1000, 30.0), job("c", 1000, 40.0)]
    assert client_cpu_pct(one_section) == (70.0, 14.0)


def test_clones_of_a_size_based_job_are_one_rate_over_the_longest_runtime(fixtures: Path) -> None:
    """Each clone of a create, stat or delete job (or an object deletion) does its own files and stops: one that took
    twice as long. Their rates summed count the early one as still working; every operation over the longest
    runtime is the rate (fio's own group report). A time-based job keeps the sum: its clones ran alike."""
    data = json.loads((fixtures / "randrw-numjobs2.jsonplus.json").read_text())
    for job, runtime_ms in zip(data["jobs"], (1000, 2000), strict=True):
        for direction in ("read", "write"):
            job[direction]["runtime"] = runtime_ms
            job[direction]["iops"] = job[direction]["total_ios"] * 1000 / runtime_ms
    output = parse_fio_json(json.dumps(data))
    total = sum(j["read"]["total_ios"] for j in data["jobs"])
    summed = client_measurement(output).direction(Direction.READ)
    spanned = client_measurement(output, size_based=True).direction(Direction.READ)
    assert summed is not None and spanned is not None
    assert summed.iops == pytest.approx(sum(j["read"]["iops"] for j in data["jobs"]))
    assert spanned.iops == pytest.approx(total * 1000 / 2000) and spanned.iops < summed.iops
    assert spanned.total_ios == summed.total_ios == total
    judged = judge_repetition(rw="delete", returncode=0, timed_out=False, timeout_s=10, output_text=json.dumps(data),
                              stderr_tail="", started_at_s=0, finished_at_s=1, job_text="", command=(),
                              fio_version="fio-3.33")
    written = client_measurement(output, size_based=True).direction(Direction.WRITE)
    (client,) = judged.clients
    assert written is not None and client.direction(Direction.WRITE) == written  # a delete job is size based


def test_clients_of_a_size_based_job_are_one_rate_over_the_longest_client() -> None:
    """Two clients (fio servers, pods) of 1,000 creates each, in 1 s and 2 s: 2,000 creates over 2 s is 1,000/s (their
    rates summed had read 1,500/s, beside a stored runtime of 2 s and 2,000 I/Os); a time-based job keeps the sum."""
    from storbench.fio.merge import merge_clients
    from storbench.model import ClientMeasurement, DirectionMeasurement, LatencyHistogram, LatencySummary

    def client(name: str, runtime_ms: int) -> ClientMeasurement:
        lat = LatencySummary(samples=1000, min_ns=1, max_ns=2, mean_ns=1.5, stddev_ns=0.0,
                             histogram=LatencyHistogram.from_counts(((1000, 1000),)))
        write = DirectionMeasurement(direction=Direction.WRITE, total_ios=1000, io_bytes=0, runtime_ms=runtime_ms,
                                     iops=1000 * 1000 / runtime_ms, bw_bytes_per_s=0.0, clat=lat, lat=lat)
        return ClientMeasurement(client=name, jobs=1, job_errors=(), cpu_usr_pct=0.0, cpu_sys_pct=0.0,
                                 directions=(write,))

    clients = [client("a", 1000), client("b", 2000)]
    (spanned,) = merge_clients(clients, size_based=True)
    (summed,) = merge_clients(clients)
    assert spanned.iops == pytest.approx(1000.0) and summed.iops == pytest.approx(1500.0)
    assert spanned.total_ios == 2000 and spanned.runtime_ms == 2000
