"""CSV: the original chain benchmark's columns, and a full table of every metric."""

from __future__ import annotations

import csv
import io

from corobench.results import Cell


def chain_legacy_csv(cells: list[Cell]) -> str:
    """`program,etype,worker,event,time,speed`: time in s, speed in events/s, both medians.

    FAILED cells keep their line with FAILED in the figures, so no one mistakes a gap for a result.
    """
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["program", "etype", "worker", "event", "time", "speed"])
    for c in cells:
        if c.scenario != "chain":
            continue
        p = c.params
        if c.status == "ok" and "time_s" in c.summaries:
            time_s = f"{c.summaries['time_s'].median:.6f}"
            speed = f"{c.summaries['speed'].median:.0f}"
        else:
            time_s = speed = c.status.upper()
        w.writerow([c.program, p["etype"], p["workers"], p["events"], time_s, speed])
    return out.getvalue()


def full_csv(cells: list[Cell]) -> str:
    """One line per cell and metric, with the statistics pyperf/benchstat users expect."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["scenario", "program", "params", "threads", "status", "reason", "metric", "unit",
                "n", "median", "median_ci_low", "median_ci_high", "median_ci_level", "mean",
                "mean_ci_low", "mean_ci_high", "min", "max", "stdev", "cv", "warnings"])
    for c in cells:
        params = " ".join(f"{k}={v}" for k, v in c.params.items())
        base = [c.scenario, c.program, params, c.threads if c.threads is not None else "", c.status, c.reason]
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
