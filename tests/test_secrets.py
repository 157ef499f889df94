"""Secrets never leave and plans cannot reach credentials or the network (issue 28, items 1-3), tried as an
attacker would: a fake S3 service and a capture server on loopback, keys in the environment, real fio.

- the operator's S3 keys never reach a fio server a plan names, nor any byte storbench stores, exports or prints;
- a plan cannot name a credentials file or a profile, nor send keys to an endpoint the operator did not allow;
- `plan` reads no credential and sends nothing;
- the HTTP client follows no redirect, stops an endless listing, caps answers, refuses metadata addresses;
- after a run only that run's objects are removed."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from fake_s3 import FakeS3State, capture_server, drip_server, fake_s3
from helpers import every_stored_text, run_cli, write_plan
from storbench.errors import UserError
from storbench.netclient import RequestRefused, check_destination, request
from storbench.redact import HIDDEN, redact_text
from storbench.s3sign import S3Credentials
from storbench.targets.s3 import Removal, S3Access, S3Service, list_objects, load_credentials, remove_objects

KEY_ID = "AKIDSTORBENCHTEST1"
SECRET = "s3cr3t/Key+With=Signs"

PLAN = """
name: s3-secrets
targets:
  objects: {{kind: s3, endpoint: "{endpoint}", bucket: bench}}
workload:
  rw: {rw}
  bs: 4k
  objects: 4
  runtime: 1s
repeat: 1
{extra}
"""


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("STORBENCH_S3_ENDPOINTS", raising=False)


def _http_fio_or_skip() -> None:
    from storbench.targets.s3 import http_fio_binary

    try:
        http_fio_binary()
    except UserError as exc:
        pytest.skip(f"no fio with the http engine ({exc.message}): storbench setup --labs builds it")


def _assert_no_key(text: str | bytes, where: str) -> None:
    data = text.encode() if isinstance(text, str) else bytes(text)
    for secret in (SECRET, KEY_ID, json.dumps(SECRET)[1:-1], SECRET.replace("/", "\\/")):
        assert secret.encode() not in data, f"{secret!r} found in {where}"


@pytest.mark.fio
def test_a_run_against_s3_leaves_no_key_in_anything_it_wrote_and_removes_only_its_own_objects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: None) -> None:
    _http_fio_or_skip()
    with fake_s3() as (endpoint, state):
        state.objects[("bench", "storbench.0.0")] = b"someone else's"  # an older run's, or not ours at all
        state.objects[("bench", "data.csv")] = b"the bucket owner's"
        db = tmp_path / "r.db"
        plan = write_plan(tmp_path, PLAN.format(endpoint=endpoint, rw="[put, get]", extra=""))
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--s3-endpoint", endpoint)
        assert code == 0, out + err
        written = {key for (_, key) in state.objects}
        puts = {path for method, path, _ in state.requests if method == "PUT"}
        assert puts, "fio's http engine wrote nothing to the fake S3"
        assert written == {"storbench.0.0", "data.csv"}, written  # the run's objects gone, the others kept
        # the keys went only to the operator's endpoint, as a signature (the key id in the clear, the secret never)
        assert all(KEY_ID in headers.get("authorization", KEY_ID) for _, _, headers in state.requests)
        _assert_no_key(b"".join(repr(r).encode() for r in state.requests).replace(KEY_ID.encode(), b""),
                       "the requests (beyond the key id of the signature)")
    outputs = {"run's output": out + err}
    for command in (("show",), ("export", "--format", "json"), ("export", "--format", "csv"),
                    ("compare", "--baseline", "rw=put", "--candidate", "rw=get")):
        code, out, err = run_cli(capsys, *command, "--db", str(db))
        outputs[" ".join(command)] = out + err
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "report.html"))
    assert code == 0, err
    outputs["report.html"] = (tmp_path / "report.html").read_text()
    outputs["the database"] = every_stored_text(db)
    assert "http_s3_key=${STORBENCH_S3_KEY}" in outputs["the database"]  # the job text as run, keys symbolic
    assert '"http_s3_key"' in outputs["the database"]  # fio echoed the option: redacted, not dropped
    for where, text in outputs.items():
        _assert_no_key(text, where)
    _assert_no_key(db.read_bytes(), "the database file")


def test_an_s3_target_on_the_plans_fio_servers_is_refused_before_anything_is_sent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: None) -> None:
    """fio's client expands ${VAR} in a job file before sending it, so a plan's `hosts.servers` would get the keys."""
    with fake_s3() as (endpoint, state), capture_server() as (port, received):
        extra = f'hosts: {{servers: ["127.0.0.1:{port}"]}}'
        plan = write_plan(tmp_path, PLAN.format(endpoint=endpoint, rw="put", extra=extra))
        for command in ("plan", "run"):
            code, _out, err = run_cli(capsys, command, str(plan), "--db", str(tmp_path / "r.db"),
                                     "--s3-endpoint", endpoint)
            assert code == 2 and "its S3 keys would go to them" in err and len(err.strip().splitlines()) == 1, err
        assert state.requests == []
    assert bytes(received) == b""


@pytest.mark.fio
def test_fio_runs_without_the_operators_credentials_in_its_environment(tmp_path: Path, keys: None) -> None:
    """What a fio client could send or print of its own environment holds no key: the supervisor strips them."""
    from storbench.execute.supervisor import supervise

    ended = supervise(["sh", "-c", "env > env.txt"], cwd=tmp_path, timeout_s=10, term_grace_s=1,
                      env={"STORBENCH_S3_KEY": "wanted"})
    assert ended.returncode == 0
    seen = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines() if "=" in line)
    assert seen["STORBENCH_S3_KEY"] == "wanted" and "PATH" in seen
    assert "AWS_SECRET_ACCESS_KEY" not in seen and "AWS_ACCESS_KEY_ID" not in seen
    _assert_no_key((tmp_path / "env.txt").read_text(), "fio's environment")


def test_lab_daemons_and_tools_run_without_the_operators_credentials(tmp_path: Path, keys: None) -> None:
    """A lab's daemons (radosgw, the registry, the Kubernetes control plane: network-facing, kept with --keep-lab)
    and the tools labs and targets run (rbd, skopeo, ip) never hold the operator's keys in their environment."""
    from storbench.lab.process import start_daemon
    from storbench.shell import run

    seen = run(["env"], timeout_s=10)
    assert "PATH=" in seen and "AWS_" not in seen, seen
    _assert_no_key(seen, "a tool's environment")
    pid = start_daemon(["sleep", "30"], tmp_path / "daemon.log")
    try:
        # Popen returns once exec has closed the pipe it watches, before the kernel has laid out the new
        # program's environment: /proc/<pid>/environ reads empty for that moment.
        environ = b""
        for _ in range(200):
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            if environ:
                break
            time.sleep(0.01)
        assert b"PATH=" in environ and b"AWS_" not in environ, environ
        _assert_no_key(environ, "a daemon's environment")
    finally:
        os.kill(pid, 9)


