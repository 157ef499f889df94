"""`storbench history`: every point's figures run by run over all runs (or those chosen), the steps in them and
what changed with each, and `--fail-on-regression` judged against the history."""

from __future__ import annotations

import argparse
import json

from storbench.cli.common import _console, _write_output, at_least_zero, db_option, filters
from storbench.errors import UserError, did_you_mean
from storbench.units import current_metric_name


def cmd_history(args: argparse.Namespace) -> int:
    from storbench.cli.results import require_results
    from storbench.report.history import METRICS, history_lines, history_records, regression_lines
    from storbench.selection import select, where_items
    from storbench.stats.history import point_histories, run_context

    metrics = [current_metric_name(part) for item in args.metric for part in item.split(",") if part] or ["iops"]
    for metric in metrics:
        if metric not in METRICS:
            raise UserError(f"--metric {metric!r} is not a metric", hint=did_you_mean(metric, list(METRICS))
                            or "e.g. iops, bw_bytes_per_s, lat_mean_ns, lat_p99_ns")
    selection = select(args.db, args.run or "all", where_items(args.where, args.target), default_latest=False)
    require_results(selection, args)
    contexts = {run.run_id: run_context(run) for run in selection.runs}
    histories = point_histories(selection.observations, contexts, metrics, pool_hosts=args.pool_hosts,
                                levels_of_runs=selection.interval_levels)
    if args.format == "json":
        _write_output(json.dumps(history_records(histories), indent=1) + "\n", args.output)
    elif args.format == "parquet":
        from storbench.report.parquet import history_parquet

        _write_output(history_parquet(history_records(histories)), args.output)
    else:
        _write_output("\n".join(history_lines(histories)) + "\n", args.output)
    if args.fail_on_regression is not None:
        # 5 % for every point and metric together: Bonferroni over the newest runs judged (the change points' 1 %
        # is shared among the histories already: a step found with the newest run fails the gate too)
        judged = sum(1 for h in histories if h.last is not None)
        level = 1 - 0.05 / judged if judged > 1 else 0.95
        if judged > 1:
            histories = point_histories(selection.observations, contexts, metrics, last_confidence=level,
                                        pool_hosts=args.pool_hosts, levels_of_runs=selection.interval_levels)
        regressions = regression_lines(histories, args.fail_on_regression, level, judged)
        out = _console(stderr=True)
        for line in regressions:
            out.print(line, markup=False)
        if regressions:
            return 1
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("history", help="each point's figures run by run, the steps in them (change points) and "
                       "what changed with each")
    db_option(p)
    filters(p, "run number(s) to include, e.g. 2,3 (default: all)")
    p.add_argument("--metric", action="append", default=[], metavar="METRIC",
                   help="a metric (repeatable or comma-separated; default iops), e.g. lat_p99_ns")
    p.add_argument("--format", choices=("table", "json", "parquet"), default="table",
                   help="table (default), or one record per point, metric and run as json or parquet (typed "
                   "columns, for dashboards: the parquet extra)")
    p.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    p.add_argument("--pool-hosts", action="store_true",
                   help="one history per point over every machine's runs (default: each machine's runs apart, when "
                   "the runs chosen come from several: merged stores)")
    p.add_argument("--fail-on-regression", type=at_least_zero, default=None, metavar="PCT",
                   help="exit 1 when a point's newest run is worse by at least PCT %% than the level before it "
                   "(and outside one more run's 95%% interval, Bonferroni over the points), or completes a change "
                   "point worse by at least PCT %%")
    p.set_defaults(func=cmd_history)
