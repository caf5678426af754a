"""Draw the views the scenarios declare (scenarios/views.py) with matplotlib, as PNG and SVG.

Every figure says what its marks are (median of the runs; error bars span min–max), labels its
ticks in the metric's unit at round values (linear axes are scaled into one display unit, e.g.
GiB, so that the library's locator picks round numbers; log axes label their decades and the 2s
and 5s between them, each in its unit), puts panels that are meant to be compared on one y axis
from 0, draws points and bars from runs too short to compare hollow and says why in the caption,
leaves zero-valued parameters out of titles, and names files so that their parts cannot be
confused (`http-rps--connections-80`). Imported only when a report is written: matplotlib is
slow to load.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, ScalarFormatter  # noqa: E402

from corobench.files import replacing  # noqa: E402
from corobench.results import Cell  # noqa: E402
from corobench.scenarios import get_scenario  # noqa: E402
from corobench.scenarios.views import BARS, GROUPED, LINES, PERCENTILES, SERIES, View  # noqa: E402
from corobench.units import human, sig3  # noqa: E402

MARKERS = "osD^v<>pPX*h"
BAR_COLOUR = "#4c72b0"
SHORT_NOTE = "hollow: the timed region was too short to compare by (under 5 ms); raise the sizes"


# --------------------------------------------------------------------------- units on axes

# (divisor, unit shown) steps per metric unit, smallest first: a linear axis uses the largest step its
# largest value reaches, so that MaxNLocator's round numbers are round in the unit shown
STEPS = {
    "MiB": ((1, " MiB"), (1024, " GiB")),
    "s": ((1e-6, " µs"), (1e-3, " ms"), (1, " s")),
    "µs": ((1, " µs"), (1e3, " ms"), (1e6, " s")),
}
COUNT_STEPS = ((1, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"))  # a rate or count: 20k, with its unit on the axis label


def display_unit(unit: str, largest: float) -> tuple[float, str]:
    """(divisor, what follows each tick's number) for values up to `largest` of a metric in `unit`."""
    steps = STEPS.get(unit, COUNT_STEPS)
    chosen = steps[0]
    for step in steps:
        if abs(largest) >= step[0]:
            chosen = step
    return chosen


def tick_text(value: float, unit: str) -> str:
    """A log axis's tick: durations and sizes with their unit, counts and rates as 2k, 50M."""
    return human(value, unit) if unit in STEPS else human(value, "")


def log_axis(target, unit: str) -> None:
    """Log scale ticks from the library's locators: decades, and 2 and 5 between them, each
    labelled in the metric's unit."""
    target.set_major_locator(LogLocator(base=10))
    target.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    label = FuncFormatter(lambda v, _: tick_text(v, unit) if v > 0 else "0")
    target.set_major_formatter(label)
    target.set_minor_formatter(label)


def unit_axis(ax, axis: str, unit: str, largest: float, log: bool) -> float:
    """Set up one axis for a metric in `unit`: its scale, locator and formatter; returns the
    divisor the data must be plotted with (1 on log axes, whose ticks carry their own units)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    if log:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        log_axis(target, unit)
        return 1.0
    divisor, shown = display_unit(unit, largest)
    target.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    target.set_major_formatter(UnitFormatter(shown))
    target.set_minor_formatter(NullFormatter())
    return divisor


class UnitFormatter(ScalarFormatter):
    """The library's plain-number formatter (as many decimals as the ticks' spacing needs, no
    offset, no exponent), each tick followed by its unit."""

    def __init__(self, suffix: str):
        super().__init__(useOffset=False)
        self.set_scientific(False)
        self.suffix = suffix

    def __call__(self, x, pos=None) -> str:
        if x == 0:
            return "0"
        text = super().__call__(x, pos)
        return f"{text}{self.suffix}" if text else text


def spans_decade(values: list[float]) -> bool:
    """A log axis helps only where the values span a factor of ten or more; below that its ticks
    fall back to linear ones anyway, and a linear axis from 0 reads truer."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) >= 10 * min(positive)