def test_the_environment_programs_get_keeps_no_credential_of_any_common_shape() -> None:
    from storbench.redact import without_secrets

    secret = {"AWS_SESSION_TOKEN": "t", "SMTP_PASS": "p", "DATADOG_APIKEY": "k", "GITHUB_PAT": "g",
              "RCLONE_CONFIG_PASS": "r", "MC_HOST_play": "https://id:key@play.min.io", "DB_PASSWORD": "d",
              "https_proxy": "http://user:pw@proxy:3128", "CEPH_SECRET": "c", "VAULT_TOKEN": "v", "API_KEY": "a"}
    kept = {"PATH": "/usr/bin", "HOME": "/root", "http_proxy": "http://proxy:3128", "KUBECONFIG": "/k",
            "REGISTRY_AUTH_FILE": "/run/containers/auth.json", "CEPH_CONF": "/etc/ceph/ceph.conf", "LANG": "C.UTF-8"}
    assert without_secrets({**secret, **kept}) == kept


def test_a_binding_never_prints_its_keys() -> None:
    """The S3 keys a target's binding carries for fio's environment are left out of its printed form (a log line,
    an exception's locals)."""
    from storbench.execute.base import FioSetup
    from storbench.fio.jobfile import JobBinding

    env = (("STORBENCH_S3_KEY_ID", KEY_ID), ("STORBENCH_S3_KEY", SECRET))
    for shown in (repr(JobBinding(options=(("http_host", "h"),), env=env)), repr(FioSetup(env=env))):
        _assert_no_key(shown, "a printed binding")


