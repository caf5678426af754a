"""Charts that read right: one test per defect a reader found (ticks in the metric's unit at round
values, shared axes from 0, runs too short marked, no zero-valued parameters in titles, file names
whose parts can't be confused)."""

from __future__ import annotations

import re

import matplotlib
import pytest

from corobench.report import charts
from corobench.results import build_cells
from corobench.store import RunRow

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    from matplotlib import pyplot
    pyplot.close("all")  # each test draws many: matplotlib keeps them until closed


def run(scenario: str, params: dict, program: str, rep: int, **values) -> RunRow:
    return RunRow(program=program, impl_id=program, variant=None, scenario=scenario, params=params, threads=None,
                  cpus=None, rep=rep, status="ok", argv=["x"], reported_threads=1, wall_ns=10**9, user_s=0.1,
                  sys_s=0.1, **values)


def tasks_cells(rss_kib: dict[int, float], elapsed_ns: int = 10**9):
    rows = [run("tasks", {"tasks": n, "sleep_ms": 100}, "p", rep, max_rss_kb=int(kib * (1 + rep / 1000)),
                elapsed_ns=elapsed_ns, metrics={"spawn_ns": n * 1000})
            for n, kib in rss_kib.items() for rep in (1, 2, 3)]
    return build_cells(rows)


def tick_labels(axis) -> list[str]:
    """The tick labels a reader sees: visible ticks inside the axis' view."""
    axis.figure.canvas.draw()
    lo, hi = sorted(axis.get_view_interval())
    return [t.get_text() for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True)
            if t.get_text() and lo <= t.get_position()[0 if axis.axis_name == "x" else 1] <= hi]


def figure(scenario: str, cells, name_part: str):
    found = [(n, f) for n, f in charts.figures(scenario, cells) if name_part in n]
    assert found, [n for n, _ in charts.figures(scenario, cells)]
    return found[0]


def test_log_axes_label_every_tick_in_the_metrics_unit():
    # tasks memory from 4 MiB to 2 GiB: a log axis; every label in MiB or GiB, none in raw numbers
    cells = tasks_cells({1: 4 * 1024, 10_000: 20 * 1024, 100_000: 200 * 1024, 1_000_000: 2048 * 1024})
    _, fig = figure("tasks", cells, "tasks-memory")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = tick_labels(ax.yaxis)
    assert labels and all(re.fullmatch(r"[0-9.]+ (MiB|GiB)", t) for t in labels), labels
    assert not any("10^" in t or "×" in t or "e+" in t for t in labels)
    xs = tick_labels(ax.xaxis)
    assert xs and all(re.fullmatch(r"[0-9.]+[kM]?", t) for t in xs), xs


def test_linear_byte_axes_have_round_ticks_in_one_unit():
    # 900 MiB to 1.4 GiB: the ticks are 0.2 GiB apart, not 1000 MiB, 1.17 GiB, 1.37 GiB
    cells = tasks_cells({1000: 900 * 1024, 2000: 1100 * 1024, 3000: 1400 * 1024})
    _, fig = figure("tasks", cells, "tasks-memory")
    ax = fig.axes[0]
    assert ax.get_yscale() == "linear"
    labels = [t for t in tick_labels(ax.yaxis) if t != "0"]
    units = {t.split()[-1] for t in labels}
    assert units == {"GiB"}, labels
    values = [float(t.split()[0]) for t in labels]
    steps = {round(b - a, 6) for a, b in zip(values, values[1:])}
    assert len(steps) == 1 and all(round(v / next(iter(steps))) * next(iter(steps)) == pytest.approx(v) for v in values)


def test_latency_ticks_are_in_time_units():
    rows = [run("http", {"connections": 80, "duration": 2, "warmup_s": 1, "requests": 0, "rate": 0}, prog, rep,
                elapsed_ns=2 * 10**9, metrics={"rps": 1000.0 * (i + 1), "lat_p50_us": 300.0 * (i + 1),
                                                 "lat_p90_us": 3000.0 * (i + 1), "lat_p99_us": 60_000.0 * (i + 1),
                                                 "lat_p999_us": 300_000.0})
            for i, prog in enumerate(("a", "b")) for rep in (1, 2, 3)]
    _, fig = figure("http", build_cells(rows), "http-latency")
    labels = tick_labels(fig.axes[0].yaxis)
    assert labels and all(re.fullmatch(r"[0-9.]+ (µs|ms|s)", t) for t in labels), labels


