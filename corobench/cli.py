"""The `corobench` command line (click): it parses and prints; the work is in the modules it calls.
Bad input: exit 2 and one line, never a traceback."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table

from corobench import validate
from corobench.cli_support import (accept_global_options, all_commands, complete_programs, complete_sessions, hosts,
                                   run_and_print)
from corobench.cli_capacity import capacity
from corobench.cli_results import export_cmd, import_cmd, site_cmd
from corobench.crash import write_crash_log
from corobench.errors import EXIT_BAD_INPUT, EXIT_HARNESS_BUG, EXIT_STORE_FAILED, Interrupted, StoreError, UsageError
from corobench.export import comparison_formats, default_format, exporters, session_formats
from corobench.export.table import out_console
from corobench.paths import default_results_dir, writable_dir
from corobench.runkinds import kind_of
from corobench.scenarios import SCENARIOS, Scenario
from corobench.session import DB_NAME, Request, all_tools, build_all, execute
from corobench.store import Store
from corobench.suite import Benchmark, expand, load_suite
from corobench.verify import clean_text

err = Console(stderr=True, soft_wrap=True)  # a message is one line, however long
RESULTS_FOR_CRASH_LOGS: list[Path] = []  # the results folder in use, once known: crash logs go there


def results_dir(ctx: click.Context) -> Path:
    return writable_dir(ctx.obj["results"], "results folder")


def database(ctx: click.Context, needed_for: str = "") -> Path:
    db = ctx.obj["results"] / DB_NAME
    if not db.exists():
        raise UsageError(f"no results database at {db}" + (f" ({needed_for})" if needed_for else ""))
    return db


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
    ctx.obj["results"] = validate.results_path(results or default_results_dir())
    RESULTS_FOR_CRASH_LOGS[:] = [ctx.obj["results"]]
    if impls:
        os.environ["COROBENCH_IMPLS"] = os.pathsep.join(str(validate.folder_path(p, "--impls")) for p in impls)
    recover(ctx.obj["results"])


def recover(results: Path) -> None:
    """Harnesses killed outright: their sessions marked abandoned, their leftovers killed."""
    from corobench.recovery import recover_abandoned

    store = None
    if (results / DB_NAME).is_file() and not (results / DB_NAME).is_symlink():
        try:
            store = Store(results / DB_NAME)
        except UsageError:
            store = None  # a damaged database is reported by the commands that read it
    try:
        for line in recover_abandoned(results, store):
            err.print(f"corobench: {line}", highlight=False)
    except (UsageError, StoreError, OSError):
        pass
    finally:
        if store is not None:
            store.close()


# --------------------------------------------------------------------------- list, doctor, setup, build

@cli.command("list")
@click.pass_context
def list_cmd(ctx: click.Context) -> None:
    """Implementations x scenarios, and whether each can run here (and if not, why)."""
    from corobench.listing import print_listing

    print_listing(ctx.obj["results"], all_tools())


@cli.command()
def doctor() -> None:
    """Toolchains, cores, memory, load, limits, cgroup: and what would spoil a measurement."""
    from corobench.doctor import examine

    console = out_console()
    findings = examine()
    for f in findings:
        mark = "[green]ok  [/]" if f.level == "ok" else "[yellow]warn[/]"
        console.print(f"{mark} {f.topic:<20} {f.text}", highlight=False, soft_wrap=True)
    console.print(f"{sum(f.level == 'warn' for f in findings)} warning(s)")


@cli.command()
def setup() -> None:
    """Install the Debian packages the implementations declare (needs root)."""
    from corobench.discover import discover
    from corobench.provision import install, missing_packages

    ok, message = install(missing_packages(discover()))
    err.print(message, highlight=False)
    if not ok:
        err.print("the implementations that need them will show as unavailable in 'corobench list'")


@cli.command("build")
@click.option("--impl", "impls", multiple=True, help="Implementation id(s), comma-separated [default: all].")
@click.option("--force", is_flag=True, help="Rebuild even when nothing changed.")
@click.pass_context
def build_cmd(ctx: click.Context, impls: tuple[str, ...], force: bool) -> None:
    """Build implementations incrementally; one failure does not stop the others."""
    broken = build_all(results_dir(ctx), [i for item in impls for i in validate.comma_list(item)], force)
    if any(v.startswith("build failed") for v in broken.values()):
        ctx.exit(1)


# --------------------------------------------------------------------------- run

RUN_OPTIONS = ("impls", "reps", "threads", "warmup", "cpus", "timeout", "fmt", "no_build", "no_cgroup", "dry_run")


def run_options(f):
    """Options shared by `run --suite` and every `run <scenario>` (checked by corobench/validate.py)."""
    options = [
        click.option("--impl", "impls", multiple=True, shell_complete=complete_programs,
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
        click.option("--format", "fmt", type=click.Choice(session_formats()), default=default_format(), show_default=True,
                     help="How to print this session's results: "
                          + "; ".join(f"{n}: {exporters()[n].help}" for n in session_formats()) + "."),
        click.option("--no-build", is_flag=True, help="Do not build before running."),
        click.option("--no-cgroup", is_flag=True, help="Do not measure through a memory cgroup."),
        click.option("--dry-run", is_flag=True, help="Print the plan and its time estimate; build and run nothing."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def explicit(ctx: click.Context, names) -> dict:
    """The options of this command that the user gave on the command line (not defaults)."""
    return {n: ctx.params[n] for n in names if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE}


@cli.group(invoke_without_command=True)
@click.option("--suite", "suite_file", type=click.Path(path_type=Path), default=None,
              help="Run the benchmarks of a suite TOML file.")
@run_options
@click.pass_context
def run(ctx: click.Context, suite_file: Path | None, fmt: str, **kw) -> None:
    """Run a scenario (`run chain -w 1000 ...`) or a suite (`run --suite suites/quick.toml`)."""
    if ctx.invoked_subcommand is not None:
        # options given before the scenario name (`run --reps 3 chain`) count, unless given again after it
        ctx.obj["run_given"] = explicit(ctx, RUN_OPTIONS)
        return
    if suite_file is None:
        raise UsageError(f"run needs a scenario ({', '.join(SCENARIOS)}) or --suite FILE")
    suite = load_suite(suite_file)
    if suite.capacity is not None:  # a capacity search of its benchmarks (cli_capacity.py)
        from corobench.cli_capacity import capacity_request

        kw.update(capacity_request(suite.capacity))
    run_and_print(ctx, list(suite.benchmarks), fmt, suite_name=suite.name, suite_reps=suite.reps,
                  suite_timeout=suite.timeout, kind_options=suite.kind_options, **kw)


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
        fmt = kw.pop("fmt")
        run_and_print(ctx, benchmarks, fmt, kind_options=kind_options, **kw)

    command.__doc__ = f"{scenario.summary}.\n\n{scenario.examples}" if scenario.examples else scenario.summary
    for p in reversed(scenario.params):
        flags = [f for f in (p.short, p.long) if f]
        choices = [*p.choices, "all"] if p.choices else None
        complete = (lambda c, prm, inc, names=choices: [n for n in names if n.startswith(inc.rpartition(",")[2])]) \
            if choices else None
        command = click.option(*flags, p.name, default=str(p.default), show_default=True, help=p.help,
                               shell_complete=complete)(command)
    for option in reversed(kind.cli_options()):
        command = click.option(*option.flags, option.name, default=option.default, help=option.help)(command)
    command = run_options(command)
    return run.command(scenario.name)(command)


for _scenario in SCENARIOS.values():
    scenario_command(_scenario)


# --------------------------------------------------------------------------- report, exec, show, compare, sessions

@cli.command()
@click.argument("session", default="latest", shell_complete=complete_sessions)
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("report"), show_default=True,
              help="Folder for results.csv, report.md and the charts.")
@click.option("--baseline", default=None,
              help="A stored session to compare with (id, latest~N): report.md and report.html get the "
                   "`corobench compare BASELINE SESSION` tables.")
@click.option("--across-machines", is_flag=True, help="Allow a baseline of another machine or load layout (labelled).")
@click.pass_context
def report(ctx: click.Context, session: str, out_dir: Path, baseline: str | None, across_machines: bool) -> None:
    """Write every format's report files (CSV, JSON, report.md, report.html, ...) and the charts for a stored session."""
    from corobench.report import write_report

    for path in write_report(ctx.obj["results"] / DB_NAME, session, out_dir, baseline, across_machines):
        click.echo(str(path))


