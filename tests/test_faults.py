"""Faults in a plan (issue 32): the checks `plan` makes and the timeline it shows, on typed steps and offers."""

from __future__ import annotations

from storbench.faults import FaultOffer, FaultStep, fault_problems, fault_timeline

OFFERS = (FaultOffer("ceph", "kill", r"osd\.[0-9]+", "restart", "SIGKILL an OSD, as a crashed host"),
          FaultOffer("ceph", "out", r"osd\.[0-9]+", "in", "mark an OSD out: its data moves"),
          FaultOffer("volume", "freeze", "volume", "thaw", "hold every I/O, as a stalled volume"),
          FaultOffer("volume", "lose-writes", "volume", "", "serve an older copy: acknowledged writes vanish"))


def test_a_good_plan_has_no_problems_and_a_timeline() -> None:
    steps = [FaultStep(20, "kill", "osd.1", 60), FaultStep(30, "freeze", "volume", 2)]
    assert fault_problems(steps, measured_s=120, offers=OFFERS) == []
    timeline = [(e.at_s, e.text) for e in fault_timeline(steps, ramp_s=5, runtime_s=120, offers=OFFERS)]
    assert timeline == [(5, "measuring starts"), (25, "kill osd.1 (SIGKILL an OSD, as a crashed host)"),
                        (35, "freeze volume (hold every I/O, as a stalled volume)"), (37, "thaw volume"),
                        (85, "restart osd.1"), (125, "measuring ends")]


def test_each_refusal_is_one_line_with_the_fix() -> None:
    def problems(*steps: FaultStep) -> list[str]:
        return fault_problems(list(steps), measured_s=60, offers=OFFERS)

    [line] = problems(FaultStep(10, "kill", "mds.a"))
    assert "no lab of this plan can do it" in line and "kill osd\\.[0-9]+ (ceph)" in line
    [line] = problems(FaultStep(0, "kill", "osd.1"))
    assert "outside the measured section (0 to 60s" in line
    [line] = problems(FaultStep(70, "kill", "osd.1"))
    assert "outside the measured section" in line
    [line] = problems(FaultStep(10, "lose-writes", "volume", 5))
    assert "cannot undo 'lose-writes'" in line
    [line] = problems(FaultStep(10, "kill", "osd.1", -1))
    assert "restore_after must be after the fault" in line
    [line] = problems(FaultStep(10, "kill", "osd.1", 55))
    assert "restored at 65s, after the measured section ends (60s)" in line
    [line] = problems(FaultStep(10, "kill", "osd.1", 20), FaultStep(20, "out", "osd.1"))
    assert "faults on osd.1 overlap" in line
    assert problems(FaultStep(10, "kill", "osd.1", 5), FaultStep(20, "out", "osd.1")) == []  # one after the other
    [line] = fault_problems([FaultStep(10, "kill", "osd.1")], measured_s=60, offers=())
    assert line.endswith("the plan's labs offer: none")
