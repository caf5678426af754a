"""A `corobench run` session, from the parsed command line to its stored end: build what it needs,
record it, run its jobs with progress, and end it with the truth (finished, interrupted,
store-failed or crashed). cli.py parses and prints; this module orchestrates."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from corobench import build as builder
from corobench import tracking, validate
from corobench.benchmark import Job, Runner, log_line, print_log
from corobench.plan import Plan, Tracker, duration, history, make_plan, outcome_text, plan_text
from corobench.bookkeeping import Bookkeeping, remove_entry
from corobench.discover import discover, discover_all, runtime_settings, select_programs, toolchain_version, unavailable_reason
from corobench.hosts import cleanup
from corobench.hosts.base import close_all
from corobench.errors import EXIT_OK, EXIT_RUNS_FAILED, EXIT_STORE_FAILED, Interrupted, StoreError, UsageError
from corobench.machine import git_commit
from corobench.options import Options
from corobench.runkinds import RUN_KINDS, RunKind, kind_of
from corobench.scenarios import get_scenario
from corobench.signals import SignalGuard
from corobench.store import Store
from corobench.suite import Benchmark
from corobench.verify import clean_text

DB_NAME = "corobench.sqlite"
DEFAULT_REPS = 5
DEFAULT_TIMEOUT_S = 600.0

err = Console(stderr=True, soft_wrap=True)  # a message is one line, however long


@dataclass
class Request:
    """What the command line (or a suite) asked for, still as given."""

    benchmarks: list[Benchmark]
    impls: tuple[str, ...] = ()
    reps: str | None = None
    threads: str | None = None
    warmup: str | None = None
    cpus: str | None = None
    timeout: str | None = None
    no_build: bool = False
    no_cgroup: bool = False
    suite_name: str | None = None
    suite_reps: int | None = None
    suite_timeout: float | None = None
    kind_options: dict = field(default_factory=dict)
    dry_run: bool = False
    driver: Callable | None = None  # runs the jobs instead of the plan's loop (capacity: an adaptive search)
    extra_settings: dict = field(default_factory=dict)  # stored with the session's settings


@dataclass
class Outcome:
    session_id: int
    status: str  # finished | interrupted | store-failed | crashed
    code: int  # the exit code
    runs: list = field(default_factory=list)
    failed: int = 0  # measured runs that FAILED


# --------------------------------------------------------------------------- building

def all_tools(options: Options | None = None) -> list:
    """The tools the run kinds need (e.g. the load generator): built like implementations."""
    return [m for kind in RUN_KINDS.values() for m in kind.tools(options)]


def build_all(results: Path, ids: list[str] | None, force: bool = False, manifests: list | None = None
              ) -> dict[str, str]:
    """Build the chosen implementations (and tools); {id: reason} for those that cannot run."""
    manifests = manifests if manifests is not None else discover() + all_tools()
    if ids:
        known = {m.id for m in manifests}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise UsageError(f"unknown implementation '{unknown[0]}' (known: {', '.join(sorted(known))})")
        manifests = [m for m in manifests if m.id in ids]
    state = builder.BuildState()
    broken: dict[str, str] = {}
    for m in manifests:
        reason = unavailable_reason(m)
        if reason:
            broken[m.id] = reason
            err.print(f"[yellow]skip[/]  {m.id}: {reason}", highlight=False)
            continue
        if not m.build or builder.is_up_to_date(m, state) and not force:
            continue  # nothing to build, or nothing changed: no "built" line for work not done
        with err.status(f"building {m.id} ..."):
            result = builder.build(m, state, force=force)
        if result.ok:
            err.print(f"[green]built[/] {m.id} ({result.seconds:.1f} s)", highlight=False)
        else:
            broken[m.id] = f"build failed: {result.error} (log: {result.log})"
            err.print(f"[red]FAIL[/]  {m.id}: {broken[m.id]}", highlight=False)
    return broken


# --------------------------------------------------------------------------- planning

def options_of(request: Request) -> Options:
    return Options(
        reps=validate.reps(request.reps) if request.reps is not None else request.suite_reps or DEFAULT_REPS,
        timeout_s=validate.seconds("--timeout", request.timeout, validate.MIN_TIMEOUT_S)
        if request.timeout is not None else request.suite_timeout or DEFAULT_TIMEOUT_S,
        cpus=validate.cpu_list(request.cpus) if request.cpus else None,
        warmup=validate.warmup(request.warmup) if request.warmup is not None else None,
        use_cgroup=not request.no_cgroup,
    )


def plan(request: Request, options: Options) -> tuple[list[Job], set[RunKind]]:
    """The jobs (one benchmark and its programs each) and the run kinds they need, configured."""
    thread_counts = ([validate.threads(t) for t in validate.comma_list(request.threads)]
                     if request.threads is not None else [None])
    wanted = [name for item in request.impls for name in validate.comma_list(item)]
    manifests, broken_manifests = discover_all()
    for bad in broken_manifests:
        err.print(f"[yellow]skip[/]  broken manifest {bad.path}: {clean_text(bad.reason, 300)}", highlight=False)
    scenarios = {b.scenario: get_scenario(b.scenario) for b in request.benchmarks}
    kinds = {kind_of(s) for s in scenarios.values()}
    for kind in kinds:
        kind.configure(options, request.kind_options,
                       [s for s in scenarios.values() if kind_of(s) is kind])
    jobs: list[Job] = []
    for bench in request.benchmarks:
        for count in thread_counts:
            b = bench if count is None else replace(bench, threads=count)
            jobs.append(Job(b, select_programs(manifests, b.scenario, wanted or list(b.impls))))
    return jobs, kinds


def prepare(results: Path, jobs: list[Job], kinds: set[RunKind], options: Options, build: bool) -> dict:
    """Build what the jobs need (unless told not to); mark the programs that cannot run; the
    manifests that can, by id."""
    involved = {p.manifest.id: p.manifest for job in jobs for p in job.programs}
    tools = {kind: kind.tools(options) for kind in kinds}  # e.g. the load generator
    involved.update({m.id: m for ms in tools.values() for m in ms})
    if build:
        broken = build_all(results, sorted(involved), manifests=list(involved.values()))
    else:
        broken = {m.id: r for m in involved.values() if (r := unavailable_reason(m))}
    for job in jobs:
        kind = kind_of(get_scenario(job.benchmark.scenario))
        no_tool = [f"{m.id} cannot run: {broken[m.id]}" for m in tools[kind] if m.id in broken]
        job.unavailable = {p.name: broken.get(p.manifest.id) or no_tool[0] for p in job.programs
                           if p.manifest.id in broken or no_tool}
    return {i: m for i, m in sorted(involved.items()) if i not in broken}


# --------------------------------------------------------------------------- running

def execute(results: Path, request: Request) -> Outcome | str:
    """Build, record and run a session; SIGTERM and SIGHUP stop it as Ctrl-C does, builds included.
    With `dry_run`: the plan as text, and nothing built or started."""
    guard = SignalGuard().install()
    try:
        guard.check()  # a signal came during start-up and its exception was lost
        options = options_of(request)
        jobs, kinds = plan(request, options)
        ready = prepare(results, jobs, kinds, options, build=not (request.no_build or request.dry_run))
        schedule = make_plan(jobs, options.reps, estimates(results)) if request.driver is None else Plan([])
        if request.dry_run:
            for kind in kinds:
                note = kind.plan_note(options)
                if note:
                    err.print(note, highlight=False)
            if request.driver is not None:
                from corobench.capacity import plan_text as search_plan

                programs = sorted({p.name for job in jobs for p in job.programs if p.name not in job.unavailable})
                return search_plan(programs, request.extra_settings.get("capacity", {}))
            return plan_text(schedule, len(request.benchmarks))
        return _record_and_run(results, request, options, jobs, kinds, ready, guard, schedule)
    finally:
        guard.restore()
        tracking.current = None


def estimates(results: Path) -> dict[tuple, float]:
    """Earlier runs' durations per cell, from the results database if there is one."""
    db = results / DB_NAME
    if not db.is_file():
        return {}
    with Store(db) as store:
        return history(store.walls())


