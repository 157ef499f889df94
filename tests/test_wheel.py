"""Issue 34: storbench as an installed tool. The wheel built from this tree, installed into a fresh virtual
environment in a directory outside the clone, runs a plan with real fio there, then `show`, `compare` and `report`,
reading nothing of the repository: its example plans come with it (`storbench example`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PLAN = """
name: installed
targets:
  a: {kind: path, path: ./a, size: 16MiB}
  b: {kind: path, path: ./b, size: 16MiB}
workload: {rw: randread, bs: 4k, iodepth: 4, runtime: 1s, ioengine: psync, direct: false}
repeat: 2
order: interleaved
telemetry: {enabled: false}
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_the_wheel_installed_outside_the_clone_runs_a_plan_show_compare_and_report(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: building the wheel writes build/ next to the sources
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "out", "build", "*.egg-info", "__pycache__", "*_cache", "results.db*", "storbench-data"))
    built = _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist"),
                  str(source)], tmp_path, dict(os.environ))
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("storbench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "storbench/examples/quickstart.yaml" in names and "storbench/py.typed" in names
    assert "storbench/labs-modules.lock" in names  # what `setup --labs` installs the labs' Python packages from
    assert {"storbench/docs/methodology.md", "storbench/docs/security.md"} <= set(names)  # what messages cite
    assert not [n for n in names if n.startswith(("tests/", "scripts/", "docs/"))], names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names  # Apache-2.0 asks for its text

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, dict(os.environ)).returncode == 0
    installed = _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                      "--no-deps", str(wheel)], tmp_path, dict(os.environ))
    assert installed.returncode == 0, installed.stderr
    # storbench's own dependencies from this environment's site-packages, added as a path: the editable install
    # of the clone that lives there too is a .pth file, which a path entry does not run
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp_path, dict(os.environ)).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "STORBENCH_DB"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = _run(["python", "-c", "import storbench; print(storbench.__file__)"], work, env)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # not the clone's sources
    listed = _run(["storbench", "example"], work, env)
    assert listed.returncode == 0 and "quickstart" in listed.stdout and "k8s-node-failure" in listed.stdout
    wrote = _run(["storbench", "example", "quickstart", "-o", "quickstart.yaml"], work, env)
    assert wrote.returncode == 0 and "name: quickstart" in (work / "quickstart.yaml").read_text()
    assert _run(["storbench", "plan", "quickstart.yaml"], work, env).returncode == 0
    cited = _run(["storbench", "docs", "methodology", "bottleneck-verdicts"], work, env)  # as `show` cites it
    assert cited.returncode == 0 and cited.stdout.startswith("## Bottleneck verdicts\n"), cited.stdout + cited.stderr
    # kubectl's plugin is the same program: `kubectl storbench -n NS plan ...` (kubectl runs kubectl-storbench)
    plugin = _run(["kubectl-storbench", "-n", "bench", "plan", "quickstart.yaml"], work, env)
    assert plugin.returncode == 0 and "plan 'quickstart'" in plugin.stdout, plugin.stdout + plugin.stderr

    (work / "plan.yaml").write_text(PLAN)
    ran = _run(["storbench", "run", "plan.yaml", "--db", "r.db"], work, env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = _run(["storbench", "show", "--db", "r.db", "--format", "json"], work, env)
    assert shown.returncode == 0 and {p["target"] for p in json.loads(shown.stdout)} == {"a", "b"}
    compared = _run(["storbench", "compare", "--db", "r.db", "--baseline", "target=a", "--candidate", "target=b",
                     "--format", "json"], work, env)
    assert compared.returncode == 0 and json.loads(compared.stdout), compared.stdout + compared.stderr
    report = _run(["storbench", "report", "--db", "r.db", "-o", "report.html"], work, env)
    assert report.returncode == 0 and "<html" in (work / "report.html").read_text().lower()


def test_example_plans_come_with_storbench_and_none_is_written_over(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import run_cli

    code, out, _ = run_cli(capsys, "example")
    shipped = sorted(p.stem for p in (ROOT / "src" / "storbench" / "examples").glob("*.yaml"))
    assert code == 0 and [line.split()[0] for line in out.splitlines()[:len(shipped)]] == shipped
    assert "3 patterns x 3 block sizes" not in out  # descriptions, not the plans' comments
    code, out, _ = run_cli(capsys, "example", "quickstart")
    assert code == 0 and out == (ROOT / "examples" / "quickstart.yaml").read_text()
    target = tmp_path / "plan.yaml"
    code, _, _ = run_cli(capsys, "example", "nfs-restart", "-o", str(target))
    assert code == 0 and target.read_text().startswith("#")
    target.write_text("mine\n")
    code, _, err = run_cli(capsys, "example", "quickstart", "-o", str(target))
    assert code == 2 and "does not write over a file" in err and target.read_text() == "mine\n"
    code, _, err = run_cli(capsys, "example", "ceph-replika")
    assert code == 2 and "did you mean ceph-replica" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli(capsys, "example", "-o", str(tmp_path / "unnamed.yaml"))
    assert code == 2 and "name it" in err and out == "" and not (tmp_path / "unnamed.yaml").exists()


def test_kubectl_flags_before_the_command_go_to_it_and_a_plan_never_names_the_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import run_cli, write_plan
    from storbench.cli.common import _read_plan
    from storbench.cli.kubectl import kubectl_argv
    from storbench.config import with_namespace

    assert kubectl_argv(["-n", "bench", "run", "p.yaml"]) == ["run", "-n", "bench", "p.yaml"]
    assert kubectl_argv(["--kubeconfig=/k", "--context", "c", "k8s", "cleanup"]) == [
        "k8s", "cleanup", "--kubeconfig=/k", "--context", "c"]
    assert kubectl_argv(["run", "p.yaml", "--namespace", "x"]) == ["run", "p.yaml", "--namespace", "x"]
    assert kubectl_argv(["--help"]) == ["--help"] and kubectl_argv([]) == []
    assert kubectl_argv(["-nbench", "plan", "p.yaml"]) == ["plan", "-nbench", "p.yaml"]  # as kubectl -nbench
    from storbench.cli.kubectl import main as kubectl_main

    for flags in (["-n", "bench"], ["--namespace=bench"], ["-nbench"], ["--context", "c", "-n", "bench"]):
        assert kubectl_main(flags) == 2, flags  # argparse had read the namespace as the command
        assert "no command after the flags" in capsys.readouterr().err
    for asked in (["-n", "bench", "--help"], ["-n", "bench", "--version"]):  # storbench's own, as before
        assert kubectl_main(asked) == 0, asked
        said = capsys.readouterr()
        assert "no command" not in said.err and ("usage: storbench" in said.out or "storbench 0" in said.out), said
    plan = write_plan(tmp_path, "name: k\ntargets:\n  gp3: {kind: pvc, size: 1GiB, namespace: theirs}\n"
                                "workload: {rw: randread, runtime: 1s}\n")
    loaded = with_namespace(_read_plan(str(plan)), "bench")
    assert loaded.config.targets["gp3"].namespace == "bench"  # type: ignore[union-attr]
    assert with_namespace(_read_plan(str(plan)), None).config.targets["gp3"].namespace == "theirs"  # type: ignore[union-attr]
    code, _, err = run_cli(capsys, "plan", str(plan), "-n", "Not_A_Label")
    assert code == 2 and "namespace 'Not_A_Label' is not a DNS label" in err and len(err.strip().splitlines()) == 1
    # the operator's cluster on the command line: one it cannot load is one line, before any I/O
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"),
                           "--kubeconfig", str(tmp_path / "missing.kubeconfig"))
    assert code == 2 and f"cannot load kubeconfig {tmp_path / 'missing.kubeconfig'}" in err, err
    (tmp_path / "one.kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
        "current-context: a\n")
    code, _, err = run_cli(capsys, "k8s", "cleanup", "--kubeconfig", str(tmp_path / "one.kubeconfig"),
                           "--context", "b")
    assert code == 2 and "context b" in err and len(err.strip().splitlines()) == 1, err
