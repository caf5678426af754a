"""Shared number formatting for the human-readable exports."""

from __future__ import annotations

from corobench.results import Cell
from corobench.stats import Summary


def number(value: float) -> str:
    """Three significant figures, with k/M/G for large values."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(value) >= div:
            scaled = value / (div if suffix != "k" else 1e3)
            return f"{scaled:.3g}{suffix}" if abs(scaled) < 1000 else f"{scaled:.0f}{suffix}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if abs(value) >= 0.001 or value == 0 else f"{value:.2e}"


def with_spread(s: Summary) -> str:
    """median, then the median's CI (or min-max when n is too small for one)."""
    if s.n == 1:
        return number(s.median)
    low, high = s.median_ci
    return f"{number(s.median)} [{number(low)}–{number(high)}]"


def status_text(cell: Cell) -> str:
    if cell.status == "failed":
        return f"FAILED: {cell.reason}"
    if cell.status == "skipped":
        return f"SKIPPED: {cell.reason}"
    return "ok"
