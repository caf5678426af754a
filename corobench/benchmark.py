"""Run benchmarks: verify each program at a tiny size first, then measure repetitions.

Repetitions are interleaved (rep 1 of every program, then rep 2, ...) so that a slow drift of the
machine spreads over all programs instead of landing on one. Every run is stored the moment it
ends; after a failed run the program's remaining repetitions of that benchmark are not run (a
timeout or a wrong checksum repeats itself, and would only cost time). How a single run happens
is its scenario's run kind's business (corobench/runkinds).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Callable

from corobench.discover import Program
from corobench.options import Options
from corobench.runkinds import RunRequest, kind_of
from corobench.scenarios import get_scenario
from corobench.signals import SignalGuard
from corobench.store import RunRow, Store, params_key
from corobench.suite import Benchmark


@dataclass
class Job:
    """One benchmark with the programs that will run it."""

    benchmark: Benchmark
    programs: list[Program]
    unavailable: dict[str, str] = field(default_factory=dict)  # program name -> reason


class Runner:
    def __init__(self, store: Store, session_id: int, options: Options,
                 on_run: Callable[[RunRow], None] | None = None, guard: SignalGuard | None = None):
        self.store = store
        self.session_id = session_id
        self.options = options
        self.on_run = on_run or (lambda row: None)
        self.guard = guard or SignalGuard()  # a signal waits until the row is stored
        self.stored = 0
        self.verified: dict[tuple, str | None] = {}  # (program, scenario, threads, params) -> failure reason
        self.counter = 0
        self.failures = 0

    def _record(self, row: RunRow) -> RunRow:
        with self.guard.critical():
            self.store.add_run(self.session_id, row)
            self.stored += 1
        if row.status == "failed" and row.rep > 0:
            self.failures += 1  # a failed verification run is counted through its cell's row
        self.on_run(row)
        return row

    def _cell_row(self, program: Program, bench: Benchmark, status: str, kind: str, reason: str) -> RunRow:
        """A row that stands for a whole cell that was not measured (unavailable, failed verification)."""
        return RunRow(program=program.name, impl_id=program.manifest.id, variant=program.variant,
                      scenario=bench.scenario, params=bench.params, threads=bench.threads, cpus=None, rep=1,
                      status=status, argv=[], failure_kind=kind, reason=reason)

    def run_once(self, program: Program, bench: Benchmark, params: dict, rep: int) -> RunRow:
        self.guard.check()  # a stop signal whose exception was lost starts no run
        scenario = get_scenario(bench.scenario)
        self.counter += 1
        timeout = (bench.timeout or self.options.timeout_s) * program.manifest.timeout_factor
        req = RunRequest(
            program=program, scenario=scenario, params=params, threads=bench.threads,
            warmup=bench.warmup if bench.warmup is not None else self.options.warmup, rep=rep,
            timeout_s=timeout, options=self.options, run_name=f"s{self.session_id}-{os.getpid()}-{self.counter}",
        )
        return self._record(kind_of(scenario).run(req))

    def verification_failure(self, program: Program, bench: Benchmark) -> str | None:
        """Run the program once at a tiny size (cached per session); the reason it failed, or None."""
        smoke = get_scenario(bench.scenario).smoke_params(bench.params)
        key = (program.name, bench.scenario, bench.threads, params_key(smoke))
        if key not in self.verified:
            row = self.run_once(program, bench, smoke, rep=0)
            self.verified[key] = None if row.status != "failed" else row.reason
        return self.verified[key]

    def run_job(self, job: Job, reps: int) -> None:
        bench = job.benchmark
        for program in job.programs:
            if program.name in job.unavailable:
                self._record(self._cell_row(program, bench, "skipped", "unavailable", job.unavailable[program.name]))
        active = []
        for program in (p for p in job.programs if p.name not in job.unavailable):
            reason = self.verification_failure(program, bench)
            if reason is None:
                active.append(program)
            else:
                self._record(self._cell_row(program, bench, "failed", "verification",
                                            f"failed verification at tiny size: {reason}"))
        for rep in range(1, reps + 1):
            if not active:
                break  # nothing left to measure: the remaining repetitions are no work
            for program in list(active):
                row = self.run_once(program, bench, bench.params, rep)
                if row.status != "ok":
                    active.remove(program)


def log_line(row: RunRow, outcome: str | None = None) -> str:
    """One run as the log shows it: who, what, which repetition, and what came of it."""
    head = f"{row.program:<26} {row.scenario} {' '.join(f'{k}={v}' for k, v in row.params.items() if v != 0)}"
    head += " [verify]" if row.rep == 0 else f" rep {row.rep}"
    if outcome is not None:
        return f"{head}: {outcome}"
    if row.status == "ok":
        return f"{head}: ok, {row.elapsed_ns / 1e9:.3f} s" if row.elapsed_ns else f"{head}: ok"
    return f"{head}: {row.status.upper()}: {row.reason}"


def print_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
