"""Plotly figure specs (JSON dicts in plotly.js's schema) for the results site; plotly.js draws them.

Each scenario's headline views (scenarios/views.py) become summary figures, and each parameter set
a history figure: the headline metric of every comparability key across sessions. A figure holds
one machine and load layout: the parts of the comparability key that say where a result was
measured never meet in one chart (the reader's machine filter picks which to see); the parts that
say what was measured (program, toolchain version) are its lines and bars, each named.

Every point carries its row's id in `customdata`, so that the page's script can filter a figure's
points by the rows a reader's filters leave (and redraw it with Plotly.react) without knowing
anything about charts. A program has one colour everywhere (a filtered-out series never shifts
the others'), its toolchain versions differ in dash, and every point's hover text gives the
median, the runs' min–max and their number, the session and its date.
"""

from __future__ import annotations

import math

from dataclasses import replace

import html
import re
from typing import Any, Callable

from plotly.colors import qualitative

from corobench.comparability import ComparabilityKey
from corobench.scenarios import Metric, Scenario
from corobench.scenarios.views import GROUPED, LINES, View
from corobench.site.rows import Row
from corobench.units import human

PALETTE = qualitative.Plotly + qualitative.D3 + qualitative.Dark24
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
HEIGHT = 420
TEMPLATE_LAYOUT = {  # a small style of our own: Plotly's stock templates add ~7 KB to every figure
    "font": {"family": "system-ui, sans-serif", "size": 12, "color": "#222"},
    "paper_bgcolor": "white", "plot_bgcolor": "white", "hovermode": "closest",
    "margin": {"l": 70, "r": 20, "t": 90, "b": 60}, "height": HEIGHT,
    "legend": {"orientation": "v", "x": 1.02, "y": 1, "font": {"size": 11}},  # beside: it scrolls when long
}
VERSION = re.compile(r"[A-Za-z]*\d+(?:\.\d+)+[\w.+-]*")


def short_toolchain(text: str) -> str:
    """`go1.23.2` of `go version go1.23.2 linux/amd64`: a legend has room for the version alone."""
    if len(text) <= 16:
        return text
    found = VERSION.search(text)
    return found.group(0) if found else text[:16] + "…"
AXIS = {"gridcolor": "#e5e5e5", "linecolor": "#888", "zeroline": False, "automargin": True}


def esc(text: Any) -> str:
    """Text for Plotly's labels, which read a little HTML (<br>, <b>): a program's name stays text."""
    return html.escape(str(text), quote=False)


PLACE = ("machine", "layout")  # pseudo-parameters: every figure holds one of each


def param_value(row: Row, name: str) -> Any:
    if name == "machine":
        return row.key.machine
    if name == "layout":
        return row.key.topology
    return row.threads if name == "threads" else row.params.get(name)


class Series:
    """Names and styles of the lines and bars: a program, with its toolchain version where it has
    several; and how a figure's title names its machine and load layout."""

    def __init__(self, rows: list[Row], machine_names: dict[str, str], topology_names: dict[str, str]):
        toolchains: dict[str, set[str]] = {}
        for r in rows:
            toolchains.setdefault(r.program, set()).add(r.key.toolchain)
        self.several_toolchains = {p for p, t in toolchains.items() if len(t) > 1}
        # a load layout is named only where one machine ran several (else the machine names it)
        self.several_layouts = len({(r.key.machine, r.key.topology) for r in rows}) > len(
            {r.key.machine for r in rows})
        self.machine_names, self.topology_names = machine_names, topology_names
        programs = sorted(toolchains)
        self.colour = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(programs)}
        self.dash = {(p, version): DASHES[i % len(DASHES)]
                     for p in programs for i, version in enumerate(sorted(toolchains[p]))}

    def name(self, key: ComparabilityKey) -> str:
        if key.program in self.several_toolchains:
            return f"{key.program} · {short_toolchain(key.toolchain)}"
        return key.program

    def style(self, key: ComparabilityKey) -> dict:
        return {"color": self.colour[key.program], "dash": self.dash[(key.program, key.toolchain)]}

    def place(self, chosen: dict) -> str:
        """The machine (and load layout) a figure holds, for its title."""
        machine = chosen.get("machine")
        where = self.machine_names.get(machine, machine) if machine else ""
        layout = chosen.get("layout")
        if layout and self.several_layouts:
            where += f"; {self.topology_names.get(layout, layout)}"
        return where


