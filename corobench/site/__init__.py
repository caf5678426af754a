"""`corobench site`: a static results site that opens from disk or from any web server.

Layout of the folder it writes:

    index.html               sessions, machines, scenarios, and who has the best median where
    <scenario>.html          one page per scenario: filters, summary charts and table, history, runs
    data/<scenario>.js       that page's rows and Plotly figure specs (a script setting a global:
                             a page opened from disk may load scripts, not fetch() files)
    runs/<scenario>/<N>.js   session N's runs of that scenario, loaded when a reader opens them
    assets/plotly.min.js     plotly.js, copied from the Python plotly package (no CDN)
    assets/site.js, site.css our filters and tables (plotly.js draws every chart)

Every page carries a Content-Security-Policy that allows scripts and styles from the site's own
files only (plotly.js also sets styles on the elements it draws) and nothing from the network.
Memory stays bounded by one session's runs plus one compact row per cell: sessions are read one
at a time, and each one's run details are written as soon as it is read.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from corobench import __version__
from corobench.bundle import sessions_named
from corobench.comparability import (ComparabilityKey, key_factory, machine_fingerprint, machine_identity,
                                     machine_label, topology_fingerprint, topology_label)
from corobench.errors import StoreError, UsageError
from corobench.files import replacing, write_text
from corobench.results import build_cells
from corobench.scenarios import SCENARIOS, Metric, Scenario, get_scenario
from corobench.site import details
from corobench.site.figures import CONFIG, Series, history_figures, summary_figures
from corobench.site.rows import Row, as_json, column_metrics, latest_per_key, make_row, when, winners
from corobench.store import SessionRecord, Store
from corobench.units import header

PLOTLY_JS = ("plotly", "package_data/plotly.min.js")


@dataclass
class SiteSummary:
    sessions: int
    runs: int
    scenarios: int
    files: list[Path] = field(default_factory=list)


@dataclass
class ScenarioRows:
    scenario: Scenario
    metrics: list[Metric]  # the table's columns, then any other metric a headline view draws
    columns: int  # how many of `metrics` the table shows
    rows: list[Row] = field(default_factory=list)
    sessions: list[int] = field(default_factory=list)


@dataclass
class SessionInfo:
    record: SessionRecord
    runs: int
    failed: int
    scenarios: list[str]
    machine: str  # fingerprint
    date: str


def _metrics(scenario: Scenario) -> tuple[list[Metric], int]:
    columns = column_metrics(scenario)
    by_key = {m.key: m for m in scenario.metrics}
    extra = [by_key[v.metric] for v in scenario.views if v.headline and v.metric in by_key
             and by_key[v.metric] not in columns]
    return columns + list(dict.fromkeys(extra)), len(columns)


def _js(name: str, value: Any) -> str:
    """A script that sets a global: JSON is a JavaScript literal (ASCII-escaped, so no U+2028 issue)."""
    return f"window.{name} = {json.dumps(value, separators=(',', ':'))};\n"


def _runs_script(doc: dict) -> str:
    """A runs file: it adds its session's runs to a global the page reads when the script has loaded."""
    name = json.dumps(f"{doc['scenario']}/{doc['session']}")
    return ("window.COROBENCH_RUNS = window.COROBENCH_RUNS || {};\n"
            f"window.COROBENCH_RUNS[{name}] = {json.dumps(doc, separators=(',', ':'))};\n")


class SiteWriter:
    def __init__(self, out: Path):
        self.out = out
        self.files: list[Path] = []

    def text(self, relative: str, text: str) -> None:
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)  # through a fresh file renamed over the name: never through a planted link
        self.files.append(path)

    def copy(self, relative: str, data: bytes) -> None:
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(path, "wb") as f:
            f.write(data)
        self.files.append(path)