def test_chain_panels_share_one_y_axis_from_zero():
    rows = [run("chain", {"workers": w, "events": 10_000, "queue": 256, "etype": t, "esize": 10}, "p", rep,
                elapsed_ns=int(1e9 * w / (1e6 if t == "int" else 2e5)))
            for w in (100, 1000, 10_000) for t in ("int", "str") for rep in (1, 2, 3)]
    _, fig = figure("chain", build_cells(rows), "chain-speed")
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(panels) == 2
    assert panels[0].get_ylim() == panels[1].get_ylim() and panels[0].get_ylim()[0] == 0


def test_runs_too_short_are_drawn_hollow_and_said_so():
    cells = tasks_cells({10: 8 * 1024, 10_000: 30 * 1024}, elapsed_ns=2_000_000)  # 2 ms: too short
    assert all(c.too_short for c in cells)
    _, fig = figure("tasks", cells, "tasks-memory")
    markers = [line for line in fig.axes[0].lines if line.get_marker() in charts.MARKERS]  # not the error bars' caps
    assert markers and all(line.get_markerfacecolor() == "none" for line in markers)
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "hollow: the timed region was too short" in texts
    long_cells = tasks_cells({10: 8 * 1024, 10_000: 30 * 1024})
    _, solid = figure("tasks", long_cells, "tasks-memory")
    assert all(line.get_markerfacecolor() != "none" for line in solid.axes[0].lines
               if line.get_marker() in charts.MARKERS)


def test_titles_leave_out_zero_parameters_and_file_names_cannot_be_confused():
    params = {"connections": 80, "duration": 2, "warmup_s": 2, "requests": 0, "rate": 0}
    rows = [run("http", params, prog, rep, elapsed_ns=2 * 10**9, metrics={"rps": 1000.0, "lat_p50_us": 1.0,
                                                                            "lat_p90_us": 2.0, "lat_p99_us": 3.0,
                                                                            "lat_p999_us": 4.0, "vm_hwm_bytes": 2**20,
                                                                            "vm_peak_bytes": 2**21})
            for prog in ("a", "b") for rep in (1, 2, 3)]
    for name, fig in charts.figures("http", build_cells(rows)):
        text = " ".join([*(t.get_text() for t in fig.texts), *(ax.get_title() for ax in fig.axes),
                         *(child.get_text() for ax in fig.axes for child in ax.texts), fig._suptitle.get_text()
                         if fig._suptitle else ""])
        assert "requests=0" not in text and "rate=0" not in text, (name, text)
        assert re.fullmatch(r"http-[a-z-]+(--[a-z_]+-[^-]+)*", name), name
    one = {**params, "connections": 420}
    rows2 = rows + [run("http", one, "a", rep, elapsed_ns=2 * 10**9, metrics={"rps": 900.0, "lat_p50_us": 1.0,
                                                                               "lat_p90_us": 2.0, "lat_p99_us": 3.0,
                                                                               "lat_p999_us": 4.0})
                    for rep in (1, 2, 3)]
    names = [n for n, _ in charts.figures("http", build_cells(rows2))]
    assert "http-latency--connections-420" in names and "http-latency--connections-80" in names


def test_table_and_section_titles_leave_out_zero_parameters_too():
    from corobench.compare import one_side_text
    from corobench.export.grouping import groups, tabulate
    from corobench.report.sections import who_wins

    params = {"connections": 80, "duration": 2, "warmup_s": 2, "requests": 0, "rate": 0}
    cells = build_cells([run("http", params, prog, rep, elapsed_ns=2 * 10**9, metrics={"rps": 1000.0 + rep})
                         for prog in ("a", "b") for rep in (1, 2, 3)])
    [(label, group)] = groups(cells)
    titles = [label, tabulate("http", label, group).title, one_side_text(cells[0]),
              *(" ".join(map(str, row)) for table in who_wins(cells).tables for row in table.rows)]
    for title in titles:
        assert "connections=80" in title and "requests=0" not in title and "rate=0" not in title, title
    assert "rate=0" in cells[0].label_params()  # data files keep every parameter


def test_a_lines_view_at_one_x_value_is_bars_titled_against_nothing_and_units_are_said_once():
    params = {"connections": 80, "duration": 2, "warmup_s": 2, "requests": 0, "rate": 0}
    rows = [run("http", params, prog, rep, elapsed_ns=2 * 10**9, metrics={"rps": 1000.0 * (i + 1) + rep})
            for i, prog in enumerate(("a", "b")) for rep in (1, 2, 3)]
    _, fig = figure("http", build_cells(rows), "http-rps")
    ax = fig.axes[0]
    assert ax.get_title().strip() == "http: requests/s"  # not "against connections": there is one
    assert ax.get_xlabel() == "requests/s, higher is better"  # not "requests/s (requests/s)"
    fig.canvas.draw()
    top = max(ax.get_yticklabels(), key=lambda t: t.get_window_extent().y0)
    assert top.get_text() == "b"  # the best at the top
