"""Storage-node figures from a real Prometheus scraping a real node_exporter (both from Debian), started by the
test on loopback with a 1 s scrape. Runs in CI (scripts/setup.sh --dev installs them); skipped elsewhere."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import inside, run_cli, write_plan

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")

pytestmark = [
    pytest.mark.fio,
    pytest.mark.skipif(PROMETHEUS is None or NODE_EXPORTER is None,
                       reason="needs prometheus and prometheus-node-exporter (scripts/setup.sh --dev)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _query(url: str, promql: str) -> list[object]:
    with urllib.request.urlopen(f"{url}/api/v1/query?query={urllib.request.quote(promql)}", timeout=5) as answer:
        result: list[object] = json.loads(answer.read())["data"]["result"]
        return result


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert PROMETHEUS is not None and NODE_EXPORTER is not None
    work = tmp_path_factory.mktemp("prometheus")
    exporter_port, prometheus_port = _free_port(), _free_port()
    (work / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs:\n  - job_name: node\n    static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n")
    logs = open(work / "logs.txt", "wb")  # noqa: SIM115 - closed at teardown
    exporter = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{exporter_port}"],
                                stdout=logs, stderr=subprocess.STDOUT)
    server = subprocess.Popen([PROMETHEUS, f"--config.file={work / 'prometheus.yml'}",
                               f"--storage.tsdb.path={work / 'data'}",
                               f"--web.listen-address=127.0.0.1:{prometheus_port}"], stdout=logs,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{prometheus_port}"
    try:
        deadline = time.time() + 60
        while True:  # node_exporter's first samples are queryable some seconds after start
            try:
                if _query(url, "node_cpu_seconds_total"):
                    break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail("Prometheus never had node_exporter samples: "
                            + (work / "logs.txt").read_text(errors="replace")[-2000:])
            time.sleep(0.5)
        time.sleep(3)  # enough scrapes for a 3 s rate window
        yield url
    finally:
        for process in (server, exporter):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        logs.close()


PLAN = """
name: prom
targets:
  scratch: {kind: path, path: ./data, size: 64MiB}
workload:
  rw: randwrite
  bs: 4k
  iodepth: 16
  runtime: 4s
  ramp: 1s
repeat: 1
telemetry:
  prometheus:
    url: URL
    rate_window: 3s
    queries: {broken: "rate(node_cpu_seconds_total[", up_targets: "up"}
"""


@pytest.mark.parametrize("rate_window", ["", "    rate_window: 3s\n"])
def test_storage_node_figures_come_from_prometheus(rate_window: str, prometheus: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """node_exporter on this host sees the load the local sampler sees, over the same window: without a rate
    window one value over the measured window, with one the values from that long after its start."""
    plan = write_plan(tmp_path, PLAN.replace("URL", prometheus).replace("    rate_window: 3s\n", rate_window))
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, _, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, err
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    (record,) = json.loads(out)
    # node_exporter on this host saw the same load the local sampler saw
    assert record["node_busiest"].startswith("127.0.0.1:")
    assert 0 < record["node_cpu_busy_pct"] <= 100
    assert record["node_disk_util_pct"] > 10
    assert abs(record["node_cpu_busy_pct"] - record["host_cpu_busy_pct"]) < 15  # the same window (6 apart seen)
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        metrics = {row[0] for row in conn.execute(
            "SELECT DISTINCT metric FROM telemetry_samples WHERE source = 'prometheus'")}
        problems = json.loads(conn.execute("SELECT problems_json FROM telemetry").fetchone()[0])
    finally:
        conn.close()
    assert {"cpu_busy_pct", "disk_util_pct", "net_rx_bytes_per_s", "memory_used_bytes", "up_targets"} <= metrics
    # a broken query is recorded as a problem; the run and the other queries go on
    assert "broken" not in metrics and any("broken" in p for p in problems), problems
    code, out, _ = run_cli(capsys, "show", "--db", str(db))
    assert "node cpu %" in out and "node disk %" in out


def test_unreachable_prometheus_is_a_problem_not_a_failed_run(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, PLAN.replace("URL", f"http://127.0.0.1:{_free_port()}").replace("4s", "1s")
                      .replace("    rate_window: 3s\n", ""))
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, _, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, err
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        status = conn.execute("SELECT status FROM repetitions").fetchone()[0]
        problems = json.loads(conn.execute("SELECT problems_json FROM telemetry").fetchone()[0])
    finally:
        conn.close()
    assert status == "ok" and any("cannot reach Prometheus" in p for p in problems), problems
