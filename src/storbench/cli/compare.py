"""Commands that set results side by side: `compare` (baseline against candidate, a table) and `report` (one HTML
file with figures, and the comparison when asked).

Which results they read is decided in `storbench.selection`; the numbers come from `stats`, the text and the
figures from `report`. Here: arguments in, printing and exit codes out.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from storbench.cli.common import (
    _console,
    _write_output,
    at_least_zero,
    db_option,
    file_console,
    filters,
    where_option,
)
from storbench.cli.results import require_results
from storbench.errors import UserError
from storbench.private_files import write_private
from storbench.safe_text import file_stems
from storbench.units import count_of

if TYPE_CHECKING:  # heavy modules (scipy, sqlite) load only for the commands that use them
    from rich.console import Console

    from storbench.selection import Selection
    from storbench.stats.compare_cells import PointComparison, Regression
    from storbench.stats.selectors import Selector


def cmd_compare(args: argparse.Namespace) -> int:
    from storbench.report.compare_export import comparison_csv, comparison_json, comparison_markdown
    from storbench.selection import design_changed_line, parse_selector_flag, select
    from storbench.stats.compare_cells import regressions, tested_cells, ungated_cells
    from storbench.stats.compare_design import CONFOUNDED

    if bool(args.baseline) != bool(args.candidate):
        raise UserError("--baseline and --candidate go together", hint="give both, or neither for the compare: "
                        "of the latest run's plan")
    if args.baseline:
        baseline = parse_selector_flag(args.baseline, "--baseline")
        candidate = parse_selector_flag(args.candidate, "--candidate")
        selection = select(args.db, "all", args.where, default_latest=False)
    else:  # the question the latest run's plan names, within that run
        selection = select(args.db, "", args.where, default_latest=True)
        asked = asked_sides(selection)
        if isinstance(asked, str):
            raise UserError(f"{asked}, and no --baseline and --candidate are given", hint="give both, e.g. "
                            "--baseline bs=4k --candidate bs=64k, or add compare: {baseline: ..., candidate: ...} "
                            "to the plan")
        baseline, candidate = asked
    if args.where and not selection.observations:
        raise UserError(f"--where {' '.join(args.where)} matches no results in {args.db}: {selection.no_match}",
                        hint="loosen --where; `storbench show --run all` lists what is stored")
    check_sides(selection, baseline, candidate, args.db, [f"--where {w}" for w in args.where],
                named="--" if args.baseline else "compare.")
    # where the sides came from, said with the table (in its file too) or on the terminal; a file or a document says
    # what was compared, not how to ask the command for more
    document = args.format == "markdown" or (args.format == "table" and args.output not in ("", "-"))
    advice = "--baseline and --candidate choose another"
    asked = "" if args.baseline else asked_line(selection, baseline, candidate, "" if document else advice)
    comparisons = compare_sides(selection, baseline, candidate, force=args.force)
    if not comparisons:
        if not args.baseline:  # which comparison the plan asked, before why it cannot be made
            _console(stderr=True).print(asked_line(selection, baseline, candidate, advice), markup=False)
        refuse_no_common_point(selection, baseline, candidate)
    ran_in = _ran_in(comparisons)
    note = sides_note(selection, ran_in, baseline, candidate)
    changed = {run: what for run, what in selection.design_changed.items() if run in ran_in}
    changed_lines = [design_changed_line(run, what) for run, what in sorted(changed.items())]
    if args.format == "table":
        out = _console() if args.output in ("", "-") else file_console()
        for line in (asked, note):
            if line:
                out.print(line, markup=False)
        print_comparison(out, comparisons, baseline, candidate, changed_lines,
                         None if args.output not in ("", "-") else out.width)
        if args.output not in ("", "-"):
            _write_output(out.export_text(), args.output)
    elif args.format == "markdown":
        _write_output(comparison_markdown(comparisons, baseline.text, candidate.text,
                                          changed_lines,
                                          [line for line in (asked, note) if line]), args.output)
    else:  # a document for programs; where the sides came from goes to the terminal beside it
        if asked:
            _console(stderr=args.output in ("", "-")).print(asked, markup=False)
        _write_output((comparison_csv if args.format == "csv" else comparison_json)(comparisons, changed),
                      args.output)
    if args.fail_on_regression is not None:
        # the gate's error rate is 5 % for the whole table, not per cell: Bonferroni over the cells it tests
        cells = tested_cells(comparisons)
        family = comparisons if cells <= 1 else compare_sides(selection, baseline, candidate, force=args.force,
                                                              alpha=0.05 / cells)
        found = regressions(family, args.fail_on_regression)
        shared = f"the 5 % error rate shared over {cells} cells (Bonferroni)" if cells > 1 else "at 5 %"
        confounded = sorted({c.design for c in comparisons if c.design in CONFOUNDED})
        if confounded:  # the error rate is of the repetitions compared, not of the setting
            shared += (f"; ⚠ {', '.join(confounded)}: of these runs' repetitions, not of the setting alone (the "
                       "design lines say what else is in the change)")
        left_out = ungated_cells(comparisons)
        if left_out:
            _console(stderr=True).print(
                f"--fail-on-regression leaves out {left_out} cells (‡): plain intervals on repetitions whose number "
                "a stopping rule chose, not covered by its error rate", markup=False)
        if found:
            _console(stderr=True).print(
                f"regression: {len(found)} significantly worse cells beyond {args.fail_on_regression:g} % ({shared}); "
                f"worst {_worst_cell(found)}, its interval at that shared level", markup=False)
            return 1
        single = regressions(comparisons, args.fail_on_regression)
        if single:  # worse at 5 % a cell, not at the table's shared level: neither shown nor ruled out
            _console(stderr=True).print(
                f"no regression shown with {shared}: {len(single)} cells look worse beyond "
                f"{args.fail_on_regression:g} % at 5 % each (worst {_worst_cell(single)}, its 95 % interval), not at "
                "the shared level: a regression is neither shown nor ruled out; more repetitions would tell",
                markup=False)
    return 0


def _worst_cell(found: Sequence[Regression]) -> str:
    """The largest change among ``found``, with its interval (at the level its comparison was made) and point."""
    from storbench.report.labels import comparison_label

    def size(r: Regression) -> float:  # NaN (worse than a baseline of 0) first: any percent
        pct = r.cell.difference.change_pct if r.cell.difference else 0.0
        return math.inf if math.isnan(pct) else abs(pct)

    worst = max(found, key=size)
    difference = worst.cell.difference
    if difference is None or math.isnan(difference.change_pct):
        text = f"{worst.cell.metric.label} worse than a baseline of 0"
    else:
        text = f"{worst.cell.metric.label} {difference.change_pct:+.1f} %"
        if difference.change_ci_low_pct is not None and difference.change_ci_high_pct is not None:
            text += f" [{difference.change_ci_low_pct:+.1f}, {difference.change_ci_high_pct:+.1f}]"
    return f"{text} at {comparison_label(worst.comparison)}"


def asked_sides(selection: Selection) -> tuple[Selector, Selector] | str:
    """The sides of the comparison the chosen runs' plans name (`compare:`), when they all name the same one; else
    why there are none."""
    from storbench.stats.run_questions import asked_comparison
    from storbench.stats.selectors import parse_selector

    asked = asked_comparison(selection.runs)
    if asked is None:
        if any(r.design.compare for r in selection.runs):
            return f"{_whose(selection)} do not all name one comparison (compare:)"
        return f"{_whose(selection, 'name')} no comparison (compare:)"
    try:
        return parse_selector(asked.baseline), parse_selector(asked.candidate)
    except ValueError as exc:  # stored by a storbench whose selectors said more
        return f"{_whose(selection, 'name')} a comparison this storbench cannot read ({exc})"


def _whose(selection: Selection, verb: str = "") -> str:
    """'the plan of run 3', 'the plans of runs 2, 3' (and ``verb`` agreeing with it)."""
    from storbench.report.labels import plans_of

    return plans_of([r.run_id for r in selection.runs], verb)


def asked_line(selection: Selection, baseline: Selector, candidate: Selector, other: str) -> str:
    """Where the sides came from, said with the table; ``other``: how to compare something else ('' in a file)."""
    return (f"the comparison {_whose(selection, 'ask')} (compare: baseline {baseline.text}, candidate "
            f"{candidate.text})" + (f"; {other}" if other else ""))


def print_comparison(out: Console, comparisons: Sequence[PointComparison], baseline: Selector, candidate: Selector,
                     changed_lines: Sequence[str], width: int | None) -> None:
    """The comparison as a table with the lines under it: the rule's answer, the design, the cost, the bottlenecks."""
    from storbench.report.compare_tables import (
        bottleneck_evidence_lines,
        compare_table,
        design_lines,
        rule_answer_lines,
    )
    from storbench.report.cost_compare import cost_caption, cost_change_table, cost_changes
    from storbench.stats.compare_cells import stopping_rule_lines

    out.print(compare_table(comparisons, baseline.text, candidate.text, width))
    for line in [*rule_answer_lines(comparisons), *stopping_rule_lines(comparisons), *design_lines(comparisons),
                 *changed_lines]:
        out.print(line, markup=False)
    cost = cost_changes(comparisons)
    if cost:
        out.print(cost_change_table(cost))
        out.print(cost_caption(cost), markup=False)
    evidence = bottleneck_evidence_lines(comparisons)
    if evidence:
        out.print("bottlenecks (rules: storbench docs methodology bottleneck-verdicts):", markup=False)
        for line in evidence:
            out.print(f"  {line}", markup=False)


