"""Run one process and measure it from the outside.

The harness blocks in wait4() while the program runs (no polling), so it takes no CPU from what it
measures; a timer thread that sleeps until the deadline kills the whole process group (and the
cgroup's processes) when the run overstays. stdout and stderr go to files, not pipes, so nothing
has to drain them while we wait. The program is started through a small C launcher (launcher.c)
so that its peak RSS is its own, not the harness's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from corobench.cgroup import MemoryCgroup
from corobench.launcher import launcher_path

STDERR_KEEP = 4000  # characters of stderr kept with a run (the tail: where errors are)
BUSY_MIN_WALL_NS = 250_000_000
STDOUT_KEEP = 1 << 20  # a correct run prints one short line; more than this is garbage anyway


@dataclass
class ProcessMeasurement:
    exit_code: int | None  # None when killed by a signal
    term_signal: int | None
    timed_out: bool
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kb: int | None  # the program's own peak RSS (None when it could not be measured)
    cgroup_peak_bytes: int | None
    other_cpu_fraction: float | None  # CPU used by other processes during the run, of all cores
    loadavg_before: float
    stdout: str
    stderr: str
    extra: dict = field(default_factory=dict)


def _busy_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def _kill_group(pgid: int, cgroup: MemoryCgroup | None) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    if cgroup is not None:
        cgroup.kill_all()


def run_measured(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout_s: float,
    cpus: set[int] | None = None,
    cgroup: MemoryCgroup | None = None,
) -> ProcessMeasurement:
    def in_child() -> None:  # runs between fork and exec
        if cpus:
            os.sched_setaffinity(0, cpus)
        if cgroup is not None:
            try:
                cgroup.join_self()
            except OSError:
                pass

    launcher = launcher_path()
    report_r, report_w = os.pipe() if launcher else (-1, -1)
    spawn_argv = [launcher, str(report_w), *argv] if launcher else argv
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            loadavg = os.getloadavg()[0]
            jiffies_before = _busy_jiffies()
            started = time.perf_counter_ns()
            try:
                proc = subprocess.Popen(
                    spawn_argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True, preexec_fn=in_child,
                    pass_fds=(report_w,) if launcher else (),
                )
            except OSError as exc:
                return ProcessMeasurement(None, None, False, 0, 0.0, 0.0, None, None, None, loadavg, "",
                                          f"could not start {argv[0]}: {exc.strerror or exc}")
            if launcher:
                os.close(report_w)
                report_w = -1
            timed_out = threading.Event()

            def on_deadline() -> None:
                timed_out.set()
                _kill_group(proc.pid, cgroup)

            timer = threading.Timer(timeout_s, on_deadline)
            timer.daemon = True
            timer.start()
            try:
                _, status, rusage = os.wait4(proc.pid, 0)  # blocks: no polling while it runs
            except BaseException:
                _kill_group(proc.pid, cgroup)
                os.waitpid(proc.pid, 0)
                proc.returncode = -9
                raise
            finally:
                timer.cancel()
            wall_ns = time.perf_counter_ns() - started
            proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
            jiffies_after = _busy_jiffies()
            # whatever the program left behind in its group or cgroup dies with the run
            _kill_group(proc.pid, cgroup)

            user_s, sys_s = rusage.ru_utime, rusage.ru_stime
            max_rss_kb: int | None = None  # without the launcher, ru_maxrss includes the harness
            if launcher:
                report = os.read(report_r, 4096).decode().split()
                if len(report) == 5:  # the program ended by itself: its own figures
                    status, max_rss_kb = int(report[0]), int(report[1])
                    user_s, sys_s, wall_ns = float(report[2]), float(report[3]), int(report[4])
            other = None
            # /proc/stat counts in clock ticks (10 ms): too coarse to judge runs shorter than this
            if jiffies_before and jiffies_after and wall_ns >= BUSY_MIN_WALL_NS:
                hz = os.sysconf("SC_CLK_TCK")
                busy_s = (jiffies_after[0] - jiffies_before[0]) / hz
                capacity_s = wall_ns / 1e9 * (os.cpu_count() or 1)
                other = max(0.0, (busy_s - user_s - sys_s) / capacity_s)

            out.seek(0)
            stdout = out.read(STDOUT_KEEP).decode(errors="replace")
            err.seek(max(0, os.fstat(err.fileno()).st_size - STDERR_KEEP * 4))
            stderr = err.read().decode(errors="replace")
    finally:
        for fd in (report_r, report_w):
            if fd >= 0:
                os.close(fd)

    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    term_signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return ProcessMeasurement(
        exit_code=exit_code, term_signal=term_signal, timed_out=timed_out.is_set(),
        wall_ns=wall_ns, user_s=user_s, sys_s=sys_s, max_rss_kb=max_rss_kb,
        cgroup_peak_bytes=cgroup.peak_bytes() if cgroup else None, other_cpu_fraction=other,
        loadavg_before=loadavg, stdout=stdout, stderr=stderr[-STDERR_KEEP:],
    )