def test_plan_reads_no_credential_and_sends_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     keys: None) -> None:
    fifo = tmp_path / "credentials"
    os.mkfifo(fifo)  # reading it would hang `plan`
    with fake_s3() as (endpoint, state):
        plan = write_plan(tmp_path, PLAN.format(endpoint=endpoint, rw="put", extra=""))
        code, out, err = run_cli(capsys, "plan", str(plan), "--s3-endpoint", endpoint,
                                 "--s3-credentials-file", str(fifo))
        assert code == 0, out + err
        code, out, err = run_cli(capsys, "plan", str(plan), "--s3-endpoint", endpoint, "--s3-profile", "prod")
        assert code == 2 and "--s3-profile names a section of --s3-credentials-file" in err, err
        code, out, err = run_cli(capsys, "plan", str(plan))  # an endpoint the operator did not allow
        assert code == 2 and "is not one the operator allows S3 keys to go to" in err, err
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
        assert code == 2 and "--s3-endpoint" in err, err
        assert state.requests == []
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "large"])
def test_a_credentials_file_that_is_not_a_small_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "credentials"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "large":
        path.write_text("[default]\n" + "x = y\n" * 200_000)
    target = "/dev/zero" if kind == "device" else str(path)
    errors: list[str] = []

    def load() -> None:
        try:
            load_credentials(S3Access(credentials_file=target), {})
        except UserError as exc:
            errors.append(exc.message)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "reading the credentials file hung"
    expected = "is larger than" if kind == "large" else "is not a regular file"
    assert len(errors) == 1 and expected in errors[0], errors


def test_no_redirect_is_followed_so_no_signature_reaches_another_host(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: None) -> None:
    _http_fio_or_skip()
    with capture_server() as (port, received), fake_s3(FakeS3State(redirect_to=f"http://127.0.0.1:{port}")) as (
            endpoint, state):
        plan = write_plan(tmp_path, PLAN.format(endpoint=endpoint, rw="put", extra=""))
        code, _out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"), "--s3-endpoint", endpoint)
        assert len(state.requests) == 1  # the bucket check, answered 307
    assert code == 2 and "redirect" in err and len(err.strip().splitlines()) == 1, err
    assert bytes(received) == b""


@pytest.mark.parametrize(("listing", "requests"), [("same-token", 2), ("no-token", 1), ("endless", 25)])
def test_a_listing_that_never_ends_is_stopped(monkeypatch: pytest.MonkeyPatch, listing: str, requests: int) -> None:
    monkeypatch.setattr("storbench.targets.s3.MAX_LIST_PAGES", 25)
    with fake_s3(FakeS3State(listing=listing)) as (endpoint, state):
        state.objects[("bench", "storbench.abc.0.0")] = b"x"
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        with pytest.raises(UserError, match="stopped"):
            list_objects(service, "bench", "storbench.abc.")
        assert len(state.requests) == requests


def test_a_listing_is_capped_in_keys_in_all_and_per_page() -> None:
    """Each page may hold at most the 1,000 keys asked for, and a listing at most max_keys (a 16 MiB page could
    otherwise hold half a million names, and 1,000 of them a memory's worth)."""
    with fake_s3(FakeS3State(listing="endless")) as (endpoint, state):
        for index in range(500):
            state.objects[("bench", f"storbench.abc.{index:04d}")] = b""
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        with pytest.raises(UserError, match=r"more than 2,000 keys under 'storbench.abc.'; stopped"):
            list_objects(service, "bench", "storbench.abc.", max_keys=2000)
        assert len(state.requests) == 5  # 2,500 keys after the fifth page
    with fake_s3() as (endpoint, state):
        for index in range(1500):
            state.objects[("bench", f"storbench.abc.{index:04d}")] = b""
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        with pytest.raises(UserError, match=r"more than 1,200 keys under"):
            remove_objects(service, "bench", "storbench.abc.", max_keys=1200)
        methods = [method for method, _, _ in state.requests]
        assert (methods.count("POST"), methods.count("DELETE")) == (1, 0)  # the first page at once, then stopped
        assert len(state.objects) == 500
    with fake_s3(FakeS3State(ignore_max_keys=True)) as (endpoint, state):
        for index in range(1001):
            state.objects[("bench", f"storbench.abc.{index:04d}")] = b""
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        with pytest.raises(UserError, match=r"a page of 1,001 keys, more than the 1,000 asked for; stopped"):
            list_objects(service, "bench", "storbench.abc.")


