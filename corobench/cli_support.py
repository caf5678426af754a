"""What the command line offers beyond parsing (and the `hosts` commands): shell completion of the names a person types
(implementation ids and variants, session numbers; event types and files come with their options),
and --results/--impls accepted after the subcommand as well as before it."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.console import Console

from corobench import validate
from corobench.errors import UsageError
from corobench.session import DB_NAME
from corobench.store import Store
from corobench.suite import Benchmark

errors = Console(stderr=True, soft_wrap=True)


def complete_programs(ctx: click.Context, param, incomplete: str) -> list[str]:
    """Implementation ids and id:variant, for --impl (after a comma too); under a scenario's command
    (`run chain`, `capacity http`) only the programs of that scenario."""
    from corobench.discover import discover
    from corobench.scenarios import SCENARIOS

    head, _, last = incomplete.rpartition(",")
    scenario = ctx.info_name if ctx.info_name in SCENARIOS else None
    manifests = [m for m in discover() if scenario is None or scenario in m.scenarios]
    names = [m.id for m in manifests] + [f"{m.id}:{v}" for m in manifests
                                         for sc, vs in m.variants.items() if scenario in (None, sc) for v in vs]
    prefix = f"{head}," if head else ""
    return [prefix + n for n in sorted(set(names)) if n.startswith(last)]


def complete_sessions(ctx: click.Context, param, incomplete: str) -> list[str]:
    """`latest` and the stored session numbers, newest first."""
    from corobench.paths import default_results_dir

    root = ctx.find_root()  # while completing, the group's own callback has not run: read its option
    folder = (root.obj or {}).get("results") or root.params.get("results") or default_results_dir()
    db = Path(folder) / DB_NAME
    try:
        with Store(db) as store:
            ids = [str(s.id) for s in store.sessions()] if db.is_file() else []
    except UsageError:
        ids = []
    return [x for x in ["latest", *reversed(ids)] if x.startswith(incomplete)]


def accept_global_options(command: click.Command, recover, crash_logs: list) -> None:
    """--results and --impls after the subcommand too (`corobench run chain --results DIR`)."""

    def results_after(ctx: click.Context, param, value) -> None:
        if value is not None:
            root = ctx.find_root()
            root.obj["results"] = validate.results_path(value)
            crash_logs[:] = [root.obj["results"]]
            recover(root.obj["results"])

    def impls_after(ctx: click.Context, param, value) -> None:
        if value:
            os.environ["COROBENCH_IMPLS"] = os.pathsep.join(str(validate.folder_path(p, "--impls")) for p in value)

    command.params += [
        click.Option(["--results", "results_after"], type=click.Path(path_type=Path), expose_value=False,
                     callback=results_after, is_eager=True, help="The results folder (also accepted before the command)."),
        click.Option(["--impls", "impls_after"], type=click.Path(path_type=Path), multiple=True, expose_value=False,
                     callback=impls_after, is_eager=True, help="Implementations folder(s) (also before the command)."),
    ]


def all_commands(group: click.Group):
    for command in group.commands.values():
        yield command
        if isinstance(command, click.Group):
            yield from all_commands(command)


@click.group()
def hosts() -> None:
    """Client hosts of server runs (hosts files: README, Running across machines)."""


@hosts.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@click.pass_context
def hosts_check(ctx: click.Context, file: Path) -> None:
    """Reach each client host: its machine, round trip, clock offset and load generator."""
    from corobench.hostcheck import check_hosts
    from corobench.hostsfile import load_hosts
    from corobench.loadgens.corobench_load import binary, manifest
    from corobench.paths import writable_dir
    from corobench.session import build_all

    hosts_file = load_hosts(file)  # a bad file is one line before anything is built
    build_all(writable_dir(ctx.obj["results"], "results folder"), None, manifests=[manifest()])
    ctx.exit(check_hosts(file, hosts_file, binary()))


def run_and_print(ctx: click.Context, benchmarks: list[Benchmark], fmt: str, show=None, **request) -> None:
    """Run a session and print its results (`show(rows, meta)` instead of the format's tables)."""
    from corobench.export import exporters
    from corobench.paths import writable_dir
    from corobench.report import session_meta
    from corobench.results import build_cells
    from corobench.session import Request, execute

    outcome = execute(writable_dir(ctx.obj["results"], "results folder"), Request(benchmarks, **request))
    if isinstance(outcome, str):  # --dry-run: the plan
        click.echo(outcome)
        return
    if outcome.status != "finished":
        errors.print(f"{outcome.status}: the {len(outcome.runs)} runs that finished are stored in session "
                     f"{outcome.session_id}", highlight=False)
        ctx.exit(outcome.code)
    with Store(ctx.obj["results"] / DB_NAME) as store:
        meta = session_meta(store.session(str(outcome.session_id)))
    if show is not None:
        show(outcome.runs, meta)
    else:
        exporters()[fmt].print_session(build_cells(outcome.runs), meta)
    if outcome.code:
        errors.print(f"[red]{outcome.failed} run(s) FAILED[/]: stored with their reasons in session "
                     f"{outcome.session_id}", highlight=False)
        ctx.exit(outcome.code)
