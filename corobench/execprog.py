"""`corobench exec`: one program run exactly as the harness would (cwd, environment, argv), its
output on the terminal: the way to debug a FAILED run by hand."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click
from rich.console import Console

from corobench import build as builder
from corobench import validate
from corobench.discover import discover, select_programs
from corobench.errors import UsageError
from corobench.runkinds import command_for, effective_threads
from corobench.scenarios import get_scenario
from corobench.session import build_all

err = Console(stderr=True, soft_wrap=True)


def exec_program(ctx: click.Context, results: Path, impl: str, scenario_name: str, args: tuple[str, ...]) -> None:
    scenario = get_scenario(scenario_name)
    parser = click.Command("exec", params=[
        *(click.Option([f for f in (p.short, p.long) if f], p.name, default=str(p.default)) for p in scenario.params),
        click.Option(["--threads"], "threads"), click.Option(["--warmup"], "warmup"), click.Option(["--cpus"], "cpus"),
        click.Option(["--dry-run"], "dry_run", is_flag=True), click.Option(["--build"], "build", is_flag=True),
    ])
    with parser.make_context(f"corobench exec {impl} {scenario_name}", list(args), parent=ctx) as sub:
        given = dict(sub.params)
    params = scenario.normalise({p.name: given[p.name] for p in scenario.params})
    programs = select_programs(discover(), scenario.name, [impl])
    if len(programs) != 1:
        raise UsageError(f"{impl} has variants for {scenario.name}: name one ({', '.join(p.name for p in programs)})")
    program = programs[0]
    cpus = validate.cpu_list(given["cpus"]) if given["cpus"] else None
    threads = validate.threads(given["threads"]) if given["threads"] is not None else None
    warmup = validate.warmup(given["warmup"]) if given["warmup"] is not None else None
    if given["build"] and not given["dry_run"]:
        broken = build_all(results, [program.manifest.id])
        if program.manifest.id in broken:
            raise UsageError(f"{program.manifest.id} cannot run: {broken[program.manifest.id]}")
    elif program.manifest.build and not builder.is_up_to_date(program.manifest, builder.BuildState()):
        err.print(f"note: {program.manifest.id} is not built as its sources are now (`corobench build --impl "
                  f"{program.manifest.id}`, or exec --build)", highlight=False)
    if threads is not None and program.manifest.threads.mode == "none":
        raise UsageError(f"{program.manifest.id} has no worker-thread setting: --threads does not apply")
    argv, env = command_for(program, scenario, params, effective_threads(program, threads, cpus), warmup)
    extra_env = {k: v for k, v in env.items() if os.environ.get(k) != v}
    err.print(f"cd {shlex.quote(str(program.manifest.folder))} && "
              + " ".join(f"{k}={shlex.quote(v)}" for k, v in extra_env.items()) + (" " if extra_env else "")
              + (f"taskset -c {','.join(map(str, sorted(cpus)))} " if cpus else "") + shlex.join(argv),
              highlight=False, markup=False)
    if given["dry_run"]:
        return
    os.chdir(program.manifest.folder)
    if cpus:
        os.sched_setaffinity(0, cpus)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        raise UsageError(f"cannot run {argv[0]}: {exc.strerror}") from None

