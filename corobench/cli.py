"""The `corobench` command line (click). Bad input: exit 2 and one line, never a traceback."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from corobench import build as builder
from corobench.benchmark import Job, Options, Runner, log_line, planned_runs, print_log
from corobench.discover import discover, select_programs, toolchain_version, unavailable_reason
from corobench.errors import UsageError
from corobench.export import FORMATS, chain_legacy_csv, full_csv, print_table, to_json, to_markdown
from corobench.machine import git_commit, metadata
from corobench.paths import default_results_dir, writable_dir
from corobench.results import build_cells
from corobench.scenarios import SCENARIOS, get_scenario
from corobench.store import Store
from corobench.suite import Benchmark, expand, load_suite

err = Console(stderr=True)


def out_console() -> Console:
    """stdout; wide when it is a file or pipe, so that tables do not fold reasons into slivers."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=200)
DB_NAME = "corobench.sqlite"


def results_dir(ctx: click.Context) -> Path:
    return writable_dir(ctx.obj["results"], "results folder")


def split_list(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def parse_cpus(text: str | None) -> set[int] | None:
    if not text:
        return None
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise UsageError(f"--cpus takes a list like 0,1 or 0-3, not '{text}'") from None
    allowed = os.sched_getaffinity(0)
    if not cpus or not cpus <= allowed:
        raise UsageError(f"--cpus {text}: this machine offers CPUs {','.join(map(str, sorted(allowed)))}")
    return cpus


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--results", "results", type=click.Path(path_type=Path), default=None,
              help="Folder for the results database and build logs [default: results/].")
@click.option("--impls", "impls", type=click.Path(path_type=Path), multiple=True,
              help="Folder(s) to discover implementations in [default: impls/].")
@click.version_option(package_name="corobench")
@click.pass_context
def cli(ctx: click.Context, results: Path | None, impls: tuple[Path, ...]) -> None:
    """corobench: build, run, verify and measure concurrency runtimes side by side."""
    ctx.ensure_object(dict)
    ctx.obj["results"] = results or default_results_dir()
    if impls:
        os.environ["COROBENCH_IMPLS"] = os.pathsep.join(str(p.resolve()) for p in impls)


# --------------------------------------------------------------------------- list, doctor, setup

@cli.command("list")
@click.pass_context
def list_cmd(ctx: click.Context) -> None:
    """Implementations x scenarios, and whether each can run here (and if not, why)."""
    state = builder.BuildState(ctx.obj["results"])
    table = Table(title="implementations")
    table.add_column("id")
    table.add_column("language / runtime")
    for name in SCENARIOS:
        table.add_column(name, justify="center")
    table.add_column("status")
    for m in discover():
        reason = unavailable_reason(m)
        entry = state.get(m.id)
        if reason:
            status = f"[yellow]cannot run: {reason}[/]"
        elif m.build and entry and not entry.get("ok"):
            status = f"[red]build failed: {entry.get('error')} (log: {entry.get('log')})[/]"
        elif m.build and not builder.is_up_to_date(m, state):
            status = "ready to build" if not entry else "needs rebuild"
        else:
            status = "[green]ready[/]"
        cells = []
        for name in SCENARIOS:
            if name not in m.scenarios:
                cells.append("-")
            else:
                variants = m.variants_of(name)
                cells.append(", ".join(variants) if variants else "yes")
        table.add_row(m.id, f"{m.language} / {m.runtime}", *cells, status)
    out_console().print(table)


@cli.command()
def doctor() -> None:
    """Toolchains, cores, memory, load, limits, cgroup: and what would spoil a measurement."""
    from corobench.doctor import examine

    console = out_console()
    findings = examine()
    for f in findings:
        mark = "[green]ok  [/]" if f.level == "ok" else "[yellow]warn[/]"
        console.print(f"{mark} {f.topic:<20} {f.text}", highlight=False)
    warns = sum(f.level == "warn" for f in findings)
    console.print(f"{warns} warning(s)")


@cli.command()
def setup() -> None:
    """Install the Debian packages the implementations declare (needs root)."""
    from corobench.provision import install, missing_packages

    ok, message = install(missing_packages(discover()))
    err.print(message, highlight=False)
    if not ok:
        err.print("the implementations that need them will show as unavailable in 'corobench list'")


# --------------------------------------------------------------------------- build

