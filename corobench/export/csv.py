"""CSV: one line per cell and metric, every statistic, one column per parameter.

Parameters get columns named `parameter_<name>` (as hyperfine's exports do), in the order the
scenarios declare them; a parameter a scenario doesn't have is empty on its lines.
"""

from __future__ import annotations

import csv
import io

from corobench.results import Cell


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
