from __future__ import annotations

import itertools
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if shutil.which("fio") is None:
        skip = pytest.mark.skip(reason="fio is not installed (scripts/setup.sh installs it)")
        for item in items:
            if "fio" in item.keywords:
                item.add_marker(skip)
    if os.environ.get("STORBENCH_LONG") != "1":
        # a long scenario's short CI case runs in every suite; the scenario itself in scripts/ceph-e2e.sh
        skip = pytest.mark.skip(reason="a long scenario: scripts/ceph-e2e.sh runs it (STORBENCH_LONG=1)")
        for item in items:
            if "long" in item.keywords:
                item.add_marker(skip)


# A skip whose reason names a set-up that scripts/test.sh has just done (`setup.sh --dev --labs`): there, it means
# the set-up failed to provide what it promises (as when it once built no nfs fio and ten NFS tests skipped
# unseen), so it fails instead. The Kubernetes and long scenarios stay skipped: test.sh sets neither up.
PROVIDED_BY_TEST_SETUP = re.compile(r"setup(\.sh)? (--dev|--labs)|scripts/setup\.sh installs")
NOT_PROVIDED = re.compile(r"--k8s|STORBENCH_K8S|STORBENCH_LONG")


def skip_is_a_setup_failure(reason: str, *, set_up: bool) -> bool:
    """Whether a test skipped for ``reason`` shows a set-up that did not deliver (``set_up``: scripts/test.sh ran
    the set-up it names, STORBENCH_SET_UP=1)."""
    return set_up and bool(PROVIDED_BY_TEST_SETUP.search(reason)) and not NOT_PROVIDED.search(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if skip_is_a_setup_failure(reason, set_up=os.environ.get("STORBENCH_SET_UP") == "1"):
            report.outcome = "failed"
            report.longrepr = (f"skipped although scripts/test.sh ran the set-up this test needs: {reason} -- "
                               "the set-up did not provide it")
    return report


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal's COLUMNS (a developer's shell) would narrow the tables every test reads; tests that want a
    width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)


ALONE = ("fio", "ceph", "nfs", "k8s", "serial")  # scripts/test.sh runs these one at a time, the rest on every core


@pytest.fixture(autouse=True)
def _fio_only_where_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked to run alone runs beside others on every core: real fio there would measure (and be seen
    by) the others, as a k8s test's "no fio left running" once saw one. It fails at the fio it starts instead."""
    if any(request.node.get_closest_marker(name) for name in ALONE):
        return
    from storbench.execute import hosts, local, supervisor

    def refuse_fio(command: object, **kwargs: object) -> object:
        argv = list(command)  # type: ignore[call-overload]
        if argv and Path(str(argv[0])).name.startswith("fio"):
            raise AssertionError(f"{request.node.nodeid} runs fio ({' '.join(map(str, argv[:2]))} ...): mark it "
                                 "@pytest.mark.fio (it then runs alone)")
        return supervisor.supervise(argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local, "supervise", refuse_fio)
    monkeypatch.setattr(hosts, "supervise", refuse_fio)


@pytest.fixture(autouse=True)
def _lab_owners_apart(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test beside others (on every core) records a hosts, NFS or k8s lab's owner in a directory of its own: two
    tests' lab ups at once (one refused early) would otherwise refuse each other as two users' would. A test run
    alone uses the machine's, as a user does."""
    if any(request.node.get_closest_marker(name) for name in ALONE):
        return
    from storbench.lab import lab_claim

    monkeypatch.setattr(lab_claim, "OWNERS", tmp_path_factory.mktemp("lab-owners") / "owners")


_DATABASES = itertools.count(1)


@pytest.fixture(scope="module")
def postgres_server_url() -> Iterator[str]:
    """One PostgreSQL server for a test module (each test gets a database of its own: `postgres_db`), stopped
    with it: no server idles beside the lab tests that follow."""
    from postgres_server import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture
def postgres_db(postgres_server_url: str) -> str:
    """The URL of a new, empty PostgreSQL database (`--db postgresql://...`)."""
    from postgres_server import new_database

    return new_database(postgres_server_url, f"test{next(_DATABASES)}")
