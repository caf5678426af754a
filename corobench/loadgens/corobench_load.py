"""corobench-load, our own client (docs/loadgen.md): verifies every reply, open or closed loop,
per-interval HDR histograms, agents that share a load and start together."""

from __future__ import annotations

import os

from corobench.hosts.base import Host, LaunchError, Program, ProgramSpec
from corobench.loadgens.base import Agent, Interval, LoadFailed, LoadGenerator, LoadResult, LoadRun, LoadSpec
from corobench.manifest import Manifest, parse_manifest
from corobench.paths import PROJECT_ROOT
from corobench.verify import BadOutput, clean_text, last_stderr_line, parse_object

LOADGEN_DIR = PROJECT_ROOT / "loadgen"
# corobench-load's flags for the count and the connections in flight, per server scenario
COUNT_FLAG = {"echo": "--connections", "http": "--requests"}
CONCURRENCY_FLAG = {"echo": "--concurrency", "http": "--connections"}
WARMUP_SCENARIOS = {"http"}  # scenarios whose duration-bounded load takes --warmup-s from the harness


def manifest() -> Manifest | None:
    from corobench.scenarios import SCENARIOS  # it may list the server scenarios, whichever modules those are

    path = LOADGEN_DIR / "manifest.toml"
    if not path.exists():
        return None
    return parse_manifest(path, {n for n, s in SCENARIOS.items() if s.kind == "server"})


def binary() -> str:
    m = manifest()
    if m is None:
        raise LoadFailed("exit", f"the load generator is missing: no {LOADGEN_DIR}/manifest.toml")
    return str((m.folder / m.run[0]).resolve()) if m.run[0].startswith(".") else m.run[0]


def argv(spec: LoadSpec, target: str, threads: int, agent: Agent) -> list[str]:
    """corobench-load's arguments for a load (all agents' totals; `--agent` says this one's share)."""
    out = [spec.scenario, "--target", target, CONCURRENCY_FLAG[spec.scenario], str(spec.concurrency),
           "--threads", str(threads)]
    for key, value in spec.options.items():
        out += [f"--{key.replace('_', '-')}", str(value)]
    if spec.count is not None:
        out += [COUNT_FLAG[spec.scenario], str(spec.count)]
    else:
        out += ["--duration", f"{spec.duration_s:g}"]
        if spec.scenario in WARMUP_SCENARIOS or spec.warmup_s:
            out += ["--warmup-s", f"{spec.warmup_s:g}"]
    if spec.rate:
        out += ["--rate", f"{spec.rate:g}"]
    if agent.count > 1:
        out += ["--agent", f"{agent.index}/{agent.count}"]
    if agent.start_at_ns is not None:
        out += ["--start-at", str(agent.start_at_ns), "--interval-ms", str(agent.interval_ms)]
    if agent.watch_stdin:
        out += ["--watch-stdin"]
    if agent.sources:
        out += ["--sources", ",".join(agent.sources)]
    return out


def _intervals(lines: list[str]) -> list[Interval]:
    out = []
    for line in lines:
        if not line.startswith('{"interval"'):
            continue
        try:
            rec = parse_object(line)
        except BadOutput as exc:
            raise LoadFailed("output", f"corobench-load's interval line: {exc}") from None
        errors = rec.get("errors") or {}
        out.append(Interval(index=int(rec["interval"]), start_ns=int(rec["start_ns"]), end_ns=int(rec["end_ns"]),
                            requests=int(rec.get("requests") or 0), ok=int(rec.get("ok") or 0),
                            errors=sum(int(v) for v in errors.values()) + int(rec.get("mismatched") or 0),
                            connections=int(rec.get("connections") or 0), histogram=rec.get("histogram")))
    return out


