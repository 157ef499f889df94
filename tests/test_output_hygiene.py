"""Text from a plan, an imported fio output or the database is shown as written, wherever it is shown: no
control character reaches a terminal, no rich markup is read from it, no HTML renders in a figure, no ``$`` pair
becomes mathtext in an image, no CSV cell becomes a spreadsheet formula (issue 28, finding 9)."""

from __future__ import annotations

import copy
import csv
import html
import io
import itertools
import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.config import load_plan_text
from storbench.errors import UserError
from storbench.safe_text import csv_cell, mathtext_text, plotly_text, safe_text

FIXTURES = Path(__file__).parent / "fixtures"
TITLE = "\x1b]0;pwned\x07"  # OSC: retitles the terminal
CLEAR = "\x1b[2J"  # CSI: clears the screen
C1_CSI = "\x9b31m"  # the 8-bit CSI: red on terminals that take 8-bit controls
FORMULA = '=HYPERLINK("http://x","y")'
LINK = '<a href="http://x">link</a>'
MARKUP = "[link=http://x]click[/link]"
# what must never reach an output: C0 controls but tab and newline, DEL, C1
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def crafted_fio_json() -> str:
    """A real fio output whose version, engine and job options carry escape sequences, rich markup, HTML, a
    mathtext pair and a spreadsheet formula: four jobs (two option sets at iodepth 1 and 4), so the options tell
    points, curves and figure series apart and appear in their labels."""
    data = json.loads((FIXTURES / "randread-plain.json").read_text())
    data["fio version"] = f"fio-3.33{TITLE}{CLEAR}[/oops]"
    data["global options"]["ioengine"] = FORMULA
    template = data["jobs"][0]
    hostile = ({"[/oops]": MARKUP + CLEAR}, {LINK: f"<b>$\\oops${C1_CSI}"})
    jobs = []
    for n, (options, iodepth) in enumerate(itertools.product(hostile, ("1", "4"))):
        job = copy.deepcopy(template)
        job["jobname"] = f"job{n}"
        job["job options"] = {**template["job options"], "name": f"job{n}", "iodepth": iodepth, **options}
        jobs.append(job)
    data["jobs"] = jobs
    return json.dumps(data)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of the crafted output (imported twice), filed under a target whose name starts a formula and
    holds a path."""
    from storbench.cli import main

    work = tmp_path_factory.mktemp("hygiene")
    crafted = work / "crafted.json"
    crafted.write_text(crafted_fio_json())
    for again in ([], ["--again"]):
        assert main(["import", str(crafted), "--db", str(work / "h.db"), "--target", "t", *again]) == 0
    with sqlite3.connect(work / "h.db") as conn:  # `import --target` takes names only: a merged database's hostile one
        for case_id, text in conn.execute("SELECT id, target_json FROM cases").fetchall():
            conn.execute("UPDATE cases SET target_json = ? WHERE id = ?",
                         (json.dumps({**json.loads(text), "name": "@t/../x"}), case_id))
    return work / "h.db"


@pytest.fixture(autouse=True)
def wide_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # long labels on one line, so the assertions can find them whole


# ---- the helpers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "line", "block"), [
    ("a\x1b[2Jb", "a\\x1b[2Jb", "a\\x1b[2Jb"),
    ("bel\x07 del\x7f csi\x9b nel\x85", "bel\\x07 del\\x7f csi\\x9b nel\\x85", "bel\\x07 del\\x7f csi\\x9b nel\\x85"),
    ("a\tb\nc\rd", "a\\tb\\nc\\rd", "a\tb\nc\\rd"),
    ("left\u202eright \u2028", "left\\u202eright \\u2028", "left\\u202eright \\u2028"),
    ("µs ▲ 4k [/x] <a>", "µs ▲ 4k [/x] <a>", "µs ▲ 4k [/x] <a>"),
])
def test_safe_text_shows_control_characters_escaped(text: str, line: str, block: str) -> None:
    assert safe_text(text) == line
    assert safe_text(text, multiline=True) == block


def test_plotly_and_mathtext_labels_escape_what_their_renderer_reads() -> None:
    assert plotly_text("<a href='x'>a & b</a>\x1b\nz") == "&lt;a href='x'&gt;a &amp; b&lt;/a&gt;\\x1b\nz"
    assert mathtext_text("$\\oops$ costs $5\x1b") == "\\$\\oops\\$ costs \\$5\\x1b"


@pytest.mark.parametrize(("value", "cell"), [
    ("=1+1", "'=1+1"), ("+1+cmd", "'+1+cmd"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"),
    ("\r=1", "'\\r=1"), ("a=1\x1b", "a=1\\x1b"), ("two\nlines", "two\nlines"),
    ("-5", "-5"), ("+1.5e3", "+1.5e3"), (-5, -5), (-0.25, -0.25), (True, True),
])
def test_csv_cells_never_start_a_formula_and_numbers_stay_numbers(value: object, cell: object) -> None:
    assert csv_cell(value) == cell


def test_the_cli_console_prints_text_as_written() -> None:
    from storbench.cli.common import SafeConsole

    output = io.StringIO()
    console = SafeConsole(file=output, force_terminal=True, width=200, highlight=False)  # as the CLI makes it
    console.print(f"{MARKUP} [/oops] :warning: {TITLE}{C1_CSI}")
    assert f"{MARKUP} [/oops] :warning: \\x1b]0;pwned\\x07\\x9b31m" in output.getvalue()


def test_tables_hold_data_as_text_on_any_console(db: Path) -> None:
    """The tables are safe on their own: printed by a plain rich console, which reads markup."""
    from dataclasses import replace

    from rich.console import Console

    from storbench.plan import expand
    from storbench.report.compare_tables import compare_table
    from storbench.report.plan_tables import plan_table
    from storbench.report.saturation_tables import saturation_table
    from storbench.report.tables import results_table
    from storbench.selection import parse_selector_flag, select
    from storbench.stats.compare import compare_observations
    from storbench.stats.knee import curves
    from storbench.stats.summary import summarize_points

    selection = select(str(db), "all", [], default_latest=False)
    points = summarize_points(selection.observations, selection.memory)
    comparisons = compare_observations(selection.observations, parse_selector_flag("1", "--baseline"),
                                       parse_selector_flag("2", "--candidate"), selection.tags, selection.memory)
    cases = expand(load_plan_text("name: x\ntargets:\n  t: {kind: path, path: ./d, size: 1MiB}\n"
                                  "workload: {rw: randread, bs: 4k, runtime: 1s, fio: {rate_iops: [1, 2]}}\n",
                                  "p.yaml"))
    hostile = [replace(c, workload=replace(c.workload, fio_options=(("rate_iops", f"{MARKUP}{CLEAR}{n}"),)))
               for n, c in enumerate(cases)]
    assert comparisons and curves(points, "iodepth") and len(hostile) == 2
    for table in (results_table(points, f"{MARKUP}{TITLE}"), compare_table(comparisons, MARKUP, "[/oops]"),
                  saturation_table(curves(points, "iodepth"), None), plan_table(hostile, "[/oops]")[0]):
        output = io.StringIO()
        Console(file=output, width=1000).print(table)
        shown = output.getvalue()
        assert MARKUP in shown and not CONTROL.search(shown), shown


# ---- the commands ---------------------------------------------------------------------------------------------


def test_an_escape_sequence_in_a_plan_key_is_shown_escaped_in_the_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # YAML's "\e" and "\a" escapes put ESC and BEL into the key: the error quotes it
    plan = write_plan(tmp_path, 'name: x\ntargets:\n  t: {kind: path, path: ./d, size: 1MiB}\n'
                      'workload: {rw: randread, bs: 4k, runtime: 1s, "io\\e]0;pwned\\adepth": 4}\n')
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and not CONTROL.search(err), err
    assert "unknown key 'io\\x1b]0;pwned\\x07depth'" in err
    with pytest.raises(UserError) as refused:  # the line itself, wherever it is shown (not only by the CLI)
        load_plan_text(plan.read_text(), str(plan))
    assert "\x1b" in refused.value.message and not CONTROL.search(refused.value.one_line())


def test_show_compare_and_saturation_print_imported_text_as_written(
        db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = {}
    for name, argv in {
        "show": ("show", "--db", str(db), "--run", "all", "--wide"),
        "show markdown": ("show", "--db", str(db), "--format", "markdown"),
        "compare": ("compare", "--db", str(db), "--baseline", "1", "--candidate", "2"),
        "compare markdown": ("compare", "--db", str(db), "--baseline", "1", "--candidate", "2", "--format",
                             "markdown"),
        "saturation": ("saturation", "--db", str(db)),
    }.items():
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, (name, err)
        assert not CONTROL.search(out + err), (name, out + err)
        outputs[name] = out
    from storbench.report.export import markdown_cell

    for name, out in outputs.items():
        # the markup is printed, not obeyed: a link tag read as markup would leave only "click"; in Markdown the
        # brackets, angle brackets and backslashes are escaped, so no link or HTML is made of them
        expected = [f"[/oops]={MARKUP}\\x1b[2J", f"{LINK}=<b>$\\oops$\\x9b31m"]
        escaped = [markdown_cell(e).replace("\\\\x", "\\x") for e in expected]  # ESC was never a backslash
        for text in (escaped if "markdown" in name else expected):
            assert text in out, (name, text, out)
        if "markdown" in name:
            assert LINK not in out and "](http" not in out, (name, out)  # no HTML, no link made of a value


def test_csv_exports_quote_formulas_and_keep_numbers(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tables = {}
    for name, argv in {"export": ("export", "--db", str(db), "--format", "csv"),
                       "show": ("show", "--db", str(db), "--format", "csv"),
                       "compare": ("compare", "--db", str(db), "--baseline", "1", "--candidate", "2", "--format",
                                   "csv")}.items():
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, err
        assert not CONTROL.search(out), out
        tables[name] = list(csv.DictReader(io.StringIO(out)))
        assert tables[name], name
    for name in ("export", "show"):
        for row in tables[name]:
            assert row["ioengine"] == "'" + FORMULA and row["target"] == "'@t/../x"
            assert float(row["iops"]) > 0 and int(row["iodepth"]) in (1, 4)  # numbers stay numbers
    assert {row["fio_version"] for row in tables["export"]} == {"fio-3.33\\x1b]0;pwned\\x07\\x1b[2J[/oops]"}
    for row in tables["compare"]:
        assert row["point"].startswith("'@t/../x randread 4k") and float(row["baseline_mean"]) > 0
        assert CLEAR not in row["point"]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _figure_strings(html_text: str) -> list[str]:
    specs = re.findall(r"<script type='application/json' class='figure-spec'[^>]*>(.*?)</script>", html_text, re.S)
    assert specs
    return [s for spec in specs for s in _strings(json.loads(spec))]


def test_the_report_escapes_labels_in_figures_text_and_images(db: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    report, images = tmp_path / "r.html", tmp_path / "images"
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--run", "all", "-o", str(report), "--images",
                           str(images), "--baseline", "1", "--candidate", "2")
    assert code == 0, err  # matplotlib drew "$\oops$" as text: as mathtext it would refuse the unknown \oops
    text = report.read_text()
    assert not CONTROL.search(text)
    strings = _figure_strings(text)
    labels = [s for s in strings if html.escape(f"{LINK}=<b>", quote=False) in s]
    assert len(labels) > 10, "the crafted options should label the series of several figures"
    assert not [s for s in strings if "<a " in s or "<b>" in s or CONTROL.search(s)]
    assert any("[/oops]=[link=http://x]click[/link]\\x1b[2J" in s for s in strings)
    # the tables say it as written, escaped for HTML
    assert html.escape(f"{LINK}=<b>$\\oops$\\x9b31m") in text
    # every figure of the report drawn as an image too (figures of a single sweep value are not drawn at all)
    figure_ids = set(re.findall(r"id='([^']+)' class='figure", text))
    pngs = list(images.glob("*.png"))
    assert len(pngs) == len(list(images.glob("*.svg"))) == len(figure_ids) >= 4, (pngs, figure_ids)


def test_plotly_draws_a_link_in_a_label_as_text(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In a real browser: the figures show ``<a href="http://x">`` as text and make no link of it."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/setup.sh --dev installs it)")
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report))
    assert code == 0, err
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          "--virtual-time-budget=15000", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          report.as_uri()], capture_output=True, text=True, timeout=120, check=False).stdout
    assert '"rendered":' in dom.replace("&quot;", '"'), "the report never finished rendering"
    assert 'class="legendtext"' in dom
    assert not re.search(r"<a [^>]*href=\"http://x\"", dom)  # plotly made no link of the label


def test_run_progress_lines_show_a_failed_repetition_as_written(tmp_path: Path) -> None:
    from storbench.cli.common import SafeConsole
    from storbench.cli.progress import ConsoleObserver
    from storbench.model import RepetitionOutcome, ScheduledRepetition, Status
    from storbench.plan import expand

    case = expand(load_plan_text("name: x\ntargets:\n  t: {kind: path, path: ./d, size: 1MiB}\n"
                                 "workload: {rw: randread, bs: 4k, runtime: 1s}\n", "p.yaml"))[0]
    failed = RepetitionOutcome(status=Status.FAILED, started_at_s=0.0, finished_at_s=1.0, job_text="", command=(),
                               fio_version="", raw_output="", stderr_tail="",
                               error=f"fio said {TITLE}{CLEAR}[/oops] {MARKUP}")
    for terminal in (True, False):  # live progress with the failure in red, or one plain line per result
        output = io.StringIO()
        observer = ConsoleObserver(SafeConsole(file=output, force_terminal=terminal, width=300))
        observer.run_started(1, 1, 0, 1.0)
        observer.repetition_finished(ScheduledRepetition(case, 0), 0, failed)
        observer.close()
        shown = output.getvalue()
        assert f"fio said \\x1b]0;pwned\\x07\\x1b[2J[/oops] {MARKUP}" in shown, shown
        assert "\x1b]" not in shown and "\x07" not in shown and CLEAR not in shown


def test_markdown_cells_make_no_bare_link_of_a_value() -> None:
    """GitHub links a bare www.x.y and scheme://x in text: a target named www.evil.example had been a link in
    `show --format markdown`. The escapes below render as the text itself (checked with cmark-gfm 2026-12-03:
    no <a> for any of these)."""
    from storbench.report.export import markdown_cell

    assert markdown_cell("www.evil.example") == "www\\.evil.example"
    assert markdown_cell("WWW.Evil.example") == "WWW\\.Evil.example"
    assert markdown_cell("see https://x.example/p") == "see https\\://x.example/p"
    assert markdown_cell("a.www.b|c") == "a.www\\.b\\|c"
    assert markdown_cell("plain-name_4k") == "plain-name_4k"