def build_all(ctx: click.Context, ids: list[str] | None, force: bool = False) -> dict[str, str]:
    """Build the chosen implementations; {id: reason} for those that cannot run."""
    manifests = discover()
    if ids:
        known = {m.id for m in manifests}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise UsageError(f"unknown implementation '{unknown[0]}' (known: {', '.join(sorted(known))})")
        manifests = [m for m in manifests if m.id in ids]
    state = builder.BuildState(results_dir(ctx))
    broken: dict[str, str] = {}
    for m in manifests:
        reason = unavailable_reason(m)
        if reason:
            broken[m.id] = reason
            err.print(f"[yellow]skip[/]  {m.id}: {reason}", highlight=False)
            continue
        if m.build and not force and builder.is_up_to_date(m, state):
            continue
        with err.status(f"building {m.id} ..."):
            result = builder.build(m, state, force=force)
        if result.ok:
            err.print(f"[green]built[/] {m.id} ({result.seconds:.1f} s)", highlight=False)
        else:
            broken[m.id] = f"build failed: {result.error} (log: {result.log})"
            err.print(f"[red]FAIL[/]  {m.id}: {broken[m.id]}", highlight=False)
    return broken


@cli.command("build")
@click.option("--impl", "impls", multiple=True, help="Implementation id(s), comma-separated [default: all].")
@click.option("--force", is_flag=True, help="Rebuild even when nothing changed.")
@click.pass_context
def build_cmd(ctx: click.Context, impls: tuple[str, ...], force: bool) -> None:
    """Build implementations incrementally; one failure does not stop the others."""
    broken = build_all(ctx, split_list(impls), force)
    failed = {k: v for k, v in broken.items() if v.startswith("build failed")}
    if failed:
        ctx.exit(1)


# --------------------------------------------------------------------------- run

def run_options(f):
    """Options shared by `run --suite` and every `run <scenario>`."""
    options = [
        click.option("--impl", "impls", multiple=True,
                     help="Programs to run: ids or id:variant, comma-separated [default: all]."),
        click.option("--reps", type=int, default=None, help="Measured repetitions per program [default: 5]."),
        click.option("--threads", type=int, default=None, help="Worker threads for the runtimes [default: all cores]."),
        click.option("--warmup", type=int, default=None,
                     help="Unmeasured passes before the measured one [default: the manifest's]."),
        click.option("--cpus", default=None, help="Pin runs to these CPUs, e.g. 0 or 0-1."),
        click.option("--timeout", type=float, default=None, help="Seconds before a run is killed [default: 600]."),
        click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                     help="How to print this session's results."),
        click.option("--no-build", is_flag=True, help="Do not build before running."),
        click.option("--no-cgroup", is_flag=True, help="Do not measure through a memory cgroup."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def check_run_options(reps, threads, warmup, timeout) -> None:
    if reps is not None and reps < 1:
        raise UsageError(f"--reps must be at least 1, not {reps}")
    if threads is not None and threads < 1:
        raise UsageError(f"--threads must be at least 1, not {threads}")
    if warmup is not None and warmup < 0:
        raise UsageError(f"--warmup must be 0 or more, not {warmup}")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout:g}")


def execute(ctx: click.Context, benchmarks: list[Benchmark], *, impls, reps, threads, warmup, cpus,
            timeout, fmt, no_build, no_cgroup, suite_name: str | None = None) -> None:
    check_run_options(reps, threads, warmup, timeout)
    cpu_set = parse_cpus(cpus)
    wanted = split_list(impls)
    manifests = discover()
    jobs: list[Job] = []
    for bench in benchmarks:
        if threads is not None:
            bench = Benchmark(**{**bench.__dict__, "threads": threads})
        programs = select_programs(manifests, bench.scenario, wanted or list(bench.impls))
        jobs.append(Job(bench, programs))
    rdir = results_dir(ctx)
    involved = {p.manifest.id: p.manifest for job in jobs for p in job.programs}
    if no_build:
        broken = {m.id: r for m in involved.values() if (r := unavailable_reason(m))}
    else:
        broken = build_all(ctx, sorted(involved))
    for job in jobs:
        job.unavailable = {p.name: broken[p.manifest.id] for p in job.programs if p.manifest.id in broken}

    options = Options(reps=reps or 5, timeout_s=timeout or 600.0, cpus=cpu_set, warmup=warmup,
                      use_cgroup=not no_cgroup)
    store = Store(rdir / DB_NAME)
    toolchains = {i: toolchain_version(m) for i, m in sorted(involved.items()) if i not in broken}
    settings = {"reps": options.reps, "timeout_s": options.timeout_s, "threads": threads, "warmup": warmup,
                "cpus": sorted(cpu_set) if cpu_set else None, "suite": suite_name}
    command = "corobench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    session_id = store.begin_session(command, git_commit(), metadata(), toolchains, settings)
    err.print(f"session {session_id}: results in {store.path}", highlight=False)

    total = planned_runs(jobs, options.reps, options.verify_first)
    interactive = err.is_terminal
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        console=err, disable=not interactive)

    def on_run(row) -> None:
        if row.status != "skipped":
            progress.advance(task)
        progress.update(task, description=f"{row.program} {row.scenario}")
        if not interactive:
            print_log(row)  # one line per run in logs and CI
        elif row.status != "ok":
            progress.console.print(log_line(row), highlight=False, markup=False)

    runner = Runner(store, session_id, options, on_run)
    task = progress.add_task("starting", total=total)
    status = "finished"
    try:
        with progress:
            for job in jobs:
                runner.run_job(job, job.benchmark.reps or options.reps)
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        store.end_session(session_id, status)
    rows = store.runs(session_id)
    store.close()
    cells = build_cells(rows)
    if status == "interrupted":
        err.print(f"interrupted: the {len(rows)} runs that finished are stored in session {session_id}")
        sys.exit(130)
    if fmt == "csv":
        only_chain = all(c.scenario == "chain" for c in cells)
        click.echo(chain_legacy_csv(cells) if only_chain else full_csv(cells), nl=False)
    elif fmt == "md":
        click.echo(to_markdown(cells))
    elif fmt == "json":
        click.echo(to_json(cells, {"session": session_id}))
    else:
        print_table(cells)
    if runner.failures:
        err.print(f"[red]{runner.failures} run(s) FAILED[/]: stored with their reasons in session {session_id}",
                  highlight=False)
        ctx.exit(1)


