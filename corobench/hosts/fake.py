"""A Host that runs nothing real: scripted programs on a scripted clock, for fast tests of run logic.

A `FakeWorld` holds one clock (ns, advanced only by the programs' scripts and by the harness
waiting) and whatever state the scripts share (a fake server's counts, which a fake load
generator adds to). `FakeHost`s live in a world, each with its own clock offset (a client
machine's monotonic clock is not the server's). A program is a `FakeScript` chosen by a word of
its argv: it prints lines, uses CPU and memory, ends, or refuses to, when the harness waits for
it, stops it or samples it. Waiting never sleeps: a wait that nothing ends advances the clock by
its timeout and returns. `FakeServer` and `FakeLoad` script a protocol server and corobench-load
with switchable faults; tests write others.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Callable

from corobench.hosts.base import CpuTimes, Ending, Host, LaunchError, Program, ProgramSpec, Sample


class FakeWorld:
    """One scripted clock and the state fake programs share."""

    def __init__(self, start_ns: int = 1_000_000_000_000):
        self.now_ns = start_ns
        self.lock = threading.RLock()
        self.state: dict = {}
        self.samplers: list = []
        self.programs: list["FakeProgram"] = []
        self._next_pid = 1000

    def pid(self) -> int:
        with self.lock:
            self._next_pid += 1
            return self._next_pid

    def advance_to(self, t_ns: int) -> None:
        """Move the clock forward (never back); running programs accrue CPU; samplers sample at
        every interval they cross."""
        with self.lock:
            while self.now_ns < t_ns:
                due = [s for s in self.samplers if s.due() <= t_ns]
                step_to = min([t_ns] + [s.due() for s in due])
                dt = step_to - self.now_ns
                for p in self.programs:
                    if p.running:
                        p.script.tick(p, dt)
                self.now_ns = step_to
                for s in due:
                    if s.due() <= self.now_ns:
                        s.fire(self.now_ns)

    def advance(self, seconds: float) -> None:
        self.advance_to(self.now_ns + int(seconds * 1e9))


class FakeScript:
    """What a fake program does; every hook may print, end the program, or change the world."""

    def start(self, p: "FakeProgram") -> None: ...

    def run(self, p: "FakeProgram", timeout_s: float) -> None:
        """The harness waits up to timeout_s for the program: do its work (it may end)."""

    def term(self, p: "FakeProgram") -> None:
        """SIGTERM: ending is the program's business (default: exit 0 at once)."""
        p.exit(0)

    def tick(self, p: "FakeProgram", dt_ns: int) -> None:
        """The clock moved while the program ran: account its CPU (default: none)."""

    def listening(self, p: "FakeProgram") -> list[tuple[str, str, int]]:
        return []


class FakeProgram(Program):
    def __init__(self, host: "FakeHost", spec: ProgramSpec, script: FakeScript):
        self.host, self.spec, self.script = host, spec, script
        self.notes: list[str] = []
        self.pid = host.world.pid()
        self._lines: list[str] = []
        self._stderr: list[str] = []
        self._ending: Ending | None = None
        self.started_ns = host.world.now_ns
        self.cpu_s = 0.0
        self.rss_bytes = 4 << 20
        self.vsz_bytes = 64 << 20
        self.threads = 1
        self.stdin_closed = False
        self.killed = False
        host.world.programs.append(self)
        script.start(self)

    # ---------------------------------------------------------------- what scripts call

    def print(self, line: str | dict) -> None:
        self._lines.append(json.dumps(line) if isinstance(line, dict) else line)

    def eprint(self, text: str) -> None:
        self._stderr.append(text)

    def exit(self, code: int | None, signal: int | None = None) -> None:
        if self._ending is None:
            wall = self.host.world.now_ns - self.started_ns
            self._ending = Ending(code, signal, wall, self.cpu_s * 0.9, self.cpu_s * 0.1,
                                  self.rss_bytes >> 10 if signal is None else None, self.killed)

    def arg(self, flag: str, default: str | None = None) -> str | None:
        argv = self.spec.argv
        return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else default

    # ---------------------------------------------------------------- Program

    def wait_line(self, index: int, timeout_s: float) -> str | None:
        if len(self._lines) <= index and self.running:
            self.script.run(self, timeout_s)
            if len(self._lines) <= index and self.running:
                self.host.world.advance(timeout_s)
        return self._lines[index] if len(self._lines) > index else None

    def lines(self) -> list[str]:
        return list(self._lines)

    def wait(self, timeout_s: float | None = None) -> bool:
        if self.running:
            self.script.run(self, timeout_s if timeout_s is not None else 3600.0)
        if self.running and timeout_s is not None:
            self.host.world.advance(timeout_s)
        return not self.running

    @property
    def running(self) -> bool:
        return self._ending is None

    def stop(self, grace_s: float) -> bool:
        if self.running:
            self.script.term(self)
        if self.running:
            self.host.world.advance(grace_s)
            self.kill()
            return False
        return True

    def kill(self) -> None:
        if self.running:
            self.killed = True
            self.exit(None, 9)

    def close_stdin(self) -> None:
        self.stdin_closed = True

    def ending(self) -> Ending:
        assert self._ending is not None, "ending() of a fake program that still runs"
        return self._ending

    def stdout(self) -> str:
        return "".join(line + "\n" for line in self._lines)

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)[-4000:]

    @property
    def output_exceeded(self) -> str | None:
        return None

    def cgroup_peak_bytes(self) -> int | None:
        return self.rss_bytes + (1 << 20) if self.spec.cgroup else None

    def close(self) -> None:
        self.kill()


