"""Measuring one process: exit status, signals, peak RSS that is the program's own, cgroup peak."""

from __future__ import annotations

import os
import sys

import numpy  # noqa: F401  (makes this test process big, as the harness is)
import pytest

from corobench import cgroup
from corobench.cgroup import MemoryCgroup
from corobench.launcher import launcher_path
from corobench.measure import run_measured

ALLOC = "import sys; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); print(len(b))"


def run(argv, **kw):
    return run_measured(argv, cwd="/", env=dict(os.environ), timeout_s=kw.pop("timeout_s", 30), **kw)


def test_launcher_builds():
    assert launcher_path() is not None


def test_small_program_has_small_rss_even_from_a_big_harness():
    m = run(["true"])
    assert m.exit_code == 0 and m.term_signal is None
    assert m.max_rss_kb is not None and m.max_rss_kb < 8 * 1024, m.max_rss_kb


def test_rss_sees_what_the_program_allocates():
    m = run([sys.executable, "-c", ALLOC])
    assert m.exit_code == 0 and m.stdout.strip() == str(200 * 2**20)
    assert m.max_rss_kb >= 200 * 1024


def test_exit_code_signal_and_cpu_pass_through():
    assert run(["sh", "-c", "exit 7"]).exit_code == 7
    m = run(["sh", "-c", "kill -SEGV $$"])
    assert m.exit_code is None and m.term_signal == 11
    busy = run([sys.executable, "-c", "x = 0\nfor i in range(3_000_000): x += i"])
    assert busy.user_s > 0.05 and busy.wall_ns > 50_000_000


def test_missing_program_is_a_clear_failure():
    m = run(["/nonexistent/program"])
    assert m.exit_code == 127 and "cannot run /nonexistent/program" in m.stderr


def test_timeout_kills_and_says_so():
    m = run(["sleep", "30"], timeout_s=0.5)
    assert m.timed_out and m.wall_ns < 10 * 10**9


def test_pinning():
    m = run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], cpus={0})
    assert m.stdout.strip() == "[0]"


@pytest.mark.skipif(not cgroup.usable()[0], reason="no usable cgroup v1 memory controller here")
def test_cgroup_peak_counts_the_allocation():
    group = MemoryCgroup.create(f"test-{os.getpid()}")
    try:
        m = run([sys.executable, "-c", ALLOC], cgroup=group)
    finally:
        group.remove()
    assert m.cgroup_peak_bytes >= 200 * 2**20
