"""What a session will run and how long it should take: the plan `--dry-run` prints, and the
"run k of N, time left" every run's line shows.

Each planned run is estimated from earlier sessions of the same cell in the results database (the
median wall time of its measured runs there), else from what the scenario's parameters imply (a
server's duration and warm-up, a task's sleep), else from the runs of this session so far. The time
left is the remaining runs' estimates, each corrected by how this session's runs compared with
their own estimates so far (a slower machine today makes every estimate longer).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from corobench.benchmark import Job
from corobench.scenarios import get_scenario
from corobench.store import RunRow, params_key
from corobench.units import number, seconds

VERIFY_S = 2.0  # a verification run at tiny size, when nothing better is known


@dataclass
class PlannedRun:
    program: str
    scenario: str
    params: dict
    threads: int | None
    rep: int  # 0: the verification run
    estimate_s: float | None
    known: bool  # the estimate comes from earlier runs of this very cell


@dataclass
class Plan:
    runs: list[PlannedRun]
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (program, scenario, why)

    @property
    def total_s(self) -> float:
        return sum(r.estimate_s or 0.0 for r in self.runs)

    @property
    def unknown(self) -> int:
        return sum(1 for r in self.runs if r.estimate_s is None)


def history(walls: list[tuple[str, str, str, int | None, int]]) -> dict[tuple, float]:
    """Median wall seconds of earlier measured runs per cell (program, scenario, params, threads)."""
    by_cell: dict[tuple, list[float]] = {}
    for program, scenario, key, threads, wall_ns in walls:
        by_cell.setdefault((program, scenario, key, threads), []).append(wall_ns / 1e9)
    return {k: statistics.median(v) for k, v in by_cell.items()}


def make_plan(jobs: list[Job], reps_default: int, known: dict[tuple, float]) -> Plan:
    plan = Plan([])
    verified: set[tuple] = set()  # the runner verifies a program once per tiny size (Runner.verification_failure)
    for job in jobs:
        bench = job.benchmark
        scenario = get_scenario(bench.scenario)
        for program in job.programs:
            if program.name in job.unavailable:
                plan.skipped.append((program.name, bench.scenario, job.unavailable[program.name]))
                continue
            smoke = scenario.smoke_params(bench.params)
            once = (program.name, bench.scenario, bench.threads, params_key(smoke))
            if once in verified:
                continue
            verified.add(once)
            plan.runs.append(PlannedRun(program.name, bench.scenario, smoke, bench.threads, 0,
                                        known.get((program.name, bench.scenario, params_key(smoke), bench.threads),
                                                  VERIFY_S), False))
        for rep in range(1, (bench.reps or reps_default) + 1):
            for program in job.programs:
                if program.name in job.unavailable:
                    continue
                key = (program.name, bench.scenario, params_key(bench.params), bench.threads)
                guess = known.get(key)
                plan.runs.append(PlannedRun(program.name, bench.scenario, bench.params, bench.threads, rep,
                                            guess if guess is not None else scenario.estimate_s(bench.params),
                                            guess is not None))
    return plan


def plan_text(plan: Plan, benchmarks: int) -> str:
    """The plan as `--dry-run` prints it."""
    cells: dict[tuple, list[PlannedRun]] = {}
    for r in plan.runs:
        cells.setdefault((r.scenario, r.program, params_key(r.params) if r.rep else "verify", r.threads), []).append(r)
    lines = [f"{benchmarks} benchmark(s), {len({(r.program) for r in plan.runs})} program(s), {len(plan.runs)} runs "
             f"({sum(1 for r in plan.runs if r.rep == 0)} verification runs at a tiny size):"]
    for (scenario, program, _, threads), runs in cells.items():
        measured = [r for r in runs if r.rep > 0]
        if not measured:
            continue
        each = measured[0].estimate_s
        how = (f"~{seconds(each)} each ({'from earlier runs' if measured[0].known else 'from its parameters'})"
               if each is not None else "time unknown")
        params = " ".join(f"{k}={v}" for k, v in measured[0].params.items() if v != 0)
        lines.append(f"  {scenario} {program} {params}{f' threads={threads}' if threads else ''}: "
                     f"{len(measured)} runs, {how}")
    for program, scenario, why in plan.skipped:
        lines.append(f"  {scenario} {program}: not run ({why})")
    unknown = f"; {plan.unknown} run(s) of unknown length" if plan.unknown else ""
    lines.append(f"estimate: {duration(plan.total_s)}{unknown}")
    return "\n".join(lines)


def duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m {s % 60:02d}s"


class Tracker:
    """Which run of the plan this is, and how long the rest should take."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.remaining = list(plan.runs)
        self.total = len(plan.runs)
        self.done = 0
        self.started = time.monotonic()
        # per scenario: actual / estimate of this session's runs so far, and their actual seconds
        # (a scenario's runs differ from another's in overhead: a server's start, warm-up and stop)
        self.ratios: dict[str, list[float]] = {}
        self.actual: dict[str, list[float]] = {}

    def finished(self, row: RunRow, took_s: float) -> None:
        """A row was stored: the run it was is done; a program that FAILED (or was skipped) has no
        more runs of that cell to come."""
        cell = (row.program, row.scenario, row.threads)
        match = next((r for r in self.remaining if (r.program, r.scenario, r.threads) == cell and r.rep == row.rep
                      and (row.rep == 0 or r.params == row.params)), None)
        if match is None and row.argv and not self.plan.runs:  # no plan (an adaptive search): count it
            self.done += 1
        if match is not None and row.argv:  # a run that ran (not a stand-in row for a cell)
            self.remaining.remove(match)
            self.done += 1
            if match.rep > 0:  # verification runs at a tiny size say nothing of the measured ones
                if match.estimate_s:
                    self.ratios.setdefault(row.scenario, []).append(took_s / match.estimate_s)
                self.actual.setdefault(row.scenario, []).append(took_s)
        if row.status != "ok" and row.rep > 0:
            dropped = [r for r in self.remaining if (r.program, r.scenario, r.threads) == cell and r.rep > 0
                       and r.params == row.params]
            for r in dropped:
                self.remaining.remove(r)
            self.total -= len(dropped)

    def left_s(self) -> float:
        """The remaining runs' estimates, each scaled by how its scenario's runs compared with their
        estimates so far; a run with no estimate counts as its scenario's median so far (before
        any: the median of every run so far)."""
        everything = [x for xs in self.actual.values() for x in xs]
        overall = statistics.median(everything) if everything else VERIFY_S
        all_ratios = [x for xs in self.ratios.values() for x in xs]
        overall_scale = statistics.median(all_ratios) if all_ratios else 1.0
        left = 0.0
        for r in self.remaining:
            if r.estimate_s:
                ratios = self.ratios.get(r.scenario)
                left += r.estimate_s * (statistics.median(ratios) if ratios else overall_scale)
            elif r.rep == 0:
                left += VERIFY_S
            else:
                actual = self.actual.get(r.scenario)
                left += statistics.median(actual) if actual else overall
        return left

    def prefix(self) -> str:
        return f"[run {self.done} of {self.total}]" if self.total else f"[run {self.done}]"

    def suffix(self) -> str:
        elapsed = f"elapsed {duration(time.monotonic() - self.started)}"
        return f"({elapsed}, ~{duration(self.left_s())} left)" if self.total else f"({elapsed}; an adaptive search)"


def outcome_text(row: RunRow) -> str:
    """What a finished run measured, in a few words: a server run's rate and p99, a batch run's time."""
    if row.status != "ok":
        return f"{row.status.upper()}: {row.reason}"
    rps, p99 = row.metrics.get("rps"), row.metrics.get("lat_p99_us")
    if rps is not None:
        return f"ok, {number(rps)} requests/s" + (f", p99 {seconds(p99 / 1e6)}" if p99 is not None else "")
    return f"ok, {seconds(row.elapsed_ns / 1e9)}" if row.elapsed_ns else "ok"