@cli.group(invoke_without_command=True)
@click.option("--suite", "suite_file", type=click.Path(path_type=Path), default=None,
              help="Run the benchmarks of a suite TOML file.")
@run_options
@click.pass_context
def run(ctx: click.Context, suite_file: Path | None, **kw) -> None:
    """Run a scenario (`run chain -w 1000 ...`) or a suite (`run --suite suites/quick.toml`)."""
    if ctx.invoked_subcommand is not None:
        ctx.obj["run_defaults"] = kw
        return
    if suite_file is None:
        raise UsageError("run needs a scenario (chain, tasks, blocking) or --suite FILE")
    suite = load_suite(suite_file)
    kw["reps"] = kw["reps"] if kw["reps"] is not None else suite.reps
    kw["timeout"] = kw["timeout"] if kw["timeout"] is not None else suite.timeout
    execute(ctx, list(suite.benchmarks), suite_name=suite.name, **kw)


def scenario_command(name: str):
    scenario = get_scenario(name)

    @click.pass_context
    def command(ctx: click.Context, **kw) -> None:
        raw = {p.name: kw.pop(p.name) for p in scenario.params}
        # options given before the scenario name (`run --reps 3 chain`) count too
        for key, value in ctx.obj.get("run_defaults", {}).items():
            if kw.get(key) in (None, (), False, "table") and value not in (None, (), False):
                kw[key] = value
        values = {k: (v.split(",") if isinstance(v, str) and "," in v else v) for k, v in raw.items()}
        if values.get("etype") == "all":
            values["etype"] = ["int", "str", "str_ptr", "str_clone"]
        benchmarks = [Benchmark(scenario=name, params=params) for params in expand(name, values)]
        execute(ctx, benchmarks, **kw)

    command.__doc__ = f"{scenario.summary}. Comma lists sweep a parameter (e.g. -w 100,1000 -t all)."
    for p in reversed(scenario.params):
        command = click.option(p.short, p.long, p.name, default=str(p.default), show_default=True,
                               help=p.help)(command)
    command = run_options(command)
    return run.command(name)(command)


for _name in SCENARIOS:
    scenario_command(_name)


# --------------------------------------------------------------------------- report, sessions

@cli.command()
@click.argument("session", default="latest")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("report"), show_default=True,
              help="Folder for results.csv, report.md and the charts.")
@click.pass_context
def report(ctx: click.Context, session: str, out_dir: Path) -> None:
    """Write results.csv, results.json, report.md and charts (PNG, SVG) for a stored session."""
    from corobench.report import write_report

    written = write_report(ctx.obj["results"] / DB_NAME, session, out_dir)
    for path in written:
        click.echo(str(path))


@cli.command()
@click.pass_context
def sessions(ctx: click.Context) -> None:
    """The stored sessions."""
    db = ctx.obj["results"] / DB_NAME
    if not db.exists():
        raise UsageError(f"no results database at {db}")
    store = Store(db)
    table = Table()
    for col in ("id", "started", "status", "runs", "command"):
        table.add_column(col)
    for s in store.sessions():
        table.add_row(str(s["id"]), s["started_at"], s["status"], str(s["n_runs"]), s["command"])
    store.close()
    out_console().print(table)


def main() -> None:
    try:
        code = cli.main(standalone_mode=False, prog_name="corobench")
    except (UsageError, click.UsageError, click.BadParameter) as exc:
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        print(f"corobench: error: {' '.join(message.split())}", file=sys.stderr)
        sys.exit(2)
    except click.ClickException as exc:
        print(f"corobench: error: {' '.join(exc.format_message().split())}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, click.Abort):
        print("corobench: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
