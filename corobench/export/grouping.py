"""Group a scenario's cells by parameters, and rank each group by its headline metric."""

from __future__ import annotations

from corobench.results import Cell
from corobench.stats import Comparison, compare


def groups(cells: list[Cell]) -> list[tuple[str, list[Cell]]]:
    """[(parameter label, cells)] in the cells' order; a label includes --threads when set."""
    out: dict[str, list[Cell]] = {}
    for c in cells:
        label = c.label_params() + (f" threads={c.threads}" if c.threads is not None else "")
        out.setdefault(label, []).append(c)
    return list(out.items())


def ranked(cells: list[Cell]) -> list[tuple[Cell, Comparison | None]]:
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
        cmp = None if c is ok[0] else compare(best, c.values[metric.key]) if higher else \
            compare(c.values[metric.key], best)
        out.append((c, cmp))
    return out + [(c, None) for c in rest]
