"""This machine as a Host: programs start through the launcher (launcher.c), pinned, in a cgroup.

The harness waits in blocking calls (a thread in wait4, a thread in select on the program's
pipes), so it takes no CPU from what it measures. What a program prints is bounded: a stdout line
longer than LINE_LIMIT, more stdout than the spec's limit or more stderr than STDERR_LIMIT kills
the program and says so (`output_exceeded`); only stderr's tail is kept. Nothing here can block
the harness past its deadlines: the output thread is woken and abandoned at close, never joined
on a read that does not return.
"""

from __future__ import annotations

import os
import platform
import select
import signal
import subprocess
import threading
import time

from corobench import tracking
from corobench.cgroup import RunCgroup
from corobench.hosts import procfs
from corobench.hosts.base import LIVE, CpuTimes, Ending, Host, LaunchError, Program, ProgramSpec, Sample
from corobench.launcher import launcher_path

LINE_LIMIT = 1 << 20  # a protocol line is short; a longer one is garbage
STDOUT_LIMIT = 64 << 20  # everything a program may print on stdout (a load generator's interval lines fit)
STDERR_LIMIT = 64 << 20  # what a program may print on stderr in all; its last STDERR_KEEP bytes are kept
STDERR_KEEP = 16 << 10
REPORT_WAIT_S = 10.0  # the launcher reports the program's pid right after fork
LAUNCHER_STOP_S = 3.0  # the launcher's own cleanup (kill and reap every descendant) before SIGKILL
OUTPUT_AFTER_END_S = 2.0  # how long the output may trail the end (the launcher has reaped every descendant)
CHUNK = 1 << 16


class _Output:
    """stdout (as lines) and stderr (its tail) of one program, read by one thread in select()."""

    def __init__(self, stdout_fd: int, stderr_fd: int, stdout_limit: int, on_exceeded):
        self.lines: list[str] = []
        self.partial = bytearray()
        self.dropping = False  # the rest of an over-long line is being dropped
        self.stdout_bytes = 0
        self.stderr_tail = bytearray()
        self.stderr_bytes = 0
        self.exceeded: str | None = None
        self.stdout_limit = stdout_limit
        self.on_exceeded = on_exceeded
        self.changed = threading.Condition()
        self.done = threading.Event()  # both pipes reached EOF
        self._fds = {stdout_fd: "out", stderr_fd: "err"}
        self._wake_r, self._wake_w = os.pipe()
        self._closing = False
        threading.Thread(target=self._run, daemon=True, name="corobench-output").start()

    def _exceed(self, what: str) -> None:
        if self.exceeded is None:
            self.exceeded = what
            self.on_exceeded(what)

    def _stdout(self, chunk: bytes) -> None:
        self.stdout_bytes += len(chunk)
        if self.stdout_bytes > self.stdout_limit:
            self._exceed(f"printed more than {self.stdout_limit >> 20} MiB on stdout")
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end + 1]
            if not self.dropping:
                self.partial += piece
                if len(self.partial) > LINE_LIMIT:
                    self.partial.clear()
                    self.dropping = True
                    self._exceed(f"printed a line longer than {LINE_LIMIT >> 20} MiB on stdout")
            if end < 0:
                return
            if not self.dropping:
                with self.changed:
                    self.lines.append(self.partial.decode(errors="replace"))
                    self.changed.notify_all()
            self.partial.clear()
            self.dropping = False
            start = end + 1

    def _stderr(self, chunk: bytes) -> None:
        self.stderr_bytes += len(chunk)
        self.stderr_tail += chunk
        if len(self.stderr_tail) > STDERR_KEEP:
            del self.stderr_tail[:len(self.stderr_tail) - STDERR_KEEP]
        if self.stderr_bytes > STDERR_LIMIT:
            self._exceed(f"printed more than {STDERR_LIMIT >> 20} MiB on stderr")

    def _run(self) -> None:
        try:
            while self._fds and not self._closing:
                ready, _, _ = select.select([*self._fds, self._wake_r], [], [])
                for fd in ready:
                    if fd == self._wake_r:
                        return
                    try:
                        chunk = os.read(fd, CHUNK)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        os.close(fd)
                        del self._fds[fd]
                    elif self._fds[fd] == "out":
                        self._stdout(chunk)
                    else:
                        self._stderr(chunk)
        finally:
            if self.partial and not self.dropping and not self._closing:
                with self.changed:
                    self.lines.append(self.partial.decode(errors="replace"))  # a last line without \n
            with self.changed:
                self.done.set()
                self.changed.notify_all()

    def close(self) -> None:
        """Wake the thread and let it go; the pipes close when it notices (or with the process)."""
        self._closing = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        if self.done.wait(1.0):
            for fd in list(self._fds):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._fds.clear()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