def _ran_in(comparisons: Sequence[PointComparison]) -> set[int]:
    """The runs whose results the comparisons compare."""
    return {run for c in comparisons for run in (*c.baseline.run_ids, *c.candidate.run_ids)}


def sides_note(selection: Selection, ran_in: set[int], baseline: Selector, candidate: Selector) -> str:
    """What the two sides' design leaves in the change ('' when nothing): the line above a comparison's table;
    ``ran_in``: the runs compared."""
    from storbench.stats.compare_design import design_note

    designs = {selection.bring_ups.get(run, "once") for run in ran_in}
    return design_note(baseline, candidate, bring_up=designs.pop() if len(designs) == 1 else "once") or ""


def compare_sides(selection: Selection, baseline: Selector, candidate: Selector, *, force: bool = False,
                  alpha: float = 0.05) -> list[PointComparison]:
    """The comparison of the chosen results, each interval at error rate ``alpha``; ``force``: also where fio's
    version, the workload or the target kind differ."""
    from storbench.stats.compare import compare_observations

    return compare_observations(selection.observations, baseline, candidate, selection.tags, selection.memory,
                                force=force, alpha=alpha,
                                interleaved_runs=selection.interleaved_runs, shuffled_runs=selection.shuffled_runs,
                                attempts=selection.attempts, sequential_plans=selection.sequential_plans,
                                bring_ups=selection.bring_ups, questions=selection.questions,
                                expectations=selection.expectations, levels=selection.interval_levels)


