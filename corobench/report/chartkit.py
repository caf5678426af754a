"""Chart helpers (matplotlib, PNG and SVG) the scenarios draw their charts with, from cells only.

Each scenario module says which charts it has (`Scenario.charts`); this module holds the shapes
they share: a metric against a parameter (one line per program), horizontal bars per program.
Error bars span min..max of the repetitions, so a reader sees the spread. Imported only when a
report is written: matplotlib is slow to load.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from corobench.files import replacing  # noqa: E402
from corobench.results import Cell  # noqa: E402


def save(fig, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        with replacing(path, "wb") as f:  # never through a link planted at that name
            fig.savefig(f, format=ext, dpi=120, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


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


MARKERS = "osD^v<>pPX*h"


def _style(program: str, index: int) -> dict:
    """Distinct colour and marker per series: a dozen runtimes outrun the default 10 colours."""
    colours = plt.get_cmap("tab20").colors
    return {"color": colours[(index * 2) % 20 + (index // 10) % 2], "marker": MARKERS[index % len(MARKERS)]}


def plot_series(ax, lines) -> None:
    for index, (program, points) in enumerate(lines.items()):
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        err = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
        ax.errorbar(xs, ys, yerr=err, markersize=5, capsize=3, label=program, **_style(program, index))


def failed_note(fig, cells: list[Cell]) -> None:
    """Name the programs with FAILED cells under the figure: a missing line is not a result."""
    failed = sorted({c.program for c in cells if c.status != "ok"})
    if failed:
        fig.supxlabel("not shown, FAILED or skipped in some cells (see report.md): " + ", ".join(failed),
                      fontsize=8, color="#b00")


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


def against(cells: list[Cell], x_param: str, xlabel: str, metric: str, scale: float, ylabel: str, title: str,
            out_dir: Path, name: str) -> list[Path]:
    """A metric against a parameter, log-log, one line per program."""
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    failed_note(fig, cells)
    plot_series(ax, series(cells, x_param, metric, scale))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out_dir, name)


def bars(cells: list[Cell], metric: str, xlabel: str, title: str, out_dir: Path, name: str,
         better: str = "lower") -> list[Path]:
    """Horizontal bars, best at the top; failed programs get a labelled empty bar."""
    ok = sorted((c for c in cells if c.status == "ok" and metric in c.summaries),
                key=lambda c: c.summaries[metric].median, reverse=better == "lower")
    failed = [c for c in cells if c not in ok]
    labels = [c.program for c in failed] + [c.program for c in ok]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.5), layout="constrained")
    medians = [0.0] * len(failed) + [c.summaries[metric].median for c in ok]
    lows = [0.0] * len(failed) + [c.summaries[metric].median - c.summaries[metric].min for c in ok]
    highs = [0.0] * len(failed) + [c.summaries[metric].max - c.summaries[metric].median for c in ok]
    ax.barh(labels, medians, xerr=[lows, highs], capsize=3, color="#4c72b0")
    top = max(medians) if any(medians) else 1.0
    for i, c in enumerate(failed):
        ax.text(top * 0.01, i, f"{c.status.upper()}: {c.reason[:100]}", va="center", fontsize=7, color="#b00")
    for i, c in enumerate(ok, start=len(failed)):
        ax.text(c.summaries[metric].median, i, f" {c.summaries[metric].median:.3g}", va="center", fontsize=8)
    ax.set_xlabel(f"{xlabel}, {better} is better")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    return save(fig, out_dir, name)


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


def percentiles(cells: list[Cell], keys: tuple[tuple[str, str], ...], ylabel: str, title: str, out_dir: Path,
                name: str) -> list[Path]:
    """Latency percentiles (p50 … p99.9) per program, one line each, on a log scale."""
    ok = [c for c in cells if c.status == "ok" and all(k in c.summaries for _, k in keys)]
    if not ok:
        return []
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    failed_note(fig, cells)
    xs = list(range(len(keys)))
    for index, c in enumerate(sorted(ok, key=lambda c: c.program)):
        ys = [c.summaries[k].median for _, k in keys]
        ax.plot(xs, ys, label=c.program, **_style(c.program, index))
    ax.set_xticks(xs, [label for label, _ in keys])
    ax.set_yscale("log")
    ax.set_ylabel(ylabel + ", lower is better")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, out_dir, name)


def over_time(cells: list[Cell], metric_key: str, ylabel: str, title: str, out_dir: Path, name: str) -> list[Path]:
    """A series each run stored (e.g. RSS during the load): the median run's series per program."""
    lines = {}
    for c in cells:
        if c.status != "ok" or not c.runs:
            continue
        runs = sorted(c.runs, key=lambda r: (r.metrics.get("rps") or 0))
        series = runs[len(runs) // 2].metrics.get(metric_key)
        if series:
            lines[c.program] = series
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    failed_note(fig, cells)
    for index, (program, points) in enumerate(sorted(lines.items())):
        style = _style(program, index)
        ax.plot([p[0] for p in points], [p[1] for p in points], label=program, color=style["color"])
    ax.set_xlabel("seconds since the server was ready")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, out_dir, name)
