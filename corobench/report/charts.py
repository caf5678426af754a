"""Charts (matplotlib, PNG and SVG): one function per chart, each from cells only.

chain: speed against workers, one series per program, one panel per event type (the chart the
original benchmark publishes). tasks: peak memory against N (log-log), a bar chart per N, and
spawn time against N. blocking: time per iteration per program/variant.
Error bars span min..max of the repetitions, so a reader sees the spread.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from corobench.results import Cell  # noqa: E402
from corobench.scenarios import ETYPES  # noqa: E402


def _save(fig, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _series(cells: list[Cell], x_param: str, metric: str, scale: float = 1.0):
    """{program: [(x, median, low, high)]} over the ok cells, sorted by x."""
    series: dict[str, list[tuple[float, float, float, float]]] = {}
    for c in cells:
        s = c.summaries.get(metric)
        if c.status != "ok" or s is None:
            continue
        series.setdefault(c.program, []).append(
            (c.params[x_param], s.median * scale, s.min * scale, s.max * scale))
    return {k: sorted(v) for k, v in sorted(series.items())}


MARKERS = "osD^v<>pPX*h"


def _style(program: str, index: int) -> dict:
    """Distinct colour and marker per series: a dozen runtimes outrun the default 10 colours."""
    colours = plt.get_cmap("tab20").colors
    return {"color": colours[(index * 2) % 20 + (index // 10) % 2], "marker": MARKERS[index % len(MARKERS)]}


def _plot_series(ax, series) -> None:
    for index, (program, points) in enumerate(series.items()):
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        err = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
        ax.errorbar(xs, ys, yerr=err, markersize=5, capsize=3, label=program, **_style(program, index))


def _failed_note(fig, cells: list[Cell]) -> None:
    """Name the programs with FAILED cells under the figure: a missing line is not a result."""
    failed = sorted({c.program for c in cells if c.status != "ok"})
    if failed:
        fig.supxlabel("not shown, FAILED or skipped in some cells (see report.md): " + ", ".join(failed),
                      fontsize=8, color="#b00")


def _by(cells: list[Cell], key: str) -> dict:
    out: dict = {}
    for c in cells:
        out.setdefault(c.params[key], []).append(c)
    return out


def _shapes(cells: list[Cell], *keys: str) -> dict[tuple, list[Cell]]:
    """Cells grouped by the given parameters and --threads: one figure per group."""
    out: dict[tuple, list[Cell]] = {}
    for c in cells:
        out.setdefault((*(c.params[k] for k in keys), c.threads), []).append(c)
    return out


def chain_speed(cells: list[Cell], out_dir: Path) -> list[Path]:
    """Speed (M events/s) against workers, one panel per event type; one figure per queue/events."""
    paths: list[Path] = []
    for (events, queue, esize, threads), group in _shapes(cells, "events", "queue", "esize").items():
        etypes = [e for e in ETYPES if any(c.params["etype"] == e for c in group)]
        cols = 2 if len(etypes) > 1 else 1
        rows = (len(etypes) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.2 * rows), squeeze=False,
                                 layout="constrained")
        for ax, etype in zip(axes.flat, etypes):
            _plot_series(ax, _series([c for c in group if c.params["etype"] == etype], "workers", "speed", 1e-6))
            ax.set_xscale("log")
            ax.set_title(f"etype = {etype}")
            ax.set_xlabel("workers (sender/receiver pairs)")
            ax.set_ylabel("speed (M events/s, higher is better)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        for ax in list(axes.flat)[len(etypes):]:
            ax.set_visible(False)
        t = f", threads={threads}" if threads is not None else ""
        fig.suptitle(f"chain: {events} events per sender, queue {queue}, esize {esize}{t}")
        _failed_note(fig, group)
        name = f"chain-speed-e{events}-q{queue}-s{esize}" + (f"-t{threads}" if threads is not None else "")
        paths += _save(fig, out_dir, name)
    return paths


def _against_n(cells: list[Cell], metric: str, scale: float, ylabel: str, title: str, out_dir: Path,
               name: str) -> list[Path]:
    """A metric against the number of tasks, log-log, one line per program."""
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    _failed_note(fig, cells)
    _plot_series(ax, _series(cells, "tasks", metric, scale))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("concurrent tasks N")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out_dir, name)


def tasks_charts(cells: list[Cell], out_dir: Path) -> list[Path]:
    paths: list[Path] = []
    for sleep_ms, group in _by(cells, "sleep_ms").items():
        suffix = f"d{sleep_ms}"
        paths += _against_n(group, "rss_mib", 1.0, "peak RSS (MiB, lower is better)",
                            f"tasks: peak memory against N (sleep {sleep_ms} ms)", out_dir, f"tasks-memory-{suffix}")
        paths += _against_n(group, "spawn_s", 1e3, "time to start all N (ms, lower is better)",
                            f"tasks: spawn time against N (sleep {sleep_ms} ms)", out_dir, f"tasks-spawn-{suffix}")
        for n, cells_n in sorted(_by(group, "tasks").items()):
            paths += _bars(cells_n, "rss_mib", "peak RSS (MiB)",
                           f"tasks: peak memory at N = {n} (sleep {sleep_ms} ms)", out_dir,
                           f"tasks-memory-n{n}-{suffix}")
    return paths


def _bars(cells: list[Cell], metric: str, xlabel: str, title: str, out_dir: Path, name: str) -> list[Path]:
    """Horizontal bars, best at the top; failed programs get a labelled empty bar."""
    ok = sorted((c for c in cells if c.status == "ok" and metric in c.summaries),
                key=lambda c: c.summaries[metric].median, reverse=True)
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
    ax.set_xlabel(xlabel + ", lower is better")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, out_dir, name)


def blocking_chart(cells: list[Cell], out_dir: Path) -> list[Path]:
    paths: list[Path] = []
    for (tasks, iterations, nbytes, threads), group in _shapes(cells, "tasks", "iterations", "bytes").items():
        t = f", threads={threads}" if threads is not None else ""
        paths += _bars(group, "per_iteration_us", "time per iteration (µs)",
                       f"blocking: {tasks} tasks x {nbytes} bytes, {iterations} iterations{t}",
                       out_dir, f"blocking-n{tasks}-i{iterations}-b{nbytes}" + (f"-t{threads}" if threads else ""))
    return paths


CHARTS = {"chain": chain_speed, "tasks": tasks_charts, "blocking": blocking_chart}
