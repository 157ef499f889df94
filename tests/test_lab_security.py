"""The labs run as root: nobody else may choose what they delete or kill, or use what they serve.

Pure checks of the rules and rendered commands, and real ones where they are cheap: planted symbolic links,
processes whose command line names the lab, the hosts lab's firewall, etcd's client certificates."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import stat
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.lab import labdir
from storbench.lab.ceph import CephLab
from storbench.lab.hosts_conf import FIO_SERVER_PORT, SUBNET, firewall_rules, lab_host
from storbench.lab.k8s import K8sLab
from storbench.lab.k8s_conf import certificate_extensions, daemon_commands, etcd_command, openssl_commands, shim_of
from storbench.lab.labdir import (
    Daemon,
    ancestor_problem,
    ensure_lab_dir,
    kill_daemons,
    lab_dir_problem,
    parse_start_time,
    record_daemon,
    recorded_daemons,
    remove_lab_dir,
)
from storbench.lab.nfs import NfsLab
from storbench.lab.process import alive, start_daemon

ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")

# ---- the lab directory: pure rules ------------------------------------------------------------------------------


def test_default_lab_dir_is_not_world_writable_var_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STORBENCH_LAB_DIR", raising=False)
    assert labdir.default_lab_dir() == Path("/var/lib/storbench/lab")
    monkeypatch.setenv("STORBENCH_LAB_DIR", "/srv/lab")
    assert labdir.default_lab_dir() == Path("/srv/lab")


def test_which_directories_are_trusted() -> None:
    directory, link, file = stat.S_IFDIR, stat.S_IFLNK, stat.S_IFREG
    assert ancestor_problem(directory | 0o755, 0, 1000) is None
    assert ancestor_problem(directory | 0o755, 1000, 1000) is None
    assert ancestor_problem(directory | 0o1777, 0, 0) is None  # /tmp: sticky, our entries stay ours
    assert ancestor_problem(directory | 0o777, 0, 0) == "is writable by group or others"
    assert ancestor_problem(directory | 0o775, 0, 0) == "is writable by group or others"
    assert ancestor_problem(directory | 0o755, 1000, 0) == "is owned by uid 1000"
    assert ancestor_problem(link | 0o777, 0, 0) == "is a symbolic link"
    assert ancestor_problem(file | 0o644, 0, 0) == "is not a directory"
    assert lab_dir_problem(directory | 0o700, 0, 0) is None
    assert lab_dir_problem(directory | 0o755, 0, 0) == "has mode 0755, open to group or others"
    assert lab_dir_problem(directory | 0o700, 1000, 0) == "is owned by uid 1000, not 0"
    assert lab_dir_problem(link | 0o777, 0, 0) == "is a symbolic link"


def test_start_time_is_field_22_even_with_odd_command_names() -> None:
    fields = " ".join(str(n) for n in range(3, 53))  # field N holds N
    assert parse_start_time(f"42 (a) b) c) {fields}") == 22


# ---- the lab directory: real ------------------------------------------------------------------------------------


def test_created_directories_are_private(tmp_path: Path) -> None:
    lab = ensure_lab_dir(tmp_path / "a" / "b" / "ceph")
    for path in (tmp_path / "a", tmp_path / "a" / "b", lab):
        st = os.lstat(path)
        assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert ensure_lab_dir(lab) == lab  # twice is fine


def test_a_planted_symlink_is_refused_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    labs = tmp_path / "labs"
    labs.mkdir(mode=0o700)
    (labs / "ceph").symlink_to(victim)
    with pytest.raises(UserError, match="is a symbolic link"):
        CephLab(labs / "ceph").down()
    with pytest.raises(UserError, match="is a symbolic link"):
        remove_lab_dir(labs / "ceph")
    with pytest.raises(UserError, match="is a symbolic link"):
        ensure_lab_dir(labs / "ceph")
    # a link higher up is refused too, for every lab
    (tmp_path / "linked").symlink_to(labs)
    for lab in (CephLab(tmp_path / "linked" / "x"), NfsLab(tmp_path / "linked" / "x"),
                K8sLab(tmp_path / "linked" / "x")):
        with pytest.raises(UserError, match="linked is a symbolic link"):
            lab.down()
    assert (victim / "precious").read_text() == "keep me"


def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone could swap the lab directory for a link
    with pytest.raises(UserError, match="writable by group or others"):
        ensure_lab_dir(shared / "lab")
    opened = tmp_path / "opened"
    opened.mkdir()
    opened.chmod(0o755)
    with pytest.raises(UserError, match="open to group or others"):
        ensure_lab_dir(opened)


@ROOT
def test_a_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(UserError, match="owned by uid 65534"):
        ensure_lab_dir(theirs)
    with pytest.raises(UserError, match="owned by uid 65534"):
        ensure_lab_dir(theirs / "lab")


# ---- the lab's processes ---------------------------------------------------------------------------------------


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[int]:
    """A process whose command line names a lab directory, which that lab did not start."""
    lab = tmp_path / "labs" / "ceph"
    process = subprocess.Popen(["sh", "-c", "sleep 60", f"{lab}/"], start_new_session=True)
    yield process.pid
    process.kill()
    process.wait()


def test_down_kills_no_process_by_its_command_line(tmp_path: Path, sleeper: int) -> None:
    lab = ensure_lab_dir(tmp_path / "labs" / "ceph")
    (lab / "log").mkdir()
    CephLab(lab).down()
    assert alive(sleeper) and not lab.exists()


def test_recorded_daemons_are_killed_and_a_reused_pid_is_not(tmp_path: Path, sleeper: int) -> None:
    lab = ensure_lab_dir(tmp_path / "lab")
    pid = start_daemon(["sleep", "60"], lab / "log" / "sleep.out")
    recorded = record_daemon(lab, "sleep", pid)
    assert recorded_daemons(lab) == [recorded] and recorded.start > 0
    # a record whose pid now belongs to another process (another start time) is left alone
    stale = Daemon(name="old", pid=sleeper, start=(labdir.start_time(sleeper) or 0) + 1)
    kill_daemons([recorded, stale], timeout_s=5)
    assert not alive(pid) and alive(sleeper)


def test_a_ceph_daemon_that_stopped_during_a_run_is_told_with_the_cause_its_log_gives(tmp_path: Path) -> None:
    """The OSDs of a too small lab filled their devices (`bluefs enospc`) and exited; the run went on measuring
    the one left. `CephLab.lost` names the daemons recorded that no longer run (an unreaped zombie too) and the
    cause in the first one's log, with what to do."""
    import time

    from storbench.lab.ceph_conf import abort_cause, lost_hint
    from storbench.lab.labdir import LabDir

    lab = ensure_lab_dir(tmp_path / "lab")
    (lab / "log").mkdir()
    whole = CephLab(lab)
    assert whole.lost() is None
    osd0 = LabDir(lab).start("osd.0", ["sh", "-c", "exit 1"], lab / "log" / "osd.0.out")  # exits: a zombie
    osd1 = LabDir(lab).start("osd.1", ["sleep", "60"], lab / "log" / "osd.1.out")
    started = [osd0, osd1]
    (lab / "log" / "osd.0.log").write_text(
        "2026-11-30T14:12:43 ./src/os/bluestore/BlueFS.cc: 3293: ceph_abort_msg(\"bluefs enospc\")\n"
        " 1: (ceph::__ceph_abort(char const*, int, char const*, std::string const&)+0xd4)\n"
        "2026-11-30T14:12:43 -1 *** Caught signal (Aborted) **\n")
    try:
        for _ in range(50):
            if whole.lost() is not None:
                break
            time.sleep(0.1)
        said = whole.lost()
        assert said is not None
        line, hint = said
        assert line.startswith("ceph lab: osd.0 stopped during the run (osd.0's log: bluefs enospc)")
        assert "osd.1" not in line and "lab.ceph.osd_size" in hint and "a new run" in hint
        # a daemon a fault of the repetition stopped on purpose is not lost: its settling starts it again
        from storbench.config import load_plan_text
        from storbench.lab.ceph_kind import KIND
        from storbench.model import cluster_of
        from storbench.plan import expand

        (case,) = expand(load_plan_text("name: l\ntargets:\n  rbd: {kind: rbd, pool: bench, image: i, size: 16MiB}\n"
                                        "workload: {rw: read}\nlab:\n  ceph: {osds: 2, pool_size: 2}\n", "l.yaml"))
        running = {cluster_of(case.lab): whole}
        assert KIND.lost(case, running) is not None
        assert KIND.lost(case, running, frozenset({"osd.0"})) is None
        # a daemon started again is recorded again: its latest record is the one that counts
        started.append(LabDir(lab).start("osd.0", ["sleep", "60"], lab / "log" / "osd.0.out"))
        assert whole.lost() is None
    finally:
        kill_daemons(started, timeout_s=5)
    # the abort message before the signal it raised; an assertion; a signal alone; nothing
    assert abort_cause("FAILED ceph_assert(r == 0)\n*** Caught signal (Aborted) **") == "r == 0"
    assert abort_cause("*** Caught signal (Segmentation fault) **") == "Segmentation fault"
    assert abort_cause("all is well") is None
    assert "--resume" in lost_hint(None) and "osd_size" not in lost_hint("r == 0")
    # BlueFS full under RocksDB (BlueRocksEnv's err_to_status has no case for ENOSPC): seen in ceph-osd-cpus at 2 GiB
    unnamed = abort_cause('./src/os/bluestore/BlueRocksEnv.cc: 52: ceph_abort_msg("unrecognized error code")\n')
    assert unnamed == "unrecognized error code" and "ENOSPC" in lost_hint(unnamed) and "a new run" in lost_hint(unnamed)


