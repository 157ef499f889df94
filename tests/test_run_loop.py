"""The run loop with a fake executor: the real `orchestrate.run_plan` and a real SQLite store, fio outputs
replayed from tests/fixtures. Fast (no fio) and deterministic: resume, failure counting, the watchdog's outcome,
and what survives a repetition that raises."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench import checks, orchestrate
from storbench.checks import Checked, check_everything
from storbench.config import LoadedPlan, load_plan_text
from storbench.events import RunEvent
from storbench.execute.fake import FakeCall, FakeExecutor, Hang, Raise, Replay, Script, Step
from storbench.fio.options import FioCapabilities
from storbench.model import Case, RepetitionOutcome, ScheduledRepetition, Status, StoredRepetition
from storbench.plan import expand
from storbench.report.events import event_text
from storbench.store import Store, open_store

FIXTURES = Path(__file__).parent / "fixtures"
RANDRW_OUTPUT = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()  # fio 3.33, json+, reads and writes
CAPS = FioCapabilities(binary="/usr/bin/fio", version="fio-3.33", options=frozenset(), engines=frozenset())

PLAN = """
name: loop
targets:
  t: {{kind: path, path: {data}, size: 4MiB}}
workload:
  rw: randrw
  rwmixread: 70
  bs: [4k, 8k]
  iodepth: 1
  runtime: 1s
  direct: false
repeat: 2
order: sequential
telemetry: {{enabled: {telemetry}{ceiling}}}
{extra}"""


class Observer:
    def __init__(self) -> None:
        self.events: list[str] = []  # in words, as the CLI prints them
        self.typed: list[RunEvent] = []

    def run_started(self, run_id: int, to_run: int, already_done: int, eta_s: float) -> None:
        self.events.append(f"run {run_id}: {to_run} to run, {already_done} done")

    def repetition_started(self, item: ScheduledRepetition, position: int) -> None:
        self.events.append(f"start {position}")

    def repetition_finished(self, item: ScheduledRepetition, position: int, outcome: RepetitionOutcome) -> None:
        self.events.append(f"end {position} {outcome.status.value}")

    def event(self, event: RunEvent) -> None:
        self.typed.append(event)
        self.events.append(event_text(event))


def _plan(tmp_path: Path, *, extra: str = "", telemetry: bool = False, ceiling: bool = False) -> LoadedPlan:
    text = PLAN.format(data=tmp_path / "data", extra=extra, telemetry=str(telemetry).lower(),
                       ceiling=", client_ceiling: true" if ceiling else "")
    return load_plan_text(text, "plan.yaml")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "results.db")
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def no_fio(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may ask a real fio anything."""
    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)


def _run(tmp_path: Path, store: Store, executor: FakeExecutor, *, resume: bool = False, **plan: bool | str,
         ) -> tuple[orchestrate.RunResult, Observer]:
    loaded = _plan(tmp_path, **plan)  # type: ignore[arg-type]
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    observer = Observer()
    return orchestrate.run_plan(loaded, cases, checked, store, executor, observer, resume=resume), observer


def _stored(store: Store) -> list[tuple[str, int, Status]]:
    return [(r.case.case_id, r.rep_index, r.status) for r in store.repetitions()]


def _ok(call: FakeCall) -> Step:
    return Replay(RANDRW_OUTPUT)


def test_a_replayed_run_stores_every_repetition_with_its_measurements(tmp_path: Path, store: Store) -> None:
    fake = FakeExecutor(_ok)
    result, observer = _run(tmp_path, store, fake)
    assert (result.ran, result.skipped, result.failed) == (4, 0, 0)
    stored = store.repetitions()
    assert [(r.rep_index, r.status) for r in stored] == [(0, Status.OK), (1, Status.OK)] * 2
    assert [r.case.workload.bs_bytes for r in stored] == [4096, 4096, 8192, 8192]  # order: sequential
    reads = stored[0].clients[0].directions[0]
    assert stored[0].clients[0].client == "fake" and reads.total_ios > 0
    assert stored[0].fio_version == "fio-3.33" and "bs=4k" in stored[0].job_text
    assert stored[0].job_text == fake.calls[0].job_texts[0] and fake.calls[0].fio.version == "fio-3.33"
    # the executor got the job file the run loop rendered for this repetition, and the watchdog's limit
    assert [j.rep_index for j in fake.calls] == [0, 1, 0, 1]
    assert all(j.timeout_s > 1.0 and len(j.job_texts) == 1 for j in fake.calls)
    assert observer.events[0] == f"run {result.run_id}: 4 to run, 0 done" and "end 3 ok" in observer.events
    assert observer.events[-1].startswith("target t: removed 1 test files from")


def test_failures_are_counted_and_resume_runs_only_the_missing_repetitions(tmp_path: Path, store: Store) -> None:
    def first(call: FakeCall) -> Step:
        if call.case.workload.bs_bytes == 8192 and call.rep_index == 1:
            return Replay("", returncode=1, stderr="fio: pid=0, err=28/file:io_u.c:1889, error=No space left\n")
        if call.case.workload.bs_bytes == 4096 and call.rep_index == 0:
            return Replay(RANDRW_OUTPUT.replace('"error" : 0', '"error" : 5', 1))  # a job error, exit 0
        return Replay(RANDRW_OUTPUT)

    result, _ = _run(tmp_path, store, FakeExecutor(first))
    assert (result.ran, result.skipped, result.failed) == (4, 0, 2)
    stored = store.repetitions()
    assert [r.status for r in stored] == [Status.FAILED, Status.OK, Status.OK, Status.FAILED]
    assert stored[0].error == "fio job error 5 (EIO)"
    assert stored[3].error == "fio exited with status 1: fio: pid=0, err=28/file:io_u.c:1889, error=No space left"

    again = FakeExecutor(_ok)
    resumed, observer = _run(tmp_path, store, again, resume=True)
    assert resumed.run_id == result.run_id and len(store.runs()) == 1
    assert (resumed.ran, resumed.skipped, resumed.failed) == (2, 2, 0)
    failed_before = {(stored[0].case.case_id, 0), (stored[3].case.case_id, 1)}
    assert {(j.case.case_id, j.rep_index) for j in again.calls} == failed_before
    assert observer.events[0] == f"run {result.run_id}: 2 to run, 2 done"
    # a third attempt has nothing left to do
    idle = FakeExecutor([])
    assert _run(tmp_path, store, idle, resume=True)[0].ran == 0 and idle.calls == []


def test_a_hung_fio_is_stored_as_a_timeout_and_the_run_goes_on(tmp_path: Path, store: Store) -> None:
    fake = FakeExecutor([Replay(RANDRW_OUTPUT), Hang(), Replay(RANDRW_OUTPUT), Replay(RANDRW_OUTPUT)])
    result, observer = _run(tmp_path, store, fake)
    assert result.failed == 1 and result.ran == 4
    hung = store.repetitions()[1]
    assert hung.status == Status.TIMEOUT and hung.clients == ()
    assert hung.error == f"watchdog: fio ran longer than {fake.calls[1].timeout_s:g}s and was killed"
    assert [e for e in observer.events if e.startswith("end")] == ["end 0 ok", "end 1 timeout", "end 2 ok", "end 3 ok"]


def test_a_repetition_whose_lab_does_not_heal_after_its_faults_is_kept_and_the_run_stops(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's settling after a repetition with faults (a Ceph cluster's PGs clean again, up to 30 minutes) ran
    before the save: when it failed, or a Ctrl-C came in its wait, the measured repetition (the cluster that did
    not recover, the interesting one) was dropped. It is saved, then the run stops with the settling's error."""
    from storbench.errors import UserError
    from storbench.lab.registry import KINDS

    lab_calls = _fake_nfs_lab(monkeypatch)
    faults: list[str] = []
    monkeypatch.setattr(KINDS["nfs"], "fault", lambda step, case, running, *, restore: faults.append(
        f"{step.action} {restore}") or "done")
    for failure in (UserError("nfs lab: the server did not listen again within 60s"), KeyboardInterrupt()):
        def settle(case: Case, running: object, failure: BaseException = failure) -> None:
            lab_calls.append("settle")
            raise failure

        monkeypatch.setattr(KINDS["nfs"], "settle", settle)
        lab_calls.clear()
        fresh = open_store(tmp_path / f"{type(failure).__name__}.db")
        loaded = _plan(tmp_path, extra="lab: {nfs: {}}\nfaults: [{at: 0s, do: cut, on: server, restore_after: 0s}]\n")
        cases = expand(loaded)
        checked = check_everything(loaded, cases, CAPS.binary, create=True)
        with pytest.raises(type(failure)):
            orchestrate.run_plan(loaded, cases, checked, fresh, FakeExecutor(lambda call: Replay(RANDRW_OUTPUT)),
                                 Observer(), resume=False)
        assert lab_calls == ["up", "settle", "down"], lab_calls
        assert [(r.rep_index, r.status) for r in fresh.repetitions()] == [(0, Status.OK)]  # measured, kept
        fresh.close()


