"""A program started through the launcher (launcher.c): its pid, its output, its end.

Both run kinds use it: a batch run waits for the program to end (with a deadline); a server run
waits for its first stdout line, samples it, stops it with SIGTERM and a grace period. The
harness waits in blocking calls (a thread in wait4, a thread in read), so it takes no CPU from
what it measures. stderr goes to a file (only its tail is kept); stdout is read line by line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from corobench import tracking
from corobench.cgroup import RunCgroup
from corobench.launcher import launcher_path

STDERR_KEEP = 4000  # characters of stderr kept with a run (the tail: where errors are)
STDOUT_KEEP = 1 << 20  # a correct run prints a few short lines; more than this is garbage anyway
REPORT_WAIT_S = 10.0  # the launcher reports the program's pid right after fork


class LaunchError(Exception):
    """The launcher could not start the program; the message says why."""


@dataclass
class Ending:
    """How the program ended, measured by the launcher (its own rusage, not the harness's)."""

    exit_code: int | None  # None when it was killed by a signal
    term_signal: int | None
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kb: int | None  # None when the launcher could not report it (it was killed too)
    killed_by_harness: bool = False  # timeout, stop grace exceeded, or interrupted


@dataclass
class Launch:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    cpus: set[int] | None = None
    cgroup: RunCgroup | None = None
    notes: list[str] = field(default_factory=list)  # launcher problems (failed cgroup join, ...)


class Process:
    """One program running under the launcher, in its own session and process group."""

    def __init__(self, launch: Launch):
        self.launch = launch
        launcher = launcher_path()
        if launcher is None:
            raise LaunchError("no C compiler to build the launcher (corobench/launcher.c): install gcc")
        self._report_r, report_w = os.pipe()
        opts: list[str] = []
        if launch.cpus:
            opts += ["-c", ",".join(map(str, sorted(launch.cpus)))]
        if launch.cgroup is not None:
            opts += ["-g", str(launch.cgroup.path)]
        self._stderr = tempfile.TemporaryFile()
        self.started_ns = time.monotonic_ns()
        try:
            self._popen = subprocess.Popen(
                [launcher, str(report_w), *opts, "--", *launch.argv], cwd=launch.cwd, env=launch.env,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
                start_new_session=True, pass_fds=(report_w,),
            )
        except OSError as exc:
            os.close(self._report_r)
            self._stderr.close()
            raise LaunchError(f"could not start {launch.argv[0]}: {exc.strerror or exc}") from None
        finally:
            os.close(report_w)
        self.launcher_pid = self._popen.pid  # also the process group id
        try:
            tracking.started("pgid", str(self.launcher_pid), tracking.process_identity(self.launcher_pid))
        except BaseException:
            os.killpg(self.launcher_pid, signal.SIGKILL)  # not recorded: not allowed to run
            self._popen.wait()
            raise
        self._report = b""
        self._lines: list[str] = []
        self._stdout_bytes = 0
        self._stdout_done = threading.Event()
        self._line_ready = threading.Condition()
        self._ended = threading.Event()
        self._status: int | None = None
        self._rusage = None
        self._killed = False
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._wait, daemon=True).start()
        self.pid = self._read_pid()

    # ---------------------------------------------------------------- background threads

    def _read_stdout(self) -> None:
        stream = self._popen.stdout
        assert stream is not None
        for raw in iter(stream.readline, b""):
            with self._line_ready:
                if self._stdout_bytes < STDOUT_KEEP:
                    self._lines.append(raw[: STDOUT_KEEP - self._stdout_bytes].decode(errors="replace"))
                self._stdout_bytes += len(raw)
                self._line_ready.notify_all()
        with self._line_ready:
            self._stdout_done.set()
            self._line_ready.notify_all()

    def _wait(self) -> None:
        _, status, rusage = os.wait4(self.launcher_pid, 0)  # blocks: no polling while it runs
        self._popen.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        self._status, self._rusage = status, rusage
        self._ended.set()

    def _read_pid(self) -> int:
        """The launcher's `pid N` line (the child's own report lines may come first)."""
        import select

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
        self.kill()
        raise LaunchError(f"the launcher did not start {self.launch.argv[0]}: {self.stderr_tail()[-300:]}")

    # ---------------------------------------------------------------- waiting

    def wait_line(self, index: int, timeout_s: float) -> str | None:
        """stdout line number `index` (0 = the first), waiting up to timeout_s; None if none came."""
        deadline = time.monotonic() + timeout_s
        with self._line_ready:
            while len(self._lines) <= index and not self._stdout_done.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._line_ready.wait(left)
            return self._lines[index].rstrip("\r\n") if len(self._lines) > index else None

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the program to end; True when it did within the timeout."""
        return self._ended.wait(timeout_s)

    @property
    def running(self) -> bool:
        return not self._ended.is_set()

    # ---------------------------------------------------------------- stopping

    def stop(self, grace_s: float) -> bool:
        """SIGTERM to the program, then up to grace_s for it to end; past that, kill it all.

        True when it ended by itself within the grace period.
        """
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
        """SIGKILL the whole process group and everything in the run's cgroup."""
        if self.running:
            self._killed = True
        try:
            os.killpg(self.launcher_pid, signal.SIGKILL)
        except OSError:
            pass
        if self.launch.cgroup is not None:
            self.launch.cgroup.kill_all()

    # ---------------------------------------------------------------- results

    def ending(self) -> Ending:
        """How it ended; call after it ended (wait() returned True, or after kill())."""
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
                self.launch.notes.append(f"{parts[0]}: {note}")
        return Ending(
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            term_signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            wall_ns=wall_ns, user_s=user_s, sys_s=sys_s, max_rss_kb=max_rss_kb,
            killed_by_harness=self._killed,
        )

    def _read_report(self) -> None:
        while True:
            try:
                chunk = os.read(self._report_r, 4096)
            except OSError:
                break
            if not chunk:
                break
            self._report += chunk

    @property
    def cgroup_join_failed(self) -> bool:
        return any(n.startswith("cgroup-failed") for n in self.launch.notes)

    def stdout(self) -> str:
        self._stdout_done.wait(5)
        with self._line_ready:
            return "".join(self._lines)

    def stderr_tail(self) -> str:
        try:
            size = os.fstat(self._stderr.fileno()).st_size
            self._stderr.seek(max(0, size - STDERR_KEEP * 4))
            return self._stderr.read().decode(errors="replace")[-STDERR_KEEP:]
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        self.kill()
        self._ended.wait(10)
        tracking.ended("pgid", str(self.launcher_pid))
        for closer in (lambda: os.close(self._report_r), self._stderr.close):
            try:
                closer()
            except OSError:
                pass
        if self._popen.stdout is not None:
            self._popen.stdout.close()

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
