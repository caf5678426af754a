"""Run one program to its end and measure it from the outside (the batch run kind's measurement).

The harness waits in blocking calls while the program runs (no polling), so it takes no CPU from
what it measures; past the deadline the whole process group and the run's cgroup are killed.
The program starts through the launcher (launcher.c) so that its rusage and peak RSS are its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from corobench.cgroup import RunCgroup
from corobench.process import Launch, LaunchError, Process
from corobench.sampler import Sampler

BUSY_MIN_WALL_NS = 250_000_000


@dataclass
class ProcessMeasurement:
    exit_code: int | None  # None when killed by a signal
    term_signal: int | None
    timed_out: bool
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kb: int | None  # the program's own peak RSS (None when it could not be measured)
    cgroup_peak_bytes: int | None  # None without a cgroup, or when the program could not join it
    other_cpu_fraction: float | None  # CPU used by other processes during the run, of all cores
    loadavg_before: float
    stdout: str
    stderr: str
    notes: list[str] = field(default_factory=list)  # launcher problems, e.g. a failed cgroup join


def busy_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def other_cpu(before: tuple[int, int] | None, after: tuple[int, int] | None, wall_ns: int,
              own_cpu_s: float) -> float | None:
    """The share of all CPUs that other processes used while the run lasted."""
    # /proc/stat counts in clock ticks (10 ms): too coarse to judge runs shorter than this
    if not before or not after or wall_ns < BUSY_MIN_WALL_NS:
        return None
    busy_s = (after[0] - before[0]) / os.sysconf("SC_CLK_TCK")
    capacity_s = wall_ns / 1e9 * (os.cpu_count() or 1)
    return max(0.0, (busy_s - own_cpu_s) / capacity_s)


def run_measured(argv: list[str], *, cwd: str, env: dict[str, str], timeout_s: float,
                 cpus: set[int] | None = None, cgroup: RunCgroup | None = None) -> ProcessMeasurement:
    loadavg = os.getloadavg()[0]
    jiffies_before = busy_jiffies()
    launch = Launch(argv, cwd, env, cpus, cgroup)
    try:
        proc = Process(launch)
    except LaunchError as exc:
        return ProcessMeasurement(None, None, False, 0, 0.0, 0.0, None, None, None, loadavg, "", str(exc),
                                  launch.notes)
    with proc:
        # a v2 kernel without memory.peak: the peak is the highest memory.current sampled
        sampler = Sampler(proc.pid, cgroup).start() if cgroup and not cgroup.has_peak_file() else None
        try:
            ended = proc.wait(timeout_s)
        except BaseException:
            proc.kill()  # Ctrl-C or a harness error: nothing of the run stays behind
            raise
        finally:
            if sampler is not None:
                sampler.stop()
        if not ended:
            proc.kill()
        ending = proc.ending()
        proc.kill()  # whatever the program left behind in its group or cgroup dies with the run
        jiffies_after = busy_jiffies()
        cgroup_peak = cgroup.peak_bytes() if cgroup is not None and not proc.cgroup_join_failed else None
        return ProcessMeasurement(
            exit_code=ending.exit_code, term_signal=ending.term_signal, timed_out=not ended,
            wall_ns=ending.wall_ns, user_s=ending.user_s, sys_s=ending.sys_s, max_rss_kb=ending.max_rss_kb,
            cgroup_peak_bytes=cgroup_peak,
            other_cpu_fraction=other_cpu(jiffies_before, jiffies_after, ending.wall_ns, ending.user_s + ending.sys_s),
            loadavg_before=loadavg, stdout=proc.stdout(), stderr=proc.stderr_tail(), notes=list(launch.notes),
        )