class _TickSampler:
    """A Sampler driven by the world's clock instead of a thread: every interval, and at its marks."""

    def __init__(self, world: FakeWorld, sampler, interval_s: float, offset_ns: int):
        self.world, self.sampler, self.interval_s, self.offset_ns = world, sampler, interval_s, offset_ns
        self.next_ns = world.now_ns + int(interval_s * 1e9)

    def due(self) -> int:
        marks = [m - self.offset_ns for m in self.sampler._marks]  # host clock -> world clock
        return min([self.next_ns, *marks])

    def fire(self, now: int) -> None:
        with self.sampler._lock:
            self.sampler._marks = [m for m in self.sampler._marks if m - self.offset_ns > now]
        if self.next_ns <= now:
            self.next_ns = now + int(self.interval_s * 1e9)
        self.sampler.sample()


@dataclass
class FakeHost(Host):
    """A machine of a FakeWorld: `scripts` maps a word of a program's argv to its script."""

    world: FakeWorld
    name: str = "fake"
    scripts: dict[str, Callable[[ProgramSpec], FakeScript]] = field(default_factory=dict)
    offset_ns: int = 0  # this host's clock minus the world's
    offset_error_ns: int = 0
    cpu_set: frozenset[int] = frozenset({0, 1})
    kind: str = "fake"
    started: list[FakeProgram] = field(default_factory=list)

    def start(self, spec: ProgramSpec) -> FakeProgram:
        words = [w.rsplit("/", 1)[-1] for w in spec.argv]
        for key, factory in self.scripts.items():
            if key in words:
                program = FakeProgram(self, spec, factory(spec))
                self.started.append(program)
                return program
        raise LaunchError(f"could not start {spec.argv[0]}: no such program on {self.name}")

    def sample(self, program: Program) -> Sample | None:
        assert isinstance(program, FakeProgram)
        if not program.running:
            return None
        return Sample(self.clock_ns(), program.cpu_s, program.rss_bytes, program.vsz_bytes, program.threads,
                      program.rss_bytes + (1 << 20) if program.spec.cgroup else None, program.rss_bytes,
                      program.vsz_bytes)

    def sampler(self, program: Program, interval_s: float, watch=None):
        from corobench.sampler import Sampler

        sampler = Sampler(self, program, interval_s, watch)
        sampler.sample()
        self.world.samplers.append(_TickSampler(self.world, sampler, interval_s, self.offset_ns))
        original_stop = sampler.stop

        def stop() -> None:
            self.world.samplers[:] = [t for t in self.world.samplers if t.sampler is not sampler]
            sampler.sample()
            sampler.stop = original_stop  # type: ignore[method-assign]

        sampler.stop = stop  # type: ignore[method-assign]
        return sampler

    def listening_outside(self, program: Program, allowed) -> list[str]:
        assert isinstance(program, FakeProgram)
        return [f"{proto} {addr}:{port}" for proto, addr, port in program.script.listening(program)
                if not allowed(addr)]

    def clock_ns(self) -> int:
        return self.world.now_ns + self.offset_ns

    def clock_offset(self) -> tuple[int, int]:
        return self.offset_ns, self.offset_error_ns

    def cpus(self) -> set[int]:
        return set(self.cpu_set)

    def cpu_times(self) -> CpuTimes | None:
        return None

    def metadata(self) -> dict:
        return {"hostname": self.name, "cpu_model": "fake", "cores": len(self.cpu_set), "arch": "fake"}

    def __hash__(self) -> int:
        return id(self)


# --------------------------------------------------------------------------- scripts of the protocol