def _record_and_run(results: Path, request: Request, options: Options, jobs: list[Job], kinds: set[RunKind],
                    ready: dict, guard: SignalGuard, schedule: Plan) -> Outcome:
    from corobench.hosts.local import LocalHost

    here = LocalHost(use_cgroups=options.use_cgroup)
    toolchains = {i: toolchain_version(m) for i, m in ready.items()}
    runtime_info = settings_as_run(ready, jobs, options)
    settings = {"reps": options.reps, "timeout_s": options.timeout_s, "threads": request.threads,
                "warmup": options.warmup, "cpus": sorted(options.cpus) if options.cpus else None,
                "suite": request.suite_name, "runtime_info": runtime_info, **request.extra_settings,
                **{k: v for kind in kinds for k, v in kind.settings(options).items()}}
    command = "corobench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    store = Store(results / DB_NAME, for_writing=True)
    machine = here.metadata()
    if options.topology is not None:
        machine["hosts"] = {h.name: host_metadata(h) for h in options.topology.hosts() if h is not options.topology.server}
    # the bookkeeping first, then the session that names it, with no signal in between; a signal
    # from here on (even one held back to the end of that) ends the session as interrupted
    books: Bookkeeping | None = None
    session_id: int | None = None
    try:
        with guard.critical():
            books = Bookkeeping(results, os.getpid(), tracking.process_identity(os.getpid()))
            session_id = store.begin_session(command, git_commit(), machine, toolchains, settings, books.token)
        status, code, runner = run_session(store, session_id, jobs, options, kinds, guard, books, schedule,
                                           request.driver)
        rows = store.runs(session_id)
    except Interrupted:
        if session_id is not None and store.session_status(session_id) == "running":
            store.end_session(session_id, "interrupted")
        raise
    finally:
        with guard.critical():  # the cleanup is not cut short: a signal now waits for its end
            tracking.current = books
            close_all()  # whatever a signal caught between its start and its close
            tracking.current = None
            store.close()
            if options.topology is not None:
                for host in options.topology.hosts():
                    host.close()
            if books is not None:
                settle(books)
                books.finish()
    return Outcome(session_id, status, code, rows, runner.failures)


