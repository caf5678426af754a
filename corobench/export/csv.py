"""CSV: one line per cell and metric, every statistic, one column per parameter; a comparison as one
line per cell and metric with both sides, the change and the test.

Parameters get columns named `parameter_<name>` (as hyperfine's exports do), in the order the
scenarios declare them; a parameter a scenario doesn't have is empty on its lines.
"""

from __future__ import annotations

import csv
import io

from corobench.compare import Result, side_summary
from corobench.export.base import Exporter, ReportContext
from corobench.results import Cell
from corobench.scenarios import Metric
from corobench.verify import clean_text


def full_csv(cells: list[Cell]) -> str:
    names: list[str] = []
    for c in cells:
        names += [k for k in c.params if k not in names]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["scenario", "program", *(f"parameter_{n}" for n in names), "threads", "status", "reason", "metric",
                "unit", "n", "median", "median_ci_low", "median_ci_high", "median_ci_level", "mean", "mean_ci_low",
                "mean_ci_high", "min", "max", "stdev", "cv", "warnings"])
    for c in cells:
        base = [c.scenario, c.program, *(c.params.get(n, "") for n in names),
                c.threads if c.threads is not None else "", c.status, c.reason]
        if not c.summaries:
            w.writerow(base + [""] * 14 + ["; ".join(c.warnings)])
            continue
        for metric in c.metrics:
            s = c.summaries.get(metric.key)
            if s is None:
                continue
            w.writerow(base + [metric.key, metric.unit, s.n, f"{s.median:.6g}", f"{s.median_ci[0]:.6g}",
                               f"{s.median_ci[1]:.6g}", f"{s.median_ci_level:.3f}", f"{s.mean:.6g}",
                               f"{s.mean_ci[0]:.6g}", f"{s.mean_ci[1]:.6g}", f"{s.min:.6g}", f"{s.max:.6g}",
                               f"{s.stdev:.6g}", f"{s.cv:.4f}", "; ".join(c.warnings)])
    return out.getvalue()


CSV_COLUMNS = ["scenario", "program", "params", "threads", "metric", "unit", "better",
               "a_status", "a_n", "a_median", "a_ci_low", "a_ci_high",
               "b_status", "b_n", "b_median", "b_ci_low", "b_ci_high",
               "ratio", "change_pct", "p_value", "significant", "verdict"]


def _side_fields(cell: Cell | None, metric: Metric | None) -> list:
    if cell is None:
        return ["missing", "", "", "", ""]
    s = side_summary(cell, metric) if metric is not None else None
    if s is None:
        return [cell.status, "", "", "", ""]
    return [cell.status, s.n, f"{s.median:.6g}", f"{s.median_ci[0]:.6g}", f"{s.median_ci[1]:.6g}"]


def comparison_csv(result: Result) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for ln in result.lines:
        c, m = ln.a_cell, ln.metric
        w.writerow([c.scenario, c.program, c.label_params(), "" if c.threads is None else c.threads, m.key, m.unit,
                    m.better, *_side_fields(ln.a_cell, m), *_side_fields(ln.b_cell, m),
                    "" if ln.ratio is None else f"{ln.ratio:.6g}",
                    "" if ln.change is None else f"{ln.change * 100:.3f}",
                    "" if ln.test is None or ln.test.p_value is None else f"{ln.test.p_value:.4g}",
                    "" if ln.test is None else str(ln.significant).lower(), ln.verdict])
    for cell, side in [(c, "A") for c in result.only_a] + [(c, "B") for c in result.only_b]:
        m = cell.metrics[0]
        a, b = (cell, None) if side == "A" else (None, cell)
        w.writerow([cell.scenario, cell.program, cell.label_params(), "" if cell.threads is None else cell.threads,
                    m.key, m.unit, m.better, *_side_fields(a, m), *_side_fields(b, m), "", "", "", "",
                    f"only in {side}"])
    return out.getvalue()


class Csv(Exporter):
    name = "csv"
    help = "every statistic of every cell and metric (results.csv)"
    order = 20

    def session_text(self, cells: list[Cell], meta: dict) -> str:
        return full_csv(cells)

    def comparison_text(self, result: Result) -> str:
        return comparison_csv(result)

    def print_comparison(self, result: Result) -> None:
        import click

        click.echo(comparison_csv(result), nl=False)
        for line in result.warnings + result.notes:  # not in the CSV: on stderr
            click.echo(f"corobench: {clean_text(line, 500)}", err=True)

    def report_files(self, ctx: ReportContext) -> dict[str, str]:
        return {"results.csv": full_csv(ctx.cells)}


EXPORTER = Csv()