@cli.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("impl", shell_complete=complete_programs)
@click.argument("scenario_name", metavar="SCENARIO")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def exec_cmd(ctx: click.Context, impl: str, scenario_name: str, args: tuple[str, ...]) -> None:
    """Run one program exactly as the harness would (cwd, environment, argv), output on the terminal.

    IMPL is an id or id:variant; the flags are the scenario's (`corobench run SCENARIO --help`), plus
    --threads, --warmup, --cpus, --dry-run (print the command only) and --build (build it first; by
    default exec runs what is built, and says so when it is not).
    """
    from corobench.execprog import exec_program

    exec_program(ctx, results_dir(ctx), impl, scenario_name, args)


@cli.command()
@click.argument("what")
@click.argument("which", required=False)
@click.pass_context
def show(ctx: click.Context, what: str, which: str | None) -> None:
    """Everything stored for a run (`show RUN_ID`) or a session (`show session N|latest`)."""
    from corobench.show import run_text, session_text

    with Store(database(ctx)) as store:
        if what == "session":
            click.echo(session_text(store, store.session(which or "latest")))
            return
        if which is not None or not what.isascii() or not what.isdigit() or len(what) > 18:
            raise UsageError(f"show takes a run id (a number) or 'session N', not '{' '.join(filter(None, [what, which]))}'")
        click.echo(run_text(store.run(int(what))))


