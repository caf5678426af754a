"""Load generators, one module each (see base.py for the interface); the registry finds every module
of this package that defines `GENERATOR`, on first use (the scenarios import base.py, and the
generators import what reads scenarios). A scenario names the ones that can drive it."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from corobench.errors import UsageError
from corobench.loadgens.base import Agent, LoadFailed, LoadGenerator, LoadResult, LoadRun, LoadSpec


@cache
def loadgens() -> dict[str, LoadGenerator]:
    found: dict[str, LoadGenerator] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in ("base", "merge"):
            continue
        generator = getattr(importlib.import_module(f"{__name__}.{info.name}"), "GENERATOR", None)
        if isinstance(generator, LoadGenerator):
            found[generator.name] = generator
    return found


DEFAULT = "corobench-load"


def get_loadgen(name: str, scenarios: list | None = None) -> LoadGenerator:
    """The generator called `name`, checked against the scenarios it must drive."""
    generator = loadgens().get(name)
    if generator is None:
        raise UsageError(f"--loadgen must be one of {', '.join(sorted(loadgens()))}, not '{name[:40]}'")
    for scenario in scenarios or []:
        if name not in scenario.loadgens:
            raise UsageError(f"--loadgen {name} cannot drive {scenario.name} (it can: {', '.join(scenario.loadgens)})")
    return generator


__all__ = ["Agent", "DEFAULT", "LoadFailed", "LoadGenerator", "LoadResult", "LoadRun", "LoadSpec",
           "get_loadgen", "loadgens"]
