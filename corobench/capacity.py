"""Capacity: the highest rate a server sustains within a latency objective, and the curve up to it.

For each program: a short closed-loop run estimates its maximum; open-loop steps (a fixed
schedule, latency from each request's intended send time) climb a geometric series of fractions
of it; after the first step that fails, a bisection between the last passing and the first
failing rate narrows the knee to the stated resolution; then the points the summary reports, 50 %
and 90 % of the capacity, are measured where no step was near them. A step **meets** the objective when the
achieved rate is at least 99 % of the offered one, no reply failed (every reply is verified: an
error or a wrong reply FAILS the run), and every named percentile — from the repetitions' merged
HDR histograms, never averaged percentiles — is within its limit. The search stops after two
failing steps above the last passing one. A step whose load generator used 90 % or more of its
CPUs while the server had CPU to spare measured the client, not the server: it is set aside and
named, and if that is where the search ends, the capacity is reported as not reached with this
client instead of the client's limit passed off as the server's.

Every step is a stored run (so `compare`, `report` and `show` work on it); the session's settings
keep the objective, so that the result is recomputed from the runs (`summarize`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corobench.errors import UsageError
from corobench.loadgens.merge import latency_of, merged_histogram

ACHIEVED_MIN = 0.99  # of the offered rate
CLIENT_BOUND, SERVER_BUSY = 0.90, 0.90
PERCENTILES = {"p50": "p50", "p90": "p90", "p99": "p99", "p99.9": "p999", "p999": "p999", "max": "max"}
UNITS = {"us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
SLO = re.compile(r"(p50|p90|p99|p99\.9|p999|max)=([0-9]+(?:\.[0-9]+)?)(us|µs|ms|s)")
START_FRACTION = 0.25  # of the estimated maximum: the first step
GROWTH = 1.3  # each next step offers this much more
MAX_FRACTION = 1.6  # above the closed-loop maximum nothing can pass
FLOOR_FRACTION = 0.005  # below this share of the maximum the search gives up looking for a passing rate
REPORTED_FRACTIONS = (0.5, 0.9)  # of the capacity: the summary's "p99 at 50 % and 90 %" are measured there
NEAR = 0.10  # a step this close (relative) to such a point stands for it


@dataclass(frozen=True)
class Objective:
    """A latency objective: every named percentile within its limit (µs)."""

    limits: dict[str, float]  # corobench-load's key (p50, p99, p999, ...) -> µs

    def text(self) -> str:
        return ", ".join(f"{k.replace('p999', 'p99.9')} ≤ {fmt_us(v)}" for k, v in self.limits.items())


def fmt_us(us: float) -> str:
    """Three significant digits: a histogram's percentile is no more exact than that."""
    return f"{us / 1e3:.3g} ms" if us >= 1000 else f"{us:.3g} µs"


def parse_objective(items: list[str]) -> Objective:
    """--slo p99=1ms (repeatable): one line naming what is wrong otherwise."""
    limits: dict[str, float] = {}
    for item in items:
        m = SLO.fullmatch(item.strip().replace(" ", ""))
        if m is None:
            raise UsageError(f"--slo takes a percentile and a limit like p99=1ms or p99.9=5ms, not {item[:40]!r}")
        value = float(m.group(2)) * UNITS[m.group(3)]
        if not 0 < value <= 3600e6:
            raise UsageError(f"--slo {item}: the limit must be more than 0 and at most an hour")
        limits[PERCENTILES[m.group(1)]] = value
    if not limits:
        raise UsageError("capacity needs an objective: --slo p99=1ms (repeat for more percentiles)")
    return Objective(limits)


