"""The hosts lab as a lab kind (shell): its command, its fault offers (a client host's link cut or slowed), the fio
its servers run, and its live setting, the links' shaping (`lab/hosts.py` is the lab itself)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from storbench.config import NfsTargetConfig, S3TargetConfig
from storbench.events import LabHealed, LabUp, LinksShaped, RunEvent
from storbench.execute.fio_binary import find_fio
from storbench.faults import FaultOffer, FaultStep, find_offer, level_of
from storbench.lab.base import CliOption, LabCommand, LabKindBase, RunLab, Say, timed_run_lab
from storbench.lab.hosts import HostsLab, HostsLabInfo
from storbench.lab.lab_claim import holds_lab
from storbench.targets.nfs import nfs_fio_binary
from storbench.targets.s3 import http_fio_binary
from storbench.units import format_link_rate

if TYPE_CHECKING:
    from storbench.config import LoadedPlan
    from storbench.fio.options import FioCapabilities
    from storbench.model import Case, LabPoint


def _command_up(lab: HostsLab, args: argparse.Namespace, say: Say) -> None:

    info = lab.up(args.count, find_fio())
    say(f"hosts lab: up; {info.count} fio servers: {info.servers[0]} .. {info.servers[-1]}")
    say(f"plan: hosts: {{servers: [{', '.join(s.replace(',', ':') for s in info.servers[:3])}"
        f"{', ...' if info.count > 3 else ''}]}}  (or lab: {{hosts: {{count: {info.count}}}}})")


def _command_down(lab: HostsLab, say: Say) -> None:
    lab.down()
    say(f"hosts lab: down; namespaces, bridge and {lab.root} removed")


def _command_options() -> tuple[CliOption, ...]:
    return (CliOption(("--count",), {"type": _host_count, "default": 8, "metavar": "N",
                                     "help": "how many hosts (1-250, default 8)"}),)


def _host_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 250:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number from 1 to 250")
    return int(text)


def servers_fio(loaded: LoadedPlan, caps: FioCapabilities) -> str:
    """The fio the namespace hosts' servers run: with an s3 target, the one with the http engine; with an nfs
    target, the one with the nfs engine (the same build)."""

    if any(isinstance(t, S3TargetConfig) for t in loaded.config.targets.values()):

        return http_fio_binary()
    if any(isinstance(t, NfsTargetConfig) for t in loaded.config.targets.values()):

        return nfs_fio_binary()
    return caps.binary


class HostsKind(LabKindBase):
    """The hosts lab: up for the whole run when the plan has `lab.hosts` (its fio servers are the run's clients);
    its live setting is the links' shaping (`lab.hosts.link`), which telemetry reads as the links' speed."""

    name = "hosts"
    command: LabCommand[HostsLab] = LabCommand(
        help="client hosts: fio servers in network namespaces on a private bridge",
        open=HostsLab, up=_command_up, down=_command_down, options=_command_options)

    faults: tuple[FaultOffer, ...] = (
        FaultOffer("hosts", "cut", r"client\.[0-9]{1,4}", "reconnect", "take one client host's link down (client.1 "
                   "is the first fio server): its I/O to storage over the network and fio's own connection wait; "
                   "the other clients go on"),
        FaultOffer("hosts", "slow", r"client\.[0-9]{1,4}", "restore the link of", "shape one client host's link to "
                   "the rate `to:` (both ways), as a link that degrades; the other clients keep theirs; at the "
                   "restore its link is as the plan set it again", takes="link rate"),)

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str:
        offer = find_offer(step, self.faults)
        if offer is None:
            return super().fault(step, case, running, restore=restore)
        index = int(step.target.split(".")[1])
        if step.action == "slow":
            lab = HostsLab()
            rate = case.lab.link_bits_per_s if restore else level_of(step, offer)
            lab.shape_host(index, rate, case.lab.link_delay_s)
            shaped = "unshaped" if rate is None else f"shaped to {format_link_rate(rate)}"
            return f"hosts lab: {step.target}'s link {shaped}" + (" again" if restore else "")
        HostsLab().set_host_link(index, up=restore)
        return f"hosts lab: {step.target}'s link {'up again' if restore else 'down'}"

    def fault_targets(self, loaded: LoadedPlan) -> dict[str, range]:
        hosts = loaded.config.lab.hosts if loaded.config.lab else None
        # a case runs its first `clients` hosts: a fault on another would be stored as one with no blackout
        return {"client": range(1, min(hosts.count, *loaded.config.clients) + 1)} if hosts is not None else {}

    def for_run(self, loaded: LoadedPlan, caps: FioCapabilities) -> RunLab[HostsLabInfo] | None:
        lab_hosts = loaded.config.lab.hosts if loaded.config.lab else None
        if lab_hosts is None:
            return None
        lab = HostsLab()

        def up() -> HostsLabInfo:
            info = lab.up(lab_hosts.count, servers_fio(loaded, caps))
            lab.settle()  # a kept lab left with a host cut or slowed (a run killed during its fault): whole again
            lab.end_jobs()  # and without the jobs of a client killed as its run stopped
            if lab_hosts.link is None and lab_hosts.link_delay is None and lab.link_shaped():  # a kept lab shaped
                lab.set_link(None, None)
            return info

        return timed_run_lab(up, lab.down, lambda info, seconds: LabUp("hosts", seconds=seconds, servers=info.count))

    def enter(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        if case.lab.link_bits_per_s is None:  # not this kind's case (its run lifts a kept lab's shaping: for_run)
            return None
        if HostsLab().set_link(case.lab.link_bits_per_s, case.lab.link_delay_s):
            return LinksShaped("hosts", case.lab.link_bits_per_s, case.lab.link_delay_s)
        return None

    def link_rates(self, case: Case) -> dict[str, int]:
        lab = HostsLab()  # this run's lab: shaped by its plan's lab.hosts.link, or one host by a `slow` fault
        return lab.link_rates() if holds_lab(lab.root) else {}

    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        """After a repetition with faults: every client host's link up and at the lab's shaping, should a restore
        have failed (the next repetition would meet a client cut off, or one left at the fault's rate); None when
        they already were."""
        lab, started = HostsLab(), time.time()
        if not holds_lab(lab.root):  # not this run's (its plan has no lab.hosts): someone's kept lab, left alone
            return None
        return LabHealed("hosts", time.time() - started) if lab.settle() else None


KIND = HostsKind()