@pytest.mark.parametrize(("multi_delete", "requests"), [
    ("yes", (3, 0)),  # three pages: a DeleteObjects each
    ("no", (1, 2100)),  # a 501: key by key from then on
    ("garbage", (1, 2100)),  # a 200 that is no DeleteResult: the same
    ("forbidden", (3, 2100)),  # a 403 for the request (a proxy, a signature it reads otherwise): each page key by key
    ("busy", (3, 2100)),  # a 503: that page key by key, the next one tried whole again
])
def test_an_honest_listing_of_several_pages_is_read_whole_and_removed(multi_delete: str,
                                                                      requests: tuple[int, int]) -> None:
    """A page of keys in one DeleteObjects request (its Content-MD5 checked by the fake service, a key with XML's
    own characters escaped; its answer led by a blank line); key by key where that request did not delete them."""
    with fake_s3(FakeS3State(multi_delete=multi_delete)) as (endpoint, state):
        for index in range(2099):
            state.objects[("bench", f"storbench.abc.{index:04d}")] = b""
        state.objects[("bench", "storbench.abc.<a&b>")] = b""
        state.objects[("bench", "storbench.other.0")] = b""
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        assert len(list_objects(service, "bench", "storbench.abc.")) == 2100
        assert sum(method == "GET" for method, _, _ in state.requests) == 3  # 1,000 a page
        del state.requests[:]
        assert remove_objects(service, "bench", "storbench.abc.") == Removal(2100)
        assert list(state.objects) == [("bench", "storbench.other.0")]
        methods = [method for method, _, _ in state.requests]
        assert (methods.count("POST"), methods.count("DELETE")) == requests


def test_answers_are_capped_and_metadata_addresses_refused() -> None:
    with fake_s3() as (endpoint, state):
        for index in range(50):
            state.objects[("bench", f"k{index:04d}")] = b""
        assert request(f"{endpoint}/bench?list-type=2").status == 200
        with pytest.raises(RequestRefused, match="more than 1,000 bytes"):
            request(f"{endpoint}/bench?list-type=2", max_body_bytes=1000)
    for url in ("http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:9090", "http://[::ffff:169.254.1.1]",
                "http://[fd00:ec2::254]/", "http://100.100.100.200/"):
        with pytest.raises(RequestRefused, match="metadata address"):
            check_destination(url)
        check_destination(url, allowed=True)  # the operator named it
    check_destination("http://127.0.0.1:9")


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100,  # a body of one byte at a time
    b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"y" * 100,  # headers that never end (for 5 s)
])
def test_a_peer_that_drips_bytes_is_stopped_at_the_requests_deadline(answer: bytes) -> None:
    with drip_server(answer, interval_s=0.05) as port:
        started = time.monotonic()
        with pytest.raises(RequestRefused, match=r"did not answer within 1 s"):
            request(f"http://127.0.0.1:{port}/bench", timeout_s=0.5, deadline_s=1.0)  # each byte within 0.5 s
        assert time.monotonic() - started < 2.0


def test_the_request_goes_to_the_address_checked_with_the_name_as_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name that resolves to loopback when checked and to the metadata address afterwards (DNS rebinding):
    it is resolved once, and the connection goes to the address that was checked."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: str, port: object, *args: object, **kwargs: object) -> object:
        if host != "bench.rebind.test":
            return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
        asked.append(host)
        address = "127.0.0.1" if len(asked) == 1 else "169.254.169.254"
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with fake_s3() as (endpoint, state):
        port = endpoint.rsplit(":", 1)[1]
        answer = request(f"http://bench.rebind.test:{port}/bench?list-type=2", timeout_s=2, deadline_s=2)
        assert answer.status == 200 and b"ListBucketResult" in answer.body
        assert state.requests[0][2]["host"] == f"bench.rebind.test:{port}"
    assert asked == ["bench.rebind.test"]  # resolved once
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: [
        (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("169.254.169.254", port))])
    with pytest.raises(RequestRefused, match="metadata address"):
        request("http://bench.rebind.test/bench", timeout_s=1, deadline_s=1)


