"""`corobench compare A B`: the same cells of two stored sessions, B against A.

A cell is one program at one parameter set and --threads (results.py). For every cell in both
sessions and every chosen metric: each side's median with its CI, the change of B against A, and
whether a two-sided Mann-Whitney U test (stats.compare) finds the difference significant at 5 %;
when it does not the verdict is `~`, as benchstat marks it. A FAILED or skipped side carries no
figure. Pure functions over cells (plus the one that loads a session); the CLI prints the result,
`report --baseline` embeds it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from corobench.errors import UsageError
from corobench.export.format import with_spread
from corobench.results import Cell, build_cells
from corobench.scenarios import Metric, get_scenario
from corobench.stats import ALPHA, BELOW_MIN, MIN_CHANGE, TOO_FEW, Comparison, Summary, compare, significance_possible
from corobench.store import Store, params_key

TEST = "two-sided Mann-Whitney U test at 5 %"
LATEST_BACK = re.compile(r"latest~([0-9]{1,6})")


# --------------------------------------------------------------------------- loading

def resolve_session(store: Store, which: str):
    """A session row by id, `latest`, or `latest~N` (N sessions before the latest)."""
    back = LATEST_BACK.fullmatch(which)
    if back is None:
        return store.session(which)
    rows = store.sessions()
    n = int(back.group(1))
    if n >= len(rows):
        raise UsageError(f"no session {which}: {len(rows)} session(s) stored in {store.path}")
    return rows[-1 - n]


def check_comparable(store: Store, a: str, b: str, across: bool) -> tuple[list[str], list[str]]:
    """(warnings, notes) for comparing two sessions; sessions of different machines or load layouts
    are refused (one line) unless `across` is asked, and then the comparison is labelled so."""
    from corobench.comparability import comparable

    verdict = comparable(resolve_session(store, a), resolve_session(store, b))
    if not verdict.comparable and not across:
        raise UsageError(f"sessions {a} and {b} are not comparable ({verdict.why}); compare them anyway with "
                         "--across-machines, and the comparison says so")
    warnings = [f"compared across machines or load layouts, as asked: {verdict.why}"] if not verdict.comparable else []
    return warnings, list(verdict.notes)


def load_session(store: Store, which: str) -> tuple[dict, list[Cell]]:
    """(a short description of the session, its cells)."""
    session = resolve_session(store, which)
    info = {"session": session.id, "started_at": session.started_at, "status": session.status,
            "command": session.command, "git_commit": session.git_commit}
    return info, build_cells(store.runs(session.id, with_result=False))


# --------------------------------------------------------------------------- the comparison

@dataclass(frozen=True)
class Line:
    """One cell present in both sessions, compared on one metric."""

    a_cell: Cell
    b_cell: Cell
    metric: Metric
    test: Comparison | None  # None when a side has no figure (FAILED, skipped, no value)

    @property
    def a(self) -> Summary | None:
        return side_summary(self.a_cell, self.metric)

    @property
    def b(self) -> Summary | None:
        return side_summary(self.b_cell, self.metric)

    @property
    def ratio(self) -> float | None:
        """median(B) / median(A)."""
        return self.test.ratio if self.test is not None else None

    @property
    def change(self) -> float | None:
        """B against A as a fraction (+0.10: B's median is 10 % larger)."""
        r = self.ratio
        return r - 1 if r is not None and math.isfinite(r) else None

    @property
    def significant(self) -> bool:
        return self.test is not None and self.test.significant

    @property
    def verdict(self) -> str:
        """better / worse (B against A, in the metric's direction, significant and at least the minimum
        change), ~ (not significant), ≈ (significant, under the minimum), too few runs to test, or why
        there is no test."""
        bad = [(side, cell.status.upper()) for side, cell in (("A", self.a_cell), ("B", self.b_cell))
               if cell.status != "ok"]
        if len(bad) == 2 and bad[0][1] == bad[1][1]:
            return f"{bad[0][1]} in both"
        if bad:
            return " and ".join(f"{status} in {side}" for side, status in bad)
        if self.test is None:
            return "no value"
        if not self.test.testable:
            return TOO_FEW
        if not self.test.significant:
            return "~"
        if not self.test.meaningful:
            return BELOW_MIN  # real, but smaller than anything a reader should act on
        lower = self.test.ratio < 1
        return "better" if lower == (self.metric.better == "lower") else "worse"


def settings(cell: Cell) -> dict:
    """A cell's parameters, and --threads where given."""
    return {**cell.params, **({"threads": cell.threads} if cell.threads is not None else {})}


@dataclass
class Group:
    """The lines of one scenario and metric. The parameters all of them share go in the title, so
    that a row names only what tells it apart (e.g. workers=1000)."""

    scenario: str
    metric: Metric
    lines: list[Line]

    @property
    def varying(self) -> list[str]:
        keys = dict.fromkeys(k for ln in self.lines for k in settings(ln.a_cell))
        return [k for k in keys if len({repr(settings(ln.a_cell).get(k)) for ln in self.lines}) > 1]

    @property
    def title(self) -> str:
        first = settings(self.lines[0].a_cell)
        common = " ".join(f"{k}={v}" for k, v in first.items() if k not in self.varying and v != 0)
        return f"{self.scenario}: {metric_title(self.metric)}" + (f", at {common}" if common else "")

    def label(self, cell: Cell) -> str:
        values = settings(cell)
        return " ".join(f"{k}={values.get(k, '—')}" for k in self.varying)


@dataclass(frozen=True)
class Total:
    """Per scenario and metric: the geometric mean of the B/A ratios and the significant changes."""

    scenario: str
    metric: Metric
    geomean: float | None
    compared: int  # cells with a figure on both sides
    better: int
    worse: int
    not_compared: int  # FAILED, skipped or without a value on a side


@dataclass
class Result:
    a: dict
    b: dict
    lines: list[Line] = field(default_factory=list)
    only_a: list[Cell] = field(default_factory=list)
    only_b: list[Cell] = field(default_factory=list)
    totals: list[Total] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    min_change: float = MIN_CHANGE

    def groups(self) -> list[Group]:
        """Lines by scenario and metric, in report order."""
        out: dict[tuple[str, str], Group] = {}
        for line in self.lines:
            out.setdefault((line.a_cell.scenario, line.metric.key),
                           Group(line.a_cell.scenario, line.metric, [])).lines.append(line)
        return list(out.values())

    def changed(self) -> tuple[int, int, int]:
        """(significantly changed, of compared cells, FAILED or without figure)."""
        return (sum(t.better + t.worse for t in self.totals), sum(t.compared for t in self.totals),
                sum(t.not_compared for t in self.totals))


def cell_key(cell: Cell) -> tuple:
    return (cell.scenario, cell.program, params_key(cell.params), cell.threads)


def side_summary(cell: Cell, metric: Metric) -> Summary | None:
    return cell.summaries.get(metric.key) if cell.status == "ok" else None


def chosen_metrics(scenarios: list[str], keys: list[str]) -> tuple[dict[str, list[Metric]], list[str]]:
    """{scenario: metrics to compare} and notes; a key no compared scenario has is bad input."""
    if not keys:
        return {s: [get_scenario(s).metrics[0]] for s in scenarios}, []
    out: dict[str, list[Metric]] = {s: [] for s in scenarios}
    notes = []
    for key in keys:
        having = [s for s in scenarios if any(m.key == key for m in get_scenario(s).metrics)]
        if not having:
            known = "; ".join(f"{s}: {', '.join(m.key for m in get_scenario(s).metrics)}" for s in scenarios)
            raise UsageError(f"unknown metric '{key[:40]}' (metrics of the compared scenarios: {known or 'none'})")
        for s in scenarios:
            if s in having:
                out[s] += [m for m in get_scenario(s).metrics if m.key == key and m not in out[s]]
            else:
                notes.append(f"{s} has no metric {key}: not compared on it")
    return {s: ms for s, ms in out.items() if ms}, notes


def _order(cell: Cell) -> tuple:
    s = get_scenario(cell.scenario)
    return (s.report_order, s.name, s.sort_key(cell.params), cell.threads or 0, cell.program)


def geomean(ratios: list[float]) -> float | None:
    usable = [r for r in ratios if r > 0 and math.isfinite(r)]
    return math.exp(sum(math.log(r) for r in usable) / len(usable)) if usable else None


def compare_cells(a_cells: list[Cell], b_cells: list[Cell], metric_keys: list[str] | tuple = (),
                  a_info: dict | None = None, b_info: dict | None = None, min_change: float = MIN_CHANGE) -> Result:
    """B against A over the cells both have; the rest listed as one-sided. A difference is better or
    worse when significant and at least `min_change` (a fraction)."""
    a_by = {cell_key(c): c for c in a_cells}
    b_by = {cell_key(c): c for c in b_cells}
    both = sorted((k for k in a_by if k in b_by), key=lambda k: _order(b_by[k]))
    result = Result(a=a_info or {}, b=b_info or {}, min_change=min_change)
    result.only_a = sorted((c for k, c in a_by.items() if k not in b_by), key=_order)
    result.only_b = sorted((c for k, c in b_by.items() if k not in a_by), key=_order)
    scenarios = sorted({k[0] for k in both}, key=lambda s: (get_scenario(s).report_order, s))
    metrics, result.notes = chosen_metrics(scenarios, list(metric_keys))
    too_few: list[tuple[int, int]] = []
    for scenario in scenarios:
        for metric in metrics.get(scenario, []):
            lines = []
            for key in (k for k in both if k[0] == scenario):
                a_cell, b_cell = a_by[key], b_by[key]
                sa, sb = side_summary(a_cell, metric), side_summary(b_cell, metric)
                test = None
                if sa is not None and sb is not None:
                    va, vb = a_cell.values[metric.key], b_cell.values[metric.key]
                    test = compare(vb, va, ALPHA, min_change)  # its ratio is median(B) / median(A)
                    if not significance_possible(len(va), len(vb)):
                        too_few.append((len(va), len(vb)))
                lines.append(Line(a_cell, b_cell, metric, test))
            result.lines += lines
            tested = [ln for ln in lines if ln.test is not None]
            result.totals.append(Total(
                scenario, metric, geomean([ln.test.ratio for ln in tested]), len(tested),
                sum(1 for ln in tested if ln.verdict == "better"), sum(1 for ln in tested if ln.verdict == "worse"),
                len(lines) - len(tested)))
    if too_few:
        fewest = min(too_few, key=lambda n: min(n))
        result.warnings.append(
            f"{len(too_few)} compared cell(s) have too few runs for any difference to be tested at 5 % "
            f"(e.g. {fewest[0]} and {fewest[1]} runs; the test needs at least 4 runs a side, "
            "better 5 or more: run with --reps 5); they read \"too few runs to test\", not \"no difference\"")
    return result


# --------------------------------------------------------------------------- text of one line

def side_text(cell: Cell, metric: Metric) -> str:
    """The median with its CI, or FAILED / SKIPPED: a failed cell never shows a number."""
    if cell.status != "ok":
        return cell.status.upper()
    s = cell.summaries.get(metric.key)
    return with_spread(s, metric.unit) if s is not None else "—"


def change_text(line: Line) -> str:
    c = line.change
    return "—" if c is None else f"{c * 100:+.1f}%"


def p_text(line: Line) -> str:
    """p-value and the runs on each side, as benchstat shows them."""
    if line.test is None:
        return ""
    n = f"n={len(line.a_cell.values[line.metric.key])}+{len(line.b_cell.values[line.metric.key])}"
    return f"p={line.test.p_value:.3f} {n}" if line.test.p_value is not None else f"too few runs {n}"


def metric_title(metric: Metric) -> str:
    return f"{metric.label} ({metric.unit}, {metric.better} is better)"


def one_side_text(cell: Cell) -> str:
    head = cell.headline() if cell.status == "ok" else None
    figure = f"{cell.metrics[0].key} {with_spread(head, cell.metrics[0].unit)}" if head is not None \
        else cell.status.upper()
    return f"{cell.scenario} {cell.program} {cell.label()}: {figure}"


def failure_notes(result: Result) -> list[str]:
    """Why cells carry no figure: one line per program and reason, with the sides and the cell count."""
    groups: dict[tuple, tuple[set, set]] = {}
    for ln in result.lines:
        for side, c in (("A", ln.a_cell), ("B", ln.b_cell)):
            if c.status != "ok":
                sides, keys = groups.setdefault((c.program, c.status, c.reason), (set(), set()))
                sides.add(side)
                keys.add(cell_key(c))
    return [f"{program}: {status.upper()} in {' and '.join(sorted(sides))}, {len(keys)} cell(s): {reason}"
            for (program, status, reason), (sides, keys) in groups.items()]


def summary_line(result: Result) -> str:
    """Geometric mean of B/A per scenario and metric, and how many cells changed significantly."""
    parts = []
    for t in result.totals:
        if t.geomean is not None:
            parts.append(f"{t.scenario} {t.metric.key} ×{t.geomean:.3f} ({t.metric.better} is better)")
    changed, compared, not_compared = result.changed()
    better = sum(t.better for t in result.totals)
    worse = sum(t.worse for t in result.totals)
    text = "geometric mean of B/A: " + (", ".join(parts) if parts else "none (no cell with figures on both sides)")
    per_cell = len({(t.scenario) for t in result.totals}) == len(result.totals)  # one metric a scenario
    what = "compared cell(s)" if per_cell else "comparisons (cell and metric)"
    text += (f"; {changed} of {compared} {what} changed (significant by a {TEST} and at least "
             f"{result.min_change:.0%}): {better} better, {worse} worse")
    if not_compared:
        text += f"; {not_compared} not compared (FAILED, skipped or without a value)"
    return text


def session_text(info: dict) -> str:
    commit = (info.get("git_commit") or "unknown")[:12]
    return f"session {info.get('session')} ({info.get('started_at')}, commit {commit}, {info.get('status')})"


__all__ = ["Group", "Line", "Result", "Total", "compare_cells", "load_session", "resolve_session",
           "significance_possible", "TOO_FEW", "BELOW_MIN"]