def axis_label(metric_label: str, unit: str, better: str) -> str:
    """`speed (events/s), higher is better`: the unit in the label where the ticks do not carry it
    and the label does not already say it (`requests/s, higher is better`)."""
    shown = "" if unit in STEPS or (len(unit) > 2 and unit in metric_label) else f" ({unit})"
    return f"{metric_label}{shown}, {better} is better"


# --------------------------------------------------------------------------- figures and files

def save(fig, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        with replacing(path, "wb") as f:  # never through a link planted at that name
            fig.savefig(f, format=ext, dpi=120, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _style(index: int) -> dict:
    """Distinct colour and marker per series: a dozen runtimes outrun the default 10 colours."""
    colours = plt.get_cmap("tab20").colors
    return {"color": colours[(index * 2) % 20 + (index // 10) % 2], "marker": MARKERS[index % len(MARKERS)]}


def runs_of(cells: list[Cell], metric: str) -> str:
    counts = sorted({c.summaries[metric].n for c in cells if c.status == "ok" and metric in c.summaries})
    if not counts:
        return "no runs"
    return f"{counts[0]} runs" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} runs"


def caption(fig, cells: list[Cell], metric: str, spread: bool = True, extra: str = "") -> None:
    notes = [f"median of {runs_of(cells, metric)}" + ("; error bars span min–max" if spread else "")]
    if any(c.too_short for c in cells if c.status == "ok"):
        notes.append(SHORT_NOTE)
    failed = sorted({c.program for c in cells if c.status != "ok"})
    if failed:
        notes.append("not shown (FAILED or skipped, see the report's tables): " + ", ".join(failed))
    if extra:
        notes.append(extra)
    fig.text(0.01, -0.01, "\n".join(notes), fontsize=7.5, color="#444", va="top", ha="left", wrap=True)


def titled(ax, title: str, params: str) -> None:
    ax.set_title(f"{title}\n", fontsize=12)
    if params:  # the parameters under the title, a fixed few points above the axes
        ax.annotate(params, xy=(0.5, 1.0), xycoords="axes fraction", xytext=(0, 4), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, color="#444")


def legend_outside(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def param_text(params: dict, threads: int | None) -> str:
    """The parameters a title shows: zero values (a switched-off option) are left out."""
    shown = [f"{k}={v}" for k, v in params.items() if v != 0]
    if threads is not None:
        shown.append(f"threads={threads}")
    return " ".join(shown)


def file_name(scenario: str, view: View, params: dict, threads: int | None) -> str:
    parts = [f"{scenario}-{view.name}"] + [f"{k}-{v}" for k, v in params.items()]
    if threads is not None:
        parts.append(f"threads-{threads}")
    return "--".join(parts).replace("/", "_").replace(" ", "_")


def split(cells: list[Cell], view: View) -> list[tuple[dict, dict, int | None, list[Cell]]]:
    """One figure per combination of the parameters the view does not lay out (and --threads):
    (what the file name needs: the ones that vary; what the title shows: all of them; threads; cells)."""
    laid_out = view.uses()
    keys = [k for k in dict.fromkeys(k for c in cells for k in c.params) if k not in laid_out]
    varying = [k for k in keys if len({repr(c.params.get(k)) for c in cells}) > 1]
    threads_vary = len({c.threads for c in cells}) > 1
    figures: dict[tuple, list[Cell]] = {}
    for c in cells:
        figures.setdefault((tuple(repr(c.params.get(k)) for k in keys), c.threads), []).append(c)
    out = []
    for (_, threads), group in figures.items():
        first = group[0].params
        out.append(({k: first.get(k) for k in varying}, {k: first.get(k) for k in keys},
                    threads if threads_vary else None, group))
    return out


# --------------------------------------------------------------------------- the shapes

def _ok(cells: list[Cell], metric: str) -> list[Cell]:
    return [c for c in cells if c.status == "ok" and metric in c.summaries]


def bars(cells: list[Cell], metric, title: str, params: str) -> plt.Figure:
    """Horizontal bars, best at the top, each labelled with its median; FAILED programs get a
    labelled empty bar; bars from too-short runs are hollow."""
    ok = sorted(_ok(cells, metric.key), key=lambda c: c.summaries[metric.key].median,
                reverse=metric.better == "lower")
    failed = [c for c in cells if c not in ok]
    labels = [c.program for c in failed] + [c.program for c in ok]
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(labels) + 1.8), layout="constrained")
    largest = max((c.summaries[metric.key].max for c in ok), default=1.0) or 1.0
    div = unit_axis(ax, "x", metric.unit, largest, log=False)
    medians = [0.0] * len(failed) + [c.summaries[metric.key].median / div for c in ok]
    lows = [0.0] * len(failed) + [(c.summaries[metric.key].median - c.summaries[metric.key].min) / div for c in ok]
    highs = [0.0] * len(failed) + [(c.summaries[metric.key].max - c.summaries[metric.key].median) / div for c in ok]
    hollow = [False] * len(failed) + [c.too_short for c in ok]
    bar = ax.barh(labels, medians, xerr=[lows, highs], capsize=3, color=BAR_COLOUR, error_kw={"elinewidth": 1})
    for patch, empty in zip(bar.patches, hollow):
        if empty:
            patch.set_facecolor("none")
            patch.set_edgecolor(BAR_COLOUR)
            patch.set_hatch("//")
    top = max((m + h for m, h in zip(medians, highs)), default=0.0) or 1.0
    for i, c in enumerate(failed):
        ax.text(top * 0.01, i, f"{c.status.upper()}: {c.reason[:90]}", va="center", fontsize=7, color="#b00")
    for i, c in enumerate(ok, start=len(failed)):
        s = c.summaries[metric.key]
        ax.text(s.max / div + top * 0.01, i, f" {human(s.median, metric.unit)}", va="center", fontsize=8)
    ax.set_xlim(0, top * 1.18)  # room for the labels
    ax.set_xlabel(axis_label(metric.label, metric.unit, metric.better))
    ax.grid(True, axis="x", alpha=0.3)
    titled(ax, title, params)
    caption(fig, cells, metric.key)
    return fig


def grouped_bars(cells: list[Cell], metric, group_key: str, title: str, params: str) -> plt.Figure:
    """One row of bars per program, one bar per value of `group_key` (e.g. the event type)."""
    scenario = get_scenario(cells[0].scenario)
    values = sorted({c.params[group_key] for c in cells}, key=scenario.param(group_key).sort_value)
    programs = sorted({c.program for c in cells})
    height = 0.8 / max(1, len(values))
    fig, ax = plt.subplots(figsize=(8.5, 0.3 * len(programs) * max(1, len(values)) + 1.8), layout="constrained")
    ok = _ok(cells, metric.key)
    div = unit_axis(ax, "x", metric.unit, max((c.summaries[metric.key].max for c in ok), default=1.0), log=False)
    colours = plt.get_cmap("tab10").colors
    for gi, g in enumerate(values):
        for pi, program in enumerate(programs):
            cell = next((c for c in ok if c.program == program and c.params[group_key] == g), None)
            if cell is None:
                continue
            s = cell.summaries[metric.key]
            colour = colours[gi % 10]
            ax.barh([pi + gi * height], [s.median / div], height=height,
                    xerr=[[(s.median - s.min) / div], [(s.max - s.median) / div]], capsize=2,
                    color="none" if cell.too_short else colour, edgecolor=colour, hatch="//" if cell.too_short else None,
                    label=str(g) if pi == 0 or not any(c.program == programs[0] and c.params[group_key] == g for c in ok)
                    else None, error_kw={"elinewidth": 0.8})
    ax.set_yticks([pi + height * (len(values) - 1) / 2 for pi in range(len(programs))], programs)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel(axis_label(metric.label, metric.unit, metric.better))
    ax.grid(True, axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), title=group_key, fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), frameon=False)
    titled(ax, title, params)
    caption(fig, cells, metric.key)
    return fig


def _series(cells: list[Cell], x_param: str, metric: str):
    """{program: [(x, median, min, max, too_short)]} over the ok cells, sorted by x."""
    out: dict[str, list[tuple]] = {}
    for c in _ok(cells, metric):
        s = c.summaries[metric]
        out.setdefault(c.program, []).append((c.params[x_param], s.median, s.min, s.max, c.too_short))
    return {k: sorted(v) for k, v in sorted(out.items())}


def _plot_lines(ax, lines: dict, index_of: dict[str, int], div: float) -> None:
    for program, points in lines.items():
        style = _style(index_of[program])
        xs = [p[0] for p in points]
        ys = [p[1] / div for p in points]
        err = [[(p[1] - p[2]) / div for p in points], [(p[3] - p[1]) / div for p in points]]
        ax.errorbar(xs, ys, yerr=err, markersize=0, capsize=3, label=program, color=style["color"], linewidth=1.2)
        for x, y, p in zip(xs, ys, points):  # markers one by one: hollow where the run was too short
            ax.plot([x], [y], linestyle="none", marker=style["marker"], markersize=5, color=style["color"],
                    markerfacecolor="none" if p[4] else style["color"])


def lines(cells: list[Cell], metric, view: View, title: str, params: str) -> plt.Figure:
    """The metric against view.x, one line per program; with view.panels, one panel per value, every
    panel on the same y axis (from 0 on a linear axis) so that panels can be compared."""
    scenario = get_scenario(cells[0].scenario)
    panel_values = [None]
    if view.panels:
        panel_values = sorted({c.params[view.panels] for c in cells}, key=scenario.param(view.panels).sort_value)
    cols = 2 if len(panel_values) > 1 else 1
    rows = (len(panel_values) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols + 2, 4.2 * rows), squeeze=False, sharey=True,
                             layout="constrained")
    ok = _ok(cells, metric.key)
    largest = max((c.summaries[metric.key].max for c in ok), default=1.0)
    log_y = view.log_y and spans_decade([v for c in ok for v in (c.summaries[metric.key].min,
                                                                  c.summaries[metric.key].max)])
    log_x = view.log_x and spans_decade([c.params[view.x] for c in cells])
    index_of = {p: i for i, p in enumerate(sorted({c.program for c in cells}))}
    div = 1.0
    for ax, value in zip(axes.flat, panel_values):
        group = [c for c in cells if view.panels is None or c.params[view.panels] == value]
        div = unit_axis(ax, "y", metric.unit, largest, log_y)
        _plot_lines(ax, _series(group, view.x, metric.key), index_of, div)
        if log_x:
            ax.set_xscale("log")
            log_axis(ax.xaxis, "")
        else:
            ax.xaxis.set_major_formatter(UnitFormatter(""))
        if not log_y:
            ax.set_ylim(bottom=0)
        if value is not None:
            ax.set_title(f"{view.panels} = {value}")
        ax.set_xlabel(view.xlabel or view.x)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.flat:
        ax.set_ylabel(axis_label(metric.label, metric.unit, metric.better))
    for ax in list(axes.flat)[len(panel_values):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, fontsize=8, loc="outside right upper", frameon=False)
    fig.suptitle(title + (f"\n{params}" if params else ""), fontsize=12)
    caption(fig, cells, metric.key)
    return fig


