#!/usr/bin/env python3
"""The saturation search against the whole load grid, on the same target, side by side.

With a plan whose Ceph lab is `lab: {ceph: ...}` (the default, examples/ceph-search.yaml), one cluster is brought
up (`storbench lab ceph up`) and three runs share it, in the order search, grid, search: the plan with `search:`
as it is, then the same plan with the search's whole grid as an ordinary sweep (the search line dropped, the axis
listing every grid value), then the search again (so the two searches show how much the answer moves between runs
on one instance, and time drift is seen rather than hidden). Other plans run as they are, search then grid. For
each run it prints wall time, measuring time (first repetition's start to the last one's end), points measured,
and the answer: the highest-IOPS point whose latency interval meets the objective, read from each run's stored
points with storbench's own rule. Goals (printed, not asserted): the search's best IOPS within 10 % of the
grid's, in at most 35 % of the grid's time. Needs root and the labs (scripts/setup.sh --labs); about 8 minutes.

    .venv/bin/python bench/search_vs_grid.py [--plan examples/ceph-search.yaml] [--out out/bench-search-vs-grid]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from runs import timed_run  # bench/runs.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "examples" / "ceph-search.yaml"


def grid_plan(text: str) -> tuple[str, str, tuple[int, ...]]:
    """The plan as an ordinary sweep over the search's whole grid: (plan text, axis, grid)."""
    import yaml

    from storbench.config import load_plan_text
    from storbench.stats.search import search_grid

    config = load_plan_text(text, "plan.yaml").config
    assert config.search is not None, "the plan has no search"
    axis, grid = config.search.axis, search_grid(*config.search.range)
    data = yaml.safe_load(text)
    del data["search"]
    data["name"] = f"{data['name']}-grid"
    if axis == "clients":
        data["clients"] = list(grid)
    else:
        data["workload"][axis] = list(grid)
    return yaml.safe_dump(data, sort_keys=False), axis, grid


def on_one_cluster(text: str) -> tuple[str, list[str]] | None:
    """The plan without its Ceph lab, its rbd targets pointed at a cluster brought up beforehand, and the
    arguments of `storbench lab ceph up` for that cluster; None when the plan has no Ceph lab to share."""
    import yaml

    data = yaml.safe_load(text)
    ceph = (data.get("lab") or {}).get("ceph")
    if ceph is None or set(data["lab"]) != {"ceph"}:
        return None
    pools = {t.get("pool", "rbd") for t in data["targets"].values() if t.get("kind") == "rbd"}
    args = ["--osds", str(ceph.get("osds", 3)), "--osd-size", str(ceph.get("osd_size", "2GiB")),
            *(a for pool in sorted(pools) for a in ("--pool", f"{pool}:{ceph.get('pool_size', 2)}"))]
    del data["lab"]
    for target in data["targets"].values():
        if target.get("kind") == "rbd":
            target["conf"] = "@CONF@"
    return yaml.safe_dump(data, sort_keys=False), args


def storbench(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "storbench", *argv], capture_output=True, text=True, check=False)


