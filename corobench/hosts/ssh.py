"""A client machine reached by the user's own OpenSSH: load generators run there, nothing else.

The system `ssh` does the transport (so ~/.ssh/config, keys, agents and jump hosts work as the
user set them up), with one shared master connection per host (ControlMaster, as Ansible does)
that every command rides. A host needs nothing installed but an SSH server: the harness copies its
self-contained `corobench-load` (statically linked) into a per-user cache there, named by its
checksum, when that file is not there yet, and refuses a host of another architecture.

A remote program runs as `sh -c 'echo PID BOOT START; exec corobench-load --pin CPUS ...'`: its
first line says who it is (so bookkeeping can find it again after a crash), it pins itself, and
with `--watch-stdin` it stops when its ssh channel closes — a harness that dies leaves no load
running there. Clocks: `corobench-load clock` answers probes over a kept-open channel; of several
probes the one with the smallest round trip gives the offset, ± half that round trip.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import subprocess
import tempfile
import threading
import time
from functools import cached_property
from pathlib import Path

from corobench import tracking
from corobench.bookkeeping import Entry
from corobench.hosts.base import LIVE, CpuTimes, Ending, Host, LaunchError, Program, ProgramSpec, Sample
from corobench.hosts.local import LocalHost, LocalProgram

REMOTE_CACHE = "~/.cache/corobench/bin"
CONNECT_TIMEOUT_S = 15
COMMAND_TIMEOUT_S = 60
CLOCK_PROBES = 15
ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


class SshError(LaunchError):
    """The host could not be reached, or a command there failed; the message names the host."""


def control_dir() -> Path:
    """Where the master connections' sockets live: short paths (a Unix socket path is 108 bytes)."""
    path = Path(tempfile.gettempdir()) / f"corobench-ssh-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def ssh_argv(destination: str, options: list[str], config: str | None = None) -> list[str]:
    """The ssh command line to a destination: the user's own configuration and the host's options
    (first, so that they win: ssh keeps the first value of an option), then a shared master
    connection, no prompts, and a bounded connect."""
    argv = ["ssh"]
    if config:
        argv += ["-F", config]
    return argv + [*options, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                   "-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir()}/%C", "-o", "ControlPersist=120",
                   "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", destination]


def local_arch() -> str:
    machine = platform.machine()
    return ARCH_ALIASES.get(machine, machine)


class SshProgram(Program):
    """A program on a remote host, driven through the local `ssh` process that carries it."""

    def __init__(self, host: "SshHost", spec: ProgramSpec, carrier: LocalProgram):
        self.host, self.spec, self.carrier = host, spec, carrier
        self.notes: list[str] = []
        header = carrier.wait_line(0, CONNECT_TIMEOUT_S + 10)
        parts = (header or "").split()
        if len(parts) != 3 or not parts[0].isdigit():
            carrier.kill()
            why = carrier.stderr_tail().strip().splitlines()
            raise SshError(f"{host.name}: could not start {spec.argv[0]} there: "
                           f"{why[-1] if why else 'no answer from the host'}")
        self.pid = int(parts[0])
        self.identity = f"{parts[1]}:{parts[2]}"
        tracking.started(host.name, "pid", str(self.pid), self.identity, host.reach())
        self._offset = 1  # stdout line 0 is the header
        LIVE.add(self)

    def wait_line(self, index: int, timeout_s: float) -> str | None:
        return self.carrier.wait_line(index + self._offset, timeout_s)

    def lines(self) -> list[str]:
        return self.carrier.lines()[self._offset:]

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.carrier.wait(timeout_s)

    @property
    def running(self) -> bool:
        return self.carrier.running

    def stop(self, grace_s: float) -> bool:
        self.close_stdin()
        if self.carrier.wait(grace_s):
            return True
        self.kill()
        return False

    def kill(self) -> None:
        """Close its channel (the agent stops by itself), and make sure: kill it by pid there."""
        if self.carrier.running:
            self.carrier.close_stdin()
            if not self.carrier.wait(2.0):
                self.host.run(f"kill -9 {self.pid} 2>/dev/null || true", check=False)
        self.carrier.kill()

    def close_stdin(self) -> None:
        self.carrier.close_stdin()

    def ending(self) -> Ending:
        ending = self.carrier.ending()
        if ending.exit_code == 255:  # ssh's own failure: the connection, not the program
            self.notes.append(f"ssh to {self.host.name} failed: {self.carrier.stderr_tail().strip()[-200:]}")
        return Ending(ending.exit_code, ending.term_signal, ending.wall_ns, 0.0, 0.0, None, ending.killed_by_harness)

    def stdout(self) -> str:
        return "".join(line + "\n" for line in self.lines())

    def stderr_tail(self) -> str:
        return self.carrier.stderr_tail()

    @property
    def output_exceeded(self) -> str | None:
        return self.carrier.output_exceeded

    def cgroup_peak_bytes(self) -> int | None:
        return None

    def close(self) -> None:
        self.kill()
        self.carrier.close()
        gone = self.host.run(f"kill -0 {self.pid} 2>/dev/null && echo alive || echo gone", check=False)
        if gone.strip() != "alive":
            tracking.ended(self.host.name, "pid", str(self.pid))
        LIVE.discard(self)


