"""`corobench export`, `import` and `site`: results that travel (bundles) and a static results site.

The commands are registered on the main group in cli.py (`cli.add_command(...)`); they read the
results folder from `ctx.obj["results"]` as every other command does. Bad input is one line and
exit 2 (UsageError); a write that fails is exit 74 (StoreError).
"""

from __future__ import annotations

from pathlib import Path

import click

from corobench.errors import UsageError
from corobench.paths import writable_dir
from corobench.store import Store

DB_NAME = "corobench.sqlite"  # as corobench.session names it; not imported from there (it loads the runner)


def _database(ctx: click.Context) -> Path:
    db = ctx.obj["results"] / DB_NAME
    if not db.exists():
        raise UsageError(f"no results database at {db} (run a benchmark, or import a bundle, first)")
    return db


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.1f} KiB"


@click.command("export")
@click.argument("sessions", nargs=-1)
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The bundle to write (gzip-compressed JSON lines; e.g. results.jsonl.gz).")
@click.pass_context
def export_cmd(ctx: click.Context, sessions: tuple[str, ...], out: Path) -> None:
    """Write sessions with every run, figure, FAILED reason and host as one portable bundle.

    SESSIONS are ids, `latest` or `latest~N` [default: every session that has ended]. The format
    is in docs/bundles.md; `corobench import` reads it into any results folder.
    """
    from corobench.bundle import ENDED, export_bundle, sessions_named

    with Store(_database(ctx)) as store:
        chosen = sessions_named(store, sessions)
        if not sessions:
            running = [s for s in chosen if s.status not in ENDED]
            for s in running:
                click.echo(f"session {s.id} is still {s.status}: not exported", err=True)
            chosen = [s for s in chosen if s.status in ENDED]
        if not chosen:
            raise UsageError("no session to export")
        summary = export_bundle(store, chosen, out)
    click.echo(f"exported {summary.sessions} session(s), {summary.runs} run(s) to {out} ({_size(out)})")
    if summary.nonfinite:
        click.echo(f"{summary.nonfinite} non-finite figure(s) (NaN or infinity) written as null: JSON has no such "
                   "numbers", err=True)


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
def import_cmd(ctx: click.Context, files: tuple[Path, ...]) -> None:
    """Merge bundles into the results database; a session already there (same uid) is skipped.

    Every bundle is checked whole before anything is written: a damaged, truncated or newer one
    is refused with the line at fault, and nothing of it is stored. Each session keeps its uid,
    status, times, machine and toolchains; it gets the next free session number here.
    """
    from corobench.bundle import check_bundle, import_bundle

    checks = {path: check_bundle(path) for path in files}  # every bundle whole, before anything is stored
    results = writable_dir(ctx.obj["results"], "results folder")
    imported = present = runs = 0
    with Store(results / DB_NAME, for_writing=True) as store:
        for path in files:
            summary = import_bundle(store, path, checks[path])
            imported, present, runs = imported + summary.imported, present + summary.present, runs + summary.runs
            numbers = summary.new_ids or []
            where = (f" as session {numbers[0]}" if len(numbers) == 1 else
                     f" as sessions {numbers[0]}–{numbers[-1]}" if numbers else "")
            if len(files) > 1:
                click.echo(f"{path}: {summary.imported} session(s) imported{where}, {summary.present} already present")
    click.echo(f"{imported} session(s) imported ({runs} run(s)), {present} already present"
               + (where if len(files) == 1 else ""))


@click.command("site")
@click.argument("sessions", nargs=-1)
@click.option("--out", "out", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="The folder to write the site into (index.html and its files).")
@click.pass_context
def site_cmd(ctx: click.Context, sessions: tuple[str, ...], out: Path) -> None:
    """Write a static results site: open index.html from disk or publish the folder anywhere.

    SESSIONS are ids, `latest` or `latest~N` [default: every session]. Per scenario: filters
    (parameters, program, machine, dates), the headline charts and tables, each comparability
    key's history across sessions, and every run's details. No server and no network needed.
    """
    from corobench.site import build_site

    written = build_site(_database(ctx), writable_dir(out, "site folder"), list(sessions) or None)
    click.echo(f"site written to {out}: open {out / 'index.html'} ({written.sessions} session(s), "
               f"{written.runs} run(s), {written.scenarios} scenario page(s))")


COMMANDS = (export_cmd, import_cmd, site_cmd)

__all__ = ["COMMANDS", "export_cmd", "import_cmd", "site_cmd"]