def title_text(head: str, chosen: dict, series: Series) -> str:
    # a parameter at 0 is one its runs did not use (rate=0: closed loop): no title names it
    params = " ".join(f"{k}={v}" for k, v in chosen.items() if k not in PLACE and v != 0)
    return head + (f" — {params}" if params else "")


def hover(row: Row, value: tuple[float, float, float], metric: Metric, name: str, where: str) -> str:
    median, low, high = value
    spread = (f"runs: min {human(low, metric.unit)} – max {human(high, metric.unit)}, {row.runs_ok} runs"
              if row.runs_ok > 1 else "1 run")
    return (f"<b>{esc(name)}</b><br>{esc(where)}{metric.label}: <b>{esc(human(median, metric.unit))}</b><br>"
            f"{esc(spread)}<br>session {row.session}, {row.date} · {esc(row.key.toolchain)}")


def error_bars(values: list[tuple[float, float, float]], colour: str) -> dict:
    return {"type": "data", "symmetric": False, "array": [h - m for m, _, h in values],
            "arrayminus": [m - lo for m, lo, _ in values], "color": colour, "thickness": 1.2, "width": 4}


def axis_title(metric: Metric) -> str:
    unit = "" if metric.unit in metric.label else f"{metric.unit}, "
    return f"{metric.label} ({unit}{metric.better} is better)"


