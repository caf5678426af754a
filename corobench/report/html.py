"""report.html: the whole report in one file that opens offline in any browser.

Charts are the scenarios' matplotlib SVGs inlined, tables sort by a click on a column header (a
few lines of our own JavaScript), and a Content-Security-Policy allows no network and no script
but ours. Everything a program wrote (stderr, reasons, argv) is text: terminal escape sequences
are removed, control characters made visible, and Jinja2's autoescape turns <, > and & into
entities, so nothing a program prints can become markup.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
from importlib import resources
from pathlib import Path
from typing import Mapping, Sequence

from corobench import compare as cmp
from corobench.export.grouping import groups, ranked, scenario_warnings, summary_tables, tabulate
from corobench.results import Cell, by_scenario
from corobench.scenarios import get_scenario
from corobench.store import RunRow

# ECMA-48: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), and the other two-byte escapes
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str | None) -> str:
    """A program's text with its escape sequences removed and other controls shown as �."""
    if not text:
        return ""
    return CONTROL.sub("\ufffd", ANSI.sub("", text.replace("\r\n", "\n")))


# --------------------------------------------------------------------------- charts

SVG_PROLOGUE = re.compile(r"^.*?(?=<svg[\s>])", re.S)  # the XML declaration and DOCTYPE
SVG_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.S)  # matplotlib's `*{...}` would style the whole page
SVG_SIZE = re.compile(r'<svg\b[^>]*?\swidth="([0-9.]+)pt"')


def inline_svg(text: str, prefix: str) -> tuple[str, float]:
    """An SVG file made fit for an HTML page: (its markup, its natural width in CSS pixels).

    Ids get a per-chart prefix: matplotlib's glyph and clip ids repeat across files, and in one
    page a reference would resolve to another chart's element."""
    svg = SVG_STYLE.sub("", SVG_PROLOGUE.sub("", text, count=1))
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{prefix}{m.group(1)})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', svg)
    size = SVG_SIZE.search(svg)
    width = float(size.group(1)) * 4 / 3 if size else 800.0  # pt to CSS px
    return svg, width


def charts_view(paths: Sequence[Path], first_index: int) -> list[dict]:
    out = []
    for i, path in enumerate(p for p in paths if p.suffix == ".svg"):
        svg, width = inline_svg(path.read_text(encoding="utf-8", errors="replace"), f"c{first_index + i}-")
        out.append({"name": path.stem, "svg": svg, "width": round(width)})
    return out


# --------------------------------------------------------------------------- tables

AS_TEXT = object()


def _cell(text: str, sort: object = AS_TEXT, cls: str = "", title: str = "") -> dict:
    """One table cell: its text, the value it sorts by (its text by default; None: no value, which
    sorts last), a class, a tooltip."""
    sort = text if sort is AS_TEXT else "" if sort is None else sort
    return {"text": text, "sort": sort, "cls": cls, "title": title}


def _num(value: float | None) -> str | None:
    return None if value is None else repr(float(value))


def results_tables(scenario: str, cells: list[Cell]) -> list[dict]:
    """Per parameter set the markdown report's table (export.grouping.tabulate: program, headline
    median [CI], vs best, the other metrics, runs; notes below), with the values it sorts by."""
    tables = []
    for label, group in groups(cells):
        data = tabulate(scenario, label, group, warnings=False)
        metrics = group[0].metrics
        columns = [{"label": name, "type": "text" if i == 0 else "number"} for i, name in enumerate(data.columns)]
        columns[1]["title"] = f"{metrics[0].better} is better"
        rows = []
        for i, ((cell, test), texts) in enumerate(zip(ranked(group), data.rows)):
            failed = i in data.failed_rows
            keys: list = [texts[0]]
            if failed:
                keys += [None] * (len(texts) - 2)
            else:
                keys += [_num(cell.headline().median), _num(1.0 if test is None else test.ratio)]
                keys += [_num(cell.summaries[m.key].median) if m.key in cell.summaries else None
                         for m in metrics[1:len(texts) - 3]]
            keys.append(cell.runs_ok)
            row = [_cell(plain(texts[0]))]
            row += [_cell(plain(t), k, "num" + (" fail" if failed and j == 1 else "") + (" wrap" if j == 2 else ""))
                    for j, (t, k) in enumerate(zip(texts[1:], keys[1:]), start=1)]
            rows.append(row)
        tables.append({"label": label, "columns": columns, "rows": rows, "notes": [plain(n) for n in data.notes]})
    return tables


def comparison_view(result: cmp.Result) -> dict:
    """The `compare` tables, one per scenario and metric."""
    verdict_class = {"better": "better", "worse": "worse", "~": "same", "≈": "same", "too few runs to test": "same"}
    tables = []
    for group in result.groups():
        metric = group.metric
        columns = [{"label": "program", "type": "text"}]
        columns += [{"label": "parameters", "type": "text"}] if group.varying else []
        columns += [{"label": "A median [CI]", "type": "number"}, {"label": "B median [CI]", "type": "number"},
                    {"label": "change", "type": "number"}, {"label": "p", "type": "number"},
                    {"label": "B vs A", "type": "text"}]
        rows = []
        for ln in group.lines:
            sides = []
            for cell, s in ((ln.a_cell, ln.a), (ln.b_cell, ln.b)):
                text = cmp.side_text(cell, metric)
                sides.append(_cell(text, _num(s.median) if s else None, "num" + (" fail" if cell.status != "ok" else "")))
            p = ln.test.p_value if ln.test is not None else None
            label = [_cell(group.label(ln.a_cell), cls="params")] if group.varying else []
            rows.append([_cell(ln.a_cell.program), *label, *sides,
                         _cell(cmp.change_text(ln), _num(ln.change), "num"), _cell(cmp.p_text(ln), _num(p), "num"),
                         _cell(ln.verdict, ln.verdict, verdict_class.get(ln.verdict, "fail"))])
        tables.append({"label": group.title, "columns": columns, "rows": rows})
    return {
        "a": cmp.session_text(result.a), "b": cmp.session_text(result.b), "test": cmp.TEST,
        "summary": cmp.summary_line(result), "warnings": result.warnings, "notes": result.notes,
        "tables": tables, "reasons": [plain(r) for r in cmp.failure_notes(result)],
        "only": [(side, cmp.one_side_text(c)) for side, cells in (("A", result.only_a), ("B", result.only_b))
                 for c in cells],
    }


