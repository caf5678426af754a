"""Numbers as people read them: `1.33k`, `291 µs`, `12.3 MiB`, never `2.91e-04`."""

from __future__ import annotations

TIME_STEPS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def sig3(value: float) -> str:
    """Three significant figures, without exponent notation (whole numbers stay whole)."""
    if value == 0:
        return "0"
    if value == int(value) and abs(value) < 1000:
        return str(int(value))
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def number(value: float) -> str:
    """A count or rate: three significant figures, with k/M/G for large values."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return sig3(value / div) + suffix
    return sig3(value)


def seconds(value: float) -> str:
    """A duration in the unit that keeps it between 1 and 1000: 291 µs, 12.3 ms, 4.56 s."""
    for scale, unit in TIME_STEPS:
        if abs(value) >= scale or unit == "ns":
            return f"{sig3(value / scale)} {unit}"
    return f"{sig3(value)} s"


def human(value: float, unit: str) -> str:
    """A metric's value with its unit, as a table or a label shows it."""
    if unit == "s":
        return seconds(value)
    if unit == "µs":
        return seconds(value * 1e-6)
    if unit == "MiB":
        return f"{sig3(value / 1024)} GiB" if abs(value) >= 1024 else f"{sig3(value)} MiB"
    return number(value)


def header(label: str, unit: str) -> str:
    """Column header: the unit goes into the cells for durations and memory, else in brackets."""
    if unit in ("s", "µs", "MiB") or unit in label:
        return label
    return f"{label} ({unit})"