def test_fios_echo_of_a_key_option_is_redacted_by_name_and_by_value() -> None:
    raw = json.dumps({"global options": {"http_s3_keyid": KEY_ID, "http_s3_key": SECRET, "bs": "4k"}}, indent=2)
    out = redact_text(raw)  # by the option's name alone (an imported file's keys are not known)
    assert SECRET not in out and KEY_ID not in out and json.loads(out)["global options"] == {
        "http_s3_keyid": HIDDEN, "http_s3_key": HIDDEN, "bs": "4k"}
    assert redact_text(f"fio: failed parsing http_s3_key={SECRET}") == f"fio: failed parsing http_s3_key={HIDDEN}"
    assert redact_text(f"curl said: bad key {SECRET[:-1]}x", [SECRET]) == f"curl said: bad key {SECRET[:-1]}x"
    assert redact_text(f"signature over {SECRET} failed", [SECRET]) == f"signature over {HIDDEN} failed"
    escaped = SECRET.replace("/", "\\/")  # fio's JSON writer escapes '/'
    assert redact_text(f'"note": "{escaped}"', [SECRET]) == f'"note": "{HIDDEN}"'
    assert redact_text("http_s3_key=${STORBENCH_S3_KEY}\n") == "http_s3_key=${STORBENCH_S3_KEY}\n"
    # a path is kept as written: its directories' names are no options (the stored exact job text had changed)
    for kept in ("filename=/mnt/partition=1/passes=3\n", '"filename" : "/srv/keyspace=a"'):
        assert redact_text(kept) == kept
    assert redact_text(f"[s3]\n  http_pass = {SECRET}\n--token={SECRET}") == \
        f"[s3]\n  http_pass = {HIDDEN}\n--token={HIDDEN}"
    # fio's "Bad option <name=value>", a command's quoted argument, a key after ':' or '=' (no value known)
    for said, hidden in ((f"Bad option <http_s3_key={SECRET}>", f"Bad option <http_s3_key={HIDDEN}>"),
                         (f"['fio', 'http_pass={SECRET}']", f"['fio', 'http_pass={HIDDEN}']"),
                         (f"job:http_pass={SECRET}", f"job:http_pass={HIDDEN}")):
        assert redact_text(said) == hidden, said


def test_a_prometheus_url_on_a_metadata_address_is_a_problem_not_a_request() -> None:
    from storbench.telemetry.prometheus import PrometheusQuery, QueryWindow
    from storbench.telemetry.sources import fetch_prometheus_series

    series, problems = fetch_prometheus_series("http://169.254.169.254", [PrometheusQuery("m", "up")],
                                               QueryWindow(10, 10, 1, 10))
    assert series == [] and len(problems) == 1 and "metadata address" in problems[0], problems


def test_an_imported_fio_output_keeps_no_key_option_value(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          fixtures: Path) -> None:
    """Hand-run results from an S3 run carry fio's echo of the keys: the store keeps the option, not its value."""
    document = json.loads((fixtures / "randread-plain.json").read_text())
    document["global options"] = {**document.get("global options", {}), "http_s3_keyid": KEY_ID,
                                  "http_s3_key": SECRET}
    path = tmp_path / "s3-run.json"
    path.write_text(json.dumps(document))
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", str(path), "--db", str(db))
    assert code == 0, out + err
    stored = every_stored_text(db)
    assert '"http_s3_key": "<hidden>"' in stored
    _assert_no_key(stored, "the database")


def test_the_host_fio_and_storbench_sign_is_the_host_the_request_names() -> None:
    """curl leaves a scheme's default port out of the Host header and reads a port as a number: an endpoint written
    with either signs what is sent (a signature over "h:443" or "h:09000" fails every request)."""
    from datetime import datetime

    from storbench.s3sign import EMPTY_SHA256, signed_headers
    from storbench.targets.s3 import s3_binding

    with fake_s3() as (endpoint, state):
        port = int(endpoint.rpartition(":")[2])
        service = S3Service(f"HTTP://127.0.0.1:0{port}/", "us-east-1", S3Credentials(KEY_ID, SECRET))
        assert service.request("HEAD", "bench")[0] == 200
        _, _, headers = state.requests[-1]
        assert headers["host"] == f"127.0.0.1:{port}"
        now = datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ")
        again = signed_headers("HEAD", headers["host"], "/bench", {}, EMPTY_SHA256, S3Credentials(KEY_ID, SECRET),
                               "us-east-1", now)
        assert again["authorization"] == headers["authorization"]  # what was signed is what was sent
        binding = s3_binding(service, "bench", "/opt/fio", "storbench.0123456789ab.")
        assert dict(binding.options)["http_host"] == f"127.0.0.1:{port}"
        assert dict(binding.env)["no_proxy"] == "*"  # fio's libcurl takes no proxy of the operator's
    for written, host in (("https://S3.example.com:443", "s3.example.com"), ("http://rgw:80", "rgw"),
                          ("https://rgw:80", "rgw:80")):
        service = S3Service(written, "us-east-1", S3Credentials(KEY_ID, SECRET))
        assert service.host == host and dict(s3_binding(service, "b1", "/opt/fio", "storbench.0123456789ab.")
                                             .options)["http_host"] == host


