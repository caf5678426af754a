"""Exporters: one module per format (see base.py); the registry finds every module of this package
that defines `EXPORTER`. `run`, `compare` and `report` all read this registry."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from corobench.export.base import Exporter, ReportContext


@cache
def exporters() -> dict[str, Exporter]:
    found: list[Exporter] = []
    for info in pkgutil.iter_modules(__path__):
        exporter = getattr(importlib.import_module(f"{__name__}.{info.name}"), "EXPORTER", None)
        if isinstance(exporter, Exporter):
            found.append(exporter)
    return {e.name: e for e in sorted(found, key=lambda e: (e.order, e.name))}


def default_format() -> str:
    """The format listed first (the terminal's tables)."""
    return next(iter(exporters()))


def session_formats() -> list[str]:
    return [n for n, e in exporters().items() if e.for_sessions]


def comparison_formats() -> list[str]:
    return [n for n, e in exporters().items() if e.for_comparisons]


__all__ = ["Exporter", "ReportContext", "comparison_formats", "default_format", "exporters", "session_formats"]
