#!/usr/bin/env python3
"""Writes docs/examples.md from the outputs of ./scripts/example.sh NAME (out/NAME/), copying a few figures
to docs/images/examples/. Run after the examples: .venv/bin/python scripts/examples_doc.py"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIGURES = {"ceph-block-size": ["iops-vs-bs-small", "bw_bytes_per_s-vs-bs-large"],
           "throttled-volume": ["iops-latency-iodepth"],
           "ceph-rbd-clients": ["iops-vs-clients", "iops-latency-clients", "process-cpu"],
           "ceph-search": ["iops-latency-iodepth"], "ceph-steady-state": [], "ceph-osd-failure": [],
           "ceph-heartbeat-grace": [], "nfs-restart": [], "k8s-node-failure": [], "k8s-volume-ops": [],
           "metadata-cephfs-nfs": ["iops-vs-numjobs", "compare-iops", "compare-lat_p99_ns"],
           "nfs-clients": ["iops-vs-clients", "iops-latency-clients", "process-cpu"],
           "rgw-objects": ["bw_bytes_per_s-vs-bs-small-medium", "bw_bytes_per_s-vs-bs-large", "process-cpu"],
           "rbd-cephfs-nfs": ["compare-iops", "compare-lat_p99_ns", "latency-layers"]}
DEFAULT_FIGURES = ["compare-iops", "compare-lat_p99_ns"]
# the examples whose cost per I/O the page shows (issue 35's seed experiments), with its figure
COST_SHOWN = ("ceph-replica", "ceph-osds-per-device", "ceph-osd-cpus", "ceph-db-device")
FIGURES.update({name: [*DEFAULT_FIGURES, "cpu-cost"] for name in COST_SHOWN if name not in FIGURES})


def main() -> int:
    images = ROOT / "docs" / "images" / "examples"
    images.mkdir(parents=True, exist_ok=True)
    parts = ["# Example results", "",
             "Real results of `./scripts/example.sh NAME` on this project's development VM: **2 vCPUs, one virtio "
             "disk, everything (OSDs, NFS server, fio) on the same machine**. They show what storbench reports, not "
             "what Ceph or NFS can do: on two cores the storage daemons are CPU-bound. Re-run an example to get "
             "your machine's numbers.", ""]
    sections = _existing_sections(ROOT / "docs" / "examples.md")  # examples not re-run keep their text
    for out in sorted((ROOT / "out").glob("*/results.db")):
        name = out.parent.name
        plan_path = ROOT / "examples" / f"{name}.yaml"
        if not plan_path.exists():
            continue
        sections[name] = _section(name, plan_path, out, images)
    for name in sorted(sections):
        parts += [sections[name].rstrip("\n"), ""]
    (ROOT / "docs" / "examples.md").write_text("\n".join(parts))
    print(f"wrote {ROOT / 'docs' / 'examples.md'}")
    return 0


def _existing_sections(doc: Path) -> dict[str, str]:
    """'## name' sections of the current page, by name."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (doc.read_text().splitlines() if doc.exists() else []):
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in sections.items()}


def _unwrapped(lines: list[str]) -> list[str]:
    """The log's lines with the terminal's wrapping undone: a line that starts in lower case, or with a
    character no line of storbench's begins with, continues the previous one."""
    out: list[str] = []
    for line in lines:
        if out and line and (line[0].islower() or line[0] in ")],;") and not line.startswith(
                ("lab design:", "search ", "precondition ", "after ", "run ", "ceph lab", "results ", "target ")):
            out[-1] += " " + line
        else:
            out.append(line)
    return out


def _section(name: str, plan_path: Path, out: Path, images: Path) -> str:
    parts: list[str] = []
    plan = yaml.safe_load(plan_path.read_text())
    conn = sqlite3.connect(out)
    host, kernel, fio, version, cpus = conn.execute(
        "SELECT host, kernel, fio_version, storbench_version, cpu_count FROM runs ORDER BY id DESC").fetchone()
    reps = conn.execute("SELECT COUNT(*), SUM(status = 'ok') FROM repetitions").fetchone()
    conn.close()
    parts += [f"## {name}", "", plan.get("description", ""), "",
              f"`./scripts/example.sh {name}` — {reps[1]} of {reps[0]} repetitions ok; host `{host}` "
              f"({cpus} CPUs), kernel {kernel}, {fio}, storbench {version}.", ""]
    run_log = out.parent / "run.log"
    if run_log.exists():  # how the run was designed and how it stopped, as it said while running
        lines = _unwrapped(run_log.read_text(errors="replace").splitlines())
        designs = [line.strip() for line in lines if line.startswith(("lab design:", "search ", "precondition "))]
        looks = [line.strip() for line in lines if line.startswith("after ") and " rounds: " in line]
        last = looks[-1].split(":", 1)[0] if looks else ""
        final = [line for line in looks if line.startswith(last + ":")] if last else []
        if designs or final:
            parts += ["```text", *designs, *final, "```", ""]
    compare = out.parent / "compare.md"
    shown = out.parent / "show.txt"
    if compare.exists():
        parts += [compare.read_text().strip(), ""]
    elif shown.exists():  # no comparison: the results table, verdicts included
        parts += ["```text", *(line.rstrip() for line in shown.read_text().rstrip().splitlines()), "```", ""]
    cost = out.parent / "cost.txt"
    if cost.exists() and name in COST_SHOWN:  # what each I/O cost in CPU, by component
        parts += ["`storbench show --cost`:", "", "```text",
                  *(line.rstrip() for line in cost.read_text().rstrip().splitlines()), "```", ""]
    figures = list(FIGURES.get(name, DEFAULT_FIGURES))
    # a run that stopped when decided: its answer converging, look by look, per compared point
    figures += sorted(p.stem for p in (out.parent / "images").glob("convergence-*.png"))
    figures += sorted(p.stem for p in (out.parent / "images").glob("capped-*.png"))
    figures += sorted(p.stem for p in (out.parent / "images").glob("steady-*.png"))  # rounds until steady
    figures += sorted(p.stem for p in (out.parent / "images").glob("failover-*.png"))  # I/O through a fault
    for figure in figures:
        source = out.parent / "images" / f"{figure}.png"
        if source.exists():
            target = images / f"{name}-{figure}.png"
            shutil.copyfile(source, target)
            parts += [f"![{name}: {figure}](images/examples/{target.name})", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
