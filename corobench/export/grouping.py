"""Group a scenario's cells by parameters, and rank each group by its headline metric."""

from __future__ import annotations

from dataclasses import dataclass, field

from corobench.export.format import header, human, status_text, with_spread
from corobench.results import Cell
from corobench.scenarios import get_scenario
from corobench.stats import TOO_FEW, Comparison, compare, interval_name, significance_possible


def groups(cells: list[Cell]) -> list[tuple[str, list[Cell]]]:
    """[(parameter label, cells)] in the cells' order; a label includes --threads when set."""
    out: dict[str, list[Cell]] = {}
    for c in cells:
        label = c.label()
        out.setdefault(label, []).append(c)
    return list(out.items())


def ranked(cells: list[Cell], min_change: float | None = None) -> list[tuple[Cell, Comparison | None]]:
    """Best first by the headline median, each compared with the best; failed cells last."""
    ok = [c for c in cells if c.status == "ok" and c.headline() is not None]
    rest = [c for c in cells if c not in ok]
    if not ok:
        return [(c, None) for c in rest]
    metric = ok[0].metrics[0]
    higher = metric.better == "higher"
    ok.sort(key=lambda c: c.headline().median, reverse=higher)
    best = ok[0].values[metric.key]
    out: list[tuple[Cell, Comparison | None]] = []
    for c in ok:
        kw = {} if min_change is None else {"min_change": min_change}
        cmp = None if c is ok[0] else compare(best, c.values[metric.key], **kw) if higher else \
            compare(c.values[metric.key], best, **kw)
        out.append((c, cmp))
    return out + [(c, None) for c in rest]


@dataclass
class TableData:
    """One table of a parameter set: columns, rows, and the notes printed once below it."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    failed_rows: set[int] = field(default_factory=set)  # row indexes of FAILED/SKIPPED cells


def tabulate(scenario: str, label: str, group: list[Cell], terminal: bool = False,
             ci_in_header: bool = True, warnings: bool = True) -> TableData:
    """The headline with its CI and the ratio to the best, then the other metrics (all of them, or
    on the terminal the scenario's point: its `table_metrics`), then the runs; failures and (unless
    the caller lists them once for the whole scenario, see scenario_warnings) warnings as notes."""
    metrics = group[0].metrics
    if terminal:
        chosen = get_scenario(scenario).table_metrics
        others = tuple(m for key in chosen for m in metrics if m.key == key) if chosen else metrics[1:4]
    else:
        others = metrics[1:]
    head = metrics[0]
    counts = [c.headline().n for c in group if c.status == "ok" and c.headline() is not None]
    columns = ["program", header(head.label, head.unit) + (f" median [{interval_name(counts)}]" if ci_in_header else ""),
               "vs best"]
    columns += [header(m.label, m.unit) for m in others] + ["runs"]
    data = TableData(f"{scenario}: {label}", columns, [])
    for cell, cmp in ranked(group):
        runs = f"{cell.runs_ok}/{cell.runs_total}"
        if cell.status != "ok" or cell.headline() is None:
            data.failed_rows.add(len(data.rows))
            data.rows.append([cell.program, cell.status.upper(), ""] + ["—"] * len(others) + [runs])
            data.notes.append(f"{cell.program}: {status_text(cell)}")
            continue
        row = [cell.program, with_spread(cell.headline(), head.unit), "best" if cmp is None else cmp.describe()]
        row += [human(cell.summaries[m.key].median, m.unit) if m.key in cell.summaries else "—" for m in others]
        data.rows.append(row + [runs])
    if warnings:  # each kind of warning once per table, naming the programs it applies to
        data.notes += scenario_warnings(group)
    ok = [c for c in group if c.status == "ok" and c.headline() is not None]
    n = min(counts, default=0)
    if len(ok) > 1 and not significance_possible(n, n):
        data.notes.append(f"with {n} run{'s' if n != 1 else ''} per program no difference can reach significance "
                          f"at 5 % (the ratios read \"{TOO_FEW}\", which is not \"no difference\"): use --reps 5 "
                          "or more to compare")
    return data


def scenario_warnings(cells: list[Cell]) -> list[str]:
    """Each kind of warning once for these cells (one table's, or a whole scenario's, which a
    report shows below its last table): the programs it applies to, grouped by the parameters
    that tell their tables apart."""
    varying = [k for k in dict.fromkeys(k for c in cells for k in c.params)
               if len({repr(c.params.get(k)) for c in cells}) > 1]
    threads = len({c.threads for c in cells}) > 1
    kinds: dict[str, dict[str, list[str]]] = {}
    for cell in cells:
        where = " ".join([f"{k}={cell.params.get(k)}" for k in varying] +
                         ([f"threads={cell.threads}"] if threads and cell.threads is not None else []))
        for w in cell.warnings:
            summary, detail = getattr(w, "summary", str(w)), getattr(w, "detail", "")
            named = cell.program + (f" ({detail})" if detail else "")
            kinds.setdefault(summary, {}).setdefault(where, []).append(named)
    return [f"{summary}: " + "; ".join(f"{where}: {', '.join(names)}" if where else ", ".join(names)
                                       for where, names in places.items())
            for summary, places in kinds.items()]


def summary_tables(scenario: str, cells: list[Cell]) -> list[TableData]:
    """The scenario's summary (Scenario.summary), one table per set of the parameters it does not
    pivot on: a row per program, the chosen metrics' medians, grouped per pivot value."""
    spec = get_scenario(scenario).summary_table
    if spec is None or not cells:
        return []
    metrics = {m.key: m for m in cells[0].metrics}
    chosen = [metrics[k] for k in spec.metrics if k in metrics]
    keys = [k for k in dict.fromkeys(k for c in cells for k in c.params) if k != spec.pivot]
    sets: dict[tuple, list[Cell]] = {}
    for c in cells:
        sets.setdefault((tuple(repr(c.params.get(k)) for k in keys), c.threads), []).append(c)
    tables = []
    scenario_obj = get_scenario(scenario)
    for (_, threads), group in sets.items():
        pivots = sorted({c.params[spec.pivot] for c in group}, key=scenario_obj.param(spec.pivot).sort_value) \
            if spec.pivot else [None]
        shown = " ".join(f"{k}={group[0].params[k]}" for k in keys if group[0].params.get(k) not in (0, None))
        columns = ["program"]
        for value in pivots:
            for m in chosen:
                prefix = f"{spec.pivot}={value}: " if value is not None and (len(chosen) > 1 or len(pivots) > 1) else ""
                columns.append(prefix + header(m.label, m.unit))
        rows = []
        for program in sorted({c.program for c in group}):
            row = [program]
            for value in pivots:
                cell = next((c for c in group if c.program == program
                             and (value is None or c.params[spec.pivot] == value)), None)
                for m in chosen:
                    if cell is None:
                        row.append("")
                    elif cell.status != "ok" or m.key not in cell.summaries:
                        row.append(cell.status.upper() if cell.status != "ok" else "—")
                    else:
                        row.append(human(cell.summaries[m.key].median, m.unit))
            rows.append(row)
        title = spec.title + (f" — {shown}" if shown else "") + (f" threads={threads}" if threads is not None else "")
        tables.append(TableData(title, columns, rows))
    return tables
