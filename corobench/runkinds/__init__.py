"""Run kinds, by the name a scenario gives (`Scenario.kind`)."""

from __future__ import annotations

from corobench.runkinds.base import RunKind, RunRequest, command_for, effective_threads
from corobench.runkinds.batch import BatchKind
from corobench.runkinds.server import ServerKind

RUN_KINDS: dict[str, RunKind] = {k.name: k for k in (BatchKind(), ServerKind())}


def kind_of(scenario) -> RunKind:
    return RUN_KINDS[scenario.kind]


__all__ = ["RUN_KINDS", "RunKind", "RunRequest", "command_for", "effective_threads", "kind_of"]
