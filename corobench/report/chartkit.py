"""Chart helpers (matplotlib, PNG and SVG) the scenarios draw their charts with, from cells only.

Each scenario module says which charts it has (`Scenario.charts`); this module holds the shapes
they share: a metric against a parameter (one line per program, or bars when the sweep has one
value), horizontal bars per program, latency percentiles, a series over time. Every figure says
what its markers and error bars are (median of the runs, min–max), labels values in human
units, keeps the legend outside the data and names the programs that FAILED. Imported only when
a report is written: matplotlib is slow to load.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from corobench.files import replacing  # noqa: E402
from corobench.results import Cell  # noqa: E402
from corobench.units import human  # noqa: E402

MARKERS = "osD^v<>pPX*h"
BAR_COLOUR = "#4c72b0"


def save(fig, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        with replacing(path, "wb") as f:  # never through a link planted at that name
            fig.savefig(f, format=ext, dpi=120, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _style(program: str, index: int) -> dict:
    """Distinct colour and marker per series: a dozen runtimes outrun the default 10 colours."""
    colours = plt.get_cmap("tab20").colors
    return {"color": colours[(index * 2) % 20 + (index // 10) % 2], "marker": MARKERS[index % len(MARKERS)]}


def runs_of(cells: list[Cell], metric: str) -> str:
    counts = sorted({c.summaries[metric].n for c in cells if c.status == "ok" and metric in c.summaries})
    if not counts:
        return "no runs"
    return f"{counts[0]} runs" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} runs"


def subtitle(ax, params: str) -> None:
    """The parameters under the title, a fixed few points above the axes (an offset in axes
    fractions put it into the title on tall charts)."""
    ax.annotate(params, xy=(0.5, 1.0), xycoords="axes fraction", xytext=(0, 4), textcoords="offset points",
                ha="center", va="bottom", fontsize=8, color="#444")


def finish(fig, ax, cells: list[Cell], metric: str, headline: str, params: str, spread: bool = True) -> None:
    """Title (what, then the parameters smaller), and one caption line: what the marks mean and
    which programs are missing because they FAILED."""
    ax.set_title(f"{headline}\n", fontsize=12)
    subtitle(ax, params)
    notes = [f"median of {runs_of(cells, metric)}" + ("; error bars span min–max" if spread else "")]
    failed = sorted({c.program for c in cells if c.status != "ok"})
    if failed:
        notes.append("not shown (FAILED or skipped, see the report's tables): " + ", ".join(failed))
    fig.text(0.01, -0.01, "\n".join(notes), fontsize=7.5, color="#444", va="top", ha="left", wrap=True)


def axis_in(ax, unit: str, axis: str = "y") -> None:
    """Tick labels in human units (1.5k, 20 ms) instead of 1.5e+03."""
    formatter = FuncFormatter(lambda v, _: human(v, unit) if v else "0")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(formatter)


def series(cells: list[Cell], x_param: str, metric: str, scale: float = 1.0):
    """{program: [(x, median, low, high)]} over the ok cells, sorted by x."""
    out: dict[str, list[tuple[float, float, float, float]]] = {}
    for c in cells:
        s = c.summaries.get(metric)
        if c.status != "ok" or s is None:
            continue
        out.setdefault(c.program, []).append(
            (c.params[x_param], s.median * scale, s.min * scale, s.max * scale))
    return {k: sorted(v) for k, v in sorted(out.items())}


def plot_series(ax, lines) -> None:
    for index, (program, points) in enumerate(lines.items()):
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        err = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
        ax.errorbar(xs, ys, yerr=err, markersize=5, capsize=3, label=program, **_style(program, index))


def legend_outside(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def by_param(cells: list[Cell], key: str) -> dict:
    out: dict = {}
    for c in cells:
        out.setdefault(c.params[key], []).append(c)
    return out


def shapes(cells: list[Cell], *keys: str) -> dict[tuple, list[Cell]]:
    """Cells grouped by the given parameters and --threads: one figure per group."""
    out: dict[tuple, list[Cell]] = {}
    for c in cells:
        out.setdefault((*(c.params[k] for k in keys), c.threads), []).append(c)
    return out


def by_label(cells: list[Cell]) -> dict[str, list[Cell]]:
    """Cells grouped by their whole parameter set (and --threads): one figure per group."""
    out: dict[str, list[Cell]] = {}
    for c in cells:
        label = c.label_params() + (f" threads={c.threads}" if c.threads is not None else "")
        out.setdefault(label, []).append(c)
    return out


def slug(label: str) -> str:
    """A file-name-safe short form of a parameter label, e.g. connections=80 duration=10 -> c80-d10."""
    parts = []
    for item in label.split():
        key, _, value = item.partition("=")
        parts.append("".join(w[0] for w in key.split("_")) + value)
    return "-".join(parts)


def against(cells: list[Cell], x_param: str, xlabel: str, metric: str, unit: str, ylabel: str, title: str,
            params: str, out_dir: Path, name: str, log_y: bool = True) -> list[Path]:
    """A metric against a parameter on log axes, one line per program; with one x value, bars."""
    if len({c.params[x_param] for c in cells}) < 2:
        return bars(cells, metric, unit, ylabel, title, params, out_dir, name)
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    plot_series(ax, series(cells, x_param, metric))
    ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    axis_in(ax, unit)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    finish(fig, ax, cells, metric, title, params)
    return save(fig, out_dir, name)


def bars(cells: list[Cell], metric: str, unit: str, xlabel: str, title: str, params: str, out_dir: Path,
         name: str, better: str = "lower") -> list[Path]:
    """Horizontal bars, best at the top, each labelled with its median; FAILED programs get a
    labelled empty bar."""
    ok = sorted((c for c in cells if c.status == "ok" and metric in c.summaries),
                key=lambda c: c.summaries[metric].median, reverse=better == "lower")
    failed = [c for c in cells if c not in ok]
    labels = [c.program for c in failed] + [c.program for c in ok]
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(labels) + 1.8), layout="constrained")
    medians = [0.0] * len(failed) + [c.summaries[metric].median for c in ok]
    lows = [0.0] * len(failed) + [c.summaries[metric].median - c.summaries[metric].min for c in ok]
    highs = [0.0] * len(failed) + [c.summaries[metric].max - c.summaries[metric].median for c in ok]
    ax.barh(labels, medians, xerr=[lows, highs], capsize=3, color=BAR_COLOUR, error_kw={"elinewidth": 1})
    top = max((m + h for m, h in zip(medians, highs)), default=0.0) or 1.0
    for i, c in enumerate(failed):
        ax.text(top * 0.01, i, f"{c.status.upper()}: {c.reason[:90]}", va="center", fontsize=7, color="#b00")
    for i, c in enumerate(ok, start=len(failed)):
        s = c.summaries[metric]
        ax.text(s.max + top * 0.01, i, f" {human(s.median, unit)}", va="center", fontsize=8)
    ax.set_xlim(0, top * 1.18)  # room for the labels
    axis_in(ax, unit, "x")
    ax.set_xlabel(f"{xlabel}, {better} is better")
    ax.grid(True, axis="x", alpha=0.3)
    finish(fig, ax, cells, metric, title, params)
    return save(fig, out_dir, name)


def grouped_bars(cells: list[Cell], group_key: str, groups: list, metric: str, unit: str, xlabel: str,
                 title: str, params: str, out_dir: Path, name: str, better: str = "higher") -> list[Path]:
    """One row of bars per program, one bar per value of `group_key` (e.g. the event type)."""
    programs = sorted({c.program for c in cells})
    present = [g for g in groups if any(c.params[group_key] == g for c in cells)]
    height = 0.8 / max(1, len(present))
    fig, ax = plt.subplots(figsize=(8.5, 0.3 * len(programs) * max(1, len(present)) + 1.8), layout="constrained")
    colours = plt.get_cmap("tab10").colors
    for gi, g in enumerate(present):
        ys, widths, lows, highs = [], [], [], []
        for pi, program in enumerate(programs):
            cell = next((c for c in cells if c.program == program and c.params[group_key] == g), None)
            if cell is None or cell.status != "ok" or metric not in cell.summaries:
                continue
            s = cell.summaries[metric]
            ys.append(pi + gi * height)
            widths.append(s.median)
            lows.append(s.median - s.min)
            highs.append(s.max - s.median)
        ax.barh(ys, widths, height=height, xerr=[lows, highs], capsize=2, color=colours[gi % 10], label=str(g),
                error_kw={"elinewidth": 0.8})
    ax.set_yticks([pi + height * (len(present) - 1) / 2 for pi in range(len(programs))], programs)
    ax.invert_yaxis()
    axis_in(ax, unit, "x")
    ax.set_xlabel(f"{xlabel}, {better} is better")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(title=group_key, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    finish(fig, ax, cells, metric, title, params)
    return save(fig, out_dir, name)


def percentiles(cells: list[Cell], keys: tuple[tuple[str, str], ...], ylabel: str, title: str, params: str,
                out_dir: Path, name: str) -> list[Path]:
    """Latency percentiles (p50 … p99.9) per program, one line each, on a log scale."""
    ok = [c for c in cells if c.status == "ok" and all(k in c.summaries for _, k in keys)]
    if not ok:
        return []
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    xs = list(range(len(keys)))
    for index, c in enumerate(sorted(ok, key=lambda c: c.program)):
        ys = [c.summaries[k].median for _, k in keys]
        ax.plot(xs, ys, label=c.program, **_style(c.program, index))
    ax.set_xticks(xs, [label for label, _ in keys])
    ax.set_yscale("log")
    axis_in(ax, "µs")
    ax.set_ylabel(ylabel + ", lower is better")
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    finish(fig, ax, cells, keys[0][1], title, params, spread=False)
    return save(fig, out_dir, name)


def over_time(cells: list[Cell], metric_key: str, ylabel: str, title: str, params: str, out_dir: Path,
              name: str) -> list[Path]:
    """A series each run stored (e.g. RSS during the load): the median run's series per program."""
    lines = {}
    for c in cells:
        if c.status != "ok" or not c.runs:
            continue
        runs = sorted(c.runs, key=lambda r: (r.metrics.get("rps") or 0))
        points = runs[len(runs) // 2].metrics.get(metric_key)
        if points:
            lines[c.program] = points
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    for index, (program, points) in enumerate(sorted(lines.items())):
        style = _style(program, index)
        ax.plot([p[0] for p in points], [p[1] for p in points], label=program, color=style["color"])
    ax.set_xlabel("seconds since the server was ready")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    legend_outside(ax)
    ax.set_title(f"{title}\n", fontsize=12)
    subtitle(ax, params)
    failed = sorted({c.program for c in cells if c.status != "ok"})
    fig.text(0.01, -0.01, "the run with the median rate of each program, sampled every 100 ms"
             + ("\nnot shown (FAILED or skipped): " + ", ".join(failed) if failed else ""),
             fontsize=7.5, color="#444", va="top", ha="left")
    return save(fig, out_dir, name)