@cache
def _templates():
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    return Environment(loader=PackageLoader("corobench.site", "templates"),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _static(name: str) -> str:
    return (resources.files("corobench.site") / "static" / name).read_text(encoding="utf-8")


def _plotly_js() -> bytes:
    package, path = PLOTLY_JS
    return (resources.files(package) / path).read_bytes()


def build_site(db_path: Path, out_dir: Path, sessions: list[str] | None = None) -> SiteSummary:
    """Write the site for these sessions (names as `compare` takes them; all when None)."""
    if not db_path.exists():
        raise UsageError(f"no results database at {db_path} (run a benchmark, or import a bundle, first)")
    writer = SiteWriter(out_dir)
    by_scenario: dict[str, ScenarioRows] = {}
    infos: list[SessionInfo] = []
    machines: dict[str, dict] = {}  # fingerprint -> one machine dict of it
    layouts: dict[str, str] = {}  # topology fingerprint -> its label
    total_runs = 0
    try:
        with Store(db_path) as store:
            for session in sessions_named(store, sessions):
                runs = store.runs(session.id, with_result=False)  # the site shows figures, not raw output
                total_runs += len(runs)
                info = _read_session(session, runs, by_scenario, writer)
                infos.append(info)
                machines.setdefault(info.machine, session.machine)
                hosts = session.machine.get("hosts") if isinstance(session.machine, dict) else None
                layout = topology_fingerprint(session.settings, hosts)
                if layout is not None:
                    layouts.setdefault(layout, topology_label(session.settings, hosts) or layout)
                del runs
        machine_names = _machine_names(machines)
        nav = [name for name in SCENARIOS if name in by_scenario]  # in report order
        machine_labels = {fp: machine_label(m) for fp, m in machines.items()}
        pages = [_scenario_page(by_scenario[name], infos, machine_names, machine_labels, layouts, nav, writer)
                 for name in nav]
        _index_page(pages, infos, machines, machine_names, layouts, total_runs, writer)
        writer.text("assets/site.js", _static("site.js"))
        writer.text("assets/site.css", _static("site.css"))
        writer.copy("assets/plotly.min.js", _plotly_js())
    except OSError as exc:
        raise StoreError(f"cannot write the site into {out_dir}: {exc.strerror or exc}") from None
    return SiteSummary(len(infos), total_runs, len(by_scenario), writer.files)


def _read_session(session: SessionRecord, runs: list, by_scenario: dict[str, ScenarioRows],
                  writer: SiteWriter) -> SessionInfo:
    key_of = key_factory(session)
    cells = build_cells(runs)
    names = []
    for cell in cells:
        row_set = by_scenario.get(cell.scenario)
        if row_set is None:
            scenario = get_scenario(cell.scenario)
            metrics, columns = _metrics(scenario)
            row_set = by_scenario[cell.scenario] = ScenarioRows(scenario, metrics, columns)
        if not row_set.sessions or row_set.sessions[-1] != session.id:
            row_set.sessions.append(session.id)
            names.append(cell.scenario)
        row_set.rows.append(make_row(len(row_set.rows), key_of(cell), session, cell, row_set.metrics))
    for scenario_name in names:
        scenario = by_scenario[scenario_name].scenario
        mine = [r for r in runs if r.scenario == scenario_name]
        doc = details.session_runs(session, mine, scenario, [p.name for p in scenario.params])
        writer.text(f"runs/{scenario_name}/{session.id}.js", _runs_script(doc))
    return SessionInfo(session, len(runs), sum(1 for r in runs if r.status == "failed"), names,
                       machine_fingerprint(session.machine), when(session.started_at)[0])


NOISE = re.compile(r"\((?:R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$|\b\d+-Core\b")


def short_machine(machine: dict) -> str:
    """`Intel Xeon Platinum 8375C, 8 cores`: what a legend or a table cell has room for."""
    identity = machine_identity(machine if isinstance(machine, dict) else {})
    model = " ".join(NOISE.sub(" ", identity["cpu_model"]).split()) or identity["cpu_model"]
    return f"{model}, {identity['cores'] if identity['cores'] is not None else '?'} cores"


def _machine_names(machines: dict[str, dict]) -> dict[str, str]:
    """Each machine's short name; machines that read alike get their memory, then their fingerprint."""
    names = {fp: short_machine(m) for fp, m in machines.items()}
    for more in (lambda fp: f"{names[fp]}, {machine_identity(machines[fp])['memory_gib']} GiB",
                 lambda fp: f"{names[fp]} ({fp})"):
        counts: dict[str, int] = {}
        for name in names.values():
            counts[name] = counts.get(name, 0) + 1
        names = {fp: more(fp) if counts[name] > 1 else name for fp, name in names.items()}
    return names


def _page(template: str, nav: list[str], current: str = "", **values) -> str:
    return _templates().get_template(template).render(version=__version__, nav=nav, current=current, **values)


def _scenario_page(row_set: ScenarioRows, infos: list[SessionInfo], machine_names: dict[str, str],
                   machine_labels: dict[str, str], layouts: dict[str, str], nav: list[str],
                   writer: SiteWriter) -> dict:
    scenario = row_set.scenario
    rows = row_set.rows
    series = Series(rows, machine_names, layouts)
    summary = [fig for view in scenario.views if view.headline
               for fig in summary_figures(scenario, view, rows, row_set.metrics, series)]
    history = history_figures(scenario, rows, row_set.metrics, series)
    keys = sorted({r.key for r in rows}, key=lambda k: k.id)
    key_ids = {k: k.id for k in keys}
    group_ids: dict[tuple, int] = {}
    for r in rows:
        group_ids.setdefault(r.group, len(group_ids))
    param_names = [p.name for p in scenario.params]
    sessions = {info.record.id: info for info in infos}
    session_list = [{"id": s, "date": sessions[s].date, "machine": machine_names[sessions[s].machine],
                     "file": f"runs/{scenario.name}/{s}.js"} for s in row_set.sessions]
    metrics = row_set.metrics
    data = {
        "scenario": scenario.name, "params": param_names,
        "columns": [{"label": m.label, "unit": m.unit, "better": m.better} for m in metrics[:row_set.columns]],
        "rows": [as_json(r, metrics, param_names, key_ids, group_ids) for r in rows],
        "figures": {"summary": summary, "history": history}, "config": CONFIG,
        "machines": {fp: machine_names[fp] for fp in sorted({r.key.machine for r in rows})},
        "layouts": {fp: layouts.get(fp, fp) for fp in sorted({r.key.topology for r in rows if r.key.topology})},
        "sessions": session_list, "severalLayouts": series.several_layouts,
    }
    values: dict[str, list[str]] = {}
    for name in param_names:
        seen = sorted({r.params.get(name) for r in rows if r.params.get(name) is not None},
                      key=lambda v: scenario.param(name).sort_value(v))
        values[name] = [str(v) for v in seen]
    # the table names only the parameters that tell its rows apart; the page's lead names the rest
    data["varying"] = [i for i, name in enumerate(param_names) if len(values[name]) > 1]
    writer.text(f"data/{scenario.name}.js", _js("COROBENCH_SITE", data))
    threads = sorted({r.threads for r in rows if r.threads is not None})
    latest = latest_per_key(rows)
    # a parameter at 0 is one the runs did not use (rate=0: closed loop; duration=0: count-bounded)
    constants = " ".join(f"{n}={values[n][0]}" for n in param_names if len(values[n]) == 1 and values[n][0] != "0")
    page = {"name": scenario.name, "summary": scenario.summary, "rows": len(rows), "n_keys": len(keys),
            "constants": constants,
            "sessions": len(row_set.sessions), "latest": max((r.date for r in rows), default=""),
            "failed": sum(1 for r in latest if r.status != "ok")}
    writer.text(f"{scenario.name}.html", _page(
        "scenario.html.j2", nav, scenario.name, page=page, params=[(i, n, values[n]) for i, n in enumerate(param_names)],
        threads=[str(t) for t in threads], programs=sorted({r.program for r in rows}),
        machines=sorted(((fp, name, machine_labels[fp]) for fp, name in data["machines"].items()),
                        key=lambda item: item[1]),
        columns=[header(m.label, m.unit) for m in metrics[:row_set.columns]], better=metrics[0].better, dates=(min(r.date for r in rows), max(r.date for r in rows)),
        server=scenario.kind == "server"))
    page["wins"] = _wins(scenario, rows, series, machine_names, layouts)
    return page


def _wins(scenario: Scenario, rows: list[Row], series: Series, machine_names: dict[str, str],
          layouts: dict[str, str]) -> list[dict]:
    """Per machine (and load layout): how many parameter sets each program has the best median in."""
    metric = scenario.metrics[0]
    names: dict[ComparabilityKey, str] = {}
    for r in rows:
        names[r.key] = r.key.program + (f" ({r.key.toolchain})" if r.key.program in series.several_toolchains else "")
    found = winners(rows, metric.better, names)
    per_place: dict[tuple, dict[str, list[int]]] = {}
    races: dict[tuple, int] = {}
    for (_, _, machine, topology), win in found.items():
        place = (machine, topology)
        races[place] = races.get(place, 0) + 1
        tally = per_place.setdefault(place, {}).setdefault(win.program, [0, 0])
        tally[0] += 1
        tally[1] += win.clear
    out = []
    for (machine, topology), tally in sorted(per_place.items(), key=lambda item: machine_names[item[0][0]]):
        ranking = sorted(tally.items(), key=lambda item: (-item[1][0], item[0]))
        out.append({"machine": machine_names[machine], "layout": layouts.get(topology) if topology else None,
                    "races": races[(machine, topology)], "metric": f"{metric.label} ({metric.better} is better)",
                    "ranking": [(program, won, clear) for program, (won, clear) in ranking]})
    return out


def _index_page(pages: list[dict], infos: list[SessionInfo], machines: dict[str, dict],
                machine_names: dict[str, str], layouts: dict[str, str], total_runs: int, writer: SiteWriter) -> None:
    machine_rows = []
    for fp, machine in sorted(machines.items(), key=lambda item: machine_names[item[0]]):
        mine = [i for i in infos if i.machine == fp]
        kernels = sorted({str(i.record.machine.get("kernel")) for i in mine if isinstance(i.record.machine, dict)})
        hosts = sorted({h for i in mine if isinstance(i.record.machine.get("hosts"), dict)
                        for h in i.record.machine["hosts"]})
        machine_rows.append({"fingerprint": fp, "label": machine_names[fp], "sessions": len(mine),
                             "first": min(i.date for i in mine), "last": max(i.date for i in mine),
                             "kernels": ", ".join(kernels), "os": str(machine.get("os") or "?"),
                             "hostnames": ", ".join(sorted({str(i.record.machine.get("hostname"))
                                                            for i in mine})),
                             "clients": ", ".join(hosts)})
    session_rows = [{"id": i.record.id, "date": i.record.started_at, "status": i.record.status,
                     "machine": machine_names[i.machine], "runs": i.runs, "failed": i.failed,
                     "scenarios": ", ".join(i.scenarios), "command": i.record.command,
                     "commit": (i.record.git_commit or "unknown")[:12]} for i in reversed(infos)]
    writer.text("index.html", _page(
        "index.html.j2", [p["name"] for p in pages], pages=pages, machines=machine_rows, sessions=session_rows, total_runs=total_runs,
        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), layouts=layouts))


__all__ = ["SiteSummary", "build_site"]