class FakeServer(FakeScript):
    """A protocol server (echo or http). Faults: never-ready, crash (dies when loaded), miscount
    (counts one request too many), ignore-term, listen-later (reports a wildcard listener once
    loaded, for the tests of the listen check: nothing is bound), busy (uses `cores` of CPU while loaded)."""

    def __init__(self, mode: str = "good", cores: float = 0.5, model: ServerModel | None = None):
        self.mode, self.cores, self.model = mode, cores, model

    def start(self, p: FakeProgram) -> None:
        world = p.host.world
        world.state["served"] = {"requests": 0, "connections": 0}  # a new server counts from zero
        world.state["server"] = p
        p.threads = int(p.arg("--threads", "1") or 1)
        if self.mode == "never-ready":
            return
        scenario = p.spec.argv[p.spec.argv.index("--host") - 1]
        self.scenario = scenario
        ready = {"ready": True, "scenario": scenario, "port": 4242, "threads": p.threads}
        if scenario == "echo":
            ready.update(size=int(p.arg("--size", "17")), uuids=int(p.arg("--uuids", "5")),
                         per_connection=int(p.arg("--per-connection", "0")))
        p.print(ready)

    def loaded(self, p: FakeProgram) -> bool:
        return bool(p.host.world.state.get("load_active"))

    def tick(self, p: FakeProgram, dt_ns: int) -> None:
        if self.loaded(p):
            p.cpu_s += self.cores * dt_ns / 1e9
            p.rss_bytes = 8 << 20

    def listening(self, p: FakeProgram) -> list[tuple[str, str, int]]:
        bound = [("tcp", p.arg("--host", "127.0.0.1"), 4242)]
        if self.mode == "listen-later" and p.host.world.state.get("load_active"):
            bound.append(("tcp", "0.0.0.0", 5353))  # a scripted socket the listen check must reject
        return bound

    def term(self, p: FakeProgram) -> None:
        if self.mode == "ignore-term":
            return
        served = p.host.world.state["served"]
        n = served["requests"] + (1 if self.mode == "miscount" else 0)
        final = {"scenario": self.scenario, "threads": p.threads, "requests": n, "connections": served["connections"]}
        if self.scenario == "echo":
            size, uuids = int(p.arg("--size", "17")), int(p.arg("--uuids", "5"))
            final.update(size=size, uuids=uuids, uuids_generated=uuids * n, bytes_in=size * n,
                         bytes_out=(size + 37 * uuids) * n, partial=0,
                         per_connection=int(p.arg("--per-connection", "0")))
        p.print(final)
        p.exit(0)


def latency_histogram(count: int, p50_us: float = 450, p90_us: float = 800, p99_us: float = 1000,
                      max_us: float = 1200) -> str | None:
    """An HDR histogram (ns) of `count` replies: half at p50, 40 % at p90, 9 % at p99, 1 % at max."""
    if count <= 0:
        return None
    from corobench.loadgens.merge import _histogram

    h = _histogram()
    for value, share in ((p50_us, 0.5), (p90_us, 0.4), (p99_us, 0.09), (max_us, 0.01)):
        if int(count * share):
            h.record_value(int(value * 1000), int(count * share))
    return h.encode().decode()


@dataclass(frozen=True)
class Behaviour:
    """What a fake server does at a load: the rate it achieves, its latency (µs), the errors it
    causes, and the client's CPU share that load takes."""

    achieved: float
    p50_us: float
    p99_us: float
    errors: int = 0
    client_share: float = 0.3


class ServerModel:
    """A server whose behaviour depends on the offered rate (None: closed loop), for capacity tests."""

    def at(self, offered: float | None, connections: int, seconds: float) -> Behaviour:
        raise NotImplementedError


