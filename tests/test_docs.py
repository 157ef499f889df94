"""The docs a user reads stay true: every command documented, the plan reference current."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from storbench.cli import build_parser
from storbench.reference import plan_reference_markdown

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return sorted(action.choices)
    raise AssertionError("no subcommands")


def test_every_command_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = _commands()
    assert {"plan", "run", "show", "export", "import"} <= set(commands)
    for command in commands:
        assert re.search(rf"storbench {command}\b", readme), f"`storbench {command}` is not documented in README.md"


def test_plan_reference_is_generated_from_the_schema() -> None:
    assert (ROOT / "docs" / "plan-reference.md").read_text() == plan_reference_markdown() + "\n", (
        "regenerate: .venv/bin/python -c 'from storbench.reference import plan_reference_markdown as p; print(p())'"
        " > docs/plan-reference.md"
    )


def test_the_plan_reference_names_every_fault_a_lab_offers() -> None:
    """The faults section is prose (the reference is pure, the labs are shell): every action each lab kind offers,
    on its targets, must be in it. It had left out the Kubernetes lab's `fail` and `taint` on `node.N`."""
    from storbench.lab.registry import KINDS

    faults = plan_reference_markdown().split("## `faults`")[1].split("\n## ")[0]
    offers = [offer for kind in KINDS.values() for offer in kind.faults]
    assert len(offers) >= 15
    for offer in offers:
        target = offer.targets.split("\\")[0]  # osd\.[0-9]+ -> osd, server -> server
        assert f"`{offer.action}`" in faults and f"`{target}" in faults, \
            f"the plan reference's faults do not name {offer.lab}'s {offer.action} on {offer.targets}"


def test_each_labs_section_of_the_plan_reference_shows_its_own_example() -> None:
    """A lab's section shows that lab's plan: the volume lab's had shown a Ceph one."""
    text = plan_reference_markdown()
    volume = text.split("### `lab.volume`")[1].split("\n## ")[0]
    ceph = text.split("### `lab.ceph`")[1].split("\n### ")[0]
    assert "volume:" in volume.split("```yaml")[1] and "ceph:" not in volume
    assert "ceph: {osds: 3, pool_size: [2, 3]}" in ceph


def test_readme_has_exactly_two_setup_commands_and_ci_uses_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "./scripts/quickstart.sh" in readme and "./scripts/test.sh" in readme
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_examples_are_valid_plans() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand

    examples = sorted((ROOT / "examples").glob("*.yaml"))
    assert examples
    for path in examples:
        assert expand(load_plan_text(path.read_text(), str(path)))


def test_every_module_has_its_line_in_the_architecture_page() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    package = ROOT / "src" / "storbench"
    modules = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                     if p.name not in ("__init__.py", "__main__.py"))
    assert len(modules) > 50
    missing = [m for m in modules if f"`{m}`" not in page]
    assert not missing, f"docs/architecture.md does not describe {missing}"
    named = {m for m in re.findall(r"`([a-z_/]+\.py)`", page) if not m.startswith("tests/")}
    gone = sorted(named - set(modules) - {"cli/__init__.py", "config/__init__.py"})
    assert not gone, f"docs/architecture.md describes modules that do not exist: {gone}"


def test_the_methodologys_verdict_for_imports_is_the_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The methodology said imports get the verdict "unknown" while the tool said "under-driven" (from fio's own
    CPU alone, nothing of the host measured): the row of the verdict table that names imported results is the
    verdict `show` gives an imported point."""
    import json

    from helpers import run_cli

    methodology = (ROOT / "docs" / "methodology.md").read_text()
    rows = [line for line in methodology.splitlines() if line.startswith("| **") and "imported" in line]
    assert len(rows) == 1, rows
    documented = re.match(r"\| \*\*([^*]+)\*\*", rows[0])
    assert documented is not None
    db = tmp_path / "r.db"
    code, _, err = run_cli(capsys, "import", str(ROOT / "tests" / "fixtures" / "randread-plain.json"), "--db", str(db))
    assert code == 0, err
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--format", "json")
    assert code == 0, err
    verdicts = {point["bottleneck"] for point in json.loads(out)}
    assert verdicts == {documented.group(1)}
