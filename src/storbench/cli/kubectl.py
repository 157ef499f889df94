"""`kubectl storbench ...`: kubectl runs the program `kubectl-storbench` on PATH with the words after `storbench`.
It is `storbench` itself, with kubectl's ways: `--kubeconfig`, `--context` and `-n/--namespace` may also come
before the command (`kubectl storbench -n bench run plan.yaml`), as kubectl users type them; they go to the
command (`plan`, `run`; `k8s cleanup` takes `--kubeconfig` and `--context`). Same output, same exit codes."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from storbench.cli import entry as storbench_entry
from storbench.cli import main as storbench_main

KUBECTL_FLAGS = ("--kubeconfig", "--context", "-n", "--namespace")


def kubectl_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with kubectl's flags that come before the command moved after it (where storbench's commands take
    them); everything else as it was."""
    before: list[str] = []
    words = list(argv)
    while words and words[0].startswith("-"):
        flag = words[0].split("=", 1)[0]
        attached = words[0].startswith("-n") and not words[0].startswith("--") and len(words[0]) > 2  # -nbench
        if flag not in KUBECTL_FLAGS and not attached:
            break  # --help, --version: storbench's own
        if "=" in words[0] or attached or len(words) < 2:
            before.append(words.pop(0))
        else:
            before += [words.pop(0), words.pop(0)]
    if not words:
        return [*before]
    command = [words.pop(0)]
    if command[0] == "k8s" and words and not words[0].startswith("-"):
        command.append(words.pop(0))  # k8s cleanup
    return [*command, *before, *words]


def main(argv: Sequence[str] | None = None) -> int:
    words = kubectl_argv(sys.argv[1:] if argv is None else argv)
    if words and not {"-h", "--help", "--version"} & set(words) and all(
            word.startswith("-") or word in _values(words) for word in words) and any(
            word.split("=", 1)[0] in KUBECTL_FLAGS or (word.startswith("-n") and len(word) > 2) for word in words):
        # kubectl's flags and no command: argparse had taken the namespace for one ("invalid choice: 'bench'")
        print("kubectl-storbench: error: no command after the flags (e.g. kubectl storbench -n bench run plan.yaml) "
              "(hint: kubectl storbench --help)", file=sys.stderr)
        return 2
    return storbench_main(words)


def _values(words: Sequence[str]) -> set[str]:
    """The words that are the values of kubectl's flags given apart (``-n bench``)."""
    return {words[i + 1] for i, word in enumerate(words[:-1]) if word in KUBECTL_FLAGS}


def entry() -> None:
    """The `kubectl-storbench` process: as `storbench`'s (`cli.entry`)."""
    storbench_entry(main)


if __name__ == "__main__":
    entry()
