"""`storbench lab ceph|nfs|volume|hosts|k8s up|down|status` (real one-machine test beds), `storbench k8s cleanup`
and `storbench k8s rbac`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from storbench.cli.common import _console, held_saying, interrupted_once
from storbench.lab.base import LabKind, lab_dir_help


def lab_handler(kind: LabKind) -> Callable[[argparse.Namespace], int]:
    """`storbench lab KIND up|down|status`, for any kind: the kind acts, this prints what it says."""

    def handler(args: argparse.Namespace) -> int:
        lab = kind.command.open(Path(args.dir) if args.dir else None)
        out = _console()

        def say(line: str) -> None:
            out.print(line, markup=False)

        if args.action == "status":
            say(lab.status())
        elif args.action == "down":
            # a lab half torn down is worse than one up or down: Ctrl-C waits for the end
            with held_saying(f"tearing the {kind.name} lab down"):
                kind.command.down(lab, say)
        else:  # a SIGTERM or a closed terminal as Ctrl-C: the kind's up tears down what it made (the default
            # action had ended Python at once, leaving namespaces or daemons that status then called down)
            with interrupted_once(f"undoing the {kind.name} lab's bring-up"):
                kind.command.up(lab, args, say)
        return 0

    return handler


def cmd_k8s_cleanup(args: argparse.Namespace) -> int:
    from storbench.execute.k8s_access import cleanup

    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        from storbench.lab.k8s import K8sLab

        info = K8sLab().info()
        kubeconfig = info.kubeconfig if info is not None and not os.environ.get("KUBECONFIG") else None
    deleted = cleanup(kubeconfig, args.context, args.namespace)
    out = _console()
    for line in deleted:
        out.print(f"deleted {line}", markup=False)
    out.print(f"k8s cleanup: {len(deleted)} objects labelled app.kubernetes.io/managed-by=storbench deleted",
              markup=False)
    return 0


def cmd_k8s_rbac(args: argparse.Namespace) -> int:
    import yaml

    from storbench.config.targets import DNS_LABEL_RE
    from storbench.errors import UserError
    from storbench.execute.k8s_rbac import rbac_manifests

    for what, value in (("namespace", args.namespace), ("service account", args.service_account)):
        if not DNS_LABEL_RE.fullmatch(value):
            raise UserError(f"{what} {value!r} is not a DNS label", hint="lowercase letters, digits and '-'")
    header = (f"# storbench's least identity for pvc targets in namespace {args.namespace} (storbench k8s rbac):\n"
              f"# kubectl create namespace {args.namespace}; kubectl apply -f this file; then a kubeconfig with a\n"
              f"# token of it: kubectl -n {args.namespace} create token {args.service_account}\n")
    _console().print(header + yaml.safe_dump_all(rbac_manifests(args.namespace, args.service_account),
                                                  sort_keys=False), markup=False, soft_wrap=True, end="")
    return 0


def _name_the_labs(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                   lab_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The top-level help's line for `lab`, from the labs the parser has: every lab, none forgotten."""
    labs = "|".join(lab_sub.choices)
    for action in sub._choices_actions:
        if action.dest == "lab":
            action.help = f"real one-machine test beds: `storbench lab {labs} up|down|status`"


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], *, labs: bool = True) -> None:
    """`lab KIND ...` and `k8s ...`. Without ``labs`` (a command line that is not `lab`), `lab` is only named with
    its kinds: each kind's options import the kind, every lab module (~0.4 s: `storbench --help` 0.6 -> 0.15 s)."""
    if labs:
        _add_labs(sub)
    else:
        from storbench.lab import COMMAND_ORDER

        sub.add_parser("lab", help=f"real one-machine test beds: `storbench lab {'|'.join(COMMAND_ORDER)} "
                       "up|down|status`")
    _add_k8s(sub)


def _add_labs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from storbench.lab.registry import COMMAND_ORDER, KINDS

    p = sub.add_parser("lab", help="real one-machine test beds")  # the labs named below, once all are added
    lab_sub = p.add_subparsers(dest="lab_kind", metavar="LAB", required=True)
    for name in COMMAND_ORDER:
        kind = KINDS[name]
        command = lab_sub.add_parser(name, help=kind.command.help)
        command.add_argument("action", choices=("up", "down", "status"), metavar="{up,down,status}")
        sizing = command.add_argument_group("what up brings up (down and status take the lab as it is)")
        for option in kind.command.options():
            sizing.add_argument(*option.flags, **option.settings)
        command.add_argument("--dir", default=None, help=lab_dir_help(name))
        command.set_defaults(func=lab_handler(kind))
    _name_the_labs(sub, lab_sub)


def _add_k8s(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("k8s", help="Kubernetes housekeeping")
    k8s_sub = p.add_subparsers(dest="k8s_command", required=True, metavar="{cleanup,rbac}")
    clean = k8s_sub.add_parser("cleanup", help="delete every pod, config map, volume snapshot, claim and namespace "
                               "storbench made")
    clean.add_argument("-n", "--namespace", default=None, metavar="NS",
                       help="only in this namespace (default: every namespace, which needs the right to list them)")
    clean.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, the k8s lab's, ~/.kube/config")
    clean.add_argument("--context", default=None, metavar="NAME", help="its context (default: its current one)")
    clean.set_defaults(func=cmd_k8s_cleanup)
    rbac = k8s_sub.add_parser("rbac", help="print the ServiceAccount, Role and bindings storbench needs (and no more) "
                              "for pvc targets in one namespace")
    rbac.add_argument("-n", "--namespace", default="storbench", metavar="NS", help="the namespace (default storbench)")
    rbac.add_argument("--service-account", default="storbench", metavar="NAME",
                      help="the service account to make (default storbench)")
    rbac.set_defaults(func=cmd_k8s_rbac)
