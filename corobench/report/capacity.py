"""A capacity session's report: per program its capacity table and two charts — latency percentiles
against offered rate with the objective drawn, achieved against offered rate with the diagonal —
and one summary table across programs. Recomputed from the stored runs (capacity.summarize)."""

from __future__ import annotations

from pathlib import Path

from corobench.capacity import Capacity, Objective, fmt_us, summarize
from corobench.report.sections import Section, Table
from corobench.store import RunRow
from corobench.units import human

PERCENTILE_LINES = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p999"))


def objective_of(settings: dict) -> Objective | None:
    spec = settings.get("capacity")
    return Objective(dict(spec["objective"])) if spec else None


def results_of(rows: list[RunRow], objective: Objective) -> list[Capacity]:
    by_program: dict[str, list[RunRow]] = {}
    for r in rows:
        by_program.setdefault(r.program, []).append(r)
    return summarize(by_program, objective)


def summary_rows(results: list[Capacity], notes_inline: bool = True) -> list[list[str]]:
    """A row per program; with `notes_inline` off the verdict cell holds only the verdict (the
    terminal prints the notes under its table, where a narrow column would fold them line by line)."""
    rows = []
    for c in results:
        verdict = c.verdict + (f": {c.note}" if c.note and notes_inline else " (below)" if c.note else "")
        if c.capacity is None:
            rows.append([c.program, "—", "—", "—", "—", "—", verdict])
            continue
        at = next(s for s in c.steps if s.rate == c.capacity)
        half, ninety = c.at(0.5), c.at(0.9)
        bracket = f"{c.capacity:.0f}–{c.first_fail:.0f}/s" if c.first_fail else f"≥ {c.capacity:.0f}/s"
        per_core = at.achieved / at.server_cores if at.achieved and at.server_cores else None
        rows.append([c.program, f"{human(c.capacity, '')}/s ({bracket})",
                     human(per_core, "") if per_core else "—",
                     fmt_us(half.latency_us["p99"]) + f" at {half.rate:.0f}/s" if half and half.latency_us.get("p99") else "—",
                     fmt_us(ninety.latency_us["p99"]) + f" at {ninety.rate:.0f}/s"
                     if ninety and ninety.latency_us.get("p99") else "—",
                     human(at.rss_mib, "MiB") if at.rss_mib else "—",
                     verdict])
    return rows


def steps_table(c: Capacity, objective: Objective) -> Table:
    rows = []
    for s in c.steps:
        lat = [fmt_us(s.latency_us[k]) if s.latency_us.get(k) is not None else "—" for _, k in PERCENTILE_LINES]
        state = ("client-bound: set aside" if s.client_bound else "meets" if s.meets(objective)
                 else f"fails: {s.why_not(objective)}")
        rows.append([f"{s.rate:.0f}", f"{s.achieved:.0f}" if s.achieved is not None else "—", *lat,
                     f"{s.server_cores:.2f}" if s.server_cores is not None else "—", state])
    return Table(["offered/s", "achieved/s", "p50", "p90", "p99", "p99.9", "server cores", "objective"], rows,
                 title=f"{c.program}: steps")


def charts(c: Capacity, objective: Objective, out_dir: Path, scenario: str) -> list[Path]:
    """Latency percentiles against offered rate (the objective drawn as lines), and achieved against
    offered (the diagonal drawn): one figure with two panels per program."""
    from corobench.report.charts import UnitFormatter, plt, save, unit_axis

    steps = [s for s in c.steps if s.achieved is not None]
    if not steps:
        return []
    fig, (lat_ax, ach_ax) = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained")
    xs = [s.rate for s in steps]
    for label, key in PERCENTILE_LINES:
        ys = [s.latency_us.get(key) for s in steps]
        lat_ax.plot(xs, ys, marker="o", markersize=4, label=label)
    for key, limit in objective.limits.items():
        lat_ax.axhline(limit, color="#b00", linestyle="--", linewidth=1)
        lat_ax.annotate(f"objective {key.replace('p999', 'p99.9')} ≤ {fmt_us(limit)}", xy=(0.01, limit),
                        xycoords=("axes fraction", "data"), xytext=(0, 3), textcoords="offset points", fontsize=8,
                        color="#b00")
    bound = [s.rate for s in steps if s.client_bound]
    for i, x in enumerate(bound):
        lat_ax.axvline(x, color="#999", linestyle=":", linewidth=1, label="client-bound step" if i == 0 else None)
    unit_axis(lat_ax, "y", "µs", 1.0, log=True)
    lat_ax.set_xlabel("offered rate (requests/s)")
    lat_ax.set_ylabel("latency from the intended send time, lower is better")
    lat_ax.grid(True, which="both", alpha=0.3)
    lat_ax.legend(fontsize=8, loc="upper left")
    lat_ax.set_title(f"{c.program}: latency against offered load", fontsize=11)
    top = max(max(xs), max(s.achieved for s in steps)) * 1.05
    ach_ax.plot([0, top], [0, top], color="#999", linewidth=1, label="achieved = offered")
    ach_ax.plot(xs, [s.achieved for s in steps], marker="o", markersize=4, label="achieved")
    if c.capacity:
        # a client-bound search found no limit of the server's: the line is where the client's began
        label = (f"met up to {c.capacity:.0f}/s (client-bound above)" if c.verdict == "client-bound"
                 else f"capacity {c.capacity:.0f}/s")
        ach_ax.axvline(c.capacity, color="#2a7", linestyle="--", linewidth=1, label=label)
    ach_ax.set_xlim(0, top)
    ach_ax.set_ylim(0, top)
    for axis in (ach_ax.xaxis, ach_ax.yaxis, lat_ax.xaxis):
        axis.set_major_formatter(UnitFormatter(""))  # plain round numbers of requests/s
    ach_ax.set_xlabel("offered rate (requests/s)")
    ach_ax.set_ylabel("achieved rate (requests/s)")
    ach_ax.grid(True, alpha=0.3)
    ach_ax.legend(fontsize=8, loc="upper left")
    ach_ax.set_title(f"{c.program}: achieved against offered", fontsize=11)
    note = "each point: one step, repetitions merged (HDR histograms); dotted verticals: steps set aside as client-bound"
    fig.text(0.01, -0.02, f"{note}\nobjective: {objective.text()}", fontsize=7.5, color="#444", va="top")
    name = f"{scenario}-capacity--program-{c.program.replace(':', '_')}"
    return save(fig, out_dir, name)


def capacity_section(meta: dict, rows: list[RunRow], out_dir: Path) -> Section | None:
    objective = objective_of(meta["settings"])
    if objective is None:
        return None
    results = results_of([r for r in rows if r.rep > 0 or r.status != "ok"], objective)
    scenario = rows[0].scenario if rows else "capacity"
    section = Section("capacity", f"Capacity at {objective.text()}", [
        "The highest offered rate (open loop, latency from each request's intended send time) at which the "
        f"achieved rate was at least 99 % of it, no reply failed, and {objective.text()}; the bracket runs to the "
        "lowest failing rate above it. Steps where the load generator used 90 % or more of its CPUs while the "
        "server had CPU to spare measured the client, and are set aside."])
    section.tables.append(Table(["program", "capacity (bracket)", "requests/s per server core at capacity",
                                 "p99 at 50 % of capacity", "p99 at 90 % of capacity", "peak RSS at capacity",
                                 "verdict"], summary_rows(results), title="summary"))
    for c in results:
        section.tables.append(steps_table(c, objective))
        section.charts += charts(c, objective, out_dir, scenario)
    return section
