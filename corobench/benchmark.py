"""Run benchmarks: verify each program at a tiny size first, then measure repetitions.

Repetitions are interleaved (rep 1 of every program, then rep 2, ...) so that a slow drift of the
machine spreads over all programs instead of landing on one. Every run is stored the moment it
ends; after a failed run the program's remaining repetitions of that benchmark are not run (a
timeout or a wrong checksum repeats itself, and would only cost time).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Callable

from corobench.cgroup import MemoryCgroup
from corobench.discover import Program
from corobench.measure import run_measured
from corobench.scenarios import Scenario, get_scenario
from corobench.store import RunRow, Store, params_key
from corobench.suite import Benchmark
from corobench.verify import verify


@dataclass
class Options:
    reps: int = 5
    timeout_s: float = 600.0
    cpus: set[int] | None = None
    warmup: int | None = None  # None: each manifest's default
    use_cgroup: bool = True
    verify_first: bool = True


@dataclass
class Job:
    """One benchmark with the programs that will run it."""

    benchmark: Benchmark
    programs: list[Program]
    unavailable: dict[str, str] = field(default_factory=dict)  # program name -> reason


def command_for(program: Program, scenario: Scenario, params: dict, threads: int | None,
                warmup: int | None) -> tuple[list[str], dict[str, str]]:
    m = program.manifest
    argv = m.resolve(m.run) + scenario.argv(params)
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


class Runner:
    def __init__(self, store: Store, session_id: int, options: Options,
                 on_run: Callable[[RunRow], None] | None = None):
        self.store = store
        self.session_id = session_id
        self.options = options
        self.on_run = on_run or (lambda row: None)
        self.verified: dict[tuple, str | None] = {}  # (program, scenario, threads) -> failure reason
        self.counter = 0
        self.failures = 0

    def _base_row(self, program: Program, bench: Benchmark, params: dict, rep: int, argv: list[str]) -> RunRow:
        return RunRow(
            program=program.name, impl_id=program.manifest.id, variant=program.variant,
            scenario=bench.scenario, params=params, threads=bench.threads,
            cpus=",".join(map(str, sorted(self.options.cpus))) if self.options.cpus else None,
            rep=rep, status="ok", argv=argv,
        )

    def _record(self, row: RunRow) -> RunRow:
        self.store.add_run(self.session_id, row)
        if row.status == "failed" and row.rep > 0:
            self.failures += 1  # a failed verification run is counted through its cell's row
        self.on_run(row)
        return row

    def skip(self, program: Program, bench: Benchmark, reason: str) -> RunRow:
        row = self._base_row(program, bench, bench.params, 1, [])
        row.status, row.failure_kind, row.reason = "skipped", "unavailable", reason
        return self._record(row)

    def run_once(self, program: Program, bench: Benchmark, params: dict, rep: int) -> RunRow:
        scenario = get_scenario(bench.scenario)
        warmup = bench.warmup if bench.warmup is not None else self.options.warmup
        if rep == 0:
            warmup = 0  # the verification run checks correctness, not speed
        argv, env = command_for(program, scenario, params, bench.threads, warmup)
        row = self._base_row(program, bench, params, rep, argv)
        if bench.threads is not None and program.manifest.threads.mode == "none":
            row.status, row.failure_kind = "skipped", "unsupported"
            row.reason = f"{program.manifest.id} is single-threaded by design: --threads does not apply"
            return self._record(row)
        timeout = (bench.timeout or self.options.timeout_s) * program.manifest.timeout_factor
        self.counter += 1
        cgroup = MemoryCgroup.create(f"s{self.session_id}-{os.getpid()}-{self.counter}") \
            if self.options.use_cgroup else None
        try:
            m = run_measured(argv, cwd=str(program.manifest.folder), env=env, timeout_s=timeout,
                             cpus=self.options.cpus, cgroup=cgroup)
        finally:
            if cgroup is not None:
                cgroup.remove()
        verdict = verify(scenario, params, m, timeout_s=timeout, threads=bench.threads,
                         variant=program.variant)
        row.exit_code, row.term_signal = m.exit_code, m.term_signal
        row.wall_ns, row.user_s, row.sys_s = m.wall_ns, m.user_s, m.sys_s
        row.max_rss_kb, row.cgroup_peak_bytes = m.max_rss_kb, m.cgroup_peak_bytes
        row.other_cpu_fraction, row.loadavg = m.other_cpu_fraction, m.loadavg_before
        row.stderr_tail = m.stderr or None
        if verdict.ok:
            result = verdict.result or {}
            row.result = result
            row.elapsed_ns = result.get("elapsed_ns")
            row.spawn_ns = result.get("spawn_ns")
            threads = result.get("threads")
            row.reported_threads = threads if isinstance(threads, int) else None
        else:
            row.status, row.failure_kind, row.reason = "failed", verdict.kind, verdict.reason
            if m.stdout.strip():
                row.result = {"raw_stdout": m.stdout[:2000]}
        return self._record(row)

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
        for name, reason in job.unavailable.items():
            program = next(p for p in job.programs if p.name == name)
            self.skip(program, bench, reason)
        active = [p for p in job.programs if p.name not in job.unavailable]
        if self.options.verify_first:
            still = []
            for program in active:
                reason = self.verification_failure(program, bench)
                if reason is None:
                    still.append(program)
                else:
                    row = self._base_row(program, bench, bench.params, 1, [])
                    row.status, row.failure_kind = "failed", "verification"
                    row.reason = f"failed verification at tiny size: {reason}"
                    self._record(row)
            active = still
        for rep in range(1, reps + 1):
            for program in list(active):
                row = self.run_once(program, bench, bench.params, rep)
                if row.status != "ok":
                    active.remove(program)


def planned_runs(jobs: list[Job], reps_default: int, verify_first: bool) -> int:
    total = 0
    for job in jobs:
        n = len([p for p in job.programs if p.name not in job.unavailable])
        total += n * (job.benchmark.reps or reps_default) + (n if verify_first else 0)
    return total


def log_line(row: RunRow) -> str:
    head = f"{row.program:<26} {row.scenario} {' '.join(f'{k}={v}' for k, v in row.params.items())}"
    if row.rep == 0:
        head += " [verify]"
    else:
        head += f" rep {row.rep}"
    if row.status == "ok":
        return f"{head}: ok, {row.elapsed_ns / 1e9:.3f} s" if row.elapsed_ns else f"{head}: ok"
    return f"{head}: {row.status.upper()}: {row.reason}"


def print_log(row: RunRow) -> None:
    print(log_line(row), file=sys.stderr, flush=True)
