"""The run-kind interface: how one run of one program is carried out, measured and verified.

A scenario names its kind. The runner (benchmark.py) asks the kind for runs — the verification
run at a tiny size, then the measured repetitions — and stores each RunRow it gets back; the
store and the reports read RunRows and the scenario's metrics, whatever the kind.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from corobench.discover import Program
from corobench.options import Options
from corobench.scenarios import Scenario
from corobench.store import RunRow

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class RunRequest:
    """One run: which program, which scenario and parameters, which repetition (0 = verification)."""

    program: Program
    scenario: Scenario
    params: dict
    threads: int | None  # --threads as asked (None: the runtime's default)
    warmup: int | None  # chain's unmeasured passes (None: the manifest's)
    rep: int
    timeout_s: float
    options: Options
    run_name: str  # unique within the session, e.g. for the run's cgroup


def effective_threads(program: Program, asked: int | None, cpus: set[int] | None) -> int | None:
    """--threads as passed to the program: as asked, else the number of pinned CPUs (a runtime
    must use the CPUs it has, not what its default would guess), except where threads don't apply."""
    if asked is not None:
        return asked
    if cpus and program.manifest.threads.mode != "none":
        return len(cpus)
    return None


def command_for(program: Program, scenario: Scenario, params: dict, threads: int | None,
                warmup: int | None, bind: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run this program for these parameters (a server: bound to `bind`)."""
    m = program.manifest
    argv = m.resolve(m.run) + (scenario.argv(params, bind) if bind is not None else scenario.argv(params))
    env = {**os.environ, **m.env}
    if program.variant:
        argv += ["--variant", program.variant]
    if threads is not None:
        if m.threads.mode == "flag":
            argv += ["--threads", str(threads)]
        elif m.threads.mode == "env" and m.threads.env_var:
            env[m.threads.env_var] = str(threads)
    if scenario.takes_warmup:
        k = m.warmup if warmup is None else warmup
        if k > 0:
            argv += ["--warmup", str(k)]
    return argv, env


def base_row(req: RunRequest, argv: list[str], cpus: set[int] | None) -> RunRow:
    return RunRow(
        program=req.program.name, impl_id=req.program.manifest.id, variant=req.program.variant,
        scenario=req.scenario.name, params=req.params, threads=req.threads,
        cpus=",".join(map(str, sorted(cpus))) if cpus else None, rep=req.rep, status="ok", argv=argv,
        cwd=str(req.program.manifest.folder),
    )


def refuse_threads(req: RunRequest, row: RunRow) -> bool:
    """--threads on a single-threaded runtime: the run is skipped (not measured), and says why."""
    if req.threads is not None and req.program.manifest.threads.mode == "none":
        row.status, row.failure_kind = "skipped", "unsupported"
        row.reason = f"{req.program.manifest.id} has no worker-thread setting (threads = \"none\"): --threads does not apply"
        return True
    return False


@dataclass(frozen=True)
class KindOption:
    """A `corobench run <scenario>` option that only one run kind has (e.g. --server-cpus)."""

    flags: tuple[str, ...]
    name: str
    help: str
    default: str | None = None


class RunKind(ABC):
    """How runs of a scenario are carried out. Subclasses: batch.BatchKind, server.ServerKind."""

    name: str

    def cli_options(self) -> list[KindOption]:
        return []

    def configure(self, options: Options, given: dict, scenarios: list | None = None) -> None:
        """Check this kind's CLI options (`given`, by option name) for these scenarios and record
        them in `options`."""

    def tools(self, options: Options | None = None) -> list:
        """Manifests of tools this kind's runs need built (e.g. the load generator)."""
        return []

    def settings(self, options: Options) -> dict:
        """What of `options` to store with the session's settings."""
        return {}

    @abstractmethod
    def run(self, req: RunRequest) -> RunRow:
        """Carry out one run and return its row (status ok, failed or skipped, with its reason)."""

    def plan_note(self, options: Options) -> str | None:
        """A line the CLI prints before a session of this kind (e.g. where the server is pinned)."""
        return None