# ---- the hosts lab's fio servers ------------------------------------------------------------------------------


def test_hosts_firewall_rules() -> None:
    rules = firewall_rules(0)
    assert f"ip daddr {SUBNET} tcp dport {FIO_SERVER_PORT} meta skuid != 0 reject" in rules
    forward = [block for block in rules.split("chain ")[1:] if block.startswith("forward")]
    assert len(forward) == 2 and all(f"ip daddr {SUBNET} tcp dport {FIO_SERVER_PORT} drop" in b for b in forward)
    assert "table inet storbench_hosts" in rules and "table bridge storbench_hosts" in rules
    assert "meta skuid != 1000 reject" in firewall_rules(1000)


def _connect_as(uid: int, address: str, port: int) -> str:
    """Connect from this machine's root namespace as ``uid``: "ok" or the error bash reports."""
    script = f"exec 3<>/dev/tcp/{address}/{port} && echo ok"
    done = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "timeout", "5",
                           "/bin/bash", "-c", script], capture_output=True, text=True, timeout=30, check=False,
                          cwd="/")
    return done.stdout.strip() or done.stderr.strip() or f"exit {done.returncode}"


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "fio", "nft", "setpriv")),
                    reason="needs root, iproute2, fio, nftables and setpriv")
def test_hosts_lab_servers_answer_only_storbench(tmp_path: Path) -> None:
    from storbench.lab.hosts import HostsLab

    lab = HostsLab(tmp_path / "lab" / "hosts")
    lab.up(2, shutil.which("fio") or "fio")
    try:
        with socket.create_server(("127.0.0.1", 0)) as control:  # another user can connect at all
            assert _connect_as(65534, "127.0.0.1", control.getsockname()[1]) == "ok"
        address = lab_host(1).address
        assert _connect_as(0, address, FIO_SERVER_PORT) == "ok"  # storbench (root) reaches its server
        assert "refused" in _connect_as(65534, address, FIO_SERVER_PORT)  # another local user does not
        # nor does one namespace host reach another across the bridge
        other = subprocess.run(["ip", "netns", "exec", lab_host(2).namespace, "timeout", "3", "/bin/bash", "-c",
                                f"exec 3<>/dev/tcp/{address}/{FIO_SERVER_PORT}"], capture_output=True, check=False)
        assert other.returncode != 0
        assert stat.S_IMODE(os.lstat(lab.root).st_mode) == 0o700
        assert [d.name for d in recorded_daemons(lab.root)] == ["sbhost-1", "sbhost-2"]
    finally:
        lab.down()
    assert "storbench_hosts" not in subprocess.run(["nft", "list", "tables"], capture_output=True,
                                                    text=True, check=False).stdout
    assert not lab.root.exists()