# --------------------------------------------------------------------------- failures, machine

def failures(rows: Sequence[RunRow], scenario: str) -> list[dict]:
    """The scenario's FAILED runs with what a reader needs to reproduce them; runs that failed the
    same way (program, reason, exit, stderr) are one entry, the others listed under it."""
    out: dict[tuple, dict] = {}
    for r in rows:
        if r.scenario != scenario or r.status != "failed":
            continue
        if not r.argv:
            continue  # a cell's stand-in row (failed verification): its verification run has the details
        run = {
            "program": r.program,
            "label": " ".join(f"{k}={v}" for k, v in r.params.items())
            + (f" threads={r.threads}" if r.threads is not None else ""),
            "rep": "verification run (tiny size)" if r.rep == 0 else f"repetition {r.rep}",
            "kind": r.failure_kind or "", "reason": plain(r.reason),
            "exit": "" if r.exit_code is None else str(r.exit_code),
            "signal": "" if r.term_signal is None else str(r.term_signal),
            "command": plain(shlex.join(str(a) for a in r.argv)),
            "cwd": plain(r.cwd),
            "stderr": plain(r.stderr_tail),
        }
        same = (run["program"], run["kind"], run["reason"], run["exit"], run["signal"], run["cwd"], run["stderr"])
        if same in out:
            out[same]["more"].append(run)
        else:
            out[same] = {**run, "more": []}
    return list(out.values())


def machine_view(meta: Mapping) -> dict:
    m = meta["machine"]
    mem = f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else "?"
    items = [
        ("session", f"{meta['session']}, {meta['started_at']} → {meta['finished_at'] or '(unfinished)'} "
                    f"({meta['status']})"),
        ("command", meta["command"]),
        ("commit", meta["git_commit"] or "unknown"),
        ("CPU", f"{m.get('cpu_model')}, {m.get('cores')} cores ({m.get('cores_usable')} usable)"),
        ("memory", mem),
        ("OS", f"{m.get('os')}, kernel {m.get('kernel')}, Python {m.get('python')}"),
        ("host", str(m.get("hostname"))),
        ("CPU governor", str(m.get("governor"))),
        ("load average at start", ", ".join(f"{x:.2f}" for x in m.get("loadavg", []))),
    ]
    limits = m.get("limits") or {}
    if limits:
        items.append(("limits", ", ".join(f"{k} {v}" for k, v in limits.items())))
    return {"items": [(k, plain(str(v))) for k, v in items], "cpu": plain(str(m.get("cpu_model"))),
            "toolchains": [(k, plain(str(v))) for k, v in sorted(meta["toolchains"].items())],
            "settings": plain(json.dumps(meta["settings"], indent=2))}


# --------------------------------------------------------------------------- the page

def _static(name: str) -> str:
    return (resources.files("corobench.report") / "static" / name).read_text(encoding="utf-8")


def render(meta: Mapping, cells: list[Cell], rows: Sequence[RunRow], charts: Mapping[str, list[Path]],
           intro: str, comparison: cmp.Result | None = None, sections: list | None = None) -> str:
    """The report page; `charts` maps a scenario to the chart files it wrote (its SVGs are inlined)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("corobench.report", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    script = _static("sort.js")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    scenarios = []
    chart_index = 0
    for name, group in by_scenario(cells).items():
        views = charts_view(charts.get(name, []), chart_index)
        chart_index += len(views)
        summaries = [{"label": t.title, "columns": [{"label": c, "type": "text" if i == 0 else "number"}
                                                    for i, c in enumerate(t.columns)],
                       "rows": [[_cell(plain(x), cls="" if i == 0 else "num") for i, x in enumerate(r)] for r in t.rows],
                       "notes": []} for t in summary_tables(name, group)]
        scenarios.append({"name": name, "summary": get_scenario(name).summary, "charts": views,
                          "tables": summaries + results_tables(name, group),
                          "warnings": [plain(w) for w in scenario_warnings(group)],
                          "failures": failures(rows, name)})
    leading = []
    for section in sections or []:
        views = charts_view(section.charts, chart_index)
        chart_index += len(views)
        leading.append({"anchor": section.anchor, "title": section.title, "lines": [plain(x) for x in section.lines],
                        "charts": views, "tables": [{"title": t.title, "columns": [{"label": c, "type": "text"}
                                                                                  for c in t.columns],
                                                     "rows": [[_cell(plain(x)) for x in row] for row in t.rows]}
                                                    for t in section.tables]})
    return env.get_template("report.html.j2").render(
        meta=meta, intro=intro, scenarios=scenarios, machine=machine_view(meta), sections=leading,
        comparison=comparison_view(comparison) if comparison is not None else None,
        baseline=comparison.a.get("session") if comparison is not None else None,
        css=_static("report.css"), script=script, script_hash=f"sha256-{digest}",
    )
