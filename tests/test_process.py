"""This machine as a Host against fake programs: the program handle, its output limits, its
orphans, the sampler and the listening-socket check."""

from __future__ import annotations

import json
import os
import sys
import time

from conftest import ROOT
from corobench.hosts.base import ProgramSpec, Sample
from corobench.hosts.local import LocalHost, LocalProgram
from corobench.hosts.procfs import read_stat, tree
from corobench.sampler import Sampler

HOST = LocalHost()


def start(argv: list[str], cwd: str = "/", **kw) -> LocalProgram:
    return HOST.start(ProgramSpec(argv, cwd, dict(os.environ), **kw))

FAKE_SERVER = ROOT / "tests" / "fixtures" / "fake-servers" / "fake_server.py"


def server(mode: str) -> LocalProgram:
    argv = [sys.executable, str(FAKE_SERVER), mode, "echo", "--host", "127.0.0.1", "--port", "0"]
    return start(argv, cwd=str(ROOT))


def test_first_line_then_graceful_stop():
    with server("good") as proc:
        line = proc.wait_line(0, timeout_s=60)
        assert line is not None and json.loads(line)["ready"] is True
        assert proc.running and proc.pid != proc.launcher_pid
        assert proc.stop(grace_s=10) is True
        ending = proc.ending()
        assert ending.exit_code == 0 and not ending.killed_by_harness and ending.max_rss_kb > 0
        final = json.loads(proc.wait_line(1, timeout_s=5))
        assert final["connections"] == 0 and final["scenario"] == "echo"


def test_no_first_line_times_out_without_hanging():
    with server("never-ready") as proc:
        started = time.monotonic()
        assert proc.wait_line(0, timeout_s=1.5) is None
        assert time.monotonic() - started < 10


def test_a_program_that_ignores_sigterm_is_killed_after_the_grace_period():
    with server("ignore-term") as proc:
        assert proc.wait_line(0, timeout_s=60) is not None
        started = time.monotonic()
        assert proc.stop(grace_s=1.0) is False
        assert time.monotonic() - started < 10
        ending = proc.ending()
        assert ending.killed_by_harness and ending.term_signal == 9
        assert gone(proc.pid)


def gone(pid: int, within_s: float = 10) -> bool:
    """The process ended (or is a zombie) within the time a SIGKILL takes to land."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_line_never_comes_from_a_program_that_exits():
    argv = [sys.executable, "-c", "import sys; sys.exit(4)"]
    with start(argv) as proc:
        assert proc.wait_line(0, timeout_s=30) is None
        assert proc.wait(30) and proc.ending().exit_code == 4


BURN = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time\\nt=time.time()\\nwhile time.time()-t<1.5: pass"])
block = bytearray(120 * 2**20); block[::4096] = b"x" * len(block[::4096])
t = time.time()
while time.time() - t < 1.5: pass
child.wait()
print("done", flush=True)
"""


def test_sampler_sees_cpu_and_memory_of_the_whole_tree():
    with start([sys.executable, "-c", BURN]) as proc:
        sampler = Sampler(HOST, proc, interval_s=0.05).start()
        time.sleep(0.5)
        t0 = time.monotonic_ns()
        time.sleep(0.8)
        t1 = time.monotonic_ns()
        assert proc.wait(60)
        sampler.stop()
        ending = proc.ending()
    w = sampler.window(t0, t1)
    assert w.cpu_s > 0 and w.cores > 0
    # over its life the tree's sampled CPU is what the kernel accounted to the program and its child
    # (the launcher's rusage), less what ran before the first and after the last sample
    own = ending.user_s + ending.sys_s
    sampled = sampler.samples[-1].cpu_s - sampler.samples[0].cpu_s
    assert own * 0.6 - 0.1 <= sampled <= own + 0.1, (sampled, own)
    assert w.rss_peak_bytes >= 120 * 2**20 and w.vsz_peak_bytes >= w.rss_peak_bytes
    assert w.threads_peak >= 2 and w.samples >= 5
    assert sampler.vm_hwm_bytes >= 120 * 2**20 and sampler.vm_peak_bytes >= sampler.vm_hwm_bytes
    series = sampler.rss_series(max_points=10)
    assert 2 <= len(series) <= 10 and series[0][0] == 0.0 and max(r for _, r in series) >= 120


def test_sampler_reads_a_process_tree_from_proc():
    me = read_stat(os.getpid())
    assert me is not None and me.threads >= 1 and me.rss_bytes > 0
    assert tree(os.getpid())[0] == os.getpid()
    assert read_stat(2**22 + 7) is None  # no such pid


def test_window_interpolates_cpu_between_samples():
    s = Sampler(HOST, None)
    s.samples = [Sample(0, 0.0, 1, 1, 1, None), Sample(1_000_000_000, 1.0, 5, 9, 2, 7),
                 Sample(2_000_000_000, 3.0, 2, 2, 1, 3)]
    w = s.window(500_000_000, 1_500_000_000)
    # CPU at 0.5 s is 0.5 (halfway from 0 to 1), at 1.5 s it is 2.0 (halfway from 1 to 3)
    assert abs(w.cpu_s - 1.5) < 1e-9 and abs(w.cores - 1.5) < 1e-9
    # memory peaks come from the samples inside the window only
    assert (w.rss_peak_bytes, w.vsz_peak_bytes, w.threads_peak, w.cgroup_peak_bytes, w.samples) == (5, 9, 2, 7, 1)