# ---- the Kubernetes lab: etcd with client certificates ------------------------------------------------------------


def test_etcd_serves_tls_with_client_certificates_only() -> None:
    argv = etcd_command("/lab", "/lab/pki")
    text = " ".join(argv)
    assert "http://" not in text
    assert argv[argv.index("--listen-client-urls") + 1] == "https://127.0.0.1:12379"
    assert argv[argv.index("--listen-peer-urls") + 1] == "https://127.0.0.1:12380"
    for flag in ("--client-cert-auth", "--peer-client-cert-auth"):
        assert flag in argv
    assert argv[argv.index("--trusted-ca-file") + 1] == "/lab/pki/ca.crt"
    assert argv[argv.index("--cert-file") + 1] == "/lab/pki/etcd.crt"
    commands = daemon_commands("/lab", "/bin")
    assert commands["etcd"] == argv
    apiserver = commands["kube-apiserver"]
    assert "--etcd-servers=https://127.0.0.1:12379" in apiserver
    assert {"--etcd-cafile=/lab/pki/ca.crt", "--etcd-certfile=/lab/pki/apiserver-etcd-client.crt",
            "--etcd-keyfile=/lab/pki/apiserver-etcd-client.key"} <= set(apiserver)
    made = {c[c.index("-out") + 1] for c in openssl_commands("/lab/pki") if "-out" in c}
    assert {"/lab/pki/etcd.crt", "/lab/pki/apiserver-etcd-client.crt"} <= made
    assert "IP:127.0.0.1" in certificate_extensions()["etcd.ext"]


