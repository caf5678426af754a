"""Run one program to its end and measure it from the outside (the batch run kind's measurement).

The host waits in blocking calls while the program runs (no polling), so the harness takes no CPU
from what it measures; past the deadline the whole run (process group, orphans, cgroup) is killed.
On this machine the program starts through the launcher (launcher.c), so that its rusage and peak
RSS are its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from corobench.hosts.base import Host, LaunchError, ProgramSpec, other_share


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
    other_cpu_fraction: float | None  # CPU used by other processes during the run, of the CPUs it could use
    loadavg_before: float
    stdout: str
    stderr: str
    notes: list[str] = field(default_factory=list)  # launcher problems, e.g. a failed cgroup join
    output_exceeded: str | None = None  # the output limit it broke (it was killed for it)
    oom_killed: bool = False


def run_measured(argv: list[str], *, cwd: str, env: dict[str, str], timeout_s: float,
                 cpus: set[int] | None = None, cgroup: str | None = None, host: Host | None = None
                 ) -> ProcessMeasurement:
    """Run argv on `host` (this machine by default), pinned to `cpus`, in a fresh cgroup named
    `cgroup` where the host has cgroups, and measure it."""
    if host is None:
        from corobench.hosts.local import LocalHost

        host = LocalHost()
    loadavg = os.getloadavg()[0]
    before = host.cpu_times()
    spec = ProgramSpec(argv, cwd, env, cpus, cgroup)
    try:
        proc = host.start(spec)
    except LaunchError as exc:
        return ProcessMeasurement(None, None, False, 0, 0.0, 0.0, None, None, None, loadavg, "", str(exc))
    with proc:
        try:
            ended = proc.wait(timeout_s)
        except BaseException:
            proc.kill()  # Ctrl-C or a harness error: nothing of the run stays behind
            raise
        if not ended:
            proc.kill()
        ending = proc.ending()
        proc.kill()  # whatever the program left behind in its group or cgroup dies with the run
        after = host.cpu_times()
        return ProcessMeasurement(
            exit_code=ending.exit_code, term_signal=ending.term_signal, timed_out=not ended,
            wall_ns=ending.wall_ns, user_s=ending.user_s, sys_s=ending.sys_s, max_rss_kb=ending.max_rss_kb,
            cgroup_peak_bytes=proc.cgroup_peak_bytes(),
            other_cpu_fraction=other_share(before, after, cpus or host.cpus(), ending.user_s + ending.sys_s),
            loadavg_before=loadavg, stdout=proc.stdout(), stderr=proc.stderr_tail(), notes=list(proc.notes),
            output_exceeded=proc.output_exceeded, oom_killed=ending.oom_killed,
        )
