"""Lab kinds (shell): every one-machine test bed storbench can bring up, each behind one interface
(`lab.base.LabKind`). The CLI's `storbench lab` commands and the run's lab sessions ask this registry and never
branch on a kind themselves.

``KINDS`` is in bring-up order: the client hosts and Kubernetes come up for the whole run (in the order the run
loop asks for them); for each lab configuration the volume, then the NFS server (its URL is offered to the
targets on a Ceph cluster too), then the Ceph clusters, torn down in reverse. Live settings are applied before a
case's turn in this order too (the hosts' links, then the OSD options)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from storbench.errors import UserError
from storbench.faults import FaultOffer, fault_problems, find_offer
from storbench.lab import COMMAND_ORDER, ceph_kind, hosts_kind, k8s_kind, nfs, volume
from storbench.lab.base import LabKind
from storbench.shell import run

__all__ = ["COMMAND_ORDER", "KINDS", "check_faults", "plan_fault_offers", "plan_software"]

if TYPE_CHECKING:
    from storbench.config import LoadedPlan
    from storbench.model import Case

KINDS: dict[str, LabKind] = {kind.name: kind for kind in (hosts_kind.KIND, k8s_kind.KIND, volume.KIND, nfs.KIND,
                                                           ceph_kind.KIND)}



def plan_fault_offers(loaded: LoadedPlan) -> tuple[FaultOffer, ...]:
    """What the labs of this plan can do as faults (each lab kind's offers, for the labs the plan brings up)."""
    lab = loaded.config.lab
    return tuple(offer for name, kind in KINDS.items() if lab is not None and getattr(lab, name, None)
                 for offer in kind.faults)  # a lab the plan has (`nfs: false` is none)


def plan_software(loaded: LoadedPlan) -> tuple[tuple[str, str], ...]:
    """The versions of the software this plan's labs run (Ceph, nfs-ganesha), for the run's record: what history
    names when a step co-occurs with an upgrade. A program that is missing or says no version is left out (the lab's
    own checks say what is missing)."""
    lab = loaded.config.lab
    found: dict[str, str] = {}
    for name, kind in KINDS.items():
        if lab is None or not getattr(lab, name, None):
            continue
        for probe in kind.software:
            try:
                version = probe.version(run(list(probe.argv), timeout_s=30))
            except UserError:
                continue
            if version is not None:
                found[probe.name] = version
    return tuple(sorted(found.items()))


def check_faults(loaded: LoadedPlan, cases: Sequence[Case]) -> None:
    """A plan's `faults:` only asks what its own labs offer, inside every case's measured section, one at a time
    per target; not with `steady_state` or `search`, whose rounds choose what to measure from figures a fault
    would distort."""
    from storbench.config.faults import fault_steps  # lazy: the plan's models, not for `storbench lab`'s parser

    config = loaded.config
    if not config.faults:
        return
    where = loaded.source.where(("faults",))
    for name in ("steady_state", "search"):
        if getattr(config, name) is not None:
            raise UserError(f"faults cannot be combined with {name}: its rounds choose what to measure from the "
                            "figures a fault would change", where=where, hint="use a fixed repeat, or drop faults")
    measured_s = min(case.workload.runtime_s for case in cases)
    steps = fault_steps(config.faults)
    problems = fault_problems(steps, measured_s, plan_fault_offers(loaded))
    drawn = next((c.workload for c in cases if len(set(c.workload.start_delay_s)) > 1), None)
    if drawn is not None:  # faults are timed from the start of the measured section, which fio draws at random
        low, high = drawn.start_delay_s
        problems.append(f"workload.fio.startdelay draws the jobs' start between {low:g}s and {high:g}s, so a fault "
                        "could not be timed into the measured section; give one startdelay, or none")
    numbered = [(kind, kind.fault_targets(loaded)) for kind in KINDS.values()]
    for number, step in enumerate(steps):  # a numbered target the plan's lab does not have (client.9 of 2 hosts)
        name, _, index = step.target.partition(".")
        for kind, targets in numbered:
            have = targets.get(name) if find_offer(step, kind.faults) else None
            if have is not None and index.isdigit() and int(index) not in have:
                problems.append(f"faults[{number}] ({step.action} {step.target} at {step.at_s:g}s): every case of "
                                f"the plan's {kind.name} lab has {name}.{have.start} to {name}.{have.stop - 1}; "
                                "name one of them")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        problem, _, hint = problems[0].partition("; ")
        raise UserError(problem + more, where=where, hint=hint)
