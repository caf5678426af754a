"""The `corobench` command line (click). Bad input: exit 2 and one line, never a traceback."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from dataclasses import replace
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from corobench import build as builder
from corobench import validate
from corobench.benchmark import Job, Runner, log_line, planned_runs, print_log
from corobench.discover import discover, discover_all, runtime_settings, select_programs, toolchain_version, unavailable_reason
from corobench import tracking
from corobench.errors import (EXIT_BAD_INPUT, EXIT_HARNESS_BUG, EXIT_OK, EXIT_RUNS_FAILED, EXIT_STORE_FAILED,
                              Interrupted, StoreError, UsageError)
from corobench.recovery import SessionTracker, recover_abandoned
from corobench.signals import SignalGuard
from corobench.export import FORMATS, full_csv, legacy_text, print_table, to_json, to_markdown
from corobench.export.table import out_console
from corobench.crash import write_crash_log
from corobench.machine import git_commit, metadata
from corobench.options import Options
from corobench.paths import default_results_dir, writable_dir
from corobench.results import build_cells
from corobench.runkinds import RUN_KINDS, command_for, effective_threads, kind_of
from corobench.scenarios import SCENARIOS, Scenario, get_scenario
from corobench.store import Store
from corobench.suite import Benchmark, expand, load_suite
from corobench.verify import clean_text

err = Console(stderr=True, soft_wrap=True)  # a message is one line, however long


DB_NAME = "corobench.sqlite"


def results_dir(ctx: click.Context) -> Path:
    return writable_dir(ctx.obj["results"], "results folder")


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
    recover(ctx.obj["results"] / DB_NAME)


def recover(db: Path) -> None:
    """Sessions whose corobench was killed outright: marked abandoned, their leftovers killed."""
    if not db.is_file():
        return
    try:
        store = Store(db)
    except UsageError:
        return  # a damaged database is reported by the commands that read it
    try:
        for line in recover_abandoned(store):
            err.print(f"corobench: {line}", highlight=False)
    except (UsageError, StoreError):
        pass
    finally:
        store.close()


# --------------------------------------------------------------------------- list, doctor, setup

@cli.command("list")
@click.pass_context
def list_cmd(ctx: click.Context) -> None:
    """Implementations x scenarios, and whether each can run here (and if not, why)."""
    state = builder.BuildState(ctx.obj["results"])
    table = Table(title="implementations (scenarios: yes, or the variants)")
    table.add_column("id", no_wrap=True)  # the names a user types: never cut
    table.add_column("language / runtime")
    for name in SCENARIOS:
        table.add_column(name, justify="center", overflow="fold")  # variant names are typed too: never cut
    table.add_column("status", no_wrap=True)
    details: list[str] = []  # why something cannot run: below the table, whole
    console = out_console()

    def status_of(m) -> str:
        reason = unavailable_reason(m)
        entry = state.get(m.id)
        if reason:
            details.append(f"{m.id}: cannot run: {reason}")
            return "[yellow]cannot run[/]"
        if m.build and entry and not entry.get("ok"):
            details.append(f"{m.id}: build failed: {entry.get('error')} (log: {entry.get('log')})")
            return "[red]build failed[/]"
        if m.build and not builder.is_up_to_date(m, state):
            return "ready to build" if not entry else "needs rebuild"
        return "[green]ready[/]"

    for m in discover():
        cells = []
        for name in SCENARIOS:
            if name not in m.scenarios:
                cells.append("-")
            else:
                variants = m.variants_of(name)
                cells.append(", ".join(variants) if variants else "yes")
        table.add_row(m.id, f"{m.language} / {m.runtime}", *cells, status_of(m))
    console.print(table)
    for tool in all_tools():
        console.print(f"tool {tool.id} ({', '.join(tool.scenarios)}): {status_of(tool)}", highlight=False)
    for bad in discover_all()[1]:
        details.append(f"broken manifest {bad.path}: {clean_text(bad.reason, 300)}")
    for line in details:
        console.print("  " + line, highlight=False, markup=False, soft_wrap=True)


@cli.command()
def doctor() -> None:
    """Toolchains, cores, memory, load, limits, cgroup: and what would spoil a measurement."""
    from corobench.doctor import examine

    console = out_console()
    findings = examine()
    for f in findings:
        mark = "[green]ok  [/]" if f.level == "ok" else "[yellow]warn[/]"
        console.print(f"{mark} {f.topic:<20} {f.text}", highlight=False, soft_wrap=True)
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

def all_tools() -> list:
    """The tools the run kinds need (e.g. the load generator): built like implementations."""
    return [m for kind in RUN_KINDS.values() for m in kind.tools()]


def build_all(ctx: click.Context, ids: list[str] | None, force: bool = False,
              manifests: list | None = None) -> dict[str, str]:
    """Build the chosen implementations (and tools); {id: reason} for those that cannot run."""
    manifests = manifests if manifests is not None else discover() + all_tools()
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
        if not m.build or (not force and builder.is_up_to_date(m, state)):
            continue  # nothing to build, or nothing changed: no "built" line for work not done
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
    broken = build_all(ctx, [i for item in impls for i in validate.comma_list(item)], force)
    failed = {k: v for k, v in broken.items() if v.startswith("build failed")}
    if failed:
        ctx.exit(1)


# --------------------------------------------------------------------------- run

RUN_OPTIONS = ("impls", "reps", "threads", "warmup", "cpus", "timeout", "fmt", "no_build", "no_cgroup")


def run_options(f):
    """Options shared by `run --suite` and every `run <scenario>` (checked by corobench/validate.py)."""
    options = [
        click.option("--impl", "impls", multiple=True,
                     help="Programs to run: ids or id:variant, comma-separated [default: all]."),
        click.option("--reps", default=None, help="Measured repetitions per program [default: 5]."),
        click.option("--threads", default=None,
                     help="Worker threads for the runtimes; a comma list sweeps [default: the runtime's, "
                          "or the number of --cpus]."),
        click.option("--warmup", default=None,
                     help="Unmeasured passes before the measured one, for scenarios that take them "
                          "(chain) [default: the manifest's]."),
        click.option("--cpus", default=None, help="Pin runs to these CPUs, e.g. 0 or 0-1."),
        click.option("--timeout", default=None, help="Seconds before a run is killed [default: 600]."),
        click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                     help="How to print this session's results (legacy: the original benchmark's format)."),
        click.option("--no-build", is_flag=True, help="Do not build before running."),
        click.option("--no-cgroup", is_flag=True, help="Do not measure through a memory cgroup."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def explicit(ctx: click.Context, names) -> dict:
    """The options of this command that the user gave on the command line (not defaults)."""
    return {n: ctx.params[n] for n in names if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE}


def execute(ctx: click.Context, benchmarks: list[Benchmark], **kw) -> None:
    """Build, run and print a session; SIGTERM and SIGHUP stop it as Ctrl-C does, builds included."""
    guard = SignalGuard().install()
    try:
        _execute(ctx, benchmarks, guard, **kw)
    finally:
        guard.restore()
        tracking.current = None


def _execute(ctx: click.Context, benchmarks: list[Benchmark], guard: SignalGuard, *, impls, reps, threads, warmup,
             cpus, timeout, fmt, no_build, no_cgroup, suite_name: str | None = None, suite_reps: int | None = None,
             suite_timeout: float | None = None, kind_options: dict | None = None) -> None:
    options = Options(
        reps=validate.reps(reps) if reps is not None else suite_reps or 5,
        timeout_s=validate.seconds("--timeout", timeout) if timeout is not None else suite_timeout or 600.0,
        cpus=validate.cpu_list(cpus) if cpus else None,
        warmup=validate.warmup(warmup) if warmup is not None else None,
        use_cgroup=not no_cgroup,
    )
    thread_counts = [validate.threads(t) for t in validate.comma_list(threads)] if threads is not None else [None]
    wanted = [name for item in impls for name in validate.comma_list(item)]
    manifests, broken_manifests = discover_all()
    for bad in broken_manifests:
        err.print(f"[yellow]skip[/]  broken manifest {bad.path}: {clean_text(bad.reason, 300)}", highlight=False)
    kinds = {kind_of(get_scenario(b.scenario)) for b in benchmarks}
    for kind in kinds:
        kind.configure(options, kind_options or {})
    jobs: list[Job] = []
    for bench in benchmarks:
        for count in thread_counts:
            b = bench if count is None else replace(bench, threads=count)
            jobs.append(Job(b, select_programs(manifests, b.scenario, wanted or list(b.impls))))
    rdir = results_dir(ctx)
    involved = {p.manifest.id: p.manifest for job in jobs for p in job.programs}
    tools = {kind: kind.tools() for kind in kinds}  # e.g. the load generator of server runs
    involved.update({m.id: m for ms in tools.values() for m in ms})
    if no_build:
        broken = {m.id: r for m in involved.values() if (r := unavailable_reason(m))}
    else:
        broken = build_all(ctx, sorted(involved), manifests=list(involved.values()))
    for job in jobs:
        kind = kind_of(get_scenario(job.benchmark.scenario))
        no_tool = [f"{m.id} cannot run: {broken[m.id]}" for m in tools[kind] if m.id in broken]
        job.unavailable = {p.name: broken.get(p.manifest.id) or no_tool[0] for p in job.programs
                           if p.manifest.id in broken or no_tool}

    store = Store(rdir / DB_NAME, for_writing=True)
    ready = {i: m for i, m in sorted(involved.items()) if i not in broken}
    toolchains = {i: toolchain_version(m) for i, m in ready.items()}
    runtime_info = {i: info for i, m in ready.items() if (info := runtime_settings(m))}
    settings = {"reps": options.reps, "timeout_s": options.timeout_s, "threads": threads, "warmup": options.warmup,
                "cpus": sorted(options.cpus) if options.cpus else None, "suite": suite_name,
                "runtime_info": runtime_info, **{k: v for kind in kinds for k, v in kind.settings(options).items()}}
    command = "corobench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    with guard.critical():
        session_id = store.begin_session(command, git_commit(), metadata(), toolchains, settings,
                                          os.getpid(), tracking.process_identity(os.getpid()))
    status, code = run_session(store, session_id, jobs, options, kinds, guard)
    rows = store.runs(session_id)
    store.close()
    if status != "finished":
        err.print(f"{status}: the {len(rows)} runs that finished are stored in session {session_id}",
                  highlight=False)
        ctx.exit(code)
    cells = build_cells(rows)
    if fmt == "csv":
        click.echo(full_csv(cells), nl=False)
    elif fmt == "legacy":
        click.echo(legacy_text(cells), nl=False)
    elif fmt == "md":
        click.echo(to_markdown(cells))
    elif fmt == "json":
        from corobench.report import session_meta

        with Store(rdir / DB_NAME) as again:
            meta = session_meta(again.session(str(session_id)))
        click.echo(to_json(cells, meta))
    else:
        print_table(cells)
    if code:
        err.print(f"[red]{code_failures(store, rows)} run(s) FAILED[/]: stored with their reasons in session "
                  f"{session_id}", highlight=False)
        ctx.exit(code)


def code_failures(store: Store, rows) -> int:
    return sum(1 for r in rows if r["status"] == "failed" and r["rep"] > 0)


def run_session(store: Store, session_id: int, jobs: list[Job], options: Options, kinds, guard: SignalGuard
                ) -> tuple[str, int]:
    """Run the jobs of a session; (its final status, the exit code). The session row always ends
    with the truth: finished, interrupted (a signal), store-failed (a write failed) or crashed (a bug)."""
    err.print(f"session {session_id}: results in {store.path}", highlight=False)
    for kind in kinds:
        note = kind.plan_note(options)
        if note:
            err.print(note, highlight=False)
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

    runner = Runner(store, session_id, options, on_run, guard)
    task = progress.add_task("starting", total=planned_runs(jobs, options.reps))
    tracking.current = SessionTracker(store, session_id, guard)
    status, code = "finished", EXIT_OK
    try:
        with progress:
            for job in jobs:
                runner.run_job(job, job.benchmark.reps or options.reps)
        code = EXIT_RUNS_FAILED if runner.failures else EXIT_OK
    except Interrupted as stop:
        status, code = "interrupted", 128 + stop.signum
    except KeyboardInterrupt:
        status, code = "interrupted", 128 + signal.SIGINT
    except StoreError as exc:
        status, code = "store-failed", EXIT_STORE_FAILED
        err.print(f"corobench: {exc}; the session stopped: {runner.stored} runs are stored, the run in progress "
                  "is not", highlight=False)
    except Exception:
        status = "crashed"
        raise  # entry() writes the traceback to a log and exits 70
    finally:
        tracking.current = None
        with guard.critical():
            try:
                store.end_session(session_id, status)
            except StoreError:
                pass  # the disk is still full: the next command marks it abandoned
    return status, code


@cli.group(invoke_without_command=True)
@click.option("--suite", "suite_file", type=click.Path(path_type=Path), default=None,
              help="Run the benchmarks of a suite TOML file.")
@run_options
@click.pass_context
def run(ctx: click.Context, suite_file: Path | None, **kw) -> None:
    """Run a scenario (`run chain -w 1000 ...`) or a suite (`run --suite suites/quick.toml`)."""
    if ctx.invoked_subcommand is not None:
        # options given before the scenario name (`run --reps 3 chain`) count, unless given again after it
        ctx.obj["run_given"] = explicit(ctx, RUN_OPTIONS)
        return
    if suite_file is None:
        raise UsageError(f"run needs a scenario ({', '.join(SCENARIOS)}) or --suite FILE")
    suite = load_suite(suite_file)
    execute(ctx, list(suite.benchmarks), suite_name=suite.name, suite_reps=suite.reps,
            suite_timeout=suite.timeout, **kw)


def scenario_command(scenario: Scenario):
    kind = kind_of(scenario)
    kind_keys = [o.name for o in kind.cli_options()]

    @click.pass_context
    def command(ctx: click.Context, **kw) -> None:
        raw = {p.name: kw.pop(p.name) for p in scenario.params}
        kind_options = {k: kw.pop(k) for k in kind_keys}
        for key, value in ctx.obj.get("run_given", {}).items():
            if ctx.get_parameter_source(key) != ParameterSource.COMMANDLINE:
                kw[key] = value
        values: dict = {}
        for p in scenario.params:
            items = validate.comma_list(raw[p.name]) if "," in raw[p.name] else [raw[p.name]]
            values[p.name] = list(p.choices) if p.choices and items == ["all"] else items
        benchmarks = [Benchmark(scenario=scenario.name, params=params) for params in expand(scenario.name, values)]
        execute(ctx, benchmarks, kind_options=kind_options, **kw)

    command.__doc__ = f"{scenario.summary}.\n\n{scenario.examples}" if scenario.examples else scenario.summary
    for p in reversed(scenario.params):
        flags = [f for f in (p.short, p.long) if f]
        command = click.option(*flags, p.name, default=str(p.default), show_default=True, help=p.help)(command)
    for option in reversed(kind.cli_options()):
        command = click.option(*option.flags, option.name, default=option.default, help=option.help)(command)
    command = run_options(command)
    return run.command(scenario.name)(command)


for _scenario in SCENARIOS.values():
    scenario_command(_scenario)


# --------------------------------------------------------------------------- report, sessions

@cli.command()
@click.argument("session", default="latest")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("report"), show_default=True,
              help="Folder for results.csv, report.md and the charts.")
@click.option("--baseline", default=None,
              help="A stored session to compare with (id, latest~N): report.md and report.html get the "
                   "`corobench compare BASELINE SESSION` tables.")
@click.pass_context
def report(ctx: click.Context, session: str, out_dir: Path, baseline: str | None) -> None:
    """Write results.csv, results.json, report.md, report.html and charts (PNG, SVG) for a stored session."""
    from corobench.report import write_report

    written = write_report(ctx.obj["results"] / DB_NAME, session, out_dir, baseline)
    for path in written:
        click.echo(str(path))


@cli.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("impl")
@click.argument("scenario_name", metavar="SCENARIO")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def exec_cmd(ctx: click.Context, impl: str, scenario_name: str, args: tuple[str, ...]) -> None:
    """Run one program exactly as the harness would (cwd, environment, argv), output on the terminal.

    IMPL is an id or id:variant; the flags are the scenario's (`corobench run SCENARIO --help`), plus
    --threads, --warmup, --cpus, --dry-run (print the command only) and --no-build.
    """
    scenario = get_scenario(scenario_name)
    parser = click.Command("exec", params=[
        *(click.Option([f for f in (p.short, p.long) if f], p.name, default=str(p.default)) for p in scenario.params),
        click.Option(["--threads"], "threads"), click.Option(["--warmup"], "warmup"), click.Option(["--cpus"], "cpus"),
        click.Option(["--dry-run"], "dry_run", is_flag=True), click.Option(["--no-build"], "no_build", is_flag=True),
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
    if not given["no_build"] and not given["dry_run"]:
        broken = build_all(ctx, [program.manifest.id])
        if program.manifest.id in broken:
            raise UsageError(f"{program.manifest.id} cannot run: {broken[program.manifest.id]}")
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


@cli.command()
@click.argument("what")
@click.argument("which", required=False)
@click.pass_context
def show(ctx: click.Context, what: str, which: str | None) -> None:
    """Everything stored for a run (`show RUN_ID`) or a session (`show session N|latest`)."""
    from corobench.show import run_text, session_text

    db = ctx.obj["results"] / DB_NAME
    if not db.exists():
        raise UsageError(f"no results database at {db}")
    with Store(db) as store:
        if what == "session":
            click.echo(session_text(store, store.session(which or "latest")))
            return
        if which is not None or not what.isascii() or not what.isdigit() or len(what) > 18:
            raise UsageError(f"show takes a run id (a number) or 'session N', not '{' '.join(filter(None, [what, which]))}'")
        row = store.run(int(what))
        click.echo(run_text(row))


@cli.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--metric", "metrics", multiple=True,
              help="Metric key(s) to compare, e.g. rss_mib or cpu_s; repeat or comma-separate "
                   "[default: each scenario's headline].")
@click.option("--format", "fmt", type=click.Choice(("table", "md", "csv", "json")), default="table",
              show_default=True, help="How to print the comparison.")
@click.pass_context
def compare_cmd(ctx: click.Context, a: str, b: str, metrics: tuple[str, ...], fmt: str) -> None:
    """Compare two stored sessions cell by cell, B against A (ids, `latest` or `latest~N`).

    Per cell both medians with their CIs, the change and a Mann-Whitney U test at 5 % (`~`: not
    significant); cells of one session only are listed; FAILED cells carry no figure.
    """
    from corobench import compare as cmp

    db = ctx.obj["results"] / DB_NAME
    if not db.exists():
        raise UsageError(f"no results database at {db} (run a benchmark first)")
    keys = [k for item in metrics for k in validate.comma_list(item)]
    store = Store(db)
    try:
        a_info, a_cells = cmp.load_session(store, a)
        b_info, b_cells = cmp.load_session(store, b)
    finally:
        store.close()
    result = cmp.compare_cells(a_cells, b_cells, keys, a_info, b_info)
    if fmt == "md":
        click.echo(cmp.to_markdown(result))
    elif fmt == "json":
        click.echo(cmp.to_json(result))
    elif fmt == "csv":
        click.echo(cmp.to_csv(result), nl=False)
        for line in result.warnings + result.notes:
            err.print(f"corobench: {line}", highlight=False, markup=False)
    else:
        print_comparison(result)


def print_comparison(result) -> None:
    """The comparison as terminal tables: one per scenario and metric."""
    from corobench import compare as cmp

    console = out_console()
    console.print(f"A = {cmp.session_text(result.a)}\nB = {cmp.session_text(result.b)}", highlight=False,
                  markup=False)
    styles = {"better": "green", "worse": "red"}
    for group in result.groups():
        metric = group.metric
        console.print(group.title, highlight=False, markup=False, soft_wrap=True)  # one line, however long
        table = Table()
        table.add_column("program", no_wrap=True)
        if group.varying:
            table.add_column("parameters")
        for col in ("A median [CI]", "B median [CI]", "change"):
            table.add_column(col, justify="right", no_wrap=True)  # a figure is never cut
        table.add_column("p", justify="right")
        table.add_column("B vs A")
        for ln in group.lines:
            verdict = ln.verdict
            sides = [cmp.side_text(c, metric) for c in (ln.a_cell, ln.b_cell)]
            label = [Text(group.label(ln.a_cell))] if group.varying else []
            # Text, not markup: names and brackets print as they are
            table.add_row(Text(ln.a_cell.program), *label,
                          *[Text(t, style="red" if t == "FAILED" else "") for t in sides],
                          Text(cmp.change_text(ln)), Text(cmp.p_text(ln)),
                          Text(verdict, style=styles.get(verdict, "red" if "FAILED" in verdict else "")))
        console.print(table)
    for reason in cmp.failure_notes(result):
        console.print("  " + clean_text(reason, 300), highlight=False, markup=False, soft_wrap=True)
    for name, cells in (("A", result.only_a), ("B", result.only_b)):
        if cells:
            console.print(f"only in {name}:", highlight=False, soft_wrap=True)
            for cell in cells:
                console.print("  " + cmp.one_side_text(cell), highlight=False, markup=False, soft_wrap=True)
    console.print(cmp.summary_line(result), highlight=False, markup=False, soft_wrap=True)
    for line in result.warnings:
        console.print("warning: " + line, style="yellow", highlight=False, markup=False, soft_wrap=True)
    for line in result.notes:
        console.print(f"note: {line}", highlight=False, markup=False, soft_wrap=True)


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


def entry(args: list[str] | None = None) -> int:
    """Run the command line and return its exit code (tests call this in-process)."""
    try:
        code = cli.main(args=args, standalone_mode=False, prog_name="corobench")
    except (UsageError, click.UsageError, click.BadParameter) as exc:
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        print(f"corobench: error: {one_line(message)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except click.ClickException as exc:
        print(f"corobench: error: {one_line(exc.format_message())}", file=sys.stderr)
        return exc.exit_code
    except StoreError as exc:
        print(f"corobench: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_STORE_FAILED
    except Interrupted as stop:
        print("corobench: interrupted", file=sys.stderr)
        return 128 + stop.signum
    except (KeyboardInterrupt, click.Abort):
        print("corobench: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # a bug in corobench: say so in one line, keep the traceback in a file
        log = write_crash_log(exc, crash_folder())
        print(f"corobench: internal error (a bug in corobench, not in your input): {exc.__class__.__name__}: "
              f"{one_line(str(exc))[:200]}; traceback in {log}", file=sys.stderr)
        return EXIT_HARNESS_BUG
    return code if isinstance(code, int) else 0


def one_line(text: str) -> str:
    return " ".join(clean_text(text, 2000).split())


def crash_folder() -> Path | None:
    try:
        return default_results_dir()
    except Exception:  # noqa: BLE001 - reporting a crash must not crash
        return None


def main() -> None:
    sys.exit(entry())