def print_asked_comparison(selection: Selection, db: str, run_id: int, out: Console) -> None:
    """A run whose plan names `compare:` ends with it, as `storbench compare` prints it, from the ``selection`` its
    closing table read; one line instead when its results cannot answer it (the run's own exit status is not
    changed by it)."""
    from storbench.selection import design_changed_line

    if not selection.observations:  # every repetition failed: the closing table said so
        return
    try:
        asked = asked_sides(selection)
        if isinstance(asked, str):
            out.print(f"compare: {asked}", markup=False)
            return
        baseline, candidate = asked
        check_sides(selection, baseline, candidate, db, named="compare.")
        comparisons = compare_sides(selection, baseline, candidate)
    except UserError as exc:
        out.print(f"compare: {exc.one_line()}", markup=False)
        return
    if not comparisons:
        out.print(f"compare: run {run_id} has no point where baseline {baseline.text} and candidate "
                  f"{candidate.text} both ran", markup=False)
        return
    for line in (asked_line(selection, baseline, candidate, "`storbench compare --baseline SEL --candidate SEL` "
                            "compares others"), sides_note(selection, _ran_in(comparisons), baseline, candidate)):
        if line:
            out.print(line, markup=False)
    changed = selection.design_changed.get(run_id)
    print_comparison(out, comparisons, baseline, candidate, [design_changed_line(run_id, changed)] if changed else [],
                     out.width)


