"""wrk, the field's reference client for raw request rate (Debian's wrk, loadgen/wrk/ping.lua).

It loads the http scenario with the same keep-alive connections, but checks only status codes,
so its rows are marked "not verified by client"; the verification run before them still uses
corobench-load, and the server's count must be within the requests wrk had in flight when it
stopped. One agent only, closed loop only: wrk has no shared schedule or fixed rate.
"""

from __future__ import annotations

import os
import shutil

from corobench.hosts.base import Host, LaunchError, ProgramSpec
from corobench.loadgens.base import Agent, LoadFailed, LoadGenerator, LoadResult, LoadRun, LoadSpec
from corobench.paths import PROJECT_ROOT
from corobench.verify import BadOutput, last_stderr_line, parse_object

SCRIPT = PROJECT_ROOT / "loadgen" / "wrk" / "ping.lua"


class _Run(LoadRun):
    """wrk's warm-up and measured runs, one after the other (the warm-up when the result is asked for)."""

    def __init__(self, host: Host, spec: LoadSpec, target: str, cpus: set[int] | None, label: str):
        self.host, self.spec, self.cpus, self.label = host, spec, cpus, label
        threads = len(cpus) if cpus else 1
        self.base = ["wrk", f"-t{threads}", f"-c{spec.concurrency}", "--latency", "-s", str(SCRIPT), f"http://{target}/"]
        self.programs = []

    def _one(self, seconds: float, timeout_s: float) -> tuple[dict, int, int, float]:
        argv = self.base[:1] + [f"-d{seconds:g}s"] + self.base[1:]
        t0 = self.host.clock_ns()
        try:
            proc = self.host.start(ProgramSpec(argv, str(SCRIPT.parent), dict(os.environ), self.cpus, None,
                                               label=self.label))
        except LaunchError as exc:
            raise LoadFailed("exit", f"wrk did not start: {exc}") from None
        self.programs.append(proc)
        if not proc.wait(min(timeout_s, seconds + 60.0)):
            proc.kill()
            raise LoadFailed("timeout", "wrk did not finish in time")
        t1 = self.host.clock_ns()
        ending = proc.ending()
        if ending.exit_code != 0:
            raise LoadFailed("exit", f"wrk {ending.how()}: {last_stderr_line(proc.stderr_tail())}")
        lines = [ln for ln in proc.lines() if ln.startswith("{")]
        try:
            summary = parse_object(lines[-1] if lines else "")
        except BadOutput as exc:
            raise LoadFailed("output", f"wrk's JSON line (loadgen/wrk/ping.lua): {exc}") from None
        errors = {k: v for k, v in (summary.get("errors") or {}).items() if v}
        if errors:
            raise LoadFailed("exit", "wrk saw errors " + ", ".join(f"{k} {v}" for k, v in errors.items()))
        return summary, t0, t1, ending.wall_ns / 1e9

    def result(self, timeout_s: float) -> LoadResult:
        total = 0
        if self.spec.warmup_s:
            warm, *_ = self._one(self.spec.warmup_s, timeout_s)
            total += int(warm.get("requests") or 0)
        summary, t0, t1, wall = self._one(self.spec.duration_s or 10, timeout_s)
        measured = int(summary.get("requests") or 0)
        total += measured
        return LoadResult(tool="wrk", verified=False, requests=total, ok=total, connections=self.spec.concurrency,
                          window=(t0, t1), window_requests=measured, window_connections=None,
                          latency_us=dict(summary.get("latency_us") or {}), wall_s=wall,
                          cpus=len(self.cpus) if self.cpus else 1,
                          raw={**summary, "tool": "wrk", "total_requests": total})


class Wrk(LoadGenerator):
    name = "wrk"
    verifies_replies = False
    supports_agents = False
    summary = "the field's wrk 4 (http only; replies not verified by the client)"

    def unavailable(self) -> str | None:
        return None if shutil.which("wrk") else "wrk is not on PATH (as root, `corobench setup` installs it)"

    def check_spec(self, spec: LoadSpec) -> str | None:
        if spec.rate:
            return "wrk has no fixed-rate (open loop) mode"
        if spec.count is not None:
            return "wrk runs for a duration, not a request count"
        return None

    def start(self, host: Host, spec: LoadSpec, target: str, cpus: set[int] | None, agent: Agent,
              label: str) -> LoadRun:
        if agent.count > 1:
            raise LoadFailed("exit", "wrk cannot share a load between agents")
        return _Run(host, spec, target, cpus, label)

    def count_slack(self, spec: LoadSpec) -> int:
        # wrk counts completed responses; requests in flight when it stopped were served but not
        # counted: the server may be ahead by at most one request per connection per wrk run
        return 2 * spec.concurrency


GENERATOR = Wrk()
