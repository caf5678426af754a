"""Hostile programs, hostile servers, hostile input and signal storms (reliability, round 2): every
case ends within its bounds, is stored with a reason that says what happened, and leaves no
process, cgroup or bookkeeping behind."""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, corobench, db_rows
from impls import require_tool
from test_process import gone

SERVERS = ROOT / "tests" / "fixtures" / "fake-servers"
CGROUP_PARENTS = [Path("/sys/fs/cgroup/memory/corobench"), Path("/sys/fs/cgroup/corobench")]
CHAIN = ["run", "chain", "-w", "2", "-e", "3", "--reps", "2"]


def leftover_cgroups(harness_pid: int) -> list[Path]:
    return [p for parent in CGROUP_PARENTS if parent.is_dir() for p in parent.glob(f"s*-{harness_pid}-*")]


def bookkeeping(results: Path) -> list[Path]:
    root = results / "live"
    return sorted(root.rglob("*")) if root.is_dir() else []


def run_process(*args: str, results: Path, impls: Path = FAKES, env: dict | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(impls),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("mode,cgroup", [("daemon", False), ("daemon", True), ("cgescape", True)])
def test_a_child_left_holding_stdout_neither_hangs_the_harness_nor_survives(results, tmp_path, mode, cgroup):
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    proc = run_process(*CHAIN, "--timeout", "5", "--impl", f"fake-{mode}", *([] if cgroup else ["--no-cgroup"]),
                       results=results, env={"FAKE_PIDFILE": str(pidfile)})
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert took < 40, took  # was 300 s, past --timeout and every signal
    assert db_rows(results, "SELECT status FROM runs") == [("ok",)] * 3
    children = [int(x) for x in pidfile.read_text().split()]
    assert len(children) == 3 and all(gone(pid) for pid in children)  # killed with their runs
    assert leftover_cgroups(os.getpid()) == [] and bookkeeping(results) == []


@pytest.mark.parametrize("mode,reason", [
    ("hugeline", "printed a line longer than 1 MiB on stdout: killed"),
    ("floodlines", "printed more than 64 MiB on stdout: killed"),
    ("floodstderr", "printed more than 64 MiB on stderr: killed"),
])
def test_what_a_program_may_print_is_bounded_and_the_reason_says_which_bound(results, mode, reason):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = run_process(*CHAIN, "--impl", f"fake-{mode},fake-good", results=results)
    assert proc.returncode == 1, proc.stderr[-1500:]
    (bad,) = db_rows(results, f"SELECT status, reason FROM runs WHERE program = 'fake-{mode}' AND rep = 0")
    assert bad == ("failed", reason)
    harness_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if harness_kib > before:  # the largest child so far is this harness: its memory stayed bounded
        assert harness_kib < 400 * 1024, harness_kib
    assert db_rows(results, "SELECT COUNT(*) FROM runs WHERE program = 'fake-good' AND status = 'ok'") == [(3,)]


def test_an_out_of_memory_kill_is_named_as_one(results):
    from corobench import cgroup

    if not cgroup.usable()[0]:
        pytest.skip("no usable memory cgroup here")
    proc = corobench(*CHAIN, "--impl", "fake-oom", results=results, impls=FAKES)
    assert proc.returncode == 1
    ((kind, reason),) = db_rows(results, "SELECT failure_kind, reason FROM runs WHERE rep = 0")
    assert kind == "resource" and "OOM killer" in reason, reason


@pytest.mark.parametrize("mode", ["anyaddr-later", "child-anyaddr", "udp-anyaddr"])
def test_a_server_cannot_dodge_the_loopback_check(results, mode):
    require_tool("corobench-load")
    proc = corobench("run", "http", "--connections", "3", "--duration", "2", "--warmup-s", "0", "--reps", "1",
                     "--timeout", "30", "--no-build", "--impl", f"fake-server-{mode}", results=results, impls=SERVERS)
    assert proc.returncode == 1, proc.stderr
    reasons = [r for (r,) in db_rows(results, "SELECT reason FROM runs WHERE status = 'failed'")]
    assert reasons and "0.0.0.0" in reasons[0] and "it was asked to bind a loopback address" in reasons[0], reasons
    expected = "udp 0.0.0.0:" if mode == "udp-anyaddr" else "tcp 0.0.0.0:"
    assert expected in reasons[0]
    left = subprocess.run(["pgrep", "-f", f"fake_server.py {mode}"], capture_output=True, text=True).stdout.split()
    assert all(gone(int(p)) for p in left)


def deep(kind: str, depth: int) -> str:
    return f"x = {'[' * depth}{']' * depth}\n" if kind == "array" else f"x = {'{ a = ' * depth}1{' }' * depth}\n"


def test_bad_input_of_every_kind_is_exit_2_with_one_line(results, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    deep_arrays, deep_tables = tmp_path / "arrays.toml", tmp_path / "tables.toml"
    deep_arrays.write_text(deep("array", 5000))
    deep_tables.write_text(deep("table", 2000))
    for name, body in (("strings.toml", 'reps = "1"\n[[benchmark]]\nscenario = "chain"\n'),
                       ("param.toml", '[[benchmark]]\nscenario = "chain"\nworkers = "2"\n'),
                       ("tiny.toml", 'timeout = 1e-300\n[[benchmark]]\nscenario = "chain"\n')):
        (tmp_path / name).write_text(body)
    cases = [
        ["run", "--suite", str(deep_arrays)], ["run", "--suite", str(deep_tables)],
        ["run", "--suite", str(tmp_path / "strings.toml")], ["run", "--suite", str(tmp_path / "param.toml")],
        ["run", "--suite", str(tmp_path / "tiny.toml")],
        ["--results", os.fsdecode(bytes(tmp_path) + b"/r\xff"), "sessions"],
        ["--results", str(tmp_path / ("x" * 300)), "sessions"],
        ["--impls", str(loop), "list"],
        ["run", "chain", "--timeout", "1e-300"],
    ]
    for args in cases:
        proc = subprocess.run([sys.executable, "-m", "corobench", *(["--results", str(results)]
                                                                    if args[0] != "--results" else []), *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_a_nul_character_in_a_toml_string_is_exit_2_with_one_line(results, tmp_path):
    # "\u0000" is valid TOML; it used to reach a path, an ssh argv or a program's argv (exit 70)
    hosts = '[[client]]\nname = "a"\nssh = "local"\n'
    files = {
        "suite-hosts.toml": 'hosts = "a\\u0000b"\n[[benchmark]]\nscenario = "http"\n',
        "hosts-config.toml": 'ssh_config = "a\\u0000b"\n' + hosts,
        "hosts-options.toml": '[[client]]\nname = "a"\nssh = "h"\nssh_options = ["-o", "A=\\u0000"]\n',
        "key.toml": '"a\\u0000" = 1\n[[benchmark]]\nscenario = "chain"\n',
    }
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    impls = tmp_path / "impls" / "nul"
    impls.mkdir(parents=True)
    (impls / "manifest.toml").write_text((FAKES / "good" / "manifest.toml").read_text().replace(
        '"../fake.py"', '"../fake.py\\u0000"'))
    cases = [(["run", "--suite", str(tmp_path / "suite-hosts.toml")], "'hosts' holds a NUL"),
             (["hosts", "check", str(tmp_path / "hosts-config.toml")], "'ssh_config' holds a NUL"),
             (["run", "http", "--hosts", str(tmp_path / "hosts-options.toml")], "'ssh_options' holds a NUL"),
             (["hosts", "check", str(tmp_path / "hosts-options.toml")], "'ssh_options' holds a NUL"),
             (["run", "--suite", str(tmp_path / "key.toml")], "a key of the file holds a NUL")]
    for args, message in cases:
        proc = corobench(*args, results=results)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], (args, proc.stderr)
    # a manifest is skipped as broken, with the reason, like any other broken manifest
    listed = corobench("--impls", str(tmp_path / "impls"), "list", results=results)
    assert listed.returncode == 0 and "'run' holds a NUL" in listed.stdout
    run = corobench("--impls", str(tmp_path / "impls"), "run", "chain", "--impl", "fake-good", results=results)
    assert run.returncode == 2 and "'run' holds a NUL" in run.stderr and "Traceback" not in run.stderr


def test_a_report_on_a_full_disk_is_exit_74_and_a_crash_log_goes_to_the_results_in_use(results, tmp_path,
                                                                                      monkeypatch):
    corobench(*CHAIN, "--impl", "fake-good", results=results, impls=FAKES)
    if os.geteuid() == 0 and subprocess.run(["which", "mount"], capture_output=True).returncode == 0:
        small = tmp_path / "small"
        small.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)]).returncode == 0:
            try:
                proc = corobench("report", "latest", "--out", str(small / "rep"), results=results, in_process=False)
                assert proc.returncode == 74 and "cannot write the report" in proc.stderr, proc.stderr
            finally:
                subprocess.run(["umount", "-l", str(small)])
    import corobench.session as session_module

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(session_module, "execute", broken)
    proc = corobench(*CHAIN, "--impl", "fake-good", results=results, impls=FAKES)
    assert proc.returncode == 70 and str(results) in proc.stderr
    assert list(results.glob("crash-*.log"))