def check_sides(selection: Selection, baseline: Selector, candidate: Selector, db: str,
                where: Sequence[str] = (), *, named: str = "--") -> None:
    """`--baseline` and `--candidate` (compare, report): known keys, each side some results, not the same ones.
    ``where``: the filters that chose the results first (`--where`, `--target`), named when a side finds none;
    ``named``: how the sides are named (`compare.` for a plan's)."""
    from storbench.selection import check_selector_keys, repetition_keys
    from storbench.stats.selectors import select as select_side

    check_selector_keys(selection, baseline, candidate)
    sides = []
    for side, selector in (("baseline", baseline), ("candidate", candidate)):
        chosen = select_side(selection.observations, selector, selection.tags)
        if not chosen:
            among = f" among those {' '.join(where)} kept" if where else ""
            raise UserError(f"{named}{side} {selector.text!r} matches no results in {db}{among}",
                            hint=("loosen the filters, or " if where else "") +
                            "see `storbench show --run all` for what is stored")
        sides.append(repetition_keys(chosen))
    if sides[0] == sides[1]:
        raise UserError(f"{named}baseline {baseline.text!r} and {named}candidate {candidate.text!r} select the same "
                        "results",
                        hint="a comparison of results with themselves says nothing; select two different sides")


def refuse_no_common_point(selection: Selection, baseline: Selector, candidate: Selector) -> NoReturn:
    from storbench.stats.compare_match import no_common_point

    selected = sorted(baseline.keys | candidate.keys)
    directions = " (rw changes the direction: reads and writes never compare)" if "rw" in selected else ""
    raise UserError(no_common_point(selection.observations, baseline, candidate, selection.tags),
                    hint="points match on target, rw, bs, iodepth, numjobs, clients and direction, except what "
                    f"you select on ({', '.join(selected)}){directions}")


