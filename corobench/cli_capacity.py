"""`corobench capacity echo|http`: the highest rate each server sustains within a latency objective
(capacity.py), with the options of `run` for where and how it runs."""

from __future__ import annotations

from functools import partial

import click
from rich.table import Table

from corobench import validate
from corobench.capacity import Objective, Search, drive, parse_objective
from corobench.cli_support import complete_programs, run_and_print
from corobench.errors import UsageError
from corobench.export.table import out_console
from corobench.runkinds import kind_of
from corobench.scenarios import SCENARIOS, Scenario
from corobench.suite import Benchmark, expand

SEARCHED = {"rate", "duration", "requests"}  # what the search sets on each step, not the user


@click.group()
def capacity() -> None:
    """The highest rate a server sustains within a latency objective, and the curve up to it.

    e.g. `corobench capacity http --impl rust-tokio,go --slo p99=1ms`: a closed-loop estimate,
    open-loop steps up a geometric series, a bisection around the knee; every step verified and
    stored (`corobench report latest` draws the curves).
    """


def show_capacity(rows, meta) -> None:
    from corobench.report.capacity import objective_of, results_of, summary_rows

    objective = objective_of(meta["settings"])
    table = Table(title=f"capacity at {objective.text()} (session {meta['session']}; "
                        "`corobench report latest` draws the curves)")
    for col in ("program", "capacity (bracket)", "req/s per core", "p99 at 50 %", "p99 at 90 %", "peak RSS",
                "verdict"):
        table.add_column(col, overflow="fold")
    results = results_of(rows, objective)
    for row in summary_rows(results, notes_inline=False):
        table.add_row(*row)
    console = out_console()
    console.print(table)
    for c in results:
        if c.note:
            console.print(f"{c.program}: {c.note}", highlight=False)


def capacity_command(scenario: Scenario):
    kind = kind_of(scenario)
    kind_keys = [o.name for o in kind.cli_options()]
    params = [p for p in scenario.params if p.name not in SEARCHED]

    @click.pass_context
    def command(ctx: click.Context, slo, step_s, warmup_s, reps, max_rate, resolution, impls, timeout, no_build,
                no_cgroup, dry_run, **kw) -> None:
        objective = parse_objective(list(slo))
        search = Search(objective, validate.fraction("--resolution", resolution),
                        float(validate.whole("--max-rate", max_rate, 1, 10**9)) if max_rate else None)
        step = validate.seconds("--step-s", step_s, 0.5, 3600)
        warm = validate.seconds("--warmup-s", warmup_s, -1e-9, 3600) if warmup_s is not None else 1.0
        repetitions = validate.reps(reps)
        values = {p.name: [kw.pop(p.name)] for p in params if p.long != "--warmup-s"}
        values["duration"] = [max(1, round(step))]
        if any(p.name == "warmup_s" for p in params):
            values["warmup_s"] = [round(warm)]
        kind_options = {k: kw.pop(k) for k in kind_keys}
        if kind_options.get("loadgen") not in (None, "corobench-load"):
            raise UsageError("capacity needs a fixed-rate load with latency from the intended send time: "
                             "--loadgen corobench-load")
        (bench_params,) = expand(scenario.name, values)
        run_and_print(ctx, [Benchmark(scenario=scenario.name, params=bench_params)], "table", show=show_capacity,
                      impls=impls, reps=str(repetitions), timeout=timeout, no_build=no_build, no_cgroup=no_cgroup,
                      dry_run=dry_run,
                      kind_options=kind_options, driver=partial(drive_jobs, search=search, step_s=step,
                                                                warmup_s=warm, reps=repetitions),
                      extra_settings={"capacity": {"objective": objective.limits, "step_s": step, "warmup_s": warm,
                                                   "resolution": search.resolution, "max_rate": search.max_rate,
                                                   "reps": repetitions}})

    command.__doc__ = f"Capacity of {scenario.name} servers within a latency objective."
    for p in reversed(params):
        flags = [f for f in (p.short, p.long) if f and f != "--warmup-s"]
        if flags:
            command = click.option(*flags, p.name, default=str(p.default), show_default=True, help=p.help)(command)
    for option in reversed(kind.cli_options()):
        command = click.option(*option.flags, option.name, default=option.default, help=option.help)(command)
    for option in reversed([
        click.option("--slo", multiple=True, help="A latency objective, e.g. p99=1ms or p99.9=5ms (repeatable)."),
        click.option("--step-s", default="5", show_default=True, help="Measured seconds of each step."),
        click.option("--warmup-s", default=None, help="Seconds of load before each step's window [default: 1]."),
        click.option("--reps", default="1", show_default=True, help="Repetitions of each step (merged)."),
        click.option("--max-rate", default=None, help="Offer no more than this many requests/s."),
        click.option("--resolution", default="5%", show_default=True,
                     help="Bisect the knee until the bracket is this narrow."),
        click.option("--impl", "impls", multiple=True, shell_complete=complete_programs,
                     help="Programs: ids or id:variant, comma-separated [default: all]."),
        click.option("--timeout", default=None, help="Seconds before a run is killed [default: 600]."),
        click.option("--no-build", is_flag=True, help="Do not build before running."),
        click.option("--no-cgroup", is_flag=True, help="Do not measure through a memory cgroup."),
        click.option("--dry-run", is_flag=True, help="Print what the search will run and an estimate; run nothing."),
    ]):
        command = option(command)
    return capacity.command(scenario.name)(command)


def drive_jobs(runner, jobs, search: Search, step_s: float, warmup_s: float, reps: int) -> None:
    drive(runner, jobs, search, step_s, warmup_s, reps)


def capacity_request(spec: dict) -> dict:
    """What run_and_print needs for a capacity search from a suite's checked [capacity] settings."""
    objective = Objective(dict(spec["objective"]))
    search = Search(objective, spec["resolution"], spec["max_rate"])
    return {"show": show_capacity, "driver": partial(drive_jobs, search=search, step_s=spec["step_s"],
                                                     warmup_s=spec["warmup_s"], reps=spec["reps"]),
            "extra_settings": {"capacity": {**spec, "objective": objective.limits}}}


for _scenario in SCENARIOS.values():
    if _scenario.kind == "server":
        capacity_command(_scenario)
