"""Numbers as people read them: `1.33k`, `291 µs`, `12.3 MiB`, never `2.91e-04`."""

from __future__ import annotations

from corobench.results import Cell
from corobench.stats import Summary
from corobench.units import header, human, number, seconds, sig3  # noqa: F401  (re-exported)

def with_spread(s: Summary, unit: str) -> str:
    """median, then the median's CI (min–max when n is too small for a 95 % one)."""
    if s.n == 1:
        return human(s.median, unit)
    low, high = s.median_ci
    return f"{human(s.median, unit)} [{human(low, unit)}–{human(high, unit)}]"


def status_text(cell: Cell) -> str:
    if cell.status == "failed":
        return f"FAILED: {cell.reason}"
    if cell.status == "skipped":
        return f"SKIPPED: {cell.reason}"
    return "ok"
