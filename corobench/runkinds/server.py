"""The server run kind: start a server, load it from one or more agents while sampling it, stop it, verify.

1. Start the server on its host (this machine), pinned to the server CPUs, inside its cgroup, and
   wait for its ready line; check it, and that it listens only where it was told to — then and
   for the whole run (TCP and UDP, the whole process tree and the run's cgroup).
2. Sample the server (CPU, RSS, VSZ, threads, cgroup memory) every 100 ms.
3. Run the load: one agent of the chosen generator per client slot of the topology (this
   machine's client CPUs by default), each pinned to its CPUs; several agents share the load and
   start together on one window (their clocks measured against the server's before and after).
   Every agent verifies its replies; their results are merged (merge.py).
4. Stop the server with SIGTERM (5 s grace, then it is killed and the run FAILED) and read its
   final line; its counts must equal the sum of the agents'.
Anything else is FAILED with its reason (and the host or agent named): never ready, died under
load, wrong bytes, counts that don't match, did not stop, an agent that died or could not start,
a clock whose offset could not be bounded.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from corobench import validate
from corobench.errors import UsageError
from corobench.hosts.base import Ending, Host, LaunchError, Program, ProgramSpec, other_share
from corobench.loadgens import DEFAULT, Agent, LoadFailed, LoadGenerator, LoadResult, get_loadgen, loadgens
from corobench.loadgens.merge import AgentRun, merge
from corobench.options import Options
from corobench.runkinds.base import (KindOption, RunKind, RunRequest, base_row, command_for, effective_threads,
                                     refuse_threads)
from corobench.sampler import Sampler
from corobench.scenarios.serverbase import ServerScenario
from corobench.store import RunRow
from corobench.topology import ClientSlot, Topology, share_cpus, split_cpus
from corobench.verify import BadOutput, check_fields, clean_text, last_stderr_line, parse_object

READY_TIMEOUT_S = 60.0  # times the manifest's timeout_factor: a JVM under load starts slowly
STOP_GRACE_S = 5.0  # the protocol: exit within 5 s of SIGTERM
SAMPLE_INTERVAL_S = 1.0  # sampling perturbs what it measures (sampler.py): the window's ends are sampled exactly
LISTEN_CHECK_EVERY = 1  # samples between checks of where the server listens (1 s)
START_LEAD_S = 0.5  # agents on this machine are told to start this long after they are launched
START_LEAD_REMOTE_S = 2.0  # ... when one of them is reached over ssh
MAX_AGENTS = 256


class RunFailed(Exception):
    """The run cannot be a number: (failure kind, reason)."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class ListenWatch:
    """Checks, with every few samples, that the server's tree listens only where it may."""

    def __init__(self, host: Host, program: Program, topology: Topology):
        self.host, self.program, self.topology = host, program, topology
        self.found: list[str] = []
        self._count = 0

    def check(self) -> None:
        self._count += 1
        if self.found or (self._count - 1) % LISTEN_CHECK_EVERY:
            return
        self.now()

    def now(self) -> list[str]:
        wrong = self.host.listening_outside(self.program, self.topology.allowed)
        if wrong and not self.found:
            self.found = wrong
        return wrong

    def reason(self) -> str:
        where = "a loopback address" if self.topology.on_loopback else f"{self.topology.bind} alone"
        return f"the server listens on {', '.join(self.found)}: it was asked to bind {where}"


def local_topology(options: Options, server: set[int] | None = None, client: set[int] | None = None,
                   agents: int = 1) -> Topology:
    """Everything on this machine: the server on its CPUs, `agents` clients sharing the client CPUs."""
    from corobench.hosts.local import LocalHost

    here = options.host or LocalHost(use_cgroups=options.use_cgroup)
    allowed = set(options.cpus) if options.cpus else here.cpus()
    default_server, default_client = split_cpus(allowed)
    client = client or default_client
    return Topology(here, server or default_server, [ClientSlot(here, c) for c in share_cpus(client, agents)])