def test_a_read_only_database_is_not_called_damaged(results, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root for a read-only bind mount")
    corobench(*CHAIN, "--impl", "fake-good", results=results, impls=FAKES)
    script = (f"mount --bind {results} {results} && mount -o remount,bind,ro {results} && "
              f"{sys.executable} -m corobench --results {results} --impls {FAKES} {' '.join(CHAIN)} --impl fake-good")
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "damaged" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, \
        proc.stderr


@pytest.mark.parametrize("moment", ["cgroup removed", "cgroup recorded"])
def test_a_signal_between_a_cgroup_and_its_record_leaves_no_record(results, monkeypatch, moment):
    """The signal storm found it (1 session in a CI run): a signal just after a run's cgroup was
    removed, before its record was, left the record and the session's bookkeeping folder behind."""
    from corobench import cgroup, tracking
    from corobench.errors import Interrupted

    if cgroup.detect() is None:
        pytest.skip("no memory cgroup here")
    real_started, real_ended, fired = tracking.started, tracking.ended, []

    def ended(host, what, ref):
        if moment == "cgroup removed" and what == "cgroup" and not fired:
            fired.append(ref)
            raise Interrupted(signal.SIGTERM)  # as the handler raises it, right after the rmdir
        real_ended(host, what, ref)

    def started(host, what, ref, identity=None, reach=None):
        real_started(host, what, ref, identity, reach)
        if moment == "cgroup recorded" and what == "cgroup" and not fired:
            fired.append(ref)
            raise Interrupted(signal.SIGTERM)  # recorded, not yet made

    monkeypatch.setattr(tracking, "ended", ended)
    monkeypatch.setattr(tracking, "started", started)
    proc = corobench(*CHAIN, "--impl", "fake-good", results=results, impls=FAKES)
    assert fired and proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert not Path(fired[0]).exists() and bookkeeping(results) == []
    assert db_rows(results, "SELECT status FROM sessions") == [("interrupted",)]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # nothing printed as "ignored"
def test_a_signal_whose_exception_python_swallowed_still_stops_the_session(results, monkeypatch):
    """The storm found it: a signal during an import raised Interrupted inside importlib's module-lock
    weakref callback, Python printed "Exception ignored" and dropped it, and the session ran on to
    exit 0. A lost raise now stops the session before its next run."""
    from corobench.benchmark import Runner

    real, calls = Runner.run_once, []

    class Lock:
        pass

    def signal_in_a_weakref_callback(_ref) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises Interrupted in here: Python drops it
        time.sleep(0.2)

    def run_once(self, *args, **kw):
        calls.append(1)
        if len(calls) == 2:
            lock = Lock()
            ref = weakref.ref(lock, signal_in_a_weakref_callback)
            del lock  # the callback runs now, as importlib's does when an import releases its lock
            assert ref() is None
        return real(self, *args, **kw)

    monkeypatch.setattr(Runner, "run_once", run_once)
    proc = corobench(*CHAIN, "--impl", "fake-good", results=results, impls=FAKES)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert db_rows(results, "SELECT status FROM sessions") == [("interrupted",)]
    assert db_rows(results, "SELECT count(*) FROM runs") == [(1,)]  # the verification run; no run after the signal
    assert bookkeeping(results) == []


def test_a_signal_lost_before_the_session_began_is_inherited_by_its_guard():
    from corobench.errors import Interrupted
    from corobench.signals import ExitGuard, SignalGuard

    outer = ExitGuard().install()
    try:
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.2)
        except Interrupted:
            pass  # lost, as in an import's weakref callback
        inner = SignalGuard().install()
        try:
            with pytest.raises(Interrupted) as stop:
                inner.check()
            assert stop.value.signum == signal.SIGHUP
        finally:
            inner.restore()
    finally:
        outer.restore()
    fresh = SignalGuard().install()
    try:
        fresh.check()  # nothing came: nothing raised
    finally:
        fresh.restore()