def settle(books: Bookkeeping) -> None:
    """What the session's records still list once all is closed: something a signal parted from
    its record (a cgroup removed, or recorded and not yet made, the moment the signal came), or
    something really still there. Each is cleaned up as recovery would; what cannot be now is left
    to the next command."""
    for entry in books.entries():
        if cleanup(entry) is not None:
            remove_entry(books.folder, entry)


def settings_as_run(ready: dict, jobs: list[Job], options: Options) -> dict[str, str]:
    """Each implementation's runtime settings as its runs see them: its `info` command pinned to the
    CPUs of its batch runs (--cpus) and, where it also serves, of its server (the server CPUs)."""
    server_cpus = options.topology.server_cpus if options.topology is not None else None
    uses: dict[str, set[str]] = {}
    for job in jobs:
        kind = "server" if kind_of(get_scenario(job.benchmark.scenario)).name == "server" else "batch"
        for program in job.programs:
            uses.setdefault(program.manifest.id, set()).add(kind)
    out = {}
    for impl_id, manifest in ready.items():
        for kind in sorted(uses.get(impl_id, {"batch"})):
            cpus = server_cpus if kind == "server" else options.cpus
            info = runtime_settings(manifest, cpus)
            if info:
                label = impl_id if kind == "batch" or len(uses[impl_id]) == 1 else f"{impl_id} (servers)"
                out[label] = info + (f" [pinned to CPU {','.join(map(str, sorted(cpus)))}]" if cpus else "")
    return out


def host_metadata(host) -> dict:
    """A client host's machine, stored with the session; one that cannot be reached now says why
    (its runs will be FAILED with that reason)."""
    from corobench.hosts.base import LaunchError

    try:
        return host.metadata()
    except LaunchError as exc:
        return {"unreachable": str(exc)}


def run_session(store: Store, session_id: int, jobs: list[Job], options: Options, kinds, guard: SignalGuard,
                books: Bookkeeping, schedule: Plan, driver: Callable | None = None) -> tuple[str, int, Runner]:
    """Run the jobs of a session; (its final status, the exit code, the runner). The session row
    always ends with the truth: finished, interrupted (a signal), store-failed (a write failed) or
    crashed (a bug)."""
    status, code = "finished", EXIT_OK
    runner = Runner(store, session_id, options, None, guard)
    try:  # from here on, whatever happens, the session ends with its true status
        err.print(f"session {session_id}: results in {store.path}", highlight=False)
        for kind in kinds:
            note = kind.plan_note(options)
            if note:
                err.print(note, highlight=False)
        if schedule.runs:
            err.print(f"{len(schedule.runs)} runs planned, about {duration(schedule.total_s)}"
                      + (f" and {schedule.unknown} of unknown length" if schedule.unknown else "")
                      + " (`--dry-run` shows the plan)", highlight=False)
        tracker = Tracker(schedule)
        interactive = err.is_terminal
        progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[left]}"),
                            console=err, disable=not interactive)
        task = progress.add_task("starting", total=tracker.total, left="")
        last = [time.monotonic()]

        def on_run(row) -> None:
            now = time.monotonic()
            tracker.finished(row, now - last[0])
            last[0] = now
            line = f"{tracker.prefix()} {log_line(row, outcome_text(row))} {tracker.suffix()}"
            progress.update(task, completed=tracker.done, total=tracker.total,
                            description=f"{tracker.prefix()} {row.program} {row.scenario}", left=tracker.suffix())
            if not interactive:
                print_log(line)  # one line per run in logs and CI
            elif row.status != "ok" or row.rep > 0:
                progress.console.print(line, highlight=False, markup=False)

        runner.on_run = on_run
        books.attach(session_id)  # the session's number in its bookkeeping, for recovery's messages
        tracking.current = books
        with progress:
            if driver is not None:
                driver(runner, jobs)
            else:
                for job in jobs:
                    runner.run_job(job, job.benchmark.reps or options.reps)
        guard.check()  # a signal whose exception was lost does not end as "finished"
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
    return status, code, runner