@dataclass
class Step:
    """One offered rate, its repetitions merged."""

    rate: float  # offered, requests/s (0: the closed-loop estimate)
    achieved: float | None = None  # requests/s in the measured windows
    latency_us: dict = field(default_factory=dict)  # merged over the repetitions
    failed: str | None = None  # a run FAILED (errors, wrong replies, a dead server): the step fails
    client_bound: bool = False
    server_cores: float | None = None
    rss_mib: float | None = None
    run_ids: list[int] = field(default_factory=list)

    def meets(self, objective: Objective) -> bool:
        if self.failed or self.achieved is None or self.achieved < ACHIEVED_MIN * self.rate:
            return False
        return all(self.latency_us.get(k) is not None and self.latency_us[k] <= limit
                   for k, limit in objective.limits.items())

    def why_not(self, objective: Objective) -> str:
        if self.failed:
            return self.failed
        if self.achieved is None or self.achieved < ACHIEVED_MIN * self.rate:
            return f"achieved {self.achieved or 0:.0f}/s of {self.rate:.0f}/s offered"
        over = [f"{k} {fmt_us(self.latency_us.get(k) or 0)} > {fmt_us(v)}" for k, v in objective.limits.items()
                if (self.latency_us.get(k) or float("inf")) > v]
        return "; ".join(over)


def step_of(rows) -> Step:
    """A step from its stored runs (the repetitions at one offered rate)."""
    rate = rows[0].params.get("rate") or 0
    step = Step(float(rate), run_ids=[r.id for r in rows if r.id is not None])
    failed = [r for r in rows if r.status != "ok"]
    if failed:
        step.failed = f"FAILED: {failed[0].reason}"
        return step
    windows = sum(r.metrics.get("window_s") or 0 for r in rows)
    requests = sum(r.metrics.get("requests") or 0 for r in rows)
    step.achieved = requests / windows if windows else None
    hist = merged_histogram([h for r in rows if (h := (r.result or {}).get("client", {}).get("histogram"))])
    if hist is not None:
        step.latency_us = latency_of(hist)
    else:  # no histogram stored (a generator without one): the first repetition's own percentiles
        step.latency_us = {k[4:-3]: v for k, v in rows[0].metrics.items() if k.startswith("lat_") and k.endswith("_us")}
    cores = [r.metrics.get("server_cores") for r in rows if r.metrics.get("server_cores") is not None]
    step.server_cores = sum(cores) / len(cores) if cores else None
    rss = [r.metrics.get("vm_hwm_bytes") for r in rows if r.metrics.get("vm_hwm_bytes")]
    step.rss_mib = max(rss) / 2**20 if rss else None
    step.client_bound = any((r.metrics.get("client_cpu_share") or 0) >= CLIENT_BOUND
                            and (r.metrics.get("server_cpu_share") or 1) < SERVER_BUSY for r in rows)
    return step


@dataclass
class Capacity:
    """One program's result: the capacity with its bracket, or why there is none, and the curve."""

    program: str
    estimate: float | None  # the closed-loop maximum
    steps: list[Step]  # the measured steps, by offered rate (client-bound ones included, flagged)
    capacity: float | None  # the highest passing offered rate
    first_fail: float | None  # the lowest failing rate above it (the bracket's top)
    verdict: str  # "capacity", "client-bound", "none passed", "failed"
    note: str = ""

    def at(self, fraction: float) -> Step | None:
        """The measured step at a fraction of the capacity (for p99 at 50 % and 90 %): the nearest one
        within NEAR of it, else None — a step at the capacity itself is no figure for its half."""
        if not self.capacity:
            return None
        target = fraction * self.capacity
        usable = [s for s in self.steps if not s.client_bound and not s.failed and abs(s.rate - target) <= NEAR * target]
        return min(usable, key=lambda s: abs(s.rate - target), default=None)