class LocalProgram(Program):
    """One program running under the launcher, in its own session and process group."""

    def __init__(self, host: "LocalHost", spec: ProgramSpec, cgroup: RunCgroup | None):
        self.host, self.spec, self.cgroup = host, spec, cgroup
        self.notes: list[str] = []
        launcher = launcher_path()
        if launcher is None:
            raise LaunchError("no C compiler to build the launcher (corobench/launcher.c): install gcc")
        self._report_r, report_w = os.pipe()
        opts: list[str] = []
        if spec.cpus:
            opts += ["-c", ",".join(map(str, sorted(spec.cpus)))]
        if cgroup is not None:
            opts += ["-g", str(cgroup.path)]
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.started_ns = time.monotonic_ns()
        try:
            self._popen = subprocess.Popen(
                [launcher, str(report_w), *opts, "--", *spec.argv], cwd=spec.cwd, env=spec.env,
                stdin=subprocess.PIPE if spec.stdin_pipe else subprocess.DEVNULL, stdout=out_w, stderr=err_w,
                start_new_session=True, pass_fds=(report_w,),
            )
        except OSError as exc:
            for fd in (self._report_r, out_r, err_r):
                os.close(fd)
            raise LaunchError(f"could not start {spec.argv[0]}: {exc.strerror or exc}") from None
        finally:
            for fd in (report_w, out_w, err_w):
                os.close(fd)
        self.launcher_pid = self._popen.pid  # also the process group id
        try:
            tracking.started(host.name, "pgid", str(self.launcher_pid), tracking.process_identity(self.launcher_pid))
        except BaseException:
            os.killpg(self.launcher_pid, signal.SIGKILL)  # not recorded: not allowed to run
            self._popen.wait()
            for fd in (self._report_r, out_r, err_r):
                os.close(fd)
            raise
        try:
            self._report = b""
            self._ended = threading.Event()
            self._status: int | None = None
            self._rusage = None
            self._killed = False
            self._end_mono = 0.0
            self._out = _Output(out_r, err_r, STDOUT_LIMIT, self._exceeded)
            LIVE.add(self)
        except BaseException:  # a signal mid-way: the run is recorded, so end it and forget it
            os.killpg(self.launcher_pid, signal.SIGKILL)
            self._popen.wait()
            tracking.ended(host.name, "pgid", str(self.launcher_pid))
            for fd in (self._report_r, out_r, err_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            raise
        threading.Thread(target=self._wait, daemon=True, name="corobench-wait4").start()
        if cgroup is not None and not cgroup.has_peak_file():
            # a v2 kernel without memory.peak: the peak is the highest memory.current sampled
            threading.Thread(target=self._note_cgroup, daemon=True, name="corobench-cgroup").start()
        self.pid = self._read_pid()  # from here on close() ends it all, LIVE holds it until then

    # ---------------------------------------------------------------- background

    def _wait(self) -> None:
        _, status, rusage = os.wait4(self.launcher_pid, 0)  # blocks: no polling while it runs
        self._popen.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        self._status, self._rusage = status, rusage
        self._end_mono = time.monotonic()
        self._ended.set()
        with self._out.changed:  # a reader waiting for a line learns the program is gone
            self._out.changed.notify_all()

    def _note_cgroup(self) -> None:
        assert self.cgroup is not None
        while not self._ended.wait(0.1):
            self.cgroup.note_sample()

    def _exceeded(self, what: str) -> None:
        self.kill()  # from the output thread: the program broke a limit, the run is over

    def _read_pid(self) -> int:
        """The launcher's `pid N` line (the child's own report lines may come first)."""
        deadline = time.monotonic() + REPORT_WAIT_S
        while time.monotonic() < deadline:
            for line in self._report.decode(errors="replace").splitlines(keepends=True):
                parts = line.split()
                if line.endswith("\n") and len(parts) == 2 and parts[0] == "pid" and parts[1].isdigit():
                    return int(parts[1])
            ready, _, _ = select.select([self._report_r], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(self._report_r, 4096)
            if not chunk:
                break
            self._report += chunk
        why = self.stderr_tail()[-300:]
        self.close()
        raise LaunchError(f"the launcher did not start {self.spec.argv[0]}: {why}")

    # ---------------------------------------------------------------- Program

    def wait_line(self, index: int, timeout_s: float) -> str | None:
        deadline = time.monotonic() + timeout_s
        out = self._out
        with out.changed:
            while len(out.lines) <= index and not out.done.is_set():
                limit = deadline if self.running else min(deadline, self._end_mono + OUTPUT_AFTER_END_S)
                left = limit - time.monotonic()
                if left <= 0:
                    break
                out.changed.wait(left)
            return out.lines[index].rstrip("\r\n") if len(out.lines) > index else None

    def lines(self) -> list[str]:
        if not self.running:
            self._out.done.wait(OUTPUT_AFTER_END_S)  # what it printed last may still be in the pipe
        with self._out.changed:
            return [ln.rstrip("\r\n") for ln in self._out.lines]

    def wait(self, timeout_s: float | None = None) -> bool:
        return self._ended.wait(timeout_s)

    @property
    def running(self) -> bool:
        return not self._ended.is_set()

    def stop(self, grace_s: float) -> bool:
        if self.running:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except OSError:
                pass
        if self.wait(grace_s):
            self.kill()  # whatever it left behind in its group or cgroup
            return True
        self.kill()
        return False

    def kill(self) -> None:
        """The launcher kills and reaps every descendant (orphans included) when told to stop; past
        LAUNCHER_STOP_S, or where it is gone, the process group and the cgroup are killed outright."""
        if self.running:
            self._killed = True
            try:
                os.kill(self.launcher_pid, signal.SIGTERM)
            except OSError:
                pass
            self._ended.wait(LAUNCHER_STOP_S)
        try:
            os.killpg(self.launcher_pid, signal.SIGKILL)
        except OSError:
            pass
        if self.cgroup is not None:
            self.cgroup.kill_all()

    def close_stdin(self) -> None:
        if self._popen.stdin is not None:
            try:
                self._popen.stdin.close()
            except OSError:
                pass

    def ending(self) -> Ending:
        self._ended.wait()
        self._read_report()
        status, rusage = self._status, self._rusage
        assert status is not None and rusage is not None
        wall_ns = time.monotonic_ns() - self.started_ns
        user_s, sys_s, max_rss_kb = rusage.ru_utime, rusage.ru_stime, None
        for line in self._report.decode(errors="replace").splitlines():
            parts = line.split()
            if parts[:1] == ["exit"] and len(parts) == 6:  # the program ended by itself: its own figures
                status, max_rss_kb = int(parts[1]), int(parts[2])
                user_s, sys_s, wall_ns = float(parts[3]), float(parts[4]), int(parts[5])
            elif parts[:1] in (["cgroup-failed"], ["pin-failed"], ["exec-failed"]):
                note = line.split(" ", 1)[1] if " " in line else line
                if f"{parts[0]}: {note}" not in self.notes:
                    self.notes.append(f"{parts[0]}: {note}")
        signalled = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        return Ending(
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None, term_signal=signalled,
            wall_ns=wall_ns, user_s=user_s, sys_s=sys_s, max_rss_kb=max_rss_kb, killed_by_harness=self._killed,
            oom_killed=signalled == signal.SIGKILL and self.cgroup is not None and self.cgroup.oom_kills() > 0,
        )

    def _read_report(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._report_r], [], [], 0)
                if not ready:
                    break
                chunk = os.read(self._report_r, 4096)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            self._report += chunk

    @property
    def cgroup_join_failed(self) -> bool:
        return any(n.startswith("cgroup-failed") for n in self.notes)

    def stdout(self) -> str:
        self._out.done.wait(OUTPUT_AFTER_END_S if not self.running else 0)
        return "".join(self.lines_with_ends())

    def lines_with_ends(self) -> list[str]:
        with self._out.changed:
            return list(self._out.lines)

    def stderr_tail(self) -> str:
        with self._out.changed:
            return bytes(self._out.stderr_tail).decode(errors="replace")

    @property
    def output_exceeded(self) -> str | None:
        return self._out.exceeded

    @property
    def stdout_bytes(self) -> int:
        return self._out.stdout_bytes

    def cgroup_peak_bytes(self) -> int | None:
        if self.cgroup is None or self.cgroup_join_failed:
            return None
        return self.cgroup.peak_bytes()

    def close(self) -> None:
        self.kill()
        self._ended.wait(10)
        self._read_report()
        tracking.ended(self.host.name, "pgid", str(self.launcher_pid))
        LIVE.discard(self)
        self._out.close()
        for closer in (lambda: os.close(self._report_r), self.close_stdin):
            try:
                closer()
            except OSError:
                pass
        if self.cgroup is not None:
            self.cgroup.remove()


class LocalHost(Host):
    """The machine corobench runs on."""

    kind = "local"

    def __init__(self, name: str = "local", use_cgroups: bool = True):
        self.name = name
        self.use_cgroups = use_cgroups

    def start(self, spec: ProgramSpec) -> LocalProgram:
        cgroup = RunCgroup.create(spec.cgroup) if spec.cgroup and self.use_cgroups else None
        try:
            return LocalProgram(self, spec, cgroup)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise

    def _members(self, program: Program) -> list[int]:
        """Every process of the run: the launcher's descendants (orphans of the program become the
        launcher's children) and whatever else sits in the run's cgroup; not the launcher itself."""
        assert isinstance(program, LocalProgram)
        pids = [p for p in procfs.tree(program.launcher_pid) if p != program.launcher_pid]
        if program.cgroup is not None:
            pids += [p for p in program.cgroup.pids() if p not in pids and p != program.launcher_pid]
        return pids

    def sample(self, program: Program) -> Sample | None:
        assert isinstance(program, LocalProgram)
        t = time.monotonic_ns()
        rss = vsz = threads = 0
        alive = False
        cpu_by_pid = program.__dict__.setdefault("_cpu_by_pid", {})  # ended processes keep their last figure
        for pid in self._members(program):
            stat = procfs.read_stat(pid)
            if stat is None:
                continue
            alive = True
            cpu_by_pid[pid] = stat.cpu_s
            rss += stat.rss_bytes
            vsz += stat.vsz_bytes
            threads += stat.threads
        if not alive:
            return None
        hwm, peak = procfs.read_status_peaks(program.pid)
        cgroup_now = program.cgroup.note_sample() if program.cgroup is not None else None
        return Sample(t, sum(cpu_by_pid.values()), rss, vsz, threads, cgroup_now, hwm, peak)

    def listening_outside(self, program: Program, allowed) -> list[str]:
        foreign = program.__dict__.setdefault("_foreign_sockets", set())
        return procfs.held_listeners(self._members(program), allowed, foreign)

    def clock_ns(self) -> int:
        return time.monotonic_ns()

    def clock_offset(self) -> tuple[int, int]:
        return 0, 0  # the same clock

    def cpus(self) -> set[int]:
        return os.sched_getaffinity(0)

    def cpu_times(self) -> CpuTimes | None:
        return procfs.cpu_times()

    def metadata(self) -> dict:
        from corobench.machine import metadata

        return {**metadata(), "arch": platform.machine()}