def test_signal_storm_ends_every_session_truthfully_and_leaves_nothing(results, tmp_path):
    """Signals at random moments of many sessions (from the harness's start to its end): every
    session ends interrupted or finished, nothing runs, no cgroup or bookkeeping is left."""
    rng = random.Random(1234)
    deadline = time.monotonic() + 90
    rounds = 0
    while time.monotonic() < deadline and rounds < 24:
        pidfile = tmp_path / f"pids{rounds}"
        proc = subprocess.Popen([sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(FAKES),
                                 *CHAIN, "--impl", "fake-daemon,fake-good", "--timeout", "20"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "FAKE_PIDFILE": str(pidfile)})
        time.sleep(rng.uniform(0.3, 2.5))
        for _ in range(rng.choice((1, 1, 3))):  # sometimes a burst
            proc.send_signal(rng.choice((signal.SIGINT, signal.SIGTERM, signal.SIGHUP)))
            time.sleep(rng.uniform(0, 0.05))
        _, stderr = proc.communicate(timeout=60)
        assert "Traceback" not in stderr, stderr
        assert proc.returncode in (0, 129, 130, 143), (proc.returncode, stderr)
        children = [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []
        assert all(gone(pid) for pid in children)
        assert leftover_cgroups(proc.pid) == []
        assert bookkeeping(results) == [], (proc.returncode, stderr, [p.read_text() for p in bookkeeping(results) if p.is_file()])
        rounds += 1
    statuses = {s for (s,) in db_rows(results, "SELECT status FROM sessions")}
    assert statuses <= {"interrupted", "finished"}, statuses
    assert rounds >= 10
