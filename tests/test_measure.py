"""Measuring one process: exit status, signals, peak RSS that is the program's own, cgroup peak."""

from __future__ import annotations

import os
import sys

import numpy  # noqa: F401  (makes this test process big, as the harness is)
import pytest

from corobench import cgroup
from corobench.cgroup import RunCgroup
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


@pytest.mark.skipif(not cgroup.usable()[0], reason="no usable memory cgroup here")
def test_cgroup_peak_counts_the_allocation():
    name = f"test-{os.getpid()}"
    m = run([sys.executable, "-c", ALLOC], cgroup=name)
    assert m.cgroup_peak_bytes >= 200 * 2**20
    assert not (cgroup.detect().parent / name).exists()  # removed with the run


def test_pinning_happens_in_the_launcher_and_a_bad_cpu_fails_the_run():
    from corobench.hosts.base import ProgramSpec
    from corobench.hosts.local import LocalHost

    argv = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    with LocalHost().start(ProgramSpec(argv, "/", dict(os.environ), cpus={1000})) as proc:
        assert proc.wait(30)
        ending = proc.ending()
    assert ending.exit_code == 126 and any(n.startswith("pin-failed") for n in proc.notes)


def test_a_failed_cgroup_join_gives_no_cgroup_figure(tmp_path):
    # a "cgroup" the program cannot join (no cgroup.procs), holding a stale peak from elsewhere:
    # the run goes on, says why, and stores no cgroup figure rather than that stale one
    from corobench.hosts.base import ProgramSpec
    from corobench.hosts.local import LocalHost, LocalProgram

    fake = tmp_path / "not-a-cgroup"
    fake.mkdir()
    (fake / "memory.max_usage_in_bytes").write_text("123456789\n")
    program = LocalProgram(LocalHost(), ProgramSpec(["true"], "/", dict(os.environ)), RunCgroup(fake, 1))
    assert program.wait(30)
    ending = program.ending()
    assert ending.exit_code == 0 and program.cgroup_peak_bytes() is None
    assert any(n.startswith("cgroup-failed") and "not-a-cgroup" in n for n in program.notes)
    program.cgroup = None  # not a real cgroup: nothing to remove
    program.close()


def test_a_program_that_leaves_the_process_group_is_killed_with_the_run():
    # the program starts a daemon in a new session and exits: the cgroup still holds it
    if not cgroup.usable()[0]:
        pytest.skip("no usable memory cgroup here")
    m = run(["sh", "-c", "setsid sleep 300 & echo $!"], cgroup=f"test-escape-{os.getpid()}")
    pid = int(m.stdout.strip())
    from test_process import gone

    assert gone(pid)