def test_objects_the_service_will_not_delete_are_said_and_one_targets_failure_leaves_the_others_cleaned() -> None:
    from storbench.model import S3Target
    from storbench.sessions import remove_run_test_files
    from storbench.targets.base import PreparedTarget
    from storbench.targets.s3 import s3_binding

    def prepared(name: str, endpoint: str, prefix: str) -> PreparedTarget:
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        return PreparedTarget(spec=S3Target(name, endpoint, "bench", "us-east-1"),
                              binding=s3_binding(service, "bench", "/opt/fio", prefix),
                              details=(("kind", "s3"), ("endpoint", service.endpoint), ("bucket", "bench"),
                                       ("region", "us-east-1"), ("object_prefix", prefix)))

    with fake_s3(FakeS3State(refuse_deletes=True)) as (endpoint, state):
        for index in range(3):
            state.objects[("bench", f"storbench.aaaaaaaaaaaa.{index}")] = b""
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        assert remove_objects(service, "bench", "storbench.aaaaaaaaaaaa.") == Removal(
            0, 3, "DeleteObjects answered AccessDenied")
        state.multi_delete = "no"
        assert remove_objects(service, "bench", "storbench.aaaaaaaaaaaa.") == Removal(0, 3, "DELETE answered HTTP 403")
    events: list[object] = []

    class Observer:
        def event(self, event: object) -> None:
            events.append(event)

    with fake_s3(FakeS3State(listing="same-token")) as (broken, _), fake_s3() as (endpoint, state):
        state.objects[("bench", "storbench.bbbbbbbbbbbb.0")] = b""
        remove_run_test_files([prepared("first", broken, "storbench.aaaaaaaaaaaa."),
                               prepared("second", endpoint, "storbench.bbbbbbbbbbbb.")], Observer())
        assert state.objects == {}  # the second target cleaned although the first one's listing failed
        state.objects[("bench", "storbench.bbbbbbbbbbbb.1")] = b""
        remove_run_test_files([prepared("second", endpoint, "storbench.bbbbbbbbbbbb.")], Observer(), keep_files=True)
        assert state.objects == {}  # keep_files keeps directories' test files: objects are PUT every repetition
        events.pop()
    from storbench.report.events import event_text

    said = [event_text(e) for e in events]
    assert "target first: objects may stay on bucket bench: listing bucket 'bench'" in said[0], said
    assert "(objects storbench.aaaaaaaaaaaa.*)" in said[0] and said[1] == \
        "target second: removed 1 objects from bucket bench", said


def test_a_bucket_the_keys_may_not_write_or_delete_in_is_refused_before_any_repetition() -> None:
    """A bucket HEAD answers 200 to a read-only key: every PUT of the run would fail, or its objects would stay."""
    from storbench.targets.s3 import check_rights

    prefix = "storbench.aaaaaaaaaaaa."
    with fake_s3() as (endpoint, state):
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        check_rights(service, "bench", prefix, "objects")
        assert [(method, path) for method, path, _ in state.requests] == [
            ("PUT", f"/bench/{prefix}probe"), ("DELETE", f"/bench/{prefix}probe")]
        assert state.objects == {}  # the test object is gone again
        state.refuse_puts = True
        with pytest.raises(UserError, match=r"target 'objects': the credentials may not write objects to bucket "
                                            r"'bench' at http://127\.0\.0\.1:\d+ \(HTTP 403\)") as refused:
            check_rights(service, "bench", prefix, "objects")
        assert refused.value.hint == "grant s3:PutObject and s3:DeleteObject on the bucket"
        state.refuse_puts, state.refuse_deletes = False, True
        with pytest.raises(UserError, match=rf"may write objects to bucket 'bench' at .* but not delete them \(HTTP "
                                            rf"403\), so the run's objects would stay; its test object {prefix}probe "
                                            "stays"):
            check_rights(service, "bench", prefix, "objects")