class ServerKind(RunKind):
    name = "server"

    # ---------------------------------------------------------------- CLI and session

    def cli_options(self) -> list[KindOption]:
        names = ", ".join(sorted(loadgens()))
        return [
            KindOption(("--server-cpus",), "server_cpus", "CPUs for the server [default: the first half]"),
            KindOption(("--client-cpus",), "client_cpus", "CPUs for the load generator [default: the other half]"),
            KindOption(("--loadgen",), "loadgen", f"the load generator: {names}", DEFAULT),
            KindOption(("--clients",), "clients", "load-generator agents on this machine, each pinned to its own "
                                                  "share of the client CPUs [default: 1]"),
            KindOption(("--hosts",), "hosts", "a hosts file (TOML): agents on other machines over ssh "
                                              "(README, Running across machines)"),
        ]

    def configure(self, options: Options, given: dict, scenarios: list | None = None) -> None:
        server = validate.cpu_list(given["server_cpus"], "--server-cpus") if given.get("server_cpus") else None
        client = validate.cpu_list(given["client_cpus"], "--client-cpus") if given.get("client_cpus") else None
        agents = validate.whole("--clients", given["clients"], 1, MAX_AGENTS) if given.get("clients") else 1
        if given.get("hosts"):
            from corobench.hostsfile import topology_from_file

            if given.get("clients") or client:
                raise UsageError("--hosts names the client hosts and their CPUs: drop --clients and --client-cpus")
            options.topology = topology_from_file(given["hosts"], options, server)
        else:
            options.topology = local_topology(options, server, client, agents)
        name = given.get("loadgen") or DEFAULT
        generator = get_loadgen(name, scenarios)
        why = generator.unavailable()
        if why:
            raise UsageError(f"--loadgen {name}: {why}")
        if len(options.topology.clients) > 1 and not generator.supports_agents:
            raise UsageError(f"--loadgen {name} cannot share a load between several agents")
        options.loadgen = name

    def tools(self, options: Options | None = None) -> list:
        names = {DEFAULT, options.loadgen if options is not None else DEFAULT}
        return [m for n in sorted(names) for m in loadgens()[n].tools()]

    def settings(self, options: Options) -> dict:
        topo = options.topology
        if topo is None:
            return {"loadgen": options.loadgen}
        return {"server_cpus": sorted(topo.server_cpus),
                "client_cpus": sorted({c for s in topo.clients if s.host.kind == "local" for c in (s.cpus or ())}),
                "loadgen": options.loadgen, "topology": topo.describe()}

    def plan_note(self, options: Options) -> str | None:
        topo = options.topology
        if topo is None:
            return None
        cpus = lambda s: f"CPU {','.join(map(str, sorted(s)))}" if s else "all CPUs"  # noqa: E731
        clients = "; ".join(f"{options.loadgen} on {c.host.name} {cpus(c.cpus)}" for c in topo.clients)
        shared = any(c.host is topo.server and (c.cpus or set()) & topo.server_cpus for c in topo.clients)
        return (f"servers on {topo.server.name} {cpus(topo.server_cpus)}, bound to {topo.bind}; {clients}"
                + (" (shared: the client competes with the server)" if shared else ""))

    # ---------------------------------------------------------------- one run

    def run(self, req: RunRequest) -> RunRow:
        scenario = req.scenario
        assert isinstance(scenario, ServerScenario)
        topo = req.options.topology or local_topology(req.options)
        threads = effective_threads(req.program, req.threads, topo.server_cpus)
        argv, env = command_for(req.program, scenario, req.params, threads, None, bind=topo.bind)
        if not topo.on_loopback:
            argv.append("--allow-remote")
        row = base_row(req, argv, topo.server_cpus)
        if refuse_threads(req, row):
            return row
        # the verification run is always checked reply by reply: by our own client
        name = req.options.loadgen if req.rep > 0 else DEFAULT
        generator = loadgens()[name if name in scenario.loadgens else DEFAULT]
        try:
            self._serve(req, row, argv, env, threads, topo, generator)
        except RunFailed as failed:
            row.status, row.failure_kind, row.reason = "failed", failed.kind, failed.reason
        return row

    def _serve(self, req: RunRequest, row: RunRow, argv: list[str], env: dict, threads: int | None,
               topo: Topology, generator: LoadGenerator) -> None:
        scenario: ServerScenario = req.scenario  # type: ignore[assignment]
        host = topo.server
        spec = ProgramSpec(argv, str(req.program.manifest.folder), env, topo.server_cpus,
                           req.run_name if req.options.use_cgroup else None, label="the server")
        row.loadavg = os.getloadavg()[0]
        try:
            server = host.start(spec)
        except LaunchError as exc:
            raise RunFailed("exit", str(exc)) from None
        result: dict = {}
        row.result = result
        with server:
            try:
                ready = self._ready(req, server, threads, result)
                watch = ListenWatch(host, server, topo)
                if watch.now():
                    raise RunFailed("output", watch.reason())
                busy_before = host.cpu_times()  # the span of the samples: the server's start-up is its own
                sampler = host.sampler(server, SAMPLE_INTERVAL_S, watch.check)
                try:
                    load = self._load(req, topo, generator, ready["port"], sampler)
                    result["client"] = load.raw
                except RunFailed as failed:
                    server.wait(1.0)  # a crash is what the client's errors are about: let its end be seen
                    self._died(server, f"; the client saw: {failed.reason}")
                    raise
                finally:
                    sampler.stop()
                    busy_after = host.cpu_times()
                self._died(server, "")
                if watch.found or watch.now():
                    raise RunFailed("output", watch.reason())
                stopped = server.stop(STOP_GRACE_S)
                final_line = server.wait_line(1, 1.0)
                ending = server.ending()
                extra = server.wait_line(2, 0.2) if final_line is not None else None
                row.cgroup_peak_bytes = server.cgroup_peak_bytes()
            finally:
                row.stderr_tail = "\n".join([*server.notes, server.stderr_tail()]).strip() or None
        self._check_end(req, row, ready, ending, stopped, final_line, extra, load, generator)
        row.reported_threads = ready["threads"]
        row.elapsed_ns = load.window[1] - load.window[0]
        row.metrics = self._metrics(sampler, load, generator, topo, busy_before, busy_after)
        row.other_cpu_fraction = max((row.metrics.get(k) for k in ("server_other_share", "client_other_share")
                                      if row.metrics.get(k) is not None), default=None)

    def _check_end(self, req: RunRequest, row: RunRow, ready: dict, ending: Ending, stopped: bool,
                   final_line: str | None, extra: str | None, load: LoadResult, generator: LoadGenerator) -> None:
        scenario: ServerScenario = req.scenario  # type: ignore[assignment]
        row.exit_code, row.term_signal = ending.exit_code, ending.term_signal
        row.wall_ns, row.user_s, row.sys_s, row.max_rss_kb = ending.wall_ns, ending.user_s, ending.sys_s, ending.max_rss_kb
        if not stopped:  # where it hung: before its final line, or on its way out after it
            when = "after printing its final line" if final_line is not None else "and printed no final line"
            raise RunFailed("timeout", f"the server did not exit within {STOP_GRACE_S:g} s of SIGTERM ({when}); killed")
        if ending.exit_code != 0:
            raise RunFailed("exit", f"the server exited {ending.how()} after SIGTERM: "
                                    f"{last_stderr_line(row.stderr_tail or '')}")
        if final_line is None:
            raise RunFailed("output", "the server printed no final line after SIGTERM")
        try:
            final = parse_object(final_line)
        except BadOutput as exc:
            raise RunFailed("output", f"final line: {exc}") from None
        assert row.result is not None
        row.result["final"] = final
        if extra is not None:
            raise RunFailed("output", f"the server printed more than two lines: {clean_text(extra, 80)!r}")
        wrong = check_fields(final, {"scenario": scenario.name, "threads": ready["threads"],
                                     **({"variant": req.program.variant} if req.program.variant else {})})
        if wrong is not None:
            raise RunFailed(wrong.kind, f"final line: {wrong.reason}")
        problem = scenario.check_final(req.params, final, load, generator.count_slack(
            scenario.load_spec(req.params, req.timeout_s)))
        if problem:
            raise RunFailed("checksum", problem)

    # ---------------------------------------------------------------- steps

    def _died(self, server: Program, client_view: str) -> None:
        """A server that ended during the load: that is the failure, whatever the client saw."""
        if server.running:
            return
        ending = server.ending()
        raise RunFailed("signal" if ending.term_signal is not None else "exit",
                        f"server died under load ({ending.how()}): {last_stderr_line(server.stderr_tail())}"
                        + client_view[:200])

    def _ready(self, req: RunRequest, server: Program, threads: int | None, result: dict) -> dict:
        timeout = min(READY_TIMEOUT_S * req.program.manifest.timeout_factor, req.timeout_s)
        line = server.wait_line(0, timeout)
        if line is None:
            if server.output_exceeded:
                raise RunFailed("output", f"the server {server.output_exceeded}; killed")
            if not server.running:
                ending = server.ending()
                kind = {2: "bad-input", 3: "resource"}.get(ending.exit_code or 0, "exit")
                raise RunFailed(kind, f"server never ready: it ended ({ending.how()}): "
                                      f"{last_stderr_line(server.stderr_tail())}")
            raise RunFailed("timeout", f"server never ready: no ready line within {timeout:g} s")
        try:
            ready = parse_object(line)
        except BadOutput as exc:
            raise RunFailed("output", f"ready line: {exc}") from None
        result["ready"] = ready
        expected: dict = {"ready": True, "scenario": req.scenario.name,
                          **{p.name: req.params[p.name] for p in req.scenario.params if p.to_program}}
        if req.program.variant:
            expected["variant"] = req.program.variant
        if threads is not None:
            expected["threads"] = threads
        wrong = check_fields(ready, expected)
        if wrong is not None:
            raise RunFailed(wrong.kind, f"ready line: {wrong.reason}")
        port = ready.get("port")
        if type(port) is not int or not 0 < port < 65536:
            raise RunFailed("output", f"ready line: port must be the bound port, got {clean_text(repr(port), 30)}")
        if type(ready.get("threads")) is not int or ready["threads"] < 1:
            raise RunFailed("output", "ready line: threads must be a whole number >= 1")
        return ready

    def _load(self, req: RunRequest, topo: Topology, generator: LoadGenerator, port: int,
              sampler: Sampler | None = None) -> LoadResult:
        """Every agent's load, started together, waited for together, merged on the server's clock."""
        scenario: ServerScenario = req.scenario  # type: ignore[assignment]
        spec = scenario.load_spec(req.params, req.timeout_s)
        why = generator.check_spec(spec)
        if why:
            raise RunFailed("exit", f"{generator.name}: {why}")
        slots = topo.clients
        n = len(slots)
        labels = [f"agent {i} on {s.host.name}" if n > 1 or topo.spans_hosts else generator.name
                  for i, s in enumerate(slots)]
        offsets = [self._offset(s.host, label) for s, label in zip(slots, labels)]
        start_at = None
        if spec.count is None and generator.supports_agents:
            # one window known in advance: agents start together on it, and the sampler samples its ends
            lead = START_LEAD_REMOTE_S if topo.spans_hosts else START_LEAD_S
            start_at = topo.server.clock_ns() + int((lead + spec.warmup_s) * 1e9)
            if sampler is not None:
                sampler.mark_at(start_at, start_at + int(spec.duration_s * 1e9))
        elif sampler is not None:
            sampler.sample(watch=False)  # right before the load: the server is idle until it starts
        remote = {s.host.name: s.host for s in slots if s.host is not topo.server}
        busy_before = {name: host.cpu_times() for name, host in remote.items()}
        runs = []
        try:
            for i, (slot, label, (offset, _)) in enumerate(zip(slots, labels, offsets)):
                agent = Agent(i, n, None if start_at is None else start_at + offset,
                              watch_stdin=slot.host.kind != "local", sources=tuple(slot.sources))
                try:
                    runs.append(generator.start(slot.host, spec, topo.target(port), slot.cpus, agent, label))
                except LoadFailed as failed:
                    raise RunFailed(failed.kind, failed.reason) from None
            results = self._wait_all(runs, labels, spec.timeout_s + (START_LEAD_REMOTE_S if start_at else 0))
        finally:
            for run in runs:
                run.close()
        if sampler is not None and start_at is None:
            sampler.sample(watch=False)  # right after it: the server is idle again
        after = [self._offset(s.host, label) for s, label in zip(slots, labels)]
        for (before_ns, err_b), (after_ns, err_a), label in zip(offsets, after, labels):
            drift = abs(after_ns - before_ns)
            if drift > err_b + err_a + MAX_DRIFT_NS:
                raise RunFailed("clock", f"{label}: its clock drifted {drift / 1e6:.2f} ms against the server's "
                                         f"during the run (bound ±{(err_b + err_a) / 1e6:.2f} ms)")
        try:
            merged = merge([AgentRun(s.host.name, i, r, off, err)
                            for i, (s, r, (off, err)) in enumerate(zip(slots, results, offsets))],
                           aligned=start_at is not None or n == 1)
        except ValueError as exc:
            raise RunFailed("clock", f"agents' windows: {exc}") from None
        merged.raw["remote_other_share"] = self._remote_busy(remote, busy_before, slots, results)
        want = scenario.expected_requests(req.params)
        if want is not None and merged.ok != want:
            raise RunFailed("checksum", f"client completed {merged.ok} requests, expected {want}")
        return merged

    @staticmethod
    def _remote_busy(remote: dict, before: dict, slots, results) -> dict:
        """Per client host: the share of its agents' CPUs (all of its CPUs where they are not pinned)
        that other processes took during the load."""
        out = {}
        for name, host in remote.items():
            mine = [(s, r) for s, r in zip(slots, results) if s.host is host]
            cpus = set().union(*(s.cpus or host.cpus() for s, _ in mine))
            share = other_share(before.get(name), host.cpu_times(), cpus, sum(r.cpu_s or 0 for _, r in mine))
            if share is not None:
                out[name] = round(share, 4)
        return out

    @staticmethod
    def _offset(host: Host, label: str) -> tuple[int, int]:
        try:
            offset, error = host.clock_offset()
        except LaunchError as exc:
            raise RunFailed("clock", f"{label}: its clock could not be read: {exc}") from None
        if error > MAX_OFFSET_ERROR_NS:
            raise RunFailed("clock", f"{label}: its clock offset could not be bounded better than "
                                     f"±{error / 1e6:.1f} ms (at most ±{MAX_OFFSET_ERROR_NS / 1e6:g} ms)")
        return offset, error

    @staticmethod
    def _wait_all(runs, labels: list[str], timeout_s: float) -> list[LoadResult]:
        """Every agent's result; the first that fails aborts the others, and is the reason."""
        if len(runs) == 1:
            try:
                return [runs[0].result(timeout_s)]
            except LoadFailed as failed:
                raise RunFailed(failed.kind, failed.reason) from None
        with ThreadPoolExecutor(len(runs)) as pool:
            futures = [pool.submit(r.result, timeout_s) for r in runs]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [(i, f.exception()) for i, f in enumerate(futures) if f in done and f.exception() is not None]
            if failed:
                for run in runs:
                    run.abort()
                i, exc = failed[0]
                kind, reason = (exc.kind, exc.reason) if isinstance(exc, LoadFailed) else ("exit", str(exc))
                raise RunFailed(kind, f"{labels[i]}: {reason}" if not reason.startswith(labels[i]) else reason)
            return [f.result() for f in futures]

    @staticmethod
    def _metrics(sampler: Sampler, load: LoadResult, generator: LoadGenerator, topo: Topology,
                 busy_before, busy_after) -> dict:
        w = sampler.window(*load.window)
        seconds = load.seconds or w.seconds
        requests = load.window_requests
        lat = load.latency_us
        rps = requests / seconds if seconds else None
        span_cpu = sampler.samples[-1].cpu_s - sampler.samples[0].cpu_s if sampler.samples else 0.0
        client_cpus = {c for s in topo.clients if s.host is topo.server for c in (s.cpus or ())}
        agents = load.raw.get("agents") or []
        local_client_cpu = sum(a.get("cpu_s") or 0 for a in agents if a["host"] == topo.server.name)
        if client_cpus & topo.server_cpus:  # shared CPUs: one figure for both
            union = client_cpus | topo.server_cpus
            server_other = client_other = other_share(busy_before, busy_after, union, span_cpu + local_client_cpu)
        else:
            server_other = other_share(busy_before, busy_after, topo.server_cpus, span_cpu)
            client_other = other_share(busy_before, busy_after, client_cpus, local_client_cpu) if client_cpus else None
        remote_other = list((load.raw.get("remote_other_share") or {}).values())
        if remote_other:
            client_other = max([*remote_other, *([client_other] if client_other is not None else [])])
        busiest = max((a.get("cpu_share") or 0 for a in agents), default=None) if agents else load.cpu_share
        metrics = {
            "loadgen": generator.name, "verified_by_client": load.verified,
            "window_s": seconds, "requests": requests, "rps": rps,
            "cps": load.window_connections / seconds if load.window_connections is not None and seconds else None,
            "server_cpu_s": w.cpu_s, "server_cores": w.cores, "server_cpu_share": w.cores / len(topo.server_cpus),
            "cpu_us_per_request": w.cpu_s / requests * 1e6 if requests else None,
            "rps_per_core": rps / w.cores if rps and w.cores > 0 else None,
            "vm_hwm_bytes": sampler.vm_hwm_bytes, "vm_peak_bytes": sampler.vm_peak_bytes,
            "window_rss_peak_bytes": w.rss_peak_bytes, "window_vsz_peak_bytes": w.vsz_peak_bytes,
            "ready_rss_bytes": sampler.samples[0].rss_bytes if sampler.samples else None,
            "threads_peak": w.threads_peak, "cgroup_window_peak_bytes": w.cgroup_peak_bytes,
            "client_cpu_share": busiest if load.verified else None,
            "server_other_share": server_other, "client_other_share": client_other,
            "agents": len(agents) or 1,
            "clock_error_ns": max((a.get("offset_error_ns") or 0 for a in agents), default=0) if agents else None,
            "rss_series": sampler.rss_series(),
        }
        for key in ("mean", "p50", "p90", "p99", "p999", "max"):
            if lat.get(key) is not None:
                metrics[f"lat_{key}_us"] = lat[key]
        return {k: v for k, v in metrics.items() if v is not None}


MAX_OFFSET_ERROR_NS = 50_000_000  # a clock known to ±50 ms cannot place 1 s intervals; refused
MAX_DRIFT_NS = 5_000_000  # drift beyond the two error bounds and this: the clocks moved apart