def percentiles(cells: list[Cell], view: View, title: str, params: str) -> plt.Figure | None:
    """Several metrics (latency p50 … p99.9) per program, one line each, on a log scale."""
    keys = view.metrics
    ok = [c for c in cells if c.status == "ok" and all(k in c.summaries for _, k in keys)]
    if not ok:
        return None
    unit = next(m.unit for m in ok[0].metrics if m.key == keys[0][1])
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    unit_axis(ax, "y", unit, 1.0, log=True)
    xs = list(range(len(keys)))
    for index, c in enumerate(sorted(ok, key=lambda c: c.program)):
        style = _style(index)
        ax.plot(xs, [c.summaries[k].median for _, k in keys], label=c.program, color=style["color"],
                marker=style["marker"], markerfacecolor="none" if c.too_short else style["color"])
    ax.set_xticks(xs, [label for label, _ in keys])
    ax.set_ylabel("latency, lower is better")
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    titled(ax, title, params)
    caption(fig, cells, keys[0][1], spread=False)
    return fig


def series(cells: list[Cell], view: View, title: str, params: str) -> plt.Figure | None:
    """A series each run stored (e.g. RSS during the load): the run with the median headline of each
    program."""
    label, key = view.metrics[0]
    found = {}
    for c in cells:
        if c.status != "ok" or not c.runs:
            continue
        head = c.metrics[0].key
        runs = sorted(c.runs, key=lambda r: (r.metrics.get(head) or 0))
        points = runs[len(runs) // 2].metrics.get(key)
        if points:
            found[c.program] = points
    if not found:
        return None
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    largest = max(p[1] for points in found.values() for p in points)
    div = unit_axis(ax, "y", "MiB", largest, log=False)
    for index, (program, points) in enumerate(sorted(found.items())):
        ax.plot([p[0] for p in points], [p[1] / div for p in points], label=program, color=_style(index)["color"])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since the server was ready")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    legend_outside(ax)
    titled(ax, title, params)
    failed = sorted({c.program for c in cells if c.status != "ok"})
    fig.text(0.01, -0.01, "the run with the median headline of each program, sampled every 100 ms"
             + ("\nnot shown (FAILED or skipped): " + ", ".join(failed) if failed else ""),
             fontsize=7.5, color="#444", va="top", ha="left")
    return fig


def figures(scenario_name: str, cells: list[Cell]):
    """(file name, figure) of every view of the scenario over these cells; the headline views first."""
    scenario = get_scenario(scenario_name)
    metrics = {m.key: m for m in scenario.metrics}
    for view in sorted(scenario.views, key=lambda v: not v.headline):
        for name_params, shown, threads, group in split(cells, view):
            params = param_text(shown, threads)
            metric = metrics[view.metric]
            fig = None
            if view.shape == LINES and len({c.params[view.x] for c in group}) > 1:
                fig = lines(group, metric, view, view.title, params)
            elif view.shape in (LINES, GROUPED) and (view.panels or view.group) and \
                    len({c.params[view.panels or view.group] for c in group}) > 1:
                fig = grouped_bars(group, metric, view.panels or view.group, view.bars_title(),
                                   param_text({**shown, **({view.x: group[0].params[view.x]} if view.x else {})},
                                              threads))
            elif view.shape in (LINES, GROUPED, BARS):
                one = {**shown, **{k: group[0].params[k] for k in view.uses()}}
                fig = bars(group, metric, view.bars_title(), param_text(one, threads))
            elif view.shape == PERCENTILES:
                fig = percentiles(group, view, view.title, params)
            elif view.shape == SERIES:
                fig = series(group, view, view.title, params)
            if fig is not None:
                yield file_name(scenario_name, view, name_params, threads), fig


def draw(scenario_name: str, cells: list[Cell], out_dir: Path) -> list[Path]:
    """Every view of the scenario over these cells, as PNG and SVG; the headline views' files first."""
    paths: list[Path] = []
    for name, fig in figures(scenario_name, cells):
        paths += save(fig, out_dir, name)
    return paths