def _fake_nfs_lab(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The NFS lab as a stand-in that brings nothing up: what the run asked of it, in order."""
    import storbench.lab.nfs

    calls: list[str] = []

    class FakeNfsLab:
        def up(self, spec: object = None) -> object:
            calls.append("up")
            return types.SimpleNamespace(url="nfs://127.0.0.1/export", export="/export", root="/lab", servers_url=None)

        def down(self) -> None:
            calls.append("down")

        dir = types.SimpleNamespace(lost=lambda: [])  # no daemon of its own to lose

    monkeypatch.setattr(storbench.lab.nfs, "NfsLab", FakeNfsLab)
    return calls


def test_a_repetition_that_raises_still_tears_the_lab_down_and_keeps_what_finished(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    lab_calls = _fake_nfs_lab(monkeypatch)
    data = tmp_path / "data"

    def script(call: FakeCall) -> Step:
        assert sorted(p.name for p in data.iterdir()), "the test files exist while the run runs"
        lab_calls.append(f"rep {call.rep_index}")
        return Raise(KeyboardInterrupt()) if call.rep_index == 1 else Replay(RANDRW_OUTPUT)

    observer = Observer()
    loaded = _plan(tmp_path, extra="lab: {nfs: {}}\n")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(script), observer, resume=False)
    assert lab_calls == ["up", "rep 0", "rep 1", "down"]
    assert "nfs lab: torn down" in observer.events
    assert list(data.iterdir()) == []  # the run's test files are gone
    finished: list[StoredRepetition] = store.repetitions()
    assert [(r.rep_index, r.status) for r in finished] == [(0, Status.OK)]


def test_client_ceilings_run_once_per_case_on_the_local_executor(tmp_path: Path, store: Store,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import storbench.orchestrate

    class NoRecorder:
        def __init__(self, *args: object) -> None:
            self.ceilings: list[float | None] = []

        def links_shaped(self, rates: dict[str, int], at_s: float | None = None) -> None: ...

        def start(self, beside: object = None) -> None: ...

        def stop(self) -> None: ...

        def finish(self, outcome: RepetitionOutcome, case: Case, ceiling: float | None) -> None:
            seen.append(ceiling)

    seen: list[float | None] = []
    monkeypatch.setattr(storbench.orchestrate, "TelemetryRecorder", NoRecorder)
    fake = FakeExecutor(_ok)
    _run(tmp_path, store, fake, telemetry=True, ceiling=True)
    ceiling_jobs = [j for j in fake.calls if "client ceiling" in j.job_texts[0]]
    assert len(ceiling_jobs) == 2 and len(fake.calls) == 6
    assert all("ioengine=null" in j.job_texts[0] and j.fio.binary == CAPS.binary for j in ceiling_jobs)
    assert len(seen) == 4 and all(c is not None and c > 0 for c in seen)


def test_a_run_with_failures_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import storbench.execute.fio_binary
    import storbench.execute.local

    fakes: list[FakeExecutor] = []

    def fake_local(fio_binary: str) -> FakeExecutor:
        fakes.append(FakeExecutor([Replay(RANDRW_OUTPUT), Hang(), Replay(RANDRW_OUTPUT), Replay("")]))
        return fakes[-1]

    monkeypatch.setattr(storbench.execute.local, "LocalExecutor", fake_local)
    monkeypatch.setattr(storbench.execute.fio_binary, "find_fio", lambda explicit=None: CAPS.binary)
    plan = write_plan(tmp_path, _plan(tmp_path).source.text)
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 1, err
    assert "4 repetitions run, 0 already stored, 2 failed" in out
    assert len(fakes) == 1 and len(fakes[0].calls) == 4


ADAPTIVE = """
name: adaptive
targets:
  t: {{kind: path, path: {data}, size: 4MiB}}
workload: {{rw: randrw, rwmixread: 70, bs: [4k, 8k], iodepth: 1, runtime: 1s, direct: false}}
repeat: {{min: 3, max: 10, until: decided}}
compare: {{baseline: bs=4k, candidate: bs=8k, metrics: [iops]{margin}}}
telemetry: {{enabled: false}}
"""


def _adaptive(tmp_path: Path, store: Store, margin: str) -> tuple[orchestrate.RunResult, Observer, FakeExecutor]:
    loaded = load_plan_text(ADAPTIVE.format(data=tmp_path / "data", margin=margin), "adaptive.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    observer, fake = Observer(), FakeExecutor(_ok)
    return orchestrate.run_plan(loaded, cases, checked, store, fake, observer, resume=False), observer, fake


def test_rounds_stop_once_the_comparison_is_decided(tmp_path: Path, store: Store) -> None:
    """Both sides replay the same output: the change is exactly 0, inside a 5 % margin at the first look."""
    result, observer, fake = _adaptive(tmp_path, store, ", margin: 5%")
    assert (result.ran, result.not_needed) == (2 * 3, 2 * 7)  # min rounds of both points, then stopped
    assert len(fake.calls) == 6
    looks = [e for e in observer.events if e.startswith("after ")]
    assert len(looks) == 2  # one look, a verdict for each direction of the mixed pattern
    assert all(e.startswith("after 3 rounds") and "iops: +0.0 % [+0.0, +0.0] equivalent" in e for e in looks)


def test_rounds_run_to_max_when_the_answer_stays_undecided(tmp_path: Path, store: Store) -> None:
    """No margin: a zero change is never 'different', so nothing decides and every round runs, looked at after
    each from min on."""
    result, observer, _ = _adaptive(tmp_path, store, "")
    assert (result.ran, result.not_needed) == (2 * 10, 0)
    looks = [e for e in observer.events if e.startswith("after ")]
    assert sorted({e.split(":")[0] for e in looks}) == sorted(f"after {n} rounds" for n in range(3, 11))
    assert looks[-1].startswith("after 10 rounds: ") and looks[-1].endswith(" reached max 10 rounds undecided")
    assert not any("not within max" in e for e in looks)


def test_until_ci_looks_first_after_the_rules_minimum_of_rounds(tmp_path: Path, store: Store) -> None:
    """Both points replay one output: no spread, so every interval is narrow at the first look; with `min: 3` the
    first look still comes after 4 rounds (`config.CI_STOP_MIN_ROUNDS`), and judges the 97.5 % interval."""
    text = ADAPTIVE.format(data=tmp_path / "data", margin="").replace("until: decided", "until: 'ci <= 5%'")
    loaded = load_plan_text(text, "adaptive.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    observer = Observer()
    result = orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(_ok), observer, resume=False)
    assert (result.ran, result.not_needed) == (2 * 4, 2 * 6)
    looks = [e for e in observer.events if e.startswith("after ")]
    assert looks == ["after 4 rounds: IOPS interval (97.5 %) within ±5 % at every point: yes, stopping"]


def test_a_budget_stops_the_rounds_with_the_answer_so_far(tmp_path: Path, store: Store) -> None:
    loaded = load_plan_text(ADAPTIVE.format(data=tmp_path / "data", margin=""), "adaptive.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    now, fake = _minute_each(_ok)
    observer = Observer()
    result = orchestrate.run_plan(loaded, cases, checked, store, fake, observer, resume=False,
                                  clock=lambda: now[0], budget_s=300.0)  # spent in the third round, looked after it
    assert (result.ran, result.not_needed) == (2 * 3, 2 * 7)
    assert "budget reached after 3 rounds: stopping with the answer so far" in observer.events
    assert any(e.startswith("after 3 rounds") and "undecided" in e for e in observer.events)


def _minute_each(script: Script) -> tuple[list[float], FakeExecutor]:
    """A clock that each repetition moves a minute on, and the executor that moves it."""
    now = [0.0]

    def step(call: FakeCall) -> Step:
        now[0] += 60.0
        return script(call)

    return now, FakeExecutor(step)


def test_a_budget_stops_a_steady_state_run_at_any_point_and_an_until_run_before_min(tmp_path: Path,
                                                                                    store: Store) -> None:
    """A steady-state run measures each point's rounds back to back: the budget had been looked at only when the run's
    rounds grew past the first point's, so every point after it ran all its rounds. An `until:` run had not looked
    at it before `min` rounds."""
    loaded = load_plan_text(STEADY.format(data=tmp_path / "data", most=8, confirm=2), "steady.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    now, fake = _minute_each(lambda call: Replay(_scaled(1.3 if call.rep_index % 2 else 0.7)))
    observer = Observer()
    orchestrate.run_plan(loaded, cases, checked, store, fake, observer, resume=False, clock=lambda: now[0],
                         budget_s=150.0)  # spent after the third repetition
    assert [c.case.workload.bs_bytes for c in fake.calls] == [4096] * 3, fake.calls  # 8k never starts
    assert "budget reached after 3 rounds: stopping with the answer so far" in observer.events

    loaded = load_plan_text(ADAPTIVE.format(data=tmp_path / "data2", margin=""), "adaptive.yaml")
    cases = expand(loaded)
    now, fake = _minute_each(_ok)
    observer = Observer()
    result = orchestrate.run_plan(loaded, cases, check_everything(loaded, cases, CAPS.binary, create=True), store,
                                  fake, observer, resume=False, clock=lambda: now[0], budget_s=150.0)
    assert result.ran == 2 * 2 and "budget reached after 2 rounds: stopping with the answer so far" in observer.events


def _adaptive_session(tmp_path: Path, store: Store, script: Script, *, resume: bool
                      ) -> tuple[orchestrate.RunResult | None, Observer, FakeExecutor]:
    loaded = load_plan_text(ADAPTIVE.format(data=tmp_path / "data", margin=""), "adaptive.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    observer, fake = Observer(), FakeExecutor(script)
    try:
        result = orchestrate.run_plan(loaded, cases, checked, store, fake, observer, resume=resume)
    except KeyboardInterrupt:
        return None, observer, fake
    return result, observer, fake


def _look_rounds(observer: Observer) -> list[int]:
    return sorted({int(e.split()[1]) for e in observer.events if e.startswith("after ")})


def test_a_run_stopped_halfway_through_a_round_finishes_it_before_its_next_look(tmp_path: Path,
                                                                                 store: Store) -> None:
    """Stopped after one side of round 4: the rule looked after 4 rounds before that round began. Its readers
    count 4 rounds run (not 5, which would test 4 pairs at the 5th look's level), and the resume finishes round 4
    first, then looks after 5 rounds: never again after 4."""
    from storbench.stats.adaptive import paired_rounds
    from storbench.stats.observations import observations
    from storbench.stats.selectors import parse_selector

    calls = []

    def stop_at_tenth(call: FakeCall) -> Step:
        calls.append(call)
        return Raise(KeyboardInterrupt()) if len(calls) == 10 else Replay(RANDRW_OUTPUT)

    _, first, _ = _adaptive_session(tmp_path, store, stop_at_tenth, resume=False)
    assert len(store.repetitions()) == 9 and _look_rounds(first) == [3, 4]
    seen = observations(store.repetitions())
    pairs = paired_rounds(seen, parse_selector("bs=4k"), parse_selector("bs=8k"), ["iops"])
    assert pairs and {(len(p.rounds), p.rounds_run) for p in pairs} == {(4, 4)}
    result, resumed, fake = _adaptive_session(tmp_path, store, _ok, resume=True)
    assert result is not None and result.ran == 11 and fake.calls[0].rep_index == 4
    assert _look_rounds(resumed) == list(range(5, 11))


def test_a_where_that_drops_failed_repetitions_drops_no_look_of_the_rule(
        tmp_path: Path, store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline's last round failed: the rule still looked after all 10 rounds. `compare --where status=ok`
    (or direction=read) leaves out the failed repetition's observation, but not its look: the answer is still
    "reached max 10 rounds", not "undecided after 9 of at most 10 rounds" with a 9th look's interval."""
    def failing(call: FakeCall) -> Step:
        if call.case.workload.bs_bytes == 4096 and call.rep_index == 9:
            return Replay("", returncode=1, stderr="fio: error\n")
        return Replay(RANDRW_OUTPUT)

    result, _, _ = _adaptive_session(tmp_path, store, failing, resume=False)
    assert result is not None and result.failed == 1
    answers = []
    for where in ([], ["--where", "status=ok"], ["--where", "direction=read"]):
        code, out, err = run_cli(capsys, "compare", "--db", str(tmp_path / "results.db"), "--baseline", "bs=4k",
                                 "--candidate", "bs=8k", *where)
        assert code == 0, err
        answers.append(" ".join(out.split()))
    for text in answers:
        assert "reached max 10 rounds undecided" in text and "after 9 of at most 10" not in text, text


def test_a_resume_that_changes_the_order_or_the_steady_rule_is_refused(tmp_path: Path, store: Store) -> None:
    """Rounds run interleaved, the rest sequential, would be paired as if they had alternated; a loosened
    steady-state rule, after seeing the rounds, would call steady what the first rule did not."""
    from storbench.errors import UserError
    from storbench.resume import check_design_unchanged

    def stop_at_third(call: FakeCall) -> Step:
        return Raise(KeyboardInterrupt()) if call.rep_index == 1 and call.case.workload.bs_bytes == 8192 \
            else Replay(RANDRW_OUTPUT)

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, store, FakeExecutor(stop_at_third), extra="")
    assert len(store.repetitions()) == 3  # order: sequential (PLAN's): 4k 0, 4k 1, 8k 0, then stopped
    loaded = load_plan_text(PLAN.format(data=tmp_path / "data", extra="", telemetry="false", ceiling="")
                            .replace("order: sequential", "order: interleaved"), "plan.yaml")
    cases = expand(loaded)
    with pytest.raises(UserError, match=r"changed its order since run 1 started \(sequential -> interleaved\)"):
        orchestrate.run_plan(loaded, cases, check_everything(loaded, cases, CAPS.binary, create=True), store,
                             FakeExecutor(_ok), Observer(), resume=True)
    shuffled = PLAN.format(data=tmp_path / "data", extra="", telemetry="false", ceiling="").replace(
        "order: sequential", "order: shuffled\nseed: 1").replace("name: loop", "name: shuffled")
    first_shuffle = load_plan_text(shuffled, "s.yaml")
    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(first_shuffle, expand(first_shuffle), check_everything(
            first_shuffle, expand(first_shuffle), CAPS.binary, create=True), store,
            FakeExecutor([Replay(RANDRW_OUTPUT), Raise(KeyboardInterrupt())]), Observer(), resume=False)
    reseeded = load_plan_text(shuffled.replace("seed: 1", "seed: 2"), "s.yaml")
    with pytest.raises(UserError, match=r"changed its seed since run 2 started \(1 -> 2\)"):
        orchestrate.run_plan(reseeded, expand(reseeded), check_everything(reseeded, expand(reseeded), CAPS.binary,
                             create=True), store, FakeExecutor(_ok), Observer(), resume=True)
    # a run stored with seed -1 (accepted before seeds were 0 or more) shuffled as 1 does: it resumes with 1
    store.conn.execute("UPDATE runs SET seed = -1 WHERE id = 2")
    store.conn.commit()
    orchestrate.run_plan(first_shuffle, expand(first_shuffle), check_everything(
        first_shuffle, expand(first_shuffle), CAPS.binary, create=True), store, FakeExecutor(_ok), Observer(),
        resume=True)
    steady = STEADY.format(data=tmp_path / "data", most=8, confirm=0)
    first = load_plan_text(steady, "steady.yaml")
    store.update_run_plan(1, steady, "sha-steady", design=orchestrate.plan_design(first.config, None))
    loosened = load_plan_text(steady.replace("range: 10%", "range: 40%"), "steady.yaml")
    with pytest.raises(UserError, match=r"\(steady_state.range 10% -> 40%\)"):
        check_design_unchanged(loosened, store, 1, accept=False, observer=None)


def test_a_resumed_sequential_run_leaves_a_failed_repetition_of_a_round_looked_at(tmp_path: Path,
                                                                                   store: Store) -> None:
    """A failed repetition of round 4 was a look already: run again hours later it would not have run next to its
    pair, and the rule would look a second time at a look it made. The resume leaves it (and looks at nothing
    new); a plain `repeat: N` run still runs its failed repetitions again."""
    def failing(call: FakeCall) -> Step:
        if call.case.workload.bs_bytes == 8192 and call.rep_index == 4:
            return Replay("", returncode=1, stderr="fio: error=Input/output error\n")
        return Replay(RANDRW_OUTPUT)

    result, first, _ = _adaptive_session(tmp_path, store, failing, resume=False)
    assert result is not None and (result.ran, result.failed) == (20, 1) and _look_rounds(first) == list(range(3, 11))
    result, resumed, fake = _adaptive_session(tmp_path, store, _ok, resume=True)
    assert result is not None and result.ran == 0 and fake.calls == []
    assert _look_rounds(resumed) == []


STEADY = """
name: steady
targets:
  t: {{kind: path, path: {data}, size: 4MiB}}
workload: {{rw: randrw, rwmixread: 70, bs: [4k, 8k], iodepth: 1, runtime: 1s, direct: false}}
steady_state: {{metric: iops, window: 3, range: 10%, slope: 5%, max_rounds: {most}, confirm: {confirm}}}
telemetry: {{enabled: false}}
"""


def _scaled(factor: float) -> str:
    """The fixture's fio output with every job's IOPS and throughput times ``factor``."""
    import json

    doc = json.loads(RANDRW_OUTPUT)
    for job in doc["jobs"]:
        for direction in ("read", "write", "trim"):
            if direction in job:
                job[direction]["iops"] *= factor
                job[direction]["bw_bytes"] *= factor
    return json.dumps(doc)


def test_steady_state_stops_each_point_at_its_first_steady_window(tmp_path: Path, store: Store,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """bs=4k falls by half over its first rounds and then holds (steady at rounds 4-6, then 2 rounds more); bs=8k
    never settles (it alternates +-30 %) and runs to max_rounds. Figures come from the rounds after the window."""
    falling = [2.0, 1.6, 1.25, 1.0, 1.0, 1.01, 0.99, 1.03]

    def step(call: FakeCall) -> Step:
        if call.case.workload.bs_bytes == 4096:
            return Replay(_scaled(falling[call.rep_index]))
        return Replay(_scaled(1.3 if call.rep_index % 2 else 0.7))

    loaded = load_plan_text(STEADY.format(data=tmp_path / "data", most=8, confirm=2), "steady.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    observer, fake = Observer(), FakeExecutor(step)
    result = orchestrate.run_plan(loaded, cases, checked, store, fake, observer, resume=False)
    by_bs: dict[int, list[int]] = {}
    for call in fake.calls:  # each point's rounds back to back
        by_bs.setdefault(call.case.workload.bs_bytes, []).append(call.rep_index)
    assert by_bs == {4096: list(range(8)), 8192: list(range(8))}  # 4k: steady after 6, then 2 more
    assert [c.case.workload.bs_bytes for c in fake.calls] == [4096] * 8 + [8192] * 8
    assert (result.ran, result.not_needed) == (16, 4)  # 2 x (8 + 2) scheduled
    steady_said = [e for e in observer.events if e.startswith("t randrw 4k qd=1 jobs=1: steady by SNIA's rule after")]
    assert len(steady_said) == 1, observer.events
    assert steady_said[0].startswith("t randrw 4k qd=1 jobs=1: steady by SNIA's rule after 6 rounds")
    assert "its figures come from the next 2 rounds" in steady_said[0]
    # rounds 4-8 within 1.0-1.03 of the level: the change across them is shown within +-10 %
    assert ("t randrw 4k qd=1 jobs=1: rounds 7-8 after its steady window measured: its figures; across rounds 4-8 "
            "the level changed") in "\n".join(observer.events)
    assert any(e.endswith("steady shown (within +-10 %)") for e in observer.events), observer.events
    assert any(e.startswith("t randrw 8k qd=1 jobs=1: not steady after 8 rounds") for e in observer.events)

    from storbench.selection import steady_view
    from storbench.stats.steady import SteadyStatus
    from storbench.stats.summary import summarize_points

    kept, seen, states = steady_view(store.runs(), store.repetitions())
    steady_case = next(c for c in cases if c.workload.bs_bytes == 4096)
    # the figures come from the rounds after the window (chosen by nothing), not from the window itself
    assert sorted(r.rep_index for r in kept if r.case.case_id == steady_case.case_id) == [6, 7]
    state = states[(result.run_id, steady_case.case_id)]
    assert state.status is SteadyStatus.STEADY and state.window is not None and state.window.rounds == (3, 4, 5)
    assert [r for r, _ in state.confirmation] == [6, 7] and state.settled and not state.window_only
    points = {(p.bs_bytes, p.direction): p for p in summarize_points(seen)}
    base = {(p.bs_bytes, p.direction): p for p in summarize_points(
        steady_view(store.runs(), [r for r in store.repetitions() if r.rep_index == 3])[1])}
    read_iops = points[(4096, "read")].metric("iops")
    assert read_iops is not None and read_iops.n == 2 and read_iops.has_interval
    assert read_iops.mean == pytest.approx(base[(4096, "read")].metric("iops").mean * 1.01, rel=1e-6)
    (not_steady,) = [w for w in points[(8192, "read")].warnings if w.code == "not_steady"]
    # a rule not met, not a storage that never settled: rounds noisier than SNIA's range fail it too
    assert "SNIA's range and slope rule not met" in not_steady.message and "noisier" in not_steady.message
    assert "steady_window" not in {w.code for p in points.values() for w in p.warnings}
    # the report draws each point's rounds, its window and its line; show lists how each point stands
    code, out, err = run_cli(capsys, "report", "--db", str(store.path), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert html.count("<div id='steady-run1-") == 2, "not one steady-state figure per point"
    assert "Steady state, round by round" in html and "NOT steady after 8 rounds" in html
    code, out, err = run_cli(capsys, "show", "--db", str(store.path))
    assert code == 0, err
    assert "run 1 t randrw 70% 4k qd1: steady (rounds 4-6, 8 measured" in out, out
    assert "figures from rounds 7-8 after it" in out, out
    assert "run 1 t randrw 70% 8k qd1: not steady (rounds 6-8, 8 measured" in out, out
    assert "not_steady" not in {w.code for w in points[(4096, "read")].warnings}


def test_a_steady_window_without_rounds_after_it_gives_no_interval_and_every_output_says_so(
        tmp_path: Path, store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """`confirm: 0` (like an interrupted run, or one stored before confirmation rounds): the figures are the
    window's, rounds chosen for their small spread, so show, its exports, the report and compare give no interval
    and say why."""
    import json

    def step(call: FakeCall) -> Step:
        return Replay(_scaled((1.0, 1.02, 0.99)[call.rep_index % 3] * (1.1 if call.case.workload.bs_bytes == 8192
                                                                       else 1.0)))

    loaded = load_plan_text(STEADY.format(data=tmp_path / "data", most=8, confirm=0), "steady.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    fake = FakeExecutor(step)
    orchestrate.run_plan(loaded, cases, checked, store, fake, Observer(), resume=False)
    assert len(fake.calls) == 2 * 3  # each steady at its first window, nothing after it
    db = str(store.path)
    code, out, err = run_cli(capsys, "show", "--db", db)
    assert code == 0, err
    assert "steady-state window: rounds of one instance chosen for small spread; no interval" in out, out
    assert "figures from the window: rounds chosen for small spread, no interval" in out, out
    code, out, err = run_cli(capsys, "show", "--db", db, "--format", "json")
    rows = json.loads(out)
    assert rows and all(r["iops_n"] == 3 and r["iops_ci_low"] is None and r["iops_ci_high"] is None for r in rows)
    assert all("steady_window" in {w["code"] for w in r["warnings"]} for r in rows)
    code, out, err = run_cli(capsys, "show", "--db", db, "--format", "csv")
    assert "steady_window" in out
    code, out, err = run_cli(capsys, "compare", "--db", db, "--baseline", "bs=4k", "--candidate", "bs=8k")
    assert code == 0, err
    assert "(no interval)" in out and "steady-state window" in out, out
    code, out, err = run_cli(capsys, "compare", "--db", db, "--baseline", "bs=4k", "--candidate", "bs=8k",
                             "--format", "json")
    cells = json.loads(out)
    assert cells and all(c["interval"] == "none" and c["change_ci_low_pct"] is None for c in cells)
    assert {c["verdict"] for c in cells} == {"~"}
    code, out, err = run_cli(capsys, "report", "--db", db, "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "rounds chosen for their small spread: no interval" in html


def test_a_resumed_steady_state_run_continues_only_the_points_not_yet_steady(tmp_path: Path, store: Store) -> None:
    def step(call: FakeCall) -> Step:
        return Replay(_scaled(1.0)) if call.case.workload.bs_bytes == 4096 else Replay(
            _scaled(1.3 if call.rep_index % 2 else 0.7))

    stored, calls = _steady_then_resumed(tmp_path, store, step)
    assert stored == 3 + 2 + 4  # 4k: steady after 3, then 2 more; 8k: 4 rounds, not steady
    # the steady point stays as it was; the other continues from round 5 to the new max
    assert [(c.case.workload.bs_bytes, c.rep_index) for c in calls] == [(8192, 4), (8192, 5)]


def _steady_then_resumed(tmp_path: Path, store: Store, step: Callable[[FakeCall], Step]
                         ) -> tuple[int, list[FakeCall]]:
    """The steady-state plan run to 4 rounds at most, then resumed with 6: (the repetitions stored after the first,
    the resumed run's fio calls)."""
    first = load_plan_text(STEADY.format(data=tmp_path / "data", most=4, confirm=2), "steady.yaml")
    cases = expand(first)
    checked = check_everything(first, cases, CAPS.binary, create=True)
    orchestrate.run_plan(first, cases, checked, store, FakeExecutor(step), Observer(), resume=False)
    stored = len(store.repetitions())
    more = load_plan_text(STEADY.format(data=tmp_path / "data", most=6, confirm=2), "steady.yaml")
    fake = FakeExecutor(step)
    orchestrate.run_plan(more, cases, checked, store, fake, Observer(), resume=True)
    return stored, list(fake.calls)


def test_a_resumed_steady_state_run_leaves_a_failed_round_failed(tmp_path: Path, store: Store) -> None:
    """A failed round 2 of a point not yet steady, rounds 3-4 run after it: the resume ran round 2 again first, and
    its figure, measured after round 4, sat between rounds 1 and 3 in the window's range and slope. It stays failed,
    as in a run that did not stop; the point goes on from round 5."""
    def failing(call: FakeCall) -> Step:
        if call.case.workload.bs_bytes == 8192 and call.rep_index == 1:
            return Replay("", returncode=1, stderr="fio: error=Input/output error\n")
        return Replay(_scaled(1.0)) if call.case.workload.bs_bytes == 4096 else Replay(
            _scaled(1.3 if call.rep_index % 2 else 0.7))

    _, calls = _steady_then_resumed(tmp_path, store, failing)
    assert [(c.case.workload.bs_bytes, c.rep_index) for c in calls] == [(8192, 4), (8192, 5)], calls


SEARCH = """
name: search
targets:
  t: {{kind: path, path: {data}, size: 4MiB}}
workload: {{rw: randrw, rwmixread: 70, bs: 4k, runtime: 1s, direct: true}}
repeat: 2
search: {{axis: iodepth, range: [1, 64], slo: "p99<={limit_us}us"}}
telemetry: {{enabled: false}}
"""


def _storage_at(qd: int) -> str:
    """The fixture's output as a storage that scales IOPS with the depth up to 8, then gains 10 % of the fixture's
    IOPS per extra I/O, its latency growing by Little's law (outstanding I/Os / IOPS)."""
    import json

    iops_factor = qd if qd <= 8 else 8 + 0.1 * (qd - 8)
    lat_factor = qd / iops_factor
    doc = json.loads(RANDRW_OUTPUT)
    for job in doc["jobs"]:
        for direction in ("read", "write"):
            block = job[direction]
            block["iops"] *= iops_factor
            block["bw_bytes"] *= iops_factor
            for kind in ("lat_ns", "clat_ns"):
                lat = block[kind]
                for key in ("min", "max", "mean", "stddev"):
                    lat[key] *= lat_factor
                if isinstance(lat.get("percentile"), dict):
                    lat["percentile"] = {k: int(v * lat_factor) for k, v in lat["percentile"].items()}
                if isinstance(lat.get("bins"), dict):
                    lat["bins"] = {str(int(int(k) * lat_factor)): v for k, v in lat["bins"].items()}
    return json.dumps(doc)


def test_a_search_measures_a_few_depths_and_finds_the_grids_best_point_within_the_objective(
        tmp_path: Path, store: Store) -> None:
    """On the simulated storage the worst direction's p99 at depth <= 8 is P; past 8 it grows as qd / IOPS. With
    the limit at 2.6 P the highest-IOPS depth within it on the grid 1..64 is 24 (p99 2.5 P; 32 has 3.1 P): the
    search must say 24, measure each chosen depth's repetitions back to back, and run far fewer than 12."""
    from storbench.fio.merge import client_measurement
    from storbench.fio.parse import parse_fio_json

    merged = client_measurement(parse_fio_json(RANDRW_OUTPUT)).directions
    p99 = max(d.lat.percentile_ns(99.0) or 0 for d in merged)
    limit_us = int(2.6 * p99 / 1000)
    loaded = load_plan_text(SEARCH.format(data=tmp_path / "data", limit_us=limit_us), "search.yaml")
    cases = expand(loaded)
    assert sorted(c.workload.iodepth for c in cases) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    observer, fake = Observer(), FakeExecutor(lambda call: Replay(_storage_at(call.case.workload.iodepth)))
    result = orchestrate.run_plan(loaded, cases, checked, store, fake, observer, resume=False)
    depths = [call.case.workload.iodepth for call in fake.calls]
    assert depths[::2] == depths[1::2], depths  # each depth's two repetitions back to back
    measured = depths[::2]
    assert len(set(measured)) == len(measured) and 24 in measured and 32 in measured
    assert len(measured) <= 7, measured
    assert result.failed == 0 and result.ran == 2 * len(measured)
    said = [e for e in observer.events if e.startswith("search t randrw 4k jobs=1")]
    assert len(said) == 1 and "at iodepth=24 within p99<=" in said[0], said
    assert f"measured {len(measured)} of 12 grid values" in said[0]


def test_a_resumed_search_finishes_the_point_it_had_begun_and_gives_the_same_answer(
        tmp_path: Path, store: Store) -> None:
    """Interrupted in the second repetition of its third depth, the search resumes there: that depth gets its
    second repetition, the search goes on as if never stopped, and nothing runs twice."""
    from storbench.fio.merge import client_measurement
    from storbench.fio.parse import parse_fio_json

    merged = client_measurement(parse_fio_json(RANDRW_OUTPUT)).directions
    limit_us = int(2.6 * max(d.lat.percentile_ns(99.0) or 0 for d in merged) / 1000)
    loaded = load_plan_text(SEARCH.format(data=tmp_path / "data", limit_us=limit_us), "search.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    calls: list[tuple[int, int]] = []

    def interrupted(call: FakeCall) -> Step:
        if len(calls) == 5:
            return Raise(KeyboardInterrupt())
        calls.append((call.case.workload.iodepth, call.rep_index))
        return Replay(_storage_at(call.case.workload.iodepth))

    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(interrupted), Observer(), resume=False)
    assert calls == [(1, 0), (1, 1), (6, 0), (6, 1), (24, 0)]
    observer = Observer()
    resumed = FakeExecutor(lambda call: Replay(_storage_at(call.case.workload.iodepth)))
    orchestrate.run_plan(loaded, cases, checked, store, resumed, observer, resume=True)
    after = [(c.case.workload.iodepth, c.rep_index) for c in resumed.calls]
    assert after[0] == (24, 1), after  # the begun point first
    assert [d for d, _ in calls + after][::2] == [1, 6, 24, 64, 32], calls + after
    said = [e for e in observer.events if e.startswith("search t randrw 4k jobs=1")]
    assert len(said) == 1 and "at iodepth=24 within p99<=" in said[0], said


def test_a_resumed_search_leaves_a_failed_repetition_of_a_load_it_has_read_failed(tmp_path: Path,
                                                                                   store: Store) -> None:
    """Depth 6's second repetition fails; the search reads depth 6 from the one left and goes on. Interrupted later,
    the resume ran that repetition again first (only OK repetitions counted as done), pooled it with the first one
    measured before, and decided again from n=2 a path it had chosen at n=1: the answer could change. A resume
    answers as the run that did not stop."""
    from storbench.fio.merge import client_measurement
    from storbench.fio.parse import parse_fio_json

    merged = client_measurement(parse_fio_json(RANDRW_OUTPUT)).directions
    limit_us = int(2.6 * max(d.lat.percentile_ns(99.0) or 0 for d in merged) / 1000)
    loaded = load_plan_text(SEARCH.format(data=tmp_path / "data", limit_us=limit_us), "search.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)

    def storage(call: FakeCall) -> Step:
        if (call.case.workload.iodepth, call.rep_index) == (6, 1):
            return Replay("", returncode=1, stderr="fio: error=Input/output error\n")
        return Replay(_storage_at(call.case.workload.iodepth))

    whole = open_store(tmp_path / "whole.db")
    observer = Observer()
    orchestrate.run_plan(loaded, cases, checked, whole, FakeExecutor(storage), observer, resume=False)
    whole.close()
    answer = [e for e in observer.events if e.startswith("search t randrw 4k jobs=1")]
    calls: list[tuple[int, int]] = []

    def interrupted(call: FakeCall) -> Step:
        if len(calls) == 5:
            return Raise(KeyboardInterrupt())
        calls.append((call.case.workload.iodepth, call.rep_index))
        return storage(call)

    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(interrupted), Observer(), resume=False)
    assert calls[2:4] == [(6, 0), (6, 1)], calls
    observer = Observer()
    resumed = FakeExecutor(storage)
    orchestrate.run_plan(loaded, cases, checked, store, resumed, observer, resume=True)
    after = [(c.case.workload.iodepth, c.rep_index) for c in resumed.calls]
    assert (6, 1) not in after, after
    assert [e for e in observer.events if e.startswith("search t randrw 4k jobs=1")] == answer and answer


def test_a_resumed_search_on_a_new_precondition_starts_its_begun_load_over_and_keeps_its_objective(
        tmp_path: Path, store: Store) -> None:
    """On a preconditioned target (or a lab) the resume writes the target again: the load the search had begun
    pooled a repetition from before with one from after as one point. It starts over. A resume that changes the
    search (its objective, range or steps) was accepted, and the loads left were chosen against another objective."""
    from storbench.errors import UserError
    from storbench.fio.merge import client_measurement
    from storbench.fio.parse import parse_fio_json

    merged = client_measurement(parse_fio_json(RANDRW_OUTPUT)).directions
    limit_us = int(2.6 * max(d.lat.percentile_ns(99.0) or 0 for d in merged) / 1000)
    text = SEARCH.format(data=tmp_path / "data", limit_us=limit_us).replace(
        "size: 4MiB}", "size: 4MiB, precondition: {workload: randwrite 4k, for: 1s}}")
    loaded = load_plan_text(text, "search.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    calls: list[tuple[int, int]] = []

    def interrupted(call: FakeCall) -> Step:
        if call.case.workload.rw == "randrw" and len(calls) == 6:  # the precondition's, then (24, 1)
            return Raise(KeyboardInterrupt())
        calls.append((call.case.workload.iodepth, call.rep_index))
        return Replay(_storage_at(call.case.workload.iodepth))

    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(interrupted), Observer(), resume=False)
    other = load_plan_text(text.replace(f"p99<={limit_us}us", f"p99<={2 * limit_us}us"), "search.yaml")
    with pytest.raises(UserError, match=r"changed what run 1's repetitions run under since it started \(search\)"):
        orchestrate.run_plan(other, expand(other), checked, store, FakeExecutor(interrupted), Observer(), resume=True)
    observer = Observer()
    resumed = FakeExecutor(lambda call: Replay(_storage_at(call.case.workload.iodepth)))
    orchestrate.run_plan(loaded, cases, checked, store, resumed, observer, resume=True)
    after = [(c.case.workload.iodepth, c.rep_index) for c in resumed.calls if c.case.workload.rw == "randrw"]
    assert after[:2] == [(24, 0), (24, 1)], after
    restarted = [e for e in observer.events if "a search's load" in e]
    assert len(restarted) == 1 and "its repetitions not all measured when interrupted; starts over (1 earlier" in \
        restarted[0], observer.events


def _preconditioned_steady(tmp_path: Path) -> tuple[LoadedPlan, list[Case], Checked]:
    """The steady-state plan (at most 8 rounds, 2 after the window) on a target preconditioned before its first
    measurement, loaded, expanded and checked."""
    text = STEADY.format(data=tmp_path / "data", most=8, confirm=2).replace(
        "size: 4MiB}", "size: 4MiB, precondition: {workload: randwrite 4k, for: 1s}}")
    loaded = load_plan_text(text, "steady.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    return loaded, cases, checked


def test_a_resumed_steady_state_run_starts_unsettled_points_over_on_a_preconditioned_target(
        tmp_path: Path, store: Store) -> None:
    """The precondition runs again when the run resumes, so a point interrupted before it was steady must not
    join its old rounds to new ones: it starts over; a point already steady is not run again."""
    loaded, cases, checked = _preconditioned_steady(tmp_path)

    def first(call: FakeCall) -> Step:
        if call.case.workload.rw == "randrw" and call.case.workload.bs_bytes == 8192 and call.rep_index == 2:
            return Raise(KeyboardInterrupt())
        return Replay(RANDRW_OUTPUT)

    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(first), Observer(), resume=False)
    assert sorted((r.case.workload.bs_bytes, r.rep_index) for r in store.repetitions()) == [
        *((4096, i) for i in range(5)), (8192, 0), (8192, 1)]
    observer, again = Observer(), FakeExecutor(lambda call: Replay(RANDRW_OUTPUT))
    orchestrate.run_plan(loaded, cases, checked, store, again, observer, resume=True)
    measured = [(c.case.workload.bs_bytes, c.rep_index) for c in again.calls if c.case.workload.rw == "randrw"]
    assert measured == [(8192, i) for i in range(5)], measured  # 4k was steady and confirmed: not run again
    assert any("not steady when interrupted; starts over (2 earlier rounds dropped" in e for e in observer.events)
    kept = sorted((r.case.workload.bs_bytes, r.rep_index) for r in store.repetitions())
    assert kept == [*((4096, i) for i in range(5)), *((8192, i) for i in range(5))]
    started = {r.rep_index: r.started_at_s for r in store.repetitions() if r.case.workload.bs_bytes == 8192}
    preconditioned = max(p.finished_at_s for p in store.preconditions([1])[1])
    assert all(s >= preconditioned for s in started.values())  # every 8k round after the second precondition


def test_a_point_interrupted_between_its_steady_window_and_the_rounds_after_it_starts_over_on_a_new_target(
        tmp_path: Path, store: Store) -> None:
    """Its figures come from the rounds after the window: measured after a second precondition they would be
    another instance's, so the point starts over like one that was not yet steady."""
    loaded, cases, checked = _preconditioned_steady(tmp_path)

    def first(call: FakeCall) -> Step:
        if call.case.workload.rw == "randrw" and call.case.workload.bs_bytes == 4096 and call.rep_index == 3:
            return Raise(KeyboardInterrupt())
        return Replay(RANDRW_OUTPUT)

    with pytest.raises(KeyboardInterrupt):
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(first), Observer(), resume=False)
    observer, again = Observer(), FakeExecutor(lambda call: Replay(RANDRW_OUTPUT))
    orchestrate.run_plan(loaded, cases, checked, store, again, observer, resume=True)
    assert any("steady by SNIA's rule but its rounds after the window not all measured when interrupted; starts over "
               "(3 earlier rounds dropped" in e for e in observer.events), observer.events
    measured = [(c.case.workload.bs_bytes, c.rep_index) for c in again.calls if c.case.workload.rw == "randrw"]
    assert measured == [*((4096, i) for i in range(5)), *((8192, i) for i in range(5))], measured


@pytest.mark.parametrize("order", ["interleaved", "sequential"])
def test_points_of_a_run_that_alternated_its_cases_carry_their_values_by_round(tmp_path: Path, store: Store,
                                                                              order: str) -> None:
    """What pairs two points of one curve: `select` marks the observations of an interleaved run, and each point's
    estimates carry its repetitions' values by (run, round); a sequential run's carry none (Welch)."""
    from storbench.selection import select
    from storbench.stats.summary import summarize_points

    text = PLAN.format(data=tmp_path / "data", telemetry="false", ceiling="", extra="").replace(
        "order: sequential", f"order: {order}")
    loaded = load_plan_text(text, "loop.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(lambda call: Replay(RANDRW_OUTPUT)),
                         Observer(), resume=False)
    selection = select(str(store.path), "", [], default_latest=True)
    assert {o.alternated for o in selection.observations} == {order == "interleaved"}
    for point in summarize_points(selection.observations):
        iops = point.metric("iops")
        assert iops is not None
        assert [r for r, _ in iops.rounds] == ([(1, 0, 0), (1, 1, 1)] if order == "interleaved" else [])


def _fake_cli(monkeypatch: pytest.MonkeyPatch, step: Step | None = None) -> list[FakeExecutor]:
    """`storbench run` through the CLI with the fake executor (every repetition replays ``step``: ok)."""
    import storbench.execute.fio_binary
    import storbench.execute.local

    fakes: list[FakeExecutor] = []

    def fake_local(fio_binary: str) -> FakeExecutor:
        fakes.append(FakeExecutor(_ok))
        return fakes[-1]

    monkeypatch.setattr(storbench.execute.local, "LocalExecutor", fake_local)
    monkeypatch.setattr(storbench.execute.fio_binary, "find_fio", lambda explicit=None: CAPS.binary)
    return fakes


def test_a_resume_that_changes_the_stopping_rule_is_refused_unless_accepted_and_then_marked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Widening the margin and raising max after seeing the data would turn "undecided" into "equivalent" under
    error rates that no longer hold: refused in one line naming the change; accepted, the answer says so."""
    fakes = _fake_cli(monkeypatch)
    db = str(tmp_path / "r.db")
    first = ADAPTIVE.format(data=tmp_path / "data", margin=", margin: 5%")
    plan = write_plan(tmp_path, first)
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db)
    assert code == 0, err
    widened = first.replace("margin: 5%", "margin: 10%").replace("max: 10", "max: 12")
    write_plan(tmp_path, widened)
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--resume")
    assert code == 2 and len(fakes) == 1 and out == "", out + err  # refused before anything is checked or run
    assert len(err.strip().splitlines()) == 1, err
    message = " ".join(err.split())
    assert "changed the stopping rule of run 1 since it started (max 10 -> 12, margin 5% -> 10%)" in message, err
    assert "--accept-changed-design" in message
    # a change outside the stopping rule (a new point) is no design change
    from storbench.run_design import RunDesign
    from storbench.stats.run_questions import run_design_changes
    from storbench.store.migrations import design_of_text

    def versions(*texts: str) -> list[tuple[int, RunDesign]]:
        return [(version, design_of_text(text)) for version, text in enumerate(texts, 1)]

    assert run_design_changes(versions(first, first.replace("runtime: 1s", "runtime: 2s"))) == []
    assert run_design_changes(versions(first, widened, first)) == ["changed, then changed back"]
    assert run_design_changes(versions(first, first.replace("until: decided", "until: ci <= 5%"))) == [
        "until decided -> ci <= 5%"]
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--resume", "--accept-changed-design")
    assert code == 0, err
    assert "stopping rule changed (max 10 -> 12, margin 5% -> 10%), accepted" in " ".join(out.split())
    # resumed again with the rule it now has: nothing new to accept
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--resume")
    assert code == 0, err
    marked = "run 1: stopping rule changed after it started (max 10 -> 12, margin 5% -> 10%; --accept-changed-design)"
    code, out, err = run_cli(capsys, "show", "--db", db)
    assert code == 0 and marked in " ".join(out.split()), out
    code, out, err = run_cli(capsys, "compare", "--db", db, "--baseline", "bs=4k", "--candidate", "bs=8k")
    assert code == 0 and marked in " ".join(out.split()), out
    code, out, err = run_cli(capsys, "compare", "--db", db, "--baseline", "bs=4k", "--candidate", "bs=8k",
                             "--format", "json")
    import json

    rows = json.loads(out)
    assert rows and all(row["design_changed"] is True for row in rows)
    report = tmp_path / "report.html"
    assert run_cli(capsys, "report", "--db", db, "-o", str(report))[0] == 0
    import html

    assert html.escape(marked, quote=False) in report.read_text()


def test_an_unchanged_sequential_run_is_not_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cli(monkeypatch)
    db = str(tmp_path / "r.db")
    plan = write_plan(tmp_path, ADAPTIVE.format(data=tmp_path / "data", margin=", margin: 5%"))
    assert run_cli(capsys, "run", str(plan), "--db", db)[0] == 0
    assert run_cli(capsys, "run", str(plan), "--db", db, "--resume")[0] == 0
    code, out, _ = run_cli(capsys, "compare", "--db", db, "--baseline", "bs=4k", "--candidate", "bs=8k",
                           "--format", "json")
    import json

    assert code == 0 and all(row["design_changed"] is False for row in json.loads(out))
    assert "stopping rule changed" not in run_cli(capsys, "show", "--db", db)[1]


def test_resume_run_continues_the_named_run_and_the_advice_names_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two interrupted runs: each is told to finish with its own number, and `--resume 1` finishes the older
    one (plain --resume would continue run 2)."""
    import storbench.execute.fio_binary
    import storbench.execute.local

    interrupt_at = [2]

    def fake_local(fio_binary: str) -> FakeExecutor:
        calls: list[int] = []

        def step(call: FakeCall) -> Step:
            calls.append(1)
            if len(calls) == interrupt_at[0]:
                raise KeyboardInterrupt
            return Replay(RANDRW_OUTPUT)

        return FakeExecutor(step)

    monkeypatch.setattr(storbench.execute.local, "LocalExecutor", fake_local)
    monkeypatch.setattr(storbench.execute.fio_binary, "find_fio", lambda explicit=None: CAPS.binary)
    db = str(tmp_path / "r.db")
    plan = write_plan(tmp_path, _plan(tmp_path).source.text)
    for _ in range(2):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", db)
        assert code == 130, out + err
    assert f"`storbench run {plan} --db {db} --resume 2`" in " ".join(err.split())
    code, out, err = run_cli(capsys, "show", "--db", db, "--run", "all")
    text = " ".join(out.split())
    for run_id in (1, 2):
        assert f"run {run_id} is incomplete: 1 of 4 repetitions done (interrupted, or still running); finish it with " \
               f"`storbench run {plan} --db {db} --resume {run_id}`" in text, text
    interrupt_at[0] = 0
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--resume", "1")
    assert code == 0 and "run 1: 3 repetitions to go (1 already stored, skipped)" in out, out + err
    code, out, err = run_cli(capsys, "show", "--db", db, "--run", "all")
    assert "run 1 is incomplete" not in out and "run 2 is incomplete" in " ".join(out.split())
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--resume", "7")
    assert code == 2 and "cannot resume: no run 7 in" in err and "runs of plan 'loop': 1, 2" in err, err
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--resume", "x")
    assert code == 2 and "'x' is not a run number" in err, err
    # the plan written after --resume is the plan, not a run number: the latest run (2) is continued
    code, out, err = run_cli(capsys, "run", "--resume", str(plan), "--db", db)
    assert code == 0 and "run 2: 3 repetitions to go (1 already stored, skipped)" in out, out + err


def test_show_run_all_keeps_two_runs_of_one_plan_apart_unless_pooled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of one plan measure cases with the same ids: `show --run all` gives each run its own rows (a run
    column tells them apart); `--pool` makes one row of both, and says so."""
    import json

    _fake_cli(monkeypatch)
    db = str(tmp_path / "r.db")
    plan = write_plan(tmp_path, _plan(tmp_path).source.text)
    for _ in range(2):
        assert run_cli(capsys, "run", str(plan), "--db", db)[0] == 0
    code, out, err = run_cli(capsys, "show", "--db", db, "--run", "all", "--format", "json")
    assert code == 0, err
    apart = json.loads(out)
    assert sorted(tuple(p["run_ids"]) for p in apart) == [(1,)] * 4 + [(2,)] * 4
    assert all(p["repetitions_ok"] == 2 for p in apart)
    code, out, err = run_cli(capsys, "show", "--db", db, "--run", "all", "--format", "json", "--pool")
    pooled = json.loads(out)
    assert len(pooled) == 4 and all(p["run_ids"] == [1, 2] and p["repetitions_ok"] == 4 for p in pooled)
    code, out, err = run_cli(capsys, "show", "--db", db, "--run", "all", "--wide")
    header = next(line for line in out.splitlines() if " rw " in line)
    assert header.split()[:3] == ["┃", "run", "┃"], out
    assert "pool the repetitions" not in out
    code, out, err = run_cli(capsys, "show", "--db", db, "--run", "all", "--pool")
    assert "note: rows of run 1,2 pool the repetitions of those runs" in " ".join(out.split()), out
    report = tmp_path / "report.html"  # the report keeps them apart too, as `show` does: a run column
    assert run_cli(capsys, "report", "--db", db, "--run", "all", "-o", str(report))[0] == 0
    text = report.read_text()
    assert "<th>run</th><th>target</th>" in text and "pool the repetitions" not in text
    assert run_cli(capsys, "report", "--db", db, "--run", "all", "--pool", "-o", str(report))[0] == 0
    text = report.read_text()  # pooled on asking, and said so
    assert "rows of run 1,2 pool the repetitions of those runs" in text and "<th>run</th>" not in text
    code, out, err = run_cli(capsys, "show", "--db", db)  # one run: no run column
    assert "run" not in next(line for line in out.splitlines() if " rw " in line), out


def test_a_resume_that_changes_what_repetitions_run_under_is_refused(tmp_path: Path, store: Store) -> None:
    """Faults, the checking writer, client hosts and preconditions are in no case id: a resume that changed one
    would pool repetitions run under two conditions as one point. Refused in one line, --accept-changed-design or
    not (it is not a stopping rule's change); the same plan, or one that only adds points, resumes."""
    from storbench.errors import UserError
    from storbench.resume import check_design_unchanged

    plan = PLAN.format(data=tmp_path / "data", extra="check_writes: {blocks: 256, iops: 300}\n", telemetry="false",
                       ceiling="")
    first = load_plan_text(plan, "plan.yaml")
    run_id = store.create_run(plan_name="loop", plan_text=plan, plan_sha256="0", source="run",
                              storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                              run_order="sequential", seed=0, tags=[], started_at_s=1.0,
                              design=orchestrate.plan_design(first.config, None))
    check_design_unchanged(first, store, run_id, accept=False, observer=None)  # unchanged: resumes
    more = load_plan_text(plan.replace("bs: [4k, 8k]", "bs: [4k, 8k, 16k]"), "plan.yaml")
    check_design_unchanged(more, store, run_id, accept=False, observer=None)  # a point more: resumes
    for changed, section in (("iops: 300", "iops: 600"), ("check_writes: {blocks: 256, iops: 300}\n", "")):
        other = load_plan_text(plan.replace(changed, section), "plan.yaml")
        with pytest.raises(UserError, match=r"changed what run 1's repetitions run under since it started "
                                            r"\(check_writes\)") as refused:
            check_design_unchanged(other, store, run_id, accept=True, observer=None)
        assert "a resume may only add points" in refused.value.hint and "keeps that region" not in refused.value.hint


def test_a_resume_of_a_search_that_changes_its_repeat_is_refused(tmp_path: Path, store: Store) -> None:
    """A search chose its loads from intervals over `repeat` repetitions each: `repeat: 2` -> `3` was taken (an
    integer repeat is no stopping rule), adding a repetition to loads chosen at n=2, or, on a lab, dropping every
    load measured. A run stored before the section was recorded resumes as it did."""
    from dataclasses import replace

    from storbench.errors import UserError
    from storbench.resume import check_design_unchanged

    plan = SEARCH.format(data=tmp_path / "data", limit_us=500)
    first = load_plan_text(plan, "search.yaml")
    design = orchestrate.plan_design(first.config, None)
    run_id = store.create_run(plan_name="search", plan_text=plan, plan_sha256="0", source="run",
                              storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                              run_order="sequential", seed=0, tags=[], started_at_s=1.0, design=design)
    check_design_unchanged(first, store, run_id, accept=False, observer=None)
    more = load_plan_text(plan.replace("repeat: 2", "repeat: 3"), "search.yaml")
    with pytest.raises(UserError, match=r"run under since it started \(search_repeat\)"):
        check_design_unchanged(more, store, run_id, accept=True, observer=None)
    assert design.conditions is not None
    older = replace(design, conditions=tuple((k, v) for k, v in design.conditions if k != "search_repeat"))
    run_old = store.create_run(plan_name="search", plan_text=plan, plan_sha256="0", source="run",
                               storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                               run_order="sequential", seed=0, tags=[], started_at_s=1.0, design=older)
    check_design_unchanged(first, store, run_old, accept=False, observer=None)


def test_a_resume_that_changes_the_ceph_labs_bring_up_is_refused() -> None:
    """`lab.ceph.bring_up` is in no case id: a resume from a cluster per round to one cluster had passed, and the
    whole run was then described by the new value ("one instance per side"), its earlier rounds included."""
    from storbench.config import condition_changes

    text = (Path(__file__).parent.parent / "examples" / "ceph-osd-count.yaml").read_text().replace(
        "repeat: {min: 3, max: 8, until: decided}", "repeat: 4")  # a fixed count: either bring-up may run it
    assert "bring_up: each_repetition" in text and "repeat: 4" in text
    before = orchestrate.plan_design(load_plan_text(text, "plan.yaml").config, None)
    after = orchestrate.plan_design(load_plan_text(text.replace("bring_up: each_repetition", "bring_up: once"),
                                                   "plan.yaml").config, None)
    assert condition_changes(before, after) == ["bring_up"]
    assert condition_changes(before, before) == []


def test_a_resume_keeps_the_checking_writers_region_or_names_it(tmp_path: Path, store: Store) -> None:
    """check_writes' default region has a block for each write of the longest repetition: a resume that adds a
    longer runtime would write the repetitions left over a larger region than the stored ones. Refused, with the
    `blocks` that keeps the stored region; a run stored when the default was 2,048 blocks likewise."""
    import dataclasses
    import json

    from storbench.errors import UserError
    from storbench.resume import check_design_unchanged

    plan = PLAN.format(data=tmp_path / "data", extra="check_writes: {iops: 300}\n", telemetry="false", ceiling="")
    first = load_plan_text(plan, "plan.yaml")
    design = orchestrate.plan_design(first.config, None)

    def stored(with_design: object) -> int:
        return store.create_run(plan_name="loop", plan_text=plan, plan_sha256="0", source="run",
                                storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                                run_order="sequential", seed=0, tags=[], started_at_s=1.0, design=with_design)

    run_id = stored(design)
    check_design_unchanged(first, store, run_id, accept=False, observer=None)
    longer = plan.replace("runtime: 1s", "runtime: [1s, 5s]")  # 300 x (5 + 10) writes, no longer 300 x (1 + 10)
    with pytest.raises(UserError, match=r"run under since it started \(check_writes\)") as refused:
        check_design_unchanged(load_plan_text(longer, "plan.yaml"), store, run_id, accept=False, observer=None)
    assert "check_writes wrote over 3,300 blocks" in refused.value.hint
    assert "check_writes: {blocks: 3300} keeps that region" in refused.value.hint
    kept = longer.replace("check_writes: {iops: 300}", "check_writes: {iops: 300, blocks: 3300}")
    check_design_unchanged(load_plan_text(kept, "plan.yaml"), store, run_id, accept=False, observer=None)
    # stored with `blocks: 2048` written out, as the default was: the hint names it, and giving it resumes
    conditions = dict(design.conditions or ())
    old = json.loads(conditions["check_writes"]) | {"blocks": 2048}
    then = dataclasses.replace(design, conditions=tuple({**conditions, "check_writes": json.dumps(old)}.items()))
    old_run = stored(then)
    with pytest.raises(UserError, match=r"\(check_writes\)") as refused:
        check_design_unchanged(first, store, old_run, accept=False, observer=None)
    assert "check_writes: {blocks: 2048} keeps that region" in refused.value.hint
    check_design_unchanged(load_plan_text(plan.replace("{iops: 300}", "{iops: 300, blocks: 2048}"), "plan.yaml"),
                           store, old_run, accept=False, observer=None)


def test_a_case_with_faults_has_its_files_laid_out_before_its_first_repetition(tmp_path: Path, store: Store,
                                                                                monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    """fio lays a path target's files out after its launch, the moment the faults are timed from: a fault at 5 s
    could land before the first I/O. So the case's files are laid out first, once, and only where faults are."""
    from storbench.faults import FaultStep
    from storbench.sessions import LabContext

    fake = FakeExecutor(_ok)
    _run(tmp_path, store, fake)
    assert fake.laid_out == []  # no faults: fio lays them out in the first repetition, as ever
    monkeypatch.setattr(LabContext, "faults_for", lambda self, case, steps: (FaultStep(0.0, "stop", "server"),))
    fake = FakeExecutor(_ok)
    result, observer = _run(tmp_path, store, fake)
    assert result.ran == 4  # the fault (no lab offers it) is recorded as failed; the repetitions run
    first, second = dict.fromkeys(call.case.case_id for call in fake.calls)
    # each case once, before its first repetition (order: sequential, repeat: 2)
    assert fake.asked == [("lay_out", first), ("run", first), ("run", first), ("lay_out", second), ("run", second),
                          ("run", second)]
    assert not any("laying its files out" in line for line in observer.events)
    laid = [line for line in observer.events if "files laid out before its faults in" in line]
    assert len(laid) == 2 and all(line.startswith("target t: ") and line.endswith(" s (fio's set-up alone, not "
                                                                                  "measured)") for line in laid), laid
    # a case whose measurement removes its files (delete) has them laid out before each repetition, said once
    monkeypatch.setattr(orchestrate, "consumes_its_files", lambda case: True)
    fake = FakeExecutor(_ok)
    _, observer = _run(tmp_path, store, fake)
    assert fake.asked == [("lay_out", first), ("run", first), ("lay_out", first), ("run", first),
                          ("lay_out", second), ("run", second), ("lay_out", second), ("run", second)]
    assert len([line for line in observer.events if "files laid out before its faults in" in line]) == 2
    monkeypatch.undo()
    monkeypatch.setattr(LabContext, "faults_for", lambda self, case, steps: (FaultStep(0.0, "stop", "server"),))
    fake = FakeExecutor(_ok)
    fake.layout_failure = "fio exited 1: No space left on device"
    _, observer = _run(tmp_path, store, fake)
    assert "target t: laying its files out before the faults failed (fio exited 1: No space left on device); fio " \
           "lays them out in the repetition, across the faults' times" in observer.events
    assert len(fake.calls) == 4  # the repetitions run all the same
    monkeypatch.setattr(orchestrate, "env_secrets", lambda env: ("s3cr3t-key-value",))  # as an S3 target's keys
    fake = FakeExecutor(_ok)
    fake.layout_failure = "fio exited 1: http_s3_key=s3cr3t-key-value refused"
    _, observer = _run(tmp_path, store, fake)
    assert any("laying its files out before the faults failed" in line for line in observer.events)
    assert not any("s3cr3t" in line for line in observer.events), observer.events  # fio's complaint, key hidden
    # a case whose job makes its objects or files in a fill section (an S3 GET): after the fill ran alone, its
    # repetitions run without it; after a failed one, with it (fio makes them in the repetition)
    from storbench.fio import layout

    monkeypatch.setattr(orchestrate, "has_fill_section", lambda case: True)
    monkeypatch.setattr(layout, "has_fill_section", lambda case: True)
    monkeypatch.setattr(orchestrate, "without_fill", lambda text: text + "; without its fill\n")
    for failure, stripped in (("", True), ("fio exited 1: 503 Slow Down", False)):
        fake = FakeExecutor(_ok)
        fake.layout_failure = failure
        _, observer = _run(tmp_path, store, fake)
        # before each repetition, as its fill had made them in each (a delete_object may have removed them)
        assert fake.laid_out == [first, first, second, second] and len(fake.calls) == 4
        assert sum("its files or objects made before its faults in" in line and line.endswith(
            " s (its job's fill section alone, not measured)") for line in observer.events) == (2 if stripped else 0)
        assert all(text.endswith("; without its fill\n") == stripped for call in fake.calls
                   for text in call.job_texts), (failure, fake.calls[0].job_texts)


def test_a_lab_daemon_that_stops_with_no_fault_asking_fails_its_repetition_and_stops_the_run(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ceph lab whose OSDs filled their devices went on measuring one OSD as if it were three, the repetitions
    stored as ok. A daemon gone after a repetition (`LabKind.lost`) fails that repetition, stops the run with
    what to do, keeps what was stored and tears the lab down."""
    from storbench.errors import UserError
    from storbench.lab.base import LabLost
    from storbench.lab.registry import KINDS

    lab_calls = _fake_nfs_lab(monkeypatch)

    def script(call: FakeCall) -> Step:
        lab_calls.append(f"rep {call.rep_index}")
        return Replay(RANDRW_OUTPUT)

    def lost(case: Case, running: object, faulted: frozenset[str] = frozenset()) -> LabLost | None:
        return LabLost("nfs lab: ganesha stopped during the run", "see its log") if "rep 1" in lab_calls else None

    monkeypatch.setattr(KINDS["nfs"], "lost", lost)
    loaded = _plan(tmp_path, extra="lab: {nfs: {}}\n")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    with pytest.raises(UserError, match="ganesha stopped during the run: the run stops") as raised:
        orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(script), Observer(), resume=False)
    assert raised.value.hint == "see its log"
    assert lab_calls == ["up", "rep 0", "rep 1", "down"]
    stored: list[StoredRepetition] = store.repetitions()
    assert [(r.rep_index, r.status) for r in stored] == [(0, Status.OK), (1, Status.FAILED)]
    assert "ganesha stopped during the run" in stored[1].error


def test_each_create_repetition_starts_with_no_files_an_earlier_one_left(tmp_path: Path, store: Store) -> None:
    """A create killed before fio's unlink, or a metadata cycle whose delete phase the runtime cut, had left files
    that the next repetition's create only opened (twice the rate of real creates). Before each repetition of a
    create or the cycle, its operation's directory is emptied; a stat's laid-out files stay."""
    text = (f"name: files\ntargets:\n  d: {{kind: path, path: {tmp_path / 'data'}, size: 1MiB}}\n"
            "workload: {rw: [create, metadata, stat], files: 10, runtime: 1s}\nrepeat: 2\n"
            "telemetry: {enabled: false}\n")
    loaded = load_plan_text(text, "files.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, CAPS.binary, create=True)
    found: list[tuple[str, int, list[str]]] = []

    def step(call: FakeCall) -> Step:
        rw = call.case.workload.rw
        where = tmp_path / "data" / "storbench-files" / rw
        found.append((rw, call.rep_index, sorted(p.name for p in where.rglob("*") if p.is_file())))
        for n in range(3):  # as a killed create or a cut delete phase leaves them
            (where / f"storbench.0.{n}").write_text("")
        return Replay(RANDRW_OUTPUT)

    orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(step), Observer(), resume=False)
    left = {(rw, rep): names for rw, rep, names in found}
    assert left[("create", 0)] == left[("create", 1)] == [] and left[("metadata", 1)] == []
    assert len(left[("stat", 1)]) == 3  # a stat's files are fio's to lay out and keep


@pytest.mark.parametrize(("bring_up", "budget_s", "kept"), [("each_repetition", None, [False, False, False, True]),
                                                           ("each_repetition", 150.0, [False, True]),
                                                           ("once", None, [True, True])])
def test_keep_lab_keeps_the_last_lab_configuration_not_a_fresh_rounds_cluster(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch, bring_up: str, budget_s: float | None,
        kept: list[bool]) -> None:
    """A fresh cluster a round, with --keep-lab: every group's had been kept, and the next round's cluster of the
    same settings (A0 B0 B1 A1: B1 on B0's) reused it, images and all, while compare said "fresh instance". The
    one that ran last stays up, also when the run stops early (a budget spent after the second round)."""
    text = (f"name: keep\ntargets:\n  img: {{kind: rbd, pool: b, image: i, size: 64MiB}}\n"
            f"workload: {{rw: randread, runtime: 1s}}\nrepeat: 2\norder: interleaved\n"
            f"lab:\n  ceph: {{osds: [3, 4], pool_size: 3, bring_up: {bring_up}}}\n")
    loaded = load_plan_text(text, "keep.yaml")
    cases = expand(loaded)
    groups: list[tuple[int, bool]] = []
    now = [0.0]

    def group(run, lab, items, position, *, keep):  # type: ignore[no-untyped-def]
        now[0] += 100.0  # each group's repetitions take 100 s
        groups.append((lab.ceph.osds, keep(False)))  # asked as the group ends
        return 0, len(items)

    monkeypatch.setattr(orchestrate, "_run_group", group)
    checked = Checked(capabilities=CAPS, targets={})
    orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(_ok), Observer(), resume=False, keep_lab=True,
                         clock=lambda: now[0], budget_s=budget_s)
    assert [keep for _, keep in groups] == kept, groups


def test_a_resume_may_add_a_target_with_its_own_precondition_but_not_lower_steady_max_rounds() -> None:
    """A target added with a precondition of its own changed the run's conditions and the resume was refused (even
    with --accept-changed-design), though no stored repetition ran under it. Lowering steady_state.max_rounds was
    taken as allowed: the points' windows are judged within it, so a point found steady at round 8 read as not
    steady when the rule said 4."""
    from storbench.config import condition_changes, design_changes

    text = ("name: p\ntargets:\n  t: {kind: path, path: /tmp/x, size: 1MiB, precondition: {for: 1s}}\n"
            "workload: {rw: randread, runtime: 1s}\n")
    added = text.replace("workload:", "  u: {kind: path, path: /tmp/y, size: 1MiB, precondition: {for: 2s}}\n"
                         "workload:")
    before, after = (orchestrate.plan_design(load_plan_text(t, "plan.yaml").config, None) for t in (text, added))
    assert condition_changes(before, after) == ["precondition"]  # without knowing what was measured
    assert condition_changes(before, after, unmeasured={"u"}) == []
    changed = orchestrate.plan_design(load_plan_text(text.replace("for: 1s", "for: 3s"), "plan.yaml").config, None)
    assert condition_changes(before, changed, unmeasured={"u"}) == ["precondition"]  # a measured target's own
    steady = text + "steady_state: {metric: iops, window: 3, max_rounds: 12}\n"
    twelve, four, twenty = (orchestrate.plan_design(load_plan_text(steady.replace("12", n), "plan.yaml").config, None)
                            for n in ("12", "4", "20"))
    assert design_changes(twelve, four) == ["steady_state.max_rounds 12 -> 4"]
    assert design_changes(twelve, twenty) == []  # raised: the points not yet steady go on


def test_a_ci_rule_is_not_changed_by_the_comparison_it_does_not_use() -> None:
    """`until: ci` stops on each point's own interval: the plan's `compare` (its sides, metrics and margin) is no
    part of that rule, so a resume that drops the margin `plan` refuses beside it is not a changed design; the
    same edit to `until: decided` is."""
    from storbench.stats.run_questions import run_design_changes
    from storbench.store.migrations import design_of_text

    decided = ADAPTIVE.format(data="/tmp/data", margin=", margin: 5%")
    ci = decided.replace("until: decided", "until: ci <= 5%")
    for before, after, changes in ((ci, ci.replace(", margin: 5%", "").replace("bs=8k", "bs=16k"), []),
                                   (decided, decided.replace(", margin: 5%", ""), ["margin 5% -> none"]),
                                   (decided, ci, ["until decided -> ci <= 5%"])):
        assert run_design_changes([(1, design_of_text(before)), (2, design_of_text(after))]) == changes
