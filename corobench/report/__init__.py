"""`corobench report`: every exporter's report files (results.csv, results.json, report.md,
report.html, the original benchmarks' own formats) and the charts, for one stored session; with a
baseline session, the reports open with `corobench compare BASELINE SESSION`."""

from __future__ import annotations

from pathlib import Path

from corobench import compare
from corobench.errors import StoreError, UsageError
from corobench.export import ReportContext, exporters
from corobench.files import write_text
from corobench.paths import writable_dir
from corobench.results import build_cells, by_scenario
from corobench.store import SessionRecord, Store


def session_meta(session: SessionRecord) -> dict:
    return {
        "session": session.id, "started_at": session.started_at, "finished_at": session.finished_at,
        "status": session.status, "command": session.command, "git_commit": session.git_commit,
        "machine": session.machine, "toolchains": session.toolchains, "settings": session.settings,
    }


def write_report(db_path: Path, which: str, out_dir: Path, baseline: str | None = None,
                 across_machines: bool = False) -> list[Path]:
    if not db_path.exists():
        raise UsageError(f"no results database at {db_path} (run a benchmark first)")
    store = Store(db_path)
    try:
        session = compare.resolve_session(store, which)
        rows = store.runs(session.id)
        labels = compare.check_comparable(store, baseline, which, across_machines) if baseline is not None else ([], [])
        base = compare.load_session(store, baseline) if baseline is not None else None
    finally:
        store.close()
    writable_dir(out_dir, "report folder")
    meta = session_meta(session)
    cells = build_cells(rows)
    comparison = None
    if base is not None:
        this = {k: meta[k] for k in ("session", "started_at", "status", "command", "git_commit")}
        comparison = compare.compare_cells(base[1], cells, (), base[0], this)
        comparison.warnings[:0], comparison.notes[:0] = labels
    from corobench.report import charts  # matplotlib loads only when a report is written
    from corobench.report.capacity import capacity_section
    from corobench.report.sections import who_wins

    try:
        capacity = capacity_section(meta, rows, out_dir)
        # a capacity session's steps are drawn as its curves; the scenario's own charts would repeat them per rate
        drawn = {} if capacity else {name: charts.draw(name, group, out_dir) for name, group in by_scenario(cells).items()}
        sections = [who_wins(cells), *([capacity] if capacity else [])]
        ctx = ReportContext(meta, cells, rows, drawn, comparison, sections)
        written = [path for paths in drawn.values() for path in paths] + [p for s in sections for p in s.charts]
        for exporter in exporters().values():
            for name, text in exporter.report_files(ctx).items():
                path = out_dir / name
                write_text(path, text)  # never through a link planted at that name
                written.append(path)
    except OSError as exc:  # a full disk, a read-only folder: the report cannot be written (exit 74)
        raise StoreError(f"cannot write the report into {out_dir}: {exc.strerror or exc}") from None
    return written


__all__ = ["session_meta", "write_report"]