def parse(lines: list[str], exit_code: int | None, how: str, stderr: str, cpus: int, wall_s: float) -> LoadResult:
    """One agent's output: its interval lines, then its summary line, checked."""
    if exit_code != 0:
        raise LoadFailed("exit", f"corobench-load {how}: {last_stderr_line(stderr)}")
    finals = [ln for ln in lines if ln.strip() and not ln.startswith('{"interval"')]
    try:
        client = parse_object(finals[-1] if finals else "")
    except BadOutput as exc:
        raise LoadFailed("output", f"corobench-load's line: {exc}") from None
    errors = client.get("errors") or {}
    failed = {k: v for k, v in errors.items() if v}
    if client.get("mismatched") or failed:
        first = clean_text(str(client.get("first_error") or ""), 200)
        n = client.get("mismatched")
        what = (f"{n} wrong repl{'y' if n == 1 else 'ies'}" if n
                else "errors " + ", ".join(f"{k} {v}" for k, v in failed.items()))
        raise LoadFailed("checksum" if n else "exit", f"client saw {what}: {first}")
    if client.get("ok") != client.get("requests"):
        raise LoadFailed("output", "client: ok and requests differ without a mismatch")
    window = client.get("window") or {}
    t0, t1 = window.get("start_ns"), window.get("end_ns")
    if type(t0) is not int or type(t1) is not int or t1 <= t0:
        raise LoadFailed("output", "corobench-load reported no measured window")
    cpu = client.get("cpu") or {}
    loading = (t1 - t0) / 1e9 + float(client.get("warmup_s") or 0)
    return LoadResult(
        tool="corobench-load", verified=True, requests=int(client.get("requests") or 0), ok=int(client.get("ok") or 0),
        connections=int(client.get("connections") or 0), window=(t0, t1),
        window_requests=int(window.get("requests") if window.get("requests") is not None else client.get("requests")),
        window_connections=window.get("connections"), latency_us=dict(client.get("latency_us") or {}),
        histogram=client.get("histogram"), intervals=_intervals(lines),
        cpu_s=(cpu.get("user_s") or 0) + (cpu.get("sys_s") or 0) if cpu else None, wall_s=wall_s, cpus=cpus,
        active_s=min(wall_s, loading) if client.get("start_at_ns") is not None else None,
        raw=client,
    )


class _Run(LoadRun):
    def __init__(self, program: Program, cpus: int, label: str):
        self.programs = [program]
        self.cpus = cpus
        self.label = label

    def result(self, timeout_s: float) -> LoadResult:
        proc = self.programs[0]
        if not proc.wait(timeout_s):
            proc.kill()
            raise LoadFailed("timeout", f"the load did not finish within {timeout_s:g} s; client and server killed")
        ending = proc.ending()
        if proc.output_exceeded:
            raise LoadFailed("output", f"corobench-load {proc.output_exceeded}")
        if ending.exit_code == 4 and not ending.killed_by_harness:
            raise LoadFailed("exit", f"{self.label} stopped: its stdin closed (the harness's connection was lost)")
        return parse(proc.lines(), ending.exit_code, ending.how(), proc.stderr_tail(), self.cpus, ending.wall_ns / 1e9)


class CorobenchLoad(LoadGenerator):
    name = "corobench-load"
    verifies_replies = True
    supports_agents = True
    summary = "our client: verifies every reply, closed or open loop (docs/loadgen.md)"

    def tools(self) -> list:
        m = manifest()
        return [m] if m is not None else []

    def unavailable(self) -> str | None:
        return None if (LOADGEN_DIR / "manifest.toml").exists() else f"no {LOADGEN_DIR}/manifest.toml"

    def start(self, host: Host, spec: LoadSpec, target: str, cpus: set[int] | None, agent: Agent,
              label: str) -> LoadRun:
        threads = len(cpus) if cpus else 1
        path = host.install(binary())
        spec_argv = [path, *argv(spec, target, threads, agent)]
        env = dict(os.environ) if host.kind == "local" else {}
        try:
            program = host.start(ProgramSpec(spec_argv, str(LOADGEN_DIR) if host.kind == "local" else "/tmp", env,
                                             cpus, None, stdin_pipe=agent.watch_stdin, label=label))
        except LaunchError as exc:
            raise LoadFailed("exit", f"{label} did not start: {exc}") from None
        return _Run(program, threads, label)


GENERATOR = CorobenchLoad()