def run_arm(name: str, plan: Path, out: Path, slo: str, axis: str, grid: tuple[int, ...]) -> dict[str, object]:
    from storbench.model.objective import parse_slo
    from storbench.stats.observations import observations
    from storbench.stats.search import search_answer, search_point
    from storbench.store import open_store

    db, wall_s, done = timed_run(name, plan, out)
    if done.returncode != 0:
        return {"name": name, "wall_s": wall_s}
    store = open_store(db)
    repetitions = store.repetitions([r.run_id for r in store.runs()])
    store.close()
    objective = parse_slo(slo)
    by_case: dict[str, list[object]] = {}
    loads: dict[str, int] = {}
    groups: set[tuple[object, ...]] = set()
    for o in observations(repetitions):
        by_case.setdefault(o.case.case_id, []).append(o)
        loads[o.case.case_id] = o.case.clients if axis == "clients" else getattr(o.case.workload, axis)
        w = o.case.workload
        groups.add((o.case.target.name, w.rw, w.bs_bytes, *(getattr(w, a) for a in ("iodepth", "numjobs")
                                                            if a != axis), o.case.lab.pairs()))
    if len(groups) > 1:  # points of several searches would overwrite each other's loads
        print(f"{name}: the plan holds {len(groups)} search groups; this benchmark compares plans of one",
              file=sys.stderr)
        return {"name": name, "wall_s": wall_s}
    points = {loads[cid]: p for cid, found in by_case.items()
              if (p := search_point(loads[cid], found, objective)) is not None}  # type: ignore[arg-type]
    answer = search_answer(grid, points, objective, axis=axis)
    measuring_s = max(r.finished_at_s for r in repetitions) - min(r.started_at_s for r in repetitions)
    said = [line for line in done.stdout.splitlines() if line.startswith("search ")]
    return {"name": name, "wall_s": wall_s, "measuring_s": measuring_s, "answer": answer, "said": said,
            "points": points}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", default=str(PLAN))
    parser.add_argument("--out", default=str(ROOT / "out" / "bench-search-vs-grid"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plan = Path(args.plan)
    text = plan.read_text()
    from storbench.config import load_plan_text

    search = load_plan_text(text, str(plan)).config.search
    assert search is not None
    shared = on_one_cluster(text)
    conf = ""
    if shared is not None:
        text, lab_args = shared
        up = storbench("lab", "ceph", "up", *lab_args)
        (out / "lab.log").write_text(up.stdout + up.stderr)
        found = re.search(r"ceph lab: up; conf (\S+)", up.stdout)
        if up.returncode != 0 or found is None:
            print(f"the Ceph lab did not come up; see {out / 'lab.log'}", file=sys.stderr)
            return 1
        conf = found.group(1)
        text = text.replace("@CONF@", conf)
    full_text, axis, grid = grid_plan(text)
    searched = out / f"{plan.stem}-search.yaml"
    searched.write_text(text)
    full = out / f"{plan.stem}-grid.yaml"
    full.write_text(full_text)
    try:
        arms = [run_arm("search", searched, out, search.slo, axis, grid),
                run_arm("grid", full, out, search.slo, axis, grid)]
        if shared is not None:
            arms.append(run_arm("search-2", searched, out, search.slo, axis, grid))
    finally:
        if shared is not None:
            storbench("lab", "ceph", "down")
    where = "one cluster, in this order" if shared is not None else "each run with its own lab"
    print(f"{plan.name}: best IOPS with {search.slo} over {axis} {grid[0]}..{grid[-1]} ({len(grid)} grid values); "
          f"{where}")
    print(f"{'arm':<8} {'wall':>7} {'measuring':>10} {'points':>7} {'best ' + axis:>13} {'IOPS':>10} "
          f"{'± 95 %':>8} {'latency':>9}  knee / why it stopped")
    for arm in arms:
        answer = arm.get("answer")
        if answer is None:
            print(f"{arm['name']:<8} {arm['wall_s']:>6.0f}s  (failed)")  # type: ignore[str-format]
            continue
        best = answer.best  # type: ignore[attr-defined]
        shown = (f"{best.load:>13} {best.iops.mean:>10,.0f} {best.iops.half_width or 0:>8,.0f} "
                 f"{(best.latency.mean if best.latency else 0) / 1e6:>7.2f}ms" if best is not None
                 else f"{'-':>13} {'-':>10} {'-':>8} {'-':>9}")
        knee = answer.knee if answer.knee is not None else answer.knee_kind.value  # type: ignore[attr-defined]
        print(f"{arm['name']:<8} {arm['wall_s']:>6.0f}s {arm['measuring_s']:>9.0f}s "  # type: ignore[str-format]
              f"{answer.measured:>7} {shown}  knee {knee}; {answer.reason}")  # type: ignore[attr-defined]
    first, full_grid = arms[0], arms[1]
    if "answer" in first and "answer" in full_grid:
        a, b = first["answer"].best, full_grid["answer"].best  # type: ignore[attr-defined]
        if a is not None and b is not None:
            ratio = a.iops.mean / b.iops.mean
            print(f"goal: best IOPS within 10 % of the grid's: {'yes' if abs(ratio - 1) <= 0.10 else 'no'} "
                  f"({100 * (ratio - 1):+.1f} %, {axis} {a.load} vs {b.load})")
            points = full_grid["points"]
            assert isinstance(points, dict)
            same = points.get(a.load)
            if same is not None:  # the runs measured that load minutes apart
                print(f"the grid's own IOPS at the search's {axis} {a.load}: {same.iops.mean:,.0f}: the search chose "
                      f"{'the same load' if a.load == b.load else 'another load'}; the search's "
                      f"{a.iops.mean:,.0f} there differs by {100 * (a.iops.mean / same.iops.mean - 1):+.1f} % "
                      f"between the two runs ({where})")
        else:
            print("goal: best IOPS within 10 % of the grid's: "
                  + ("yes (neither finds a point within the objective)" if a is None and b is None else "no"))
        share = float(first["wall_s"]) / float(full_grid["wall_s"])  # type: ignore[arg-type]
        measuring = float(first["measuring_s"]) / float(full_grid["measuring_s"])  # type: ignore[arg-type]
        print(f"goal: at most 35 % of the grid's time: {'yes' if share <= 0.35 else 'no'} ({100 * share:.0f} % of "
              f"the wall time, {100 * measuring:.0f} % of the measuring time)")
        grid_points = full_grid["points"]
        assert isinstance(grid_points, dict)
        print("the grid, point by point: " + ", ".join(
            f"{load}: {p.iops.mean:,.0f} IOPS p-lat {(p.latency.mean if p.latency else 0) / 1e6:.2f}ms"
            for load, p in sorted(grid_points.items())))
    for arm in arms:
        if arm["name"] != "grid":
            for line in arm.get("said") or []:  # type: ignore[union-attr]
                print(f"  {arm['name']}: {line}")
    print(f"logs and databases: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