class SshHost(Host):
    """A client machine named in a hosts file."""

    kind = "ssh"

    def __init__(self, name: str, destination: str, options: list[str] | None = None, config: str | None = None,
                 cpu_list: set[int] | None = None):
        self.name, self.destination = name, destination
        self.options, self.config = list(options or []), config
        self.cpu_list = cpu_list
        self.local = LocalHost(name=name, use_cgroups=False)  # runs the ssh client processes
        self._clock: subprocess.Popen | None = None
        self._clock_lock = threading.Lock()
        self._installed: dict[str, str] = {}

    def reach(self) -> dict:
        return {"kind": "ssh", "destination": self.destination, "options": self.options, "config": self.config}

    def _argv(self) -> list[str]:
        return ssh_argv(self.destination, self.options, self.config)

    def run(self, command: str, stdin: bytes | None = None, check: bool = True,
            timeout_s: float = COMMAND_TIMEOUT_S) -> str:
        """A short shell command there; its stdout (SshError when ssh or the command fails)."""
        try:
            proc = subprocess.run([*self._argv(), command], input=stdin, capture_output=True,
                                  timeout=timeout_s, stdin=None if stdin is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise SshError(f"{self.name}: `{command[:60]}` took longer than {timeout_s:g} s") from None
        except OSError as exc:
            raise SshError(f"{self.name}: cannot run ssh: {exc.strerror or exc}") from None
        if check and proc.returncode != 0:
            why = proc.stderr.decode(errors="replace").strip().splitlines()
            what = "cannot reach it" if proc.returncode == 255 else f"`{command[:60]}` exited {proc.returncode}"
            raise SshError(f"{self.name} ({self.destination}): {what}: {why[-1] if why else 'no message'}")
        return proc.stdout.decode(errors="replace")

    # ---------------------------------------------------------------- programs

    def start(self, spec: ProgramSpec) -> SshProgram:
        pin = ["--pin", ",".join(map(str, sorted(spec.cpus)))] if spec.cpus else []
        program = [spec.argv[0], *pin, *spec.argv[1:]]
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in spec.env.items())
        script = ('echo "$$ $(cat /proc/sys/kernel/random/boot_id) $(cut -d" " -f22 /proc/$$/stat)"; '
                  f"exec {env + ' ' if env else ''}{shlex.join(program)}")
        carrier = self.local.start(ProgramSpec([*self._argv(), script], "/", dict(os.environ), None, None,
                                               stdin_pipe=True, label=spec.label))
        try:
            return SshProgram(self, spec, carrier)
        except BaseException:
            carrier.close()
            raise

    def install(self, path: str) -> str:
        """The program at `path` in this host's cache, copied there unless a file with the same
        checksum is there already (a stale or damaged copy is replaced)."""
        if path in self._installed:
            return self._installed[path]
        arch = self.arch
        if arch != local_arch():
            raise SshError(f"{self.name}: it is {arch}, and {Path(path).name} here is built for {local_arch()}: "
                           "build corobench-load for that architecture, or use a host like this one")
        remote, current = self._cached(path)
        if not current:
            self.run(f"mkdir -p {REMOTE_CACHE} && cat > {remote}.tmp && chmod 755 {remote}.tmp && mv {remote}.tmp {remote}",
                     stdin=Path(path).read_bytes())
            if not self._cached(path)[1]:
                raise SshError(f"{self.name}: the copy of {Path(path).name} there does not match this one")
        self._installed[path] = remote
        return remote

    def _cached(self, path: str) -> tuple[str, bool]:
        """Where the program goes in this host's cache, and whether that file is this program."""
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        remote = f"{REMOTE_CACHE}/{Path(path).name}-{digest[:16]}"
        there = self.run(f"test -x {remote} && sha256sum {remote} || true").split()
        return remote, bool(there) and there[0] == digest

    def is_current(self, path: str) -> bool:
        return self._cached(path)[1]

    # ---------------------------------------------------------------- clock

    def _clock_channel(self) -> subprocess.Popen:
        if self._clock is None or self._clock.poll() is not None:
            from corobench.loadgens.corobench_load import binary

            remote = self.install(binary())
            self._clock = subprocess.Popen([*self._argv(), f"exec {remote} clock"], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        return self._clock

    def clock_offset(self) -> tuple[int, int]:
        """This host's monotonic clock minus ours: of CLOCK_PROBES probes over the kept-open channel,
        the one with the smallest round trip, its error bound half that round trip."""
        with self._clock_lock:
            channel = self._clock_channel()
            best: tuple[int, int] | None = None
            assert channel.stdin is not None and channel.stdout is not None
            for _ in range(CLOCK_PROBES):
                t0 = time.monotonic_ns()
                try:
                    channel.stdin.write(b"\n")
                    line = channel.stdout.readline()
                except OSError:
                    line = b""
                t1 = time.monotonic_ns()
                if not line.strip().isdigit():
                    why = channel.stderr.read1(2000).decode(errors="replace") if channel.poll() is not None else ""
                    self._clock = None
                    raise SshError(f"{self.name}: its clock did not answer{': ' + why.strip() if why else ''}")
                remote = int(line)
                offset, error = remote - (t0 + t1) // 2, (t1 - t0 + 1) // 2
                if best is None or error < best[1]:
                    best = (offset, error)
            assert best is not None
            return best

    # ---------------------------------------------------------------- the machine

    @cached_property
    def facts(self) -> dict:
        script = ("uname -m; nproc; uname -r; hostname; grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; "
                  "grep MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2; "
                  ". /etc/os-release 2>/dev/null; echo \"$PRETTY_NAME\"; "
                  "cat /sys/fs/cgroup/cgroup.controllers >/dev/null 2>&1 && echo 2 || echo 1")
        lines = self.run(script).splitlines() + [""] * 8
        arch = ARCH_ALIASES.get(lines[0].strip(), lines[0].strip())
        return {"hostname": lines[3].strip(), "arch": arch, "cores": int(lines[1]) if lines[1].strip().isdigit() else None,
                "kernel": lines[2].strip(), "cpu_model": lines[4].strip() or "unknown",
                "memory_bytes": int(lines[5]) * 1024 if lines[5].strip().isdigit() else None,
                "os": lines[6].strip(), "cgroup": lines[7].strip(), "ssh": self.destination}

    @property
    def arch(self) -> str:
        return self.facts["arch"]

    def metadata(self) -> dict:
        return dict(self.facts)

    def cpus(self) -> set[int]:
        if self.cpu_list is not None:
            return set(self.cpu_list)
        return set(range(self.facts.get("cores") or 1))

    def cpu_times(self) -> CpuTimes | None:
        from corobench.hosts.procfs import CLOCK_TICKS, cpu_times

        try:
            text = self.run("cat /proc/stat")
        except SshError:
            return None
        with tempfile.TemporaryDirectory() as root:
            (Path(root) / "stat").write_text(text)
            times = cpu_times(Path(root))
        return CpuTimes(CLOCK_TICKS, times.busy, times.total) if times else None

    def sample(self, program: Program) -> Sample | None:
        return None  # servers run on the machine under test; agents report their own CPU

    def listening_outside(self, program: Program, allowed) -> list[str]:
        return []

    def clock_ns(self) -> int:
        offset, _ = self.clock_offset()
        return time.monotonic_ns() + offset

    def close(self) -> None:
        if self._clock is not None:
            try:
                self._clock.stdin.close()  # type: ignore[union-attr]
                self._clock.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self._clock.kill()
            self._clock = None
        subprocess.run([*self._argv()[:-1], "-O", "exit", self.destination], capture_output=True, timeout=15)  # the master


def cleanup_remote(entry: Entry) -> str | None:
    """Recovery: a process a dead harness left on another host, killed if it is still the same one."""
    reach = entry.reach or {}
    host = SshHost(entry.host, reach.get("destination", ""), reach.get("options") or [], reach.get("config"))
    boot, _, start = (entry.identity or "").partition(":")
    check = (f'[ "$(cat /proc/sys/kernel/random/boot_id)" = {shlex.quote(boot)} ] && '
             f'[ "$(cut -d" " -f22 /proc/{int(entry.ref)}/stat 2>/dev/null)" = {shlex.quote(start)} ] && '
             f'kill -9 {int(entry.ref)} && echo killed || echo gone')
    try:
        out = host.run(check, check=False).strip()
    except SshError:
        return None  # unreachable now: tried again next time
    finally:
        try:
            host.close()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return "stopped" if out == "killed" else ""