def cmd_report(args: argparse.Namespace) -> int:
    from plotly.offline import get_plotlyjs

    from storbench.report.build import build_report
    from storbench.report.html import render_html
    from storbench.report.images import render_image
    from storbench.selection import (
        parse_objective,
        parse_selector_flag,
        repetition_keys,
        run_notes,
        select,
        where_items,
    )

    objective = parse_objective(args.slo)
    if bool(args.baseline) != bool(args.candidate):
        raise UserError("--baseline and --candidate go together", hint="give both, or neither")
    if args.images and Path(args.images).exists() and not Path(args.images).is_dir():
        raise UserError(f"--images {args.images}: exists and is not a directory",
                        hint="give a directory (made if missing) for the PNG and SVG files")
    run = "all" if args.baseline and not args.run else args.run
    selection = select(args.db, run, where_items(args.where, args.target), default_latest=True)
    require_results(selection, args)
    comparisons: list[PointComparison] = []
    texts = (args.baseline or "", args.candidate or "")
    said = ""  # where the comparison came from when the plan asked it, or why it is not in the report
    asked_by: tuple[int, ...] = ()  # the runs whose plans' compare: the sides are, for the Comparison section
    filtered = [*(f"--where {w}" for w in args.where), *(f"--target {t}" for t in args.target or ())]
    if args.baseline:
        baseline = parse_selector_flag(args.baseline, "--baseline")
        candidate = parse_selector_flag(args.candidate, "--candidate")
        check_sides(selection, baseline, candidate, args.db, filtered)
        comparisons = compare_sides(selection, baseline, candidate)
        if not comparisons:
            refuse_no_common_point(selection, baseline, candidate)
    elif any(r.design.compare for r in selection.runs):  # the comparison the runs' plans ask, when it has points
        asked = asked_sides(selection)
        try:
            if isinstance(asked, str):
                raise UserError(asked)
            baseline, candidate = asked
            check_sides(selection, baseline, candidate, args.db, filtered, named="compare.")
            comparisons = compare_sides(selection, baseline, candidate)
            if not comparisons:
                raise UserError(f"no point where baseline {baseline.text} and candidate {candidate.text} both ran")
            texts = (baseline.text, candidate.text)
            said = asked_line(selection, baseline, candidate, "--baseline and --candidate choose another")
            asked_by = tuple(r.run_id for r in selection.runs)
        except UserError as exc:
            said = f"no Comparison section: {exc.one_line()}"
    # the store was read once, by select; the figures drawn from repetitions (latency CDFs, timelines, convergence)
    # take those --where kept, as the summary does
    chosen = repetition_keys(selection.observations)
    repetitions = [r for r in selection.repetitions if (r.run_id, r.case.case_id, r.rep_index) in chosen]
    title = args.title or "storbench report: " + ", ".join(sorted({r.plan_name for r in selection.runs}))
    document = build_report(title, selection.runs, repetitions, selection.observations, comparisons=comparisons,
                            baseline=texts[0], candidate=texts[1], asked_by=asked_by, objective=objective,
                            steady=selection.steady, preconditions=selection.preconditions,
                            notes=run_notes(selection, args.db),
                            attempts=selection.attempts, pool=args.pool)
    images = Path(args.images) if args.images else None
    if images is not None:  # before the report is written: a bad --images leaves nothing half done
        try:
            images.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot write the images in {images}: {exc.strerror or exc}",
                            hint="pass --images a directory you can write") from None
    _write_output(render_html(document, get_plotlyjs()), args.output)
    out = _console(stderr=args.output in ("", "-"))
    out.print(f"report: {args.output} ({count_of(len(document.figures), 'figure')}, "
              f"{count_of(len(document.points), 'point')})",
              markup=False)
    if said:
        out.print(said, markup=False)
    if images is not None:
        try:
            # ids hold target names, which an import or a database may choose
            for figure, stem in zip(document.figures, file_stems([f.figure_id for f in document.figures]),
                                    strict=True):
                for fmt in ("png", "svg"):
                    write_private(images / f"{stem}.{fmt}", render_image(figure, fmt))
        except OSError as exc:
            raise UserError(f"cannot write the images in {images}: {exc.strerror or exc}",
                            hint="pass --images a directory you can write") from None
        out.print(f"images: {len(document.figures)} figures as PNG and SVG in {images}", markup=False)
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compare", help="baseline vs candidate per matching point: change with 95%% CI and a verdict")
    db_option(p)
    p.add_argument("--baseline", default=None, metavar="SELECTOR",
                   help="a run number, or KEY=VALUE[,KEY=VALUE]: run=3, target=a, tag=before, bs=4k ... (default, "
                   "with no --candidate either: the compare: of the latest run's plan, within that run)")
    p.add_argument("--candidate", default=None, metavar="SELECTOR", help="same syntax as --baseline")
    where_option(p, "only points whose FIELD equals VALUE (repeatable)")
    p.add_argument("--format", choices=("table", "markdown", "csv", "json"), default="table",
                   help="table (default), markdown, or one record per point and metric as csv or json")
    p.add_argument("-o", "--output", default="-", help="file to write, the table as plain text too (default: "
                   "standard output)")
    p.add_argument("--force", action="store_true", help="compare even when fio version, workload or target kind differ")
    p.add_argument("--fail-on-regression", type=at_least_zero, default=None, metavar="PCT",
                   help="exit 1 when any metric is significantly worse by PCT percent or more, at a 5 %% error rate "
                   "for the whole table (shared over its cells; not cells whose plain interval a stopping rule does "
                   "not cover), of the repetitions compared: between two runs or instances, what else differs is in "
                   "the change, and the verdict says so")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="one self-contained HTML report (figures, comparisons, provenance)")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run; all runs with --baseline)")
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write (default report.html)")
    p.add_argument("--images", default=None, metavar="DIR", help="also write every figure as PNG and SVG into DIR")
    p.add_argument("--baseline", default=None, metavar="SELECTOR", help="add a comparison: baseline selector "
                   "(default: the compare: the chosen runs' plans name, if any)")
    p.add_argument("--candidate", default=None, metavar="SELECTOR", help="add a comparison: candidate selector")
    p.add_argument("--slo", default=None, metavar="OBJECTIVE", help="latency objective for the saturation table")
    p.add_argument("--title", default=None, help="report title")
    p.add_argument("--pool", action="store_true",
                   help="with several runs of one plan, pool each case's repetitions over them into one point "
                   "(default: a point per run, each labelled with its run)")
    p.set_defaults(func=cmd_report)