def judge(program: str, estimate: float | None, steps: list[Step], objective: Objective) -> Capacity:
    """The capacity from measured steps (pure: the report recomputes it from stored runs)."""
    ordered = sorted(steps, key=lambda s: s.rate)
    usable = [s for s in ordered if not s.client_bound]
    passing = [s for s in usable if s.meets(objective)]
    if not usable and ordered:
        return Capacity(program, estimate, ordered, None, None, "client-bound",
                        f"every step was client-bound from {ordered[0].rate:.0f}/s: the capacity could not be "
                        "reached with this client (give the load generator more CPUs or hosts)")
    if not passing:
        first = usable[0] if usable else None
        return Capacity(program, estimate, ordered, None, first.rate if first else None, "none passed",
                        f"no step met the objective (the lowest, {first.rate:.0f}/s: {first.why_not(objective)})"
                        if first else "no step ran")
    best = max(passing, key=lambda s: s.rate)
    above = [s for s in usable if s.rate > best.rate and not s.meets(objective)]
    bound_above = [s for s in ordered if s.client_bound and s.rate > best.rate]
    first_fail = min((s.rate for s in above), default=None)
    if bound_above and (first_fail is None or min(s.rate for s in bound_above) < first_fail):
        return Capacity(program, estimate, ordered, best.rate, None, "client-bound",
                        f"met the objective up to {best.rate:.0f}/s; above that the load generator was the limit "
                        f"(from {min(s.rate for s in bound_above):.0f}/s): the server's capacity could not be reached "
                        "with this client")
    if first_fail is None:  # the search ran out of rates to offer (--max-rate, or 1.6x the estimate)
        return Capacity(program, estimate, ordered, best.rate, None, "capacity",
                        f"every step up to the highest offered, {best.rate:.0f}/s, met the objective: "
                        "the capacity is at least that")
    return Capacity(program, estimate, ordered, best.rate, first_fail, "capacity")


@dataclass(frozen=True)
class Search:
    """How the steps are chosen."""

    objective: Objective
    resolution: float = 0.05  # stop bisecting when the bracket is this narrow (of its lower end)
    max_rate: float | None = None
    max_steps: int = 24

    def series(self, estimate: float) -> list[float]:
        """The geometric series of offered rates, from START_FRACTION of the estimate; a --max-rate
        below that start is the one step of the series (the halving then goes down from it)."""
        top = min(self.max_rate or float("inf"), estimate * MAX_FRACTION)
        rates, r = [], min(START_FRACTION * estimate, top)
        while r <= top and len(rates) < self.max_steps:
            rates.append(round(r))
            r *= GROWTH
        return [x for x in rates if x >= 1]

    def run(self, measure, estimate: float) -> list[Step]:
        """Measure the series until two failing steps above the last passing one (halving down when
        even the first fails), then bisect the bracket; `measure(rate)` runs one step and returns it."""
        steps: list[Step] = []
        fails_above = 0
        for rate in self.series(estimate):
            step = measure(rate)
            steps.append(step)
            if step.client_bound:
                fails_above += 1  # not the server's failure, but no reason to climb further either
            elif step.meets(self.objective):
                fails_above = 0
            else:
                fails_above += 1
            if fails_above >= 2 or len(steps) >= self.max_steps:
                break
        # nothing passed: the knee is below the series' start, so halve down to it
        floor = max(1.0, estimate * FLOOR_FRACTION)
        while steps and len(steps) < self.max_steps and not any(
                not s.client_bound and s.meets(self.objective) for s in steps):
            lowest = min(s.rate for s in steps)
            if lowest / 2 < floor:
                break
            steps.append(measure(round(lowest / 2)))
        while len(steps) < self.max_steps:
            passing = [s.rate for s in steps if not s.client_bound and s.meets(self.objective)]
            if not passing:
                break
            low = max(passing)
            failing = [s.rate for s in steps if not s.client_bound and s.rate > low and not s.meets(self.objective)]
            if not failing:
                break
            high = min(failing)
            if (high - low) / low <= self.resolution:
                break
            mid = round((low + high) / 2)
            if mid in (low, high):
                break
            steps.append(measure(mid))
        # the points the summary reports (p99 at 50 % and 90 % of the capacity), where no step was
        # near them: the series starts at a quarter of the estimate, which can be above half the knee
        passing = [s.rate for s in steps if not s.client_bound and s.meets(self.objective)]
        if passing:
            for fraction in REPORTED_FRACTIONS:
                target = round(fraction * max(passing))
                if target >= 1 and not any(not s.client_bound and abs(s.rate - target) <= NEAR * target
                                           for s in steps):
                    steps.append(measure(target))
        return steps


