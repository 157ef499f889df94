"""`storbench docs`: the documents storbench's messages cite, printed from the installed package (`storbench.manual`
finds a section by its heading), and every `storbench docs NAME SECTION` a message cites names a section there."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.cli.docs import document_text
from storbench.manual import DOCUMENTS, find_section, heading_slug

ROOT = Path(__file__).resolve().parents[1]
DOC = """# Title

intro

## One (`first.py`)

one's text

```text
## not a heading: inside a code block
```

### One's part

part's text

## Two

two's text
"""


def test_a_section_runs_from_its_heading_to_the_next_of_its_level_or_above() -> None:
    found, _ = find_section(DOC, "one")  # the start of its anchor, in any case
    assert found == "## One (`first.py`)\n\none's text\n\n```text\n## not a heading: inside a code block\n```\n\n" \
                    "### One's part\n\npart's text\n"
    assert find_section(DOC, "One's part")[0] == "### One's part\n\npart's text\n"
    assert find_section(DOC, "## Two")[0] == "## Two\n\ntwo's text\n"  # the last one: to the end
    assert find_section(DOC, "one-firstpy")[0] == find_section(DOC, "ONE")[0]  # GitHub's anchor
    assert find_section(DOC, "not a heading") == (None, [])
    assert find_section(DOC, "tw0")[1] == ["two"]  # the headings close to it, for the hint
    fenced = "# A\n~~~\n## Fake\n~~~\n  ````md\n## Also fake\n```\n## Still inside\n````\n## Real\n"
    assert find_section(fenced, "fake")[0] is None  # tildes, an indented fence, a longer one closed by its length
    assert find_section(fenced, "still inside")[0] is None
    assert find_section(fenced, "real")[0] == "## Real\n"


def test_heading_slugs_are_githubs_anchors() -> None:
    assert heading_slug("`workload.fio`: other fio options") == "workloadfio-other-fio-options"
    assert heading_slug("CPU cost per I/O") == "cpu-cost-per-io"
    assert heading_slug("Nothing acknowledged lost (`durability.py`)") == "nothing-acknowledged-lost-durabilitypy"


def test_docs_lists_prints_and_refuses_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "docs")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[:len(DOCUMENTS)]] == [
        d.name for d in DOCUMENTS]
    code, out, _ = run_cli(capsys, "docs", "methodology")
    assert code == 0 and out == (ROOT / "docs" / "methodology.md").read_text()  # the package's copy is the doc
    code, out, _ = run_cli(capsys, "docs", "plan-reference")
    assert code == 0 and out.rstrip("\n") == (ROOT / "docs" / "plan-reference.md").read_text().rstrip("\n")
    code, out, _ = run_cli(capsys, "docs", "security", "threat model")
    assert code == 0 and out.startswith("## Threat model\n") and "\n## " not in out
    assert run_cli(capsys, "docs", "security", "threat", "model")[1] == out  # the words unquoted
    code, _, err = run_cli(capsys, "docs", "methodology", "botleneck")
    assert code == 2 and err.strip() == ("storbench: error: methodology has no section 'botleneck' (hint: did you "
                                         "mean bottleneck-verdicts?)")
    code, _, err = run_cli(capsys, "docs", "method")
    assert code == 2 and "no document named 'method'" in err and "did you mean methodology?" in err


# `storbench docs NAME SECTION` as messages, reports and the plan reference write it: SECTION a word with hyphens,
# or quoted words
CITED_RE = re.compile(r"storbench docs (" + "|".join(d.name for d in DOCUMENTS)
                      + r")(?: ([\w.-]+|\\?\"[^\"\\]+\\?\"|'[^']+'))?")


def test_every_section_storbench_cites_is_there() -> None:
    texts = [*(ROOT / "src" / "storbench").rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    cited = {(m.group(1), m.group(2)) for path in texts for m in CITED_RE.finditer(path.read_text())}
    assert len(cited) >= 10  # the messages, reports and plan reference that cite one
    missing = []
    for name, section in sorted(cited, key=str):
        query = shlex.split(section.replace('\\"', '"'))[0] if section else None
        if query is not None and find_section(document_text(name), query)[0] is None:
            missing.append(f"{name} {section}")
    assert missing == []