def test_only_this_labs_containerd_shims_are_chosen() -> None:
    sock = "/var/lib/storbench/lab/k8s/containerd/containerd.sock"
    shim = ["/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", sock]
    assert shim_of(shim, "containerd-shim-runc-v2", 0, sock, 0)
    assert not shim_of(shim, "containerd-shim-runc-v2", 0, sock + ".other", 0)
    assert not shim_of(shim, "sleep", 0, sock, 0)  # a process that only names itself like a shim
    assert not shim_of(shim, "containerd-shim-runc-v2", 1000, sock, 0)  # someone else's
    assert not shim_of(["sh", "-c", f"echo -address {sock}"], "sh", 0, sock, 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, context: ssl.SSLContext | None) -> str:
    with urllib.request.urlopen(url, context=context, timeout=5) as answer:
        return str(answer.read().decode())


@pytest.mark.skipif(shutil.which("etcd") is None or shutil.which("openssl") is None,
                    reason="needs etcd (Debian's etcd-server) and openssl")
def test_real_etcd_refuses_clients_without_a_certificate(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    pki.mkdir()
    for name, text in certificate_extensions().items():
        (pki / name).write_text(text)
    for command in openssl_commands(str(pki)):
        subprocess.run(command, capture_output=True, check=True, timeout=60)
    client_port, peer_port = _free_port(), _free_port()
    argv = etcd_command(str(tmp_path), str(pki), client_port, peer_port)
    log = open(tmp_path / "etcd.log", "wb")  # noqa: SIM115 - closed below
    etcd = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 30
        trusted = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        trusted.load_cert_chain(str(pki / "apiserver-etcd-client.crt"), str(pki / "apiserver-etcd-client.key"))
        answer = ""
        while time.time() < deadline and etcd.poll() is None:
            try:
                answer = _get(f"https://127.0.0.1:{client_port}/version", trusted)
                break
            except (OSError, ssl.SSLError):
                time.sleep(0.3)
        assert "etcdserver" in answer, (tmp_path / "etcd.log").read_text()[-500:]
        # plain HTTP: no answer from the store
        with pytest.raises((OSError, urllib.error.URLError)):
            _get(f"http://127.0.0.1:{client_port}/version", None)
        # TLS without a client certificate: the handshake fails
        anonymous = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        with pytest.raises((OSError, ssl.SSLError)):
            _get(f"https://127.0.0.1:{client_port}/v2/keys", anonymous)
        # nor the peer port
        with pytest.raises((OSError, ssl.SSLError)):
            _get(f"https://127.0.0.1:{peer_port}/members", anonymous)
    finally:
        etcd.kill()
        etcd.wait()
        log.close()


def test_a_lab_directory_path_with_characters_daemons_configuration_cannot_hold_is_refused(tmp_path: Path) -> None:
    """The lab's path goes into ganesha.conf, ceph.conf and a shell line of the NFS lab: a space or a quote in
    --dir had broken them (or run a command of the path's making). Refused before anything is made."""
    from storbench.errors import UserError
    from storbench.lab.labdir import ensure_lab_dir

    for name in ("with space", 'quo"te', "semi;colon", "dollar$x"):
        with pytest.raises(UserError, match="a lab's path holds only letters"):
            ensure_lab_dir(tmp_path / name / "lab")
        assert not (tmp_path / name).exists()
    assert ensure_lab_dir(tmp_path / "fine-1.2_x+y").is_dir()


def test_a_lab_in_use_by_one_storbench_is_refused_to_another(tmp_path: Path) -> None:
    """Two runs (or a run and `storbench lab ... down`) on one lab directory had torn each other's lab down: the
    lab is claimed from its up to the end of its down, and another process is refused in one line."""
    import subprocess
    import sys

    from storbench.lab.lab_claim import hold_lab, release_lab

    root = tmp_path / "lab"
    other = [sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
             "from storbench.lab.lab_claim import hold_lab\nfrom storbench.errors import UserError\n"
             "try:\n    hold_lab(Path(sys.argv[1]))\nexcept UserError as e:\n"
             "    print(e.message); sys.exit(2)\n", str(root)]
    hold_lab(root)
    hold_lab(root)  # this process's own claim again: nothing to do
    try:
        refused = subprocess.run(other, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and f"the lab at {root} is in use by another storbench" in refused.stdout
    finally:
        release_lab(root)
    assert subprocess.run(other, capture_output=True, text=True, timeout=60).returncode == 0  # given up: free


def test_a_lab_is_claimed_by_its_up_and_given_up_by_its_down(tmp_path: Path) -> None:
    from storbench.lab import lab_claim as labdir

    class Lab:
        def __init__(self, root: Path) -> None:
            self.root = root

        @labdir.claims_lab
        def up(self, stale: bool) -> None:
            if stale:
                self.down()  # a stale lab torn down inside up: the claim is kept for what up makes next
            assert labdir._absolute(self.root) in labdir._HELD

        @labdir.frees_lab
        def down(self) -> None:
            assert labdir._absolute(self.root) in labdir._HELD

    lab = Lab(tmp_path / "lab")
    lab.up(stale=True)
    assert labdir._absolute(lab.root) in labdir._HELD
    lab.down()
    assert labdir._absolute(lab.root) not in labdir._HELD
    assert not (tmp_path / ".lab.lock").exists()  # given up with its down: nothing left beside the lab


def test_a_lab_whose_names_are_the_machines_is_one_per_machine(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The hosts, NFS and k8s labs name their namespaces, bridges and firewall tables alike at every directory: a
    second lab at another --dir (as a busy lab's hint offered) had torn the first one's down at its up, and a down
    at a directory with no lab had done the same. Both are refused while the first lab is there."""
    from storbench.lab import lab_claim

    monkeypatch.setattr(lab_claim, "OWNERS", tmp_path / "owners")
    torn: list[Path] = []

    class Lab:
        def __init__(self, root: Path) -> None:
            self.root = root

        @lab_claim.claims_lab
        @lab_claim.owns_names("hosts")
        def up(self) -> None:
            self.down()  # as the kinds do: what a crashed lab left, by name
            self.root.mkdir()

        @lab_claim.frees_lab
        @lab_claim.frees_names("hosts")
        def down(self) -> None:
            torn.append(self.root)
            if self.root.exists():
                self.root.rmdir()

    first, second = Lab(tmp_path / "a"), Lab(tmp_path / "b")
    first.up()
    for step in (second.up, second.down):
        with pytest.raises(UserError, match=f"a hosts lab of {first.root} is up on this machine") as refused:
            step()
        assert f"storbench lab hosts down --dir {first.root}" in (refused.value.hint or "")
    assert torn == [first.root] and first.root.is_dir()  # the first lab's objects untouched
    first.up()  # the owner's own up again: its lab is reused or rebuilt
    first.down()
    assert not (tmp_path / "owners").exists()
    (tmp_path / "owners").mkdir(mode=0o700)
    (tmp_path / "owners" / "hosts.owner").write_text(f"{tmp_path / 'gone'}\n")  # a crashed lab's, its directory gone
    second.up()  # the names are free: another directory may take them
    with pytest.raises(UserError, match=f"a hosts lab of {second.root} is up"):
        first.up()
    second.down()
    assert torn[-1] == second.root and not (tmp_path / "owners").exists()  # nothing of the labs left behind

    class Refused(Lab):
        @lab_claim.claims_lab
        @lab_claim.owns_names("hosts")
        def up(self) -> None:
            raise UserError("hosts lab: nft is not installed")

    with pytest.raises(UserError, match="nft is not installed"):
        Refused(tmp_path / "c").up()
    assert not (tmp_path / "owners").exists()  # an up that made nothing leaves no record in /run either


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare")
def test_the_hosts_labs_servers_are_found_by_their_address_when_their_namespace_is_gone() -> None:
    """Two storbench processes on the hosts lab at once (a test run beside CI's) left two `fio --server=10.214.0.x`
    running in namespaces already deleted: no namespace name finds them. `down` kills the lab's servers by the
    address and port they serve, in a network namespace of their own (unnamed); a server of the same address on
    the machine's own network (a site network in 10.214/16), or of another port or address, is not the lab's."""
    import subprocess
    import sys

    from storbench.lab.hosts_conf import lab_host, serves_lab_host
    from storbench.lab.process import kill_all, pids_serving

    sleep = ["-c", "import time; time.sleep(60)"]
    lab = lab_host(241).server
    ours = subprocess.Popen(["unshare", "--net", sys.executable, *sleep, f"--server={lab}"])
    theirs = [subprocess.Popen([*prefix, sys.executable, *sleep, f"--server={server}"])
              for prefix, server in ((["unshare", "--net"], "10.214.1.50,9999"), ([], lab), ([], "192.0.2.7,8765"))]
    try:
        deadline = time.monotonic() + 10
        while ours.pid not in (found := pids_serving(serves_lab_host)) and time.monotonic() < deadline:
            time.sleep(0.05)  # unshare execs python once the namespace is made
        assert ours.pid in found and not {process.pid for process in theirs} & set(found), found
        kill_all([ours.pid])  # only this test's own: a real lab's servers on this machine are left alone
        assert ours.wait(timeout=5) != 0 and all(process.poll() is None for process in theirs)
    finally:
        for process in (ours, *theirs):
            process.kill()
            process.wait()

def test_a_daemon_record_cut_short_by_a_full_disk_keeps_the_one_before(tmp_path: Path) -> None:
    """`forget_daemons` (an OSD restarted by a fault's undoing or a live setting) wrote the record in place: a write
    cut short (a full disk, an interrupt) left half a record, read as none, and `down` then killed no daemon."""
    import subprocess
    import sys

    from storbench.lab.labdir import record_daemon, recorded_daemons

    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(3)]
    try:
        for index, process in enumerate(sleepers):
            record_daemon(tmp_path, f"osd.{index}", process.pid)
        before = recorded_daemons(tmp_path)
        assert [d.name for d in before] == ["osd.0", "osd.1", "osd.2"]
        full_disk = ("import resource, signal, sys\nfrom pathlib import Path\n"
                     "from storbench.lab.labdir import forget_daemons\n"
                     "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                     "resource.setrlimit(resource.RLIMIT_FSIZE, (40, 40))\n"
                     "try:\n    forget_daemons(Path(sys.argv[1]), ['osd.1'])\nexcept OSError:\n    sys.exit(3)\n")
        done = subprocess.run([sys.executable, "-c", full_disk, str(tmp_path)], timeout=60)
        assert done.returncode == 3  # the write failed, as on a full disk
        assert recorded_daemons(tmp_path) == before  # the record as it was: down still finds every daemon
    finally:
        for process in sleepers:
            process.kill()
            process.wait()


def test_the_k8s_labs_host_path_root_is_made_by_the_lab_not_left_to_whoever_comes_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`up` found /tmp/hostpath_pv missing and left it to the controller manager's first volume: a local user who
    made it in between owned the parent of every volume. The lab makes it (root's, 0755) and records that it did; one
    another user made is refused."""
    if os.geteuid() != 0:
        pytest.skip("needs root (the directory is root's)")
    from storbench.errors import UserError
    from storbench.lab import k8s_host

    root = tmp_path / "hostpath_pv"
    monkeypatch.setattr(k8s_host, "HOSTPATH_ROOT", str(root))
    assert k8s_host.claim_hostpath_root() is None  # made now
    found = root.lstat()
    assert found.st_uid == 0 and (found.st_mode & 0o777) == 0o755
    (root / "pvc-1").mkdir()
    assert k8s_host.claim_hostpath_root() == ["pvc-1"]  # there before: its names, not made by the lab
    os.chown(root, 65534, 65534)
    with pytest.raises(UserError, match="is not root's own directory"):
        k8s_host.claim_hostpath_root()