@cli.command("compare")
@click.argument("a", shell_complete=complete_sessions)
@click.argument("b", shell_complete=complete_sessions)
@click.option("--metric", "metrics", multiple=True,
              help="Metric key(s) to compare, e.g. rss_mib or cpu_s; repeat or comma-separate "
                   "[default: each scenario's headline].")
@click.option("--format", "fmt", type=click.Choice(comparison_formats()), default=default_format(), show_default=True,
              help="How to print the comparison.")
@click.option("--min-change", default="2%", show_default=True,
              help="The smallest significant change called better or worse (smaller ones read ≈).")
@click.option("--across-machines", is_flag=True,
              help="Compare sessions of different machines or load layouts (refused otherwise); labelled so.")
@click.pass_context
def compare_cmd(ctx: click.Context, a: str, b: str, metrics: tuple[str, ...], fmt: str, min_change: str,
                across_machines: bool) -> None:
    """Compare two stored sessions cell by cell, B against A (ids, `latest` or `latest~N`).

    Per cell both medians with their CIs, the change and a Mann-Whitney U test at 5 % (`~`: not
    significant); cells of one session only are listed; FAILED cells carry no figure.
    """
    from corobench import compare as cmp

    keys = [k for item in metrics for k in validate.comma_list(item)]
    with Store(database(ctx, "run a benchmark first")) as store:
        warnings, notes = cmp.check_comparable(store, a, b, across_machines)
        a_info, a_cells = cmp.load_session(store, a)
        b_info, b_cells = cmp.load_session(store, b)
    result = cmp.compare_cells(a_cells, b_cells, keys, a_info, b_info, validate.fraction("--min-change", min_change))
    result.warnings[:0], result.notes[:0] = warnings, notes
    exporters()[fmt].print_comparison(result)


@cli.command()
@click.pass_context
def sessions(ctx: click.Context) -> None:
    """The stored sessions."""
    table = Table()
    for col in ("id", "started", "status", "runs", "command"):
        table.add_column(col)
    with Store(database(ctx)) as store:
        for s in store.sessions():
            table.add_row(str(s.id), s.started_at, s.status, str(s.n_runs), s.command)
    out_console().print(table)


cli.add_command(hosts)
cli.add_command(capacity)
for _results_command in (export_cmd, import_cmd, site_cmd):
    cli.add_command(_results_command)


for _command in all_commands(cli):
    if _command.name != "exec":  # exec passes its flags to the program
        accept_global_options(_command, recover, RESULTS_FOR_CRASH_LOGS)


# --------------------------------------------------------------------------- the entry point

def entry(args: list[str] | None = None) -> int:
    """Run the command line and return its exit code (tests call this in-process)."""
    RESULTS_FOR_CRASH_LOGS.clear()
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
    """The results folder in use (where `--results` put it), else the default one."""
    try:
        return RESULTS_FOR_CRASH_LOGS[0] if RESULTS_FOR_CRASH_LOGS else default_results_dir()
    except Exception:  # noqa: BLE001 - reporting a crash must not crash
        return None


def main() -> None:
    from corobench.signals import STOP_SIGNALS, ExitGuard

    ExitGuard().install()
    code = entry()
    for sig in STOP_SIGNALS:  # done: a signal now changes nothing (nor kills the exit half-way)
        signal.signal(sig, signal.SIG_IGN)
    sys.exit(code)
