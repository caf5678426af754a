"""Several agents' results as one: one window on the server's clock, summed counts and rates,
latency from the merged HDR histograms (never from averaged percentiles), merged intervals.

Each agent reports its window and intervals on its own host's monotonic clock; `offset_ns` is that
clock minus the server host's (measured by the run kind, with an error bound), so an agent's
time t is t − offset on the server's clock. Agents started together on one nominal window; the
merged window is the span every agent covered, and the rate is the sum of the agents' rates over
their windows.
"""

from __future__ import annotations

from dataclasses import dataclass

from corobench.loadgens.base import Interval, LoadResult

HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_DIGITS = 1, 3600 * 10**9, 3  # corobench-load's histogram bounds


@dataclass(frozen=True)
class AgentRun:
    """One agent's result, where it ran, and its clock against the server's."""

    host: str
    index: int
    result: LoadResult
    offset_ns: int = 0  # agent clock − server clock
    offset_error_ns: int = 0


def _histogram():
    from hdrh.histogram import HdrHistogram  # loaded only where histograms are merged

    return HdrHistogram(HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_DIGITS)


def merged_histogram(encoded: list[str]):
    """The sum of base64 HdrHistogram V2 entries (values in ns); None when there are none."""
    if not encoded:
        return None
    from hdrh.histogram import HdrHistogram

    total = _histogram()
    for text in encoded:
        total.add(HdrHistogram.decode(text.encode() if isinstance(text, str) else text))
    return total


def latency_of(histogram) -> dict:
    """The latency summary (µs) of a histogram of ns values, in corobench-load's keys."""
    if histogram is None or histogram.get_total_count() == 0:
        return {}
    us = 1e-3
    return {"count": histogram.get_total_count(), "mean": histogram.get_mean_value() * us,
            "p50": histogram.get_value_at_percentile(50) * us, "p90": histogram.get_value_at_percentile(90) * us,
            "p99": histogram.get_value_at_percentile(99) * us, "p999": histogram.get_value_at_percentile(99.9) * us,
            "max": histogram.get_max_value() * us}


def merge(agents: list[AgentRun], aligned: bool = True) -> LoadResult:
    """One result for all agents, its window and intervals on the server's clock. `aligned`: the
    agents measured one common window (a duration, started together): the merged window is the
    span every agent covered and the rate the sum of theirs. Otherwise (a count shared out, each
    agent done when its share is) the window runs from the first agent's start to the last one's
    end, and the rate is all their requests over it: what the server was asked to serve, and when."""
    if len(agents) == 1 and not agents[0].result.intervals:
        one = agents[0]
        r = one.result
        return LoadResult(**{**r.__dict__, "window": (r.window[0] - one.offset_ns, r.window[1] - one.offset_ns),
                             "raw": {**r.raw, "agents": [_agent_figures(one)]}})
    starts = [a.result.window[0] - a.offset_ns for a in agents]
    ends = [a.result.window[1] - a.offset_ns for a in agents]
    if aligned:
        window = (max(starts), min(ends))
        if window[1] <= window[0]:
            raise ValueError("the agents' windows do not overlap")
        rate = sum(a.result.window_requests / a.result.seconds for a in agents if a.result.seconds > 0)
    else:
        window = (min(starts), max(ends))
        rate = sum(a.result.window_requests for a in agents) / ((window[1] - window[0]) / 1e9)
    seconds = (window[1] - window[0]) / 1e9
    histogram = merged_histogram([a.result.histogram for a in agents if a.result.histogram])
    cpu = [a.result.cpu_s for a in agents]
    conns = [a.result.window_connections for a in agents]
    first = agents[0].result
    intervals = merge_intervals(agents)
    merged = LoadResult(
        tool=first.tool, verified=all(a.result.verified for a in agents),
        requests=sum(a.result.requests for a in agents), ok=sum(a.result.ok for a in agents),
        connections=sum(a.result.connections for a in agents), window=window,
        window_requests=round(rate * seconds),
        window_connections=(round(sum(c / a.result.seconds for c, a in zip(conns, agents)) * seconds) if aligned
                            else sum(conns)) if all(c is not None for c in conns) else None,
        latency_us=latency_of(histogram) if histogram is not None else {},
        histogram=histogram.encode().decode() if histogram is not None else None,
        intervals=intervals,
        cpu_s=sum(c for c in cpu if c is not None) if all(c is not None for c in cpu) else None,
        wall_s=max((a.result.wall_s or 0) for a in agents), cpus=sum(a.result.cpus for a in agents),
        raw={"tool": first.tool, "agents": [_agent_figures(a) for a in agents],
             "rate": rate, "window": {"start_ns": window[0], "end_ns": window[1], "seconds": seconds},
             "latency_us": latency_of(histogram) if histogram is not None else {},
             "histogram": histogram.encode().decode() if histogram is not None else None,
             "intervals": [{"interval": iv.index, "start_ns": iv.start_ns, "end_ns": iv.end_ns,
                            "requests": iv.requests, "errors": iv.errors} for iv in intervals]},
    )
    return merged


def merge_intervals(agents: list[AgentRun]) -> list[Interval]:
    """Interval k of every agent (the same nominal span on the server's clock) summed; only the
    indices every agent reported."""
    by_index: dict[int, list[tuple[AgentRun, Interval]]] = {}
    for a in agents:
        for iv in a.result.intervals:
            by_index.setdefault(iv.index, []).append((a, iv))
    out = []
    for k in sorted(by_index):
        parts = by_index[k]
        if len(parts) != len(agents):
            continue
        hist = merged_histogram([iv.histogram for _, iv in parts if iv.histogram])
        out.append(Interval(
            index=k, start_ns=max(iv.start_ns - a.offset_ns for a, iv in parts),
            end_ns=min(iv.end_ns - a.offset_ns for a, iv in parts),
            requests=sum(iv.requests for _, iv in parts), ok=sum(iv.ok for _, iv in parts),
            errors=sum(iv.errors for _, iv in parts), connections=sum(iv.connections for _, iv in parts),
            histogram=hist.encode().decode() if hist is not None else None))
    return out


def _agent_figures(a: AgentRun) -> dict:
    """What is stored of each agent, so that a saturated or slow one can be named."""
    r = a.result
    return {"host": a.host, "agent": a.index, "requests": r.requests, "window_requests": r.window_requests,
            "rate": r.window_requests / r.seconds if r.seconds > 0 else None, "cpu_s": r.cpu_s,
            "cpu_share": r.cpu_share,
            "cpus": r.cpus, "latency_us": r.latency_us, "offset_ns": a.offset_ns, "offset_error_ns": a.offset_error_ns,
            "window": [r.window[0], r.window[1]], "intervals": len(r.intervals)}