TYPICAL_STEPS = (6, 14)  # steps per program seen in searches here (series, halving, bisection, the 50/90 % points)
RUN_OVERHEAD_S = 0.4  # a step's start, connect and stop beyond its warm-up and window (6.4 s a 1 + 5 s run here)


def plan_text(programs: list[str], spec: dict) -> str:
    """What `capacity --dry-run` prints: the search's shape and a time range (the steps are chosen
    as it measures, so a range, from the steps searches here have taken)."""
    from corobench.plan import duration
    step_s, warmup_s, reps = float(spec.get("step_s", 5)), float(spec.get("warmup_s", 1)), int(spec.get("reps", 1))
    run_s = step_s + warmup_s + RUN_OVERHEAD_S
    low, high = ((2 + run_s * (1 + n * reps)) * len(programs) for n in TYPICAL_STEPS)
    objective = Objective(dict(spec["objective"])).text() if spec.get("objective") else "?"
    lines = [f"a capacity search at {objective} of {len(programs)} program(s): {', '.join(programs) or 'none'}",
             f"per program: a verification run, a closed-loop estimate, then {TYPICAL_STEPS[0]}–{TYPICAL_STEPS[1]} "
             f"open-loop steps (the search picks them as it measures) of {reps} run(s) of {warmup_s:g} s warm-up "
             f"+ {step_s:g} s",
             f"estimate: {duration(low)} to {duration(high)}"]
    return "\n".join(lines)


def summarize(cells_rows: dict[str, list], objective: Objective) -> list[Capacity]:
    """Per program, its capacity from a capacity session's stored runs ({program: rows})."""
    out = []
    for program, rows in cells_rows.items():
        measured = [r for r in rows if r.rep > 0]
        by_rate: dict[float, list] = {}
        for r in measured:
            by_rate.setdefault(float(r.params.get("rate") or 0), []).append(r)
        estimate_rows = by_rate.pop(0.0, [])
        estimate = step_of(estimate_rows).achieved if estimate_rows else None
        steps = [step_of(rows) for _, rows in sorted(by_rate.items())]
        if not steps and estimate_rows and estimate_rows[0].status != "ok":
            out.append(Capacity(program, None, [], None, None, "failed",
                                f"the closed-loop estimate FAILED: {estimate_rows[0].reason}"))
            continue
        out.append(judge(program, estimate, steps, objective))
    return out


def drive(runner, jobs, search: Search, step_s: float, warmup_s: float, reps: int) -> None:
    """A capacity session's runs: per program, its verification, its closed-loop estimate, then the
    search's steps, every run stored as it ends (benchmark.Runner)."""
    for job in jobs:
        bench = job.benchmark
        for program in job.programs:
            if program.name in job.unavailable:
                runner._record(runner._cell_row(program, bench, "skipped", "unavailable", job.unavailable[program.name]))
                continue
            reason = runner.verification_failure(program, bench)
            if reason is not None:
                runner._record(runner._cell_row(program, bench, "failed", "verification",
                                                f"failed verification at tiny size: {reason}"))
                continue
            base = {**bench.params, "duration": max(1, round(step_s)), "rate": 0}
            if "warmup_s" in base:
                base["warmup_s"] = round(warmup_s)
            if "requests" in base:
                base["requests"] = 0
            if "connections" in base and "concurrency" in base:
                base["connections"] = 0  # echo: as many connections as the step's time allows
            estimate = runner.run_once(program, bench, base, 1)
            if estimate.status != "ok" or not estimate.metrics.get("rps"):
                continue

            def measure(rate: float, program=program) -> Step:
                return step_of([runner.run_once(program, bench, {**base, "rate": int(rate)}, k)
                                for k in range(1, reps + 1)])

            search.run(measure, estimate.metrics["rps"])
