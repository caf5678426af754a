"""Stored runs grouped into cells (one program at one set of parameters) with their statistics.

Every exporter and chart reads cells, never raw rows, so all of them agree on what a FAILED cell
is and which runs count: measured repetitions only (rep >= 1), and a cell with any failed run is
FAILED with the first failure's reason.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Sequence

from corobench.scenarios import CellWarning, Metric, RunView, get_scenario
from corobench.store import RunRow
from corobench.stats import OUTLIER_Z, Summary, outliers, robust_spread, summarize
from corobench.units import human, seconds

BUSY_FRACTION = 0.25  # other processes used more than this share of all CPUs during a run
# Robust spread (1.4826 × MAD / median) above which a cell is flagged: runs of 10–100 ms on a
# shared VM vary by ±10 % routinely; ±20 % is where a ratio between programs starts to mislead.
HIGH_SPREAD = 0.20
SHORT_NS = 5_000_000  # a timed region shorter than this measures little but noise and start-up


@dataclass
class Cell:
    scenario: str
    program: str
    params: dict
    threads: int | None
    status: str  # "ok" | "failed" | "skipped"
    reason: str = ""
    runs_ok: int = 0
    runs_total: int = 0
    summaries: dict[str, Summary] = field(default_factory=dict)
    values: dict[str, list[float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    reported_threads: int | None = None
    runs: list[RunView] = field(default_factory=list)  # the verified runs, e.g. for a chart over time
    too_short: bool = False  # the median timed region was under SHORT_NS: too short to compare by

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return get_scenario(self.scenario).metrics

    def headline(self) -> Summary | None:
        return self.summaries.get(self.metrics[0].key)

    def label_params(self) -> str:
        """Every parameter, for data files (CSV) where a column must not come and go."""
        return " ".join(f"{k}={v}" for k, v in self.params.items())

    def label(self) -> str:
        """What a table or section title names the cell by: zero-valued parameters (a switched-off
        option such as rate=0) are left out, as in chart titles; --threads when it was set."""
        return " ".join([*(f"{k}={v}" for k, v in self.params.items() if v != 0),
                         *([f"threads={self.threads}"] if self.threads is not None else [])])


def build_cells(rows: Sequence[RunRow]) -> list[Cell]:
    groups: dict[tuple, list[RunRow]] = {}
    for row in rows:
        if row.rep < 1:
            continue  # rep 0 is the verification run at tiny size
        key = (row.scenario, row.program, row.params_key, row.threads)
        groups.setdefault(key, []).append(row)
    cells = []
    for (scenario, program, _, threads), group in groups.items():
        runs = [RunView(r) for r in group]
        params = runs[0].params
        ok = [r for r in runs if r["status"] == "ok"]
        failed = [r for r in runs if r["status"] == "failed"]
        skipped = [r for r in runs if r["status"] == "skipped"]
        cell = Cell(scenario, program, params, threads, "ok", runs_ok=len(ok), runs_total=len(group))
        if failed:
            cell.status, cell.reason = "failed", failed[0]["reason"] or "failed"
            if ok:
                cell.reason += f" ({len(ok)} of {len(group)} runs passed)"
        elif skipped and not ok:
            cell.status, cell.reason = "skipped", skipped[0]["reason"] or "skipped"
        if ok:
            cell.runs = ok
            cell.reported_threads = ok[0]["reported_threads"]
            for metric in cell.metrics:
                values = [v for v in (metric.value(r) for r in ok) if v is not None]
                if values:
                    cell.values[metric.key] = values
                    cell.summaries[metric.key] = summarize(values)
            head = cell.headline()
            values = cell.values.get(cell.metrics[0].key, [])
            spread = robust_spread(values)
            if spread is not None and spread > HIGH_SPREAD:
                cell.warnings.append(CellWarning(
                    f"high spread: the middle runs vary by more than ±{HIGH_SPREAD:.0%} (robust CV, 1.4826 × MAD / "
                    "median): compare these with care", f"±{spread:.0%}"))
            cell.warnings += get_scenario(scenario).caveats(
                params, {k: v.median for k, v in cell.summaries.items()})
            odd = outliers(values)
            if odd:
                unit = cell.metrics[0].unit
                cell.warnings.append(CellWarning(f"outlier runs (modified z-score above {OUTLIER_Z:g})",
                                                 ", ".join(human(v, unit) for v in odd)))
            timed = [r.elapsed_ns for r in ok if r.elapsed_ns]
            if timed and statistics.median(timed) < SHORT_NS:  # the median: at 2 runs not the upper one
                cell.too_short = True
                cell.warnings.append(CellWarning(
                    f"the timed region lasted under {SHORT_NS / 1e6:g} ms: too short to compare runtimes by; raise the "
                    "sizes", seconds(statistics.median(timed) / 1e9)))
            busy = [r for r in ok if (r.other_cpu_fraction or 0) > BUSY_FRACTION]
            if busy:
                cell.warnings.append(CellWarning(
                    f"machine busy: other processes used more than {BUSY_FRACTION:.0%} of the CPUs during runs",
                    f"up to {max(r.other_cpu_fraction for r in busy):.0%} in {len(busy)} of {len(ok)} runs"
                    + busy_sides(busy)))
        cells.append(cell)
    def order(c: Cell) -> tuple:
        s = get_scenario(c.scenario)
        return (s.report_order, s.name, s.sort_key(c.params), c.threads or 0, c.program)

    cells.sort(key=order)
    return cells


def busy_sides(runs: list[RunView]) -> str:
    """Which CPUs were taken, where a run measured them apart (a server run: server and client)."""
    sides = []
    for key, name in (("server_other_share", "the server's CPUs"), ("client_other_share", "the client's CPUs")):
        values = [r.metrics.get(key) for r in runs if r.metrics.get(key) is not None]
        if values:
            sides.append(f"{name} up to {max(values):.0%}")
    return f" ({', '.join(sides)})" if sides else ""


def by_scenario(cells: list[Cell]) -> dict[str, list[Cell]]:
    out: dict[str, list[Cell]] = {}
    for cell in cells:
        out.setdefault(cell.scenario, []).append(cell)
    return out
