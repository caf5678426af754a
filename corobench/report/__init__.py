"""`corobench report`: results.csv, results.json, report.md, report.html and charts for one stored
session; with a baseline session, both reports open with `corobench compare BASELINE SESSION`."""

from __future__ import annotations

import json
from pathlib import Path

from corobench import compare
from corobench.errors import UsageError
from corobench.files import write_text
from corobench.paths import writable_dir
from corobench.export.csv import full_csv
from corobench.export.json import to_json
from corobench.export.markdown import LEGEND, scenario_tables
from corobench.results import build_cells, by_scenario
from corobench.scenarios import get_scenario
from corobench.store import Store
from corobench.verify import clean_text


def session_meta(session) -> dict:
    return {
        "session": session["id"], "started_at": session["started_at"], "finished_at": session["finished_at"],
        "status": session["status"], "command": session["command"], "git_commit": session["git_commit"],
        "machine": json.loads(session["machine"]), "toolchains": json.loads(session["toolchains"]),
        "settings": json.loads(session["settings"]),
    }


def _machine_section(meta: dict) -> str:
    m = meta["machine"]
    mem = f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else "?"
    lines = [
        "## Machine and session\n",
        f"- session {meta['session']}, {meta['started_at']} → {meta['finished_at'] or '(unfinished)'}"
        f" ({meta['status']})",
        f"- command: `{meta['command']}`",
        f"- commit: `{meta['git_commit'] or 'unknown'}`",
        f"- CPU: {m.get('cpu_model')}, {m.get('cores')} cores ({m.get('cores_usable')} usable), memory {mem}",
        f"- OS: {m.get('os')}, kernel {m.get('kernel')}, Python {m.get('python')}",
        f"- load average at start: {', '.join(f'{x:.2f}' for x in m.get('loadavg', []))}",
        f"- settings: {json.dumps({k: v for k, v in meta['settings'].items() if k != 'runtime_info'})}",
        "", "Runtime settings are each runtime's defaults (docs/implementations.md, tuning policy), as its "
        "manifest's `info` command reported them for this session.", "",
        "| implementation | toolchain | runtime settings |", "|---|---|---|",
    ]
    info = meta["settings"].get("runtime_info") or {}
    lines += [f"| {k} | {v} | {clean_text(str(info.get(k, '—')), 300).replace('|', '/')} |"
              for k, v in sorted(meta["toolchains"].items())]
    return "\n".join(lines) + "\n"


def write_report(db_path: Path, which: str, out_dir: Path, baseline: str | None = None) -> list[Path]:
    if not db_path.exists():
        raise UsageError(f"no results database at {db_path} (run a benchmark first)")
    store = Store(db_path)
    try:
        session = compare.resolve_session(store, which)
        rows = store.runs(session["id"])
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
    written: list[Path] = []

    def write(name: str, text: str) -> None:
        path = out_dir / name
        write_text(path, text)  # never through a link planted at that name
        written.append(path)

    write("results.csv", full_csv(cells))
    write("results.json", to_json(cells, meta))
    scenarios = by_scenario(cells)
    for name, group in scenarios.items():
        scenario = get_scenario(name)
        legacy = scenario.legacy(group)
        if legacy is not None and scenario.legacy_name:
            write(scenario.legacy_name, legacy)

    md = [f"# corobench report — session {meta['session']}\n", LEGEND + " Error bars in the charts span "
          "min–max of the runs.\n"]
    if comparison is not None:
        md.append(f"## Comparison with session {comparison.a['session']} (baseline)\n")
        md.append(compare.to_markdown(comparison))
    verify_failures = [r for r in rows if r["rep"] == 0 and r["status"] == "failed"]
    charts: dict[str, list[Path]] = {}
    for scenario, group in scenarios.items():
        md.append(f"## {scenario}\n")
        charts[scenario] = get_scenario(scenario).charts(group, out_dir)
        for chart in charts[scenario]:
            written.append(chart)
            if chart.suffix == ".png":
                md.append(f"![{chart.stem}]({chart.name})\n")
        md.append(scenario_tables(scenario, group))
    if verify_failures:
        md.append("## Verification failures (tiny size, before measuring)\n")
        md += [f"- {r['program']} {r['scenario']}: {clean_text(r['reason'] or '', 500)} (`corobench show {r['id']}`)"
               for r in verify_failures]
        md.append("")
    md.append(_machine_section(meta))
    write("report.md", "\n".join(md))

    from corobench.report import html  # Jinja2 loads only when a report is written

    write("report.html", html.render(meta, cells, rows, charts, LEGEND, comparison))
    return written


__all__ = ["write_report"]