def _trace(kind: str, rows: list[Row], xs: list, index: int, metric: Metric, series: Series, key: ComparabilityKey,
           where: Callable[[Row], str], axis: int = 1, legend: bool = True) -> dict:
    """A line through `xs` (kind "lines"), or horizontal bars named by `xs` (kind "bars")."""
    values = [r.figures[index] for r in rows]
    style = series.style(key)
    name = series.name(key)
    trace: dict[str, Any] = {
        "type": "scatter" if kind == "lines" else "bar", "name": esc(name), "legendgroup": esc(name),
        "showlegend": legend, "customdata": [r.id for r in rows],
        "hovertext": [hover(r, v, metric, name, where(r)) for r, v in zip(rows, values)],
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    if kind == "lines":
        trace.update(x=xs, y=[v[0] for v in values], error_y=error_bars(values, "#444"), mode="lines+markers",
                     line={"color": style["color"], "dash": style["dash"], "width": 2},
                     marker={"color": style["color"], "size": 7})
    else:  # horizontal: a program's name reads along its bar, however long
        trace.update(y=xs, x=[v[0] for v in values], error_x=error_bars(values, "#444"), orientation="h",
                     marker={"color": style["color"]})
    if axis > 1:
        trace.update(xaxis=f"x{axis}", yaxis=f"y{axis}")
    return trace


MAX_NAMED_TICKS = 8  # a sweep over at most this many values has a tick at each value, and no other


def _layout(title: str, subtitle: str, panels: list[str], x_title: str, metric: Metric, log_x: bool, log_y: bool,
            x_type: str | None = None, x_values: list | None = None) -> dict:
    layout: dict[str, Any] = {**TEMPLATE_LAYOUT, "title": {"text": esc(title) + (
        f"<br><sup>{esc(subtitle)}</sup>" if subtitle else ""), "x": 0, "xanchor": "left"}}
    n = max(len(panels), 1)
    gap = 0.04 if n > 1 else 0.0
    width = (1 - gap * (n - 1)) / n
    y_axis = {**AXIS, "title": {"text": axis_title(metric)}, "type": "log" if log_y else "linear"}
    if log_y:
        y_axis["dtick"] = "D2"
    else:
        y_axis["rangemode"] = "tozero"
    annotations = []
    for i in range(n):
        suffix = "" if i == 0 else str(i + 1)
        x_axis = {**AXIS, "domain": [i * (width + gap), i * (width + gap) + width],
                  "title": {"text": esc(x_title) if n == 1 else ""}, "anchor": f"y{suffix}"}
        if x_type or log_x:
            x_axis["type"] = x_type or "log"
        if log_x and x_values and len(x_values) <= MAX_NAMED_TICKS:
            # the values the runs were given (80, 420, 2020 connections), not decades with bare
            # "2" and "5" between them that read as 2 and 5 connections
            x_axis["tickvals"] = x_values
            x_axis["ticktext"] = [f"{v:,}" for v in x_values]
        elif log_x:
            x_axis["dtick"] = "D2"  # decades, and 2 and 5 between them
        layout[f"xaxis{suffix}"] = x_axis
        layout[f"yaxis{suffix}"] = {**y_axis, "anchor": f"x{suffix}"} if i == 0 else {
            **y_axis, "anchor": f"x{suffix}", "matches": "y", "showticklabels": False, "title": {"text": ""}}
        if panels:
            annotations.append({"text": esc(panels[i]), "xref": f"x{suffix} domain", "yref": "paper",
                                "x": 0.5, "y": 1.0, "yanchor": "bottom", "showarrow": False})
    if n > 1 and x_title:  # one x title under all panels, not one squeezed under each
        annotations.append({"text": esc(x_title), "xref": "paper", "yref": "paper", "x": 0.5, "y": 0,
                            "yshift": -40, "yanchor": "top", "showarrow": False, "font": {"size": 14}})
    if annotations:
        layout["annotations"] = annotations
    return layout


def _splits(rows: list[Row], names: list[str], scenario: Scenario, always: tuple[str, ...] = (),
            series: Series | None = None) -> list[tuple[dict, list[Row]]]:
    """Rows split by the values of `names` that vary, and of `always` (one figure each, in the
    scenario's order of values); the constant parameters go in the page's lead, not in titles."""
    varying = [n for n in names if n in always or len({repr(param_value(r, n)) for r in rows}) > 1]
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        groups.setdefault(tuple(param_value(r, n) for n in varying), []).append(r)
    declared = {p.name: p for p in scenario.params}

    shown = {"machine": series.machine_names, "layout": series.topology_names} if series else {}

    def order(combo: tuple) -> tuple:  # machines by name, parameters in the scenario's order
        return tuple((v is None, repr(type(v)), declared[n].sort_value(v) if n in declared
                      else shown[n].get(v, v) if n in shown else v or "") for n, v in zip(varying, combo))

    return [({n: v for n, v in zip(varying, combo) if v is not None}, groups[combo])
            for combo in sorted(groups, key=order)]


def _ordered(values: list, scenario: Scenario, name: str) -> list:
    declared = {p.name: p for p in scenario.params}
    param = declared.get(name)
    return sorted(values, key=lambda v: (v is None, param.sort_value(v) if param else v or 0))


def summary_figures(scenario: Scenario, view: View, rows: list[Row], metrics: list[Metric],
                    series: Series) -> list[dict]:
    """The view's figures over every session's rows; the page shows the latest row per key."""
    index = next((i for i, m in enumerate(metrics) if m.key == view.metric), 0)
    metric = metrics[index]
    usable = [r for r in rows if r.status == "ok" and r.figures[index] is not None]
    if view.shape == LINES and view.x is not None:
        swapped = _x_that_varies(view, usable, scenario)
        if swapped is not view:  # the runs at 0 of that parameter did not use it: drawn as before
            unused = [r for r in usable if not param_value(r, swapped.x)]
            used = [r for r in usable if param_value(r, swapped.x)]
            return ((_figures(scenario, view, unused, index, metric, series) if unused else [])
                    + _figures(scenario, swapped, used, index, metric, series))
    return _figures(scenario, view, usable, index, metric, series)


def _figures(scenario: Scenario, view: View, usable: list[Row], index: int, metric: Metric,
             series: Series) -> list[dict]:
    names = [*PLACE, *(p.name for p in scenario.params), "threads"]
    lines = view.shape == LINES and view.x is not None
    layout_params = set(view.uses()) if lines or view.shape == GROUPED else set()
    figures = []
    for chosen, members in _splits(usable, [n for n in names if n not in layout_params], scenario, PLACE,
                                   series):
        title, place = title_text(view.title, chosen, series), series.place(chosen)
        xs = {param_value(r, view.x) for r in members} if lines else set()
        panels = {param_value(r, view.panels) for r in members} if lines and view.panels else set()
        if lines and len(xs) == 1 and len(panels) <= 1:
            # one x value: a line of single points says nothing; bars, best first, naming that value
            one = {**chosen, view.x: next(iter(xs)), **({view.panels: next(iter(panels))} if panels else {})}
            figures.append(_bars_figure(scenario, view, members, index, metric, series,
                                        title_text(view.bars_title(), one, series), place))
        elif lines:
            figures.append(_lines_figure(scenario, view, members, index, metric, series, title, place))
        else:
            figures.append(_bars_figure(scenario, view, members, index, metric, series, title, place))
    return figures


def _x_that_varies(view: View, rows: list[Row], scenario: Scenario) -> View:
    """The view, or, when its x parameter has one value in these rows while another numeric
    parameter takes several (a capacity search: 80 connections, a dozen offered rates), the view
    drawn against that parameter: a line of points instead of one figure per point."""
    def values(name: str) -> set:
        return {param_value(r, name) for r in rows}

    if len(values(view.x)) != 1:
        return view
    others = [(len(values(p.name)), p.name) for p in scenario.params
              if p.name not in view.uses() and len(values(p.name)) > 2
              and all(isinstance(v, (int, float)) for v in values(p.name))]
    if not others:
        return view
    _, name = max(others)
    title = view.title.replace(f"against {view.x}", f"against {name}")
    return replace(view, x=name, xlabel=name, title=title, log_x=False, panels=None)


def _by_key(rows: list[Row]) -> dict[ComparabilityKey, list[Row]]:
    out: dict[ComparabilityKey, list[Row]] = {}
    for r in rows:
        out.setdefault(r.key, []).append(r)
    return out


def _lines_figure(scenario: Scenario, view: View, rows: list[Row], index: int, metric: Metric, series: Series,
                  title: str, place: str) -> dict:
    x_name = view.x
    assert x_name is not None
    panels = _ordered(list({param_value(r, view.panels) for r in rows}), scenario, view.panels) if view.panels else [None]
    traces = []
    shown: set[str] = set()
    for p, panel in enumerate(panels):
        in_panel = [r for r in rows if view.panels is None or param_value(r, view.panels) == panel]
        # one line per program *and* its other parameters' key: a key's points differ only in x
        lines: dict[tuple, list[Row]] = {}
        for r in in_panel:
            lines.setdefault((series.name(r.key), r.key.toolchain), []).append(r)
        for _, members in sorted(lines.items(), key=lambda item: item[0]):
            members.sort(key=lambda r: (param_value(r, x_name) or 0, r.time))
            name = series.name(members[0].key)
            traces.append(_trace("lines", members, [param_value(r, x_name) for r in members], index, metric, series,
                                 members[0].key, lambda r: f"{x_name}={param_value(r, x_name)}: ", p + 1,
                                 legend=name not in shown))
            shown.add(name)
    labels = [f"{view.panels}={v}" for v in panels] if view.panels else []
    x_values = sorted({v for r in rows if isinstance(v := param_value(r, x_name), (int, float))})
    log_x = view.log_x and len(x_values) > 1
    layout = _layout(title, f"{place} · median of the runs; bars: min–max", labels, view.xlabel or x_name, metric,
                     log_x, view.log_y, x_values=x_values)
    if view.log_y:
        _name_log_ticks(layout, traces, len(panels))
    return {"data": traces, "layout": layout}


def log_ticks(low: float, high: float) -> list[float]:
    """1, 2 and 5 times the powers of ten from below `low` to above `high`: round values to label
    in full on a log axis (plotly's "D2" labels the 2 and the 5 of each decade as bare digits)."""
    ticks, decade = [], 10.0 ** math.floor(math.log10(low))
    while decade <= high * 10:
        ticks += [m * decade for m in (1, 2, 5)]
        decade *= 10
    below = [t for t in ticks if t <= low]
    above = [t for t in ticks if t >= high]
    return [t for t in ticks if (below[-1] if below else ticks[0]) <= t <= (above[0] if above else ticks[-1])]


def tick_text(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def _name_log_ticks(layout: dict, traces: list[dict], panels: int) -> None:
    """Every panel's log y axis gets the 1-2-5 values over the traces' range (bars included)."""
    ys = []
    for t in traces:
        medians, bars = t.get("y") or [], t.get("error_y") or {}
        ups, downs = bars.get("array") or [0] * len(medians), bars.get("arrayminus") or [0] * len(medians)
        for y, up, down in zip(medians, ups, downs):
            if isinstance(y, (int, float)) and y > 0:
                ys += [y + up, y - down if y - down > 0 else y]
    if not ys:
        return
    ticks = log_ticks(min(ys), max(ys))
    for i in range(max(panels, 1)):
        axis = layout[f"yaxis{'' if i == 0 else i + 1}"]
        axis.pop("dtick", None)
        axis.update(tickvals=ticks, ticktext=[tick_text(v) for v in ticks])


def _bars_figure(scenario: Scenario, view: View, rows: list[Row], index: int, metric: Metric, series: Series,
                 title: str, place: str) -> dict:
    traces = []
    grouped = view.shape == GROUPED and view.group
    def best_first(item: tuple[ComparabilityKey, list[Row]]) -> tuple:
        latest = max(item[1], key=lambda r: (r.time, r.session)).figures[index][0]
        return (-latest if metric.better == "higher" else latest, series.name(item[0]))

    for key, members in sorted(_by_key(rows).items(), key=best_first):
        members.sort(key=lambda r: r.time)
        if grouped:
            xs = [f"{series.name(key)} · {view.group}={param_value(r, view.group)}" for r in members]
        else:
            xs = [series.name(key)] * len(members)
        traces.append(_trace("bars", members, xs, index, metric, series, key, lambda r: "", legend=False))
    layout = _layout(title, f"{place} · median of the runs; whiskers: min–max", [], "", metric, False, view.log_y)
    # horizontal bars: the metric along x, the programs down y (the first at the top)
    layout["xaxis"], layout["yaxis"] = layout["yaxis"], {**AXIS, "type": "category", "autorange": "reversed"}
    layout["xaxis"]["anchor"], layout["yaxis"]["anchor"] = "y", "x"
    layout["barmode"] = "overlay" if not grouped else "group"
    layout["height"] = max(HEIGHT, 140 + 24 * len(traces))
    layout["showlegend"] = False
    return {"data": traces, "layout": layout}


def history_figures(scenario: Scenario, rows: list[Row], metrics: list[Metric], series: Series) -> list[dict]:
    """Per parameter set, the headline of every key over the sessions, in time order: a toolchain
    change shows as the same colour in a new dash."""
    metric = metrics[0]
    usable = [r for r in rows if r.status == "ok" and r.figures[0] is not None]
    names = [*PLACE, *(p.name for p in scenario.params), "threads"]
    figures = []
    for chosen, members in _splits(usable, names, scenario, PLACE, series):
        traces = []
        for key, points in sorted(_by_key(members).items(), key=lambda item: (series.name(item[0]), item[0].toolchain)):
            points.sort(key=lambda r: (r.time, r.session))
            name = series.name(key)
            label = name if key.program in series.several_toolchains else f"{name} · {short_toolchain(key.toolchain)}"
            trace = _trace("lines", points, [r.time for r in points], 0, metric, series, key, lambda r: "")
            trace["name"] = trace["legendgroup"] = esc(label)
            traces.append(trace)
        title = title_text(f"{scenario.name}: {metric.label} over time", chosen, series)
        layout = _layout(title, f"{series.place(chosen)} · each key's median per session; bars: min–max of its runs",
                         [], "session start (UTC)", metric, False, False, "date")
        figures.append({"data": traces, "layout": layout})
    return figures


CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}

__all__ = ["CONFIG", "Series", "history_figures", "summary_figures"]
