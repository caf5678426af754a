"""The scenarios: one module each (see base.py for what a scenario holds).

The registry finds every module of this package that defines `SCENARIO`; adding a scenario is
adding a module. Nothing else in the harness names a scenario.
"""

from __future__ import annotations

import importlib
import pkgutil

from corobench.errors import UsageError
from corobench.scenarios.base import CHECKSUM_MAX, CellWarning, Metric, Param, RunView, Scenario


def _load() -> dict[str, Scenario]:
    found: list[Scenario] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        scenario = getattr(module, "SCENARIO", None)
        if isinstance(scenario, Scenario):
            found.append(scenario)
    return {s.name: s for s in sorted(found, key=lambda s: (s.report_order, s.name))}


SCENARIOS: dict[str, Scenario] = _load()


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UsageError(f"unknown scenario '{name}' (known: {', '.join(SCENARIOS)})") from None


__all__ = ["CHECKSUM_MAX", "CellWarning", "SCENARIOS", "Metric", "Param", "RunView", "Scenario", "get_scenario"]