def test_keys_a_multi_object_delete_finds_gone_count_as_removed_and_its_codes_are_shown_only_as_codes() -> None:
    from storbench.targets.s3 import _delete_batch

    with fake_s3() as (endpoint, state):
        state.objects[("bench", "storbench.abc.1")] = b""
        state.objects[("bench", "storbench.abc.<a&b>")] = b""  # XML's own characters in a key, escaped in the body
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        assert _delete_batch(service, "bench", ["storbench.abc.1", "storbench.abc.gone", "storbench.abc.<a&b>"]
                             ) == Removal(3)  # NoSuchKey
        assert not state.objects
    answer = (b'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Error><Key>k</Key><Code>[link=http:/'
              b'/x.test]click here[/link]</Code></Error></DeleteResult>')  # a code that is no code: not shown

    class Service:
        def request(self, *args: object, **kwargs: object) -> tuple[int, bytes]:
            return 200, answer

    assert _delete_batch(Service(), "bench", ["k"]) == Removal(0, 1, "DeleteObjects answered an error")  # type: ignore[arg-type]


def test_a_resumed_run_removes_the_objects_a_killed_session_of_it_left(tmp_path: Path) -> None:
    """Each session of a run writes its S3 objects under a prefix of its own; one killed (kill -9) left its objects
    in the operator's bucket, and the resume removed only its own. The run's stored prefixes are removed too, on
    the same endpoint and bucket only, and only a prefix storbench makes (a merged store's could be anything)."""
    from types import SimpleNamespace

    from storbench.model import Case, RepetitionOutcome, S3Target, Status, WorkloadPoint
    from storbench.sessions import remove_earlier_objects
    from storbench.store import open_store
    from storbench.targets.base import PreparedTarget
    from storbench.targets.s3 import s3_binding

    store = open_store(tmp_path / "r.db")
    run_id = store.create_run(plan_name="p", plan_text="", plan_sha256="x", source="run", storbench_version="0",
                              fio_version="fio-3.33", host="h", kernel="k", run_order="interleaved", seed=0, tags=(),
                              started_at_s=0.0)
    with fake_s3() as (endpoint, state):
        case = Case("c", S3Target("s3", endpoint, "bench", "us-east-1"),
                    WorkloadPoint("put", 4096, 1, 1, 1.0, 0.0, False, "http"))
        for rep, prefix in enumerate(("storbench.aaaaaaaaaaaa.", "storbench.cccccccccccc.")):
            store.save_repetition(run_id, case, rep, RepetitionOutcome(
                status=Status.OK, started_at_s=0.0, finished_at_s=1.0, job_text="", command=(), fio_version="fio-3.33",
                raw_output="", stderr_tail=""), (("kind", "s3"), ("endpoint", endpoint), ("bucket", "bench"),
                                             ("object_prefix", prefix)))
        stored = {(endpoint, "bench", "storbench.aaaaaaaaaaaa."), (endpoint, "bench", "storbench.cccccccccccc.")}
        # a session killed in its first fill stored no repetition: its prefix was recorded as it began
        assert store.object_prefixes(run_id, adding={(endpoint, "bench", "storbench.dddddddddddd.")}) == stored
        earlier = store.object_prefixes(run_id)
        assert earlier == {*stored, (endpoint, "bench", "storbench.dddddddddddd.")}
        for key in ("storbench.aaaaaaaaaaaa.0", "storbench.aaaaaaaaaaaa.1", "storbench.bbbbbbbbbbbb.0", "data/keep",
                    "storbench.cccccccccccc.0", "storbench.dddddddddddd.0"):
            state.objects[("bench", key)] = b"x"
        service = S3Service(endpoint, "us-east-1", S3Credentials(KEY_ID, SECRET))
        now = PreparedTarget(spec=case.target,
                             binding=s3_binding(service, "bench", "/opt/fio", "storbench.bbbbbbbbbbbb."),
                             details=(("kind", "s3"), ("endpoint", endpoint), ("bucket", "bench"),
                                      ("region", "us-east-1"), ("object_prefix", "storbench.bbbbbbbbbbbb.")))
        events: list[object] = []
        observer = SimpleNamespace(event=events.append)
        remove_earlier_objects([now], {*earlier, (endpoint, "bench", "data/"), ("http://other:9000", "bench",
                                                                                "storbench.bbbbbbbbbbbb.")}, observer)
        assert sorted(key for _, key in state.objects) == ["data/keep", "storbench.bbbbbbbbbbbb.0"], state.objects
        assert len(events) == 3, events  # one line for each earlier prefix that had objects