class FakeLoad(FakeScript):
    """corobench-load: `rate` requests/s per agent over its window (or its share of a count), the
    server's counts raised to match. Faults: fail (exits 1), mismatch (one wrong reply), hang
    (never ends), short (covers half its window: dies mid-window)."""

    def __init__(self, mode: str = "good", rate: float = 1000.0, cpu_share: float = 0.3):
        self.mode, self.rate, self.cpu_share = mode, rate, cpu_share

    def run(self, p: FakeProgram, timeout_s: float) -> None:
        if not p.running or self.mode == "hang":
            return
        if self.mode == "fail":
            p.eprint("corobench-load: connect: connection refused")
            p.exit(1)
            return
        world, host = p.host.world, p.host
        server = world.state.get("server")
        index, count = (int(x) for x in (p.arg("--agent", "0/1") or "0/1").split("/"))
        conns = int(p.arg("--connections") or p.arg("--concurrency") or 1)
        share = conns // count + (1 if index < conns % count else 0)
        requests_flag = p.arg("--requests") if "http" in p.spec.argv else p.arg("--connections")
        duration = float(p.arg("--duration", "0") or 0)
        warmup = float(p.arg("--warmup-s", "0") or 0)
        start_at = p.arg("--start-at")
        if start_at is not None:  # agent clock -> world clock
            begin = int(start_at) - host.offset_ns
            world.advance_to(begin - int(warmup * 1e9))
        else:
            begin = world.now_ns + int(warmup * 1e9)
        world.state["load_active"] = True
        if server is not None and server.script.mode == "crash":
            server.eprint("fake server: crashed under load")
            server.exit(7)
        if server is None or not server.running:
            world.state["load_active"] = False
            p.print({"tool": "corobench-load", "requests": 0, "ok": 0, "mismatched": 0, "connections": 0,
                     "errors": {"connect": share, "reset": 0, "eof": 0, "timeout": 0, "other": 0},
                     "first_error": "connection refused", "window": {}, "latency_us": {}, "cpu": {}})
            p.exit(0)
            return
        offered = float(p.arg("--rate")) if p.arg("--rate") else None
        model = getattr(server.script, "model", None)
        behaviour = model.at(offered, conns, duration) if model is not None else None
        rate = behaviour.achieved / count if behaviour is not None else self.rate
        if behaviour is not None and behaviour.errors:
            world.state["load_active"] = False
            p.print({"tool": "corobench-load", "requests": 0, "ok": 0, "mismatched": 0, "connections": share,
                     "errors": {"connect": 0, "reset": behaviour.errors, "eof": 0, "timeout": 0, "other": 0},
                     "first_error": "connection reset by peer", "window": {}, "latency_us": {}, "cpu": {}})
            p.exit(0)
            return
        if duration:
            seconds = duration * (0.5 if self.mode == "short" else 1.0)
            window_n = int(rate * seconds)
            total = window_n + int(rate * warmup)
        else:
            n = int(requests_flag or 0)
            total = window_n = n // count + (1 if index < n % count else 0)
            seconds = window_n / self.rate
        end = begin + int(seconds * 1e9)
        intervals = []
        if start_at is not None:
            step = int(p.arg("--interval-ms", "1000") or 1000) * 1_000_000
            t, k = begin, 0
            while t < end:
                stop = min(end, t + step)
                n = round(window_n * (stop - t) / (end - begin))
                intervals.append({"interval": k, "start_ns": t + host.offset_ns, "end_ns": stop + host.offset_ns,
                                  "requests": n, "ok": n, "mismatched": 0, "connections": 0,
                                  "errors": {"connect": 0}, "histogram": latency_histogram(
                                      n, *((behaviour.p50_us, (behaviour.p50_us + behaviour.p99_us) / 2, behaviour.p99_us,
                                            behaviour.p99_us * 1.2) if behaviour is not None else ()))})
                t, k = stop, k + 1
        world.advance_to(end)
        world.state["load_active"] = False
        world.state["served"]["requests"] += total
        world.state["served"]["connections"] += share
        if self.mode == "short":
            p.eprint("corobench-load: stdin closed: load stopped")
            p.exit(4)
            return
        share_of_cpu = behaviour.client_share if behaviour is not None else self.cpu_share
        p.cpu_s = share_of_cpu * (end - begin + warmup * 1e9) / 1e9
        lat = ((behaviour.p50_us, (behaviour.p50_us + behaviour.p99_us) / 2, behaviour.p99_us, behaviour.p99_us * 1.2)
               if behaviour is not None else (450, 800, 1000, 1200))
        for rec in intervals:
            p.print(rec)
        p.print({"tool": "corobench-load", "requests": total, "ok": total,
                 "mismatched": 1 if self.mode == "mismatch" else 0, "connections": share,
                 "errors": {"connect": 0, "reset": 0, "eof": 0, "timeout": 0, "other": 0},
                 "first_error": "reply 7: body differs from the token" if self.mode == "mismatch" else None,
                 "window": {"start_ns": begin + host.offset_ns, "end_ns": end + host.offset_ns, "seconds": seconds,
                            "requests": window_n, "ok": window_n, "connections": share},
                 "latency_us": {"count": window_n, "mean": (lat[0] + lat[1]) / 2, "p50": lat[0], "p90": lat[1],
                                "p99": lat[2], "p999": lat[3], "max": lat[3]},
                 "histogram": latency_histogram(window_n, *lat),
                 "cpu": {"user_s": p.cpu_s * 0.8, "sys_s": p.cpu_s * 0.2}, "warmup_s": warmup,
                 "start_at_ns": int(start_at) if start_at is not None else None})
        p.exit(0)
