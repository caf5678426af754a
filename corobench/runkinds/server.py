"""The server run kind: start a server, load it with our client while sampling it, stop it, verify.

1. Start the server pinned to the server CPUs (default: the first half), inside its cgroup, and
   wait for its ready line; check it, and that it listens on loopback only.
2. Sample the server (CPU, RSS, VSZ, threads, cgroup memory) every 100 ms.
3. Run the load generator pinned to the client CPUs (default: the other half); it verifies every
   reply and reports its measured window on the same clock as the sampler.
4. Stop the server with SIGTERM (5 s grace, then it is killed and the run FAILED) and read its
   final line; its counts must equal the client's.
Anything else is FAILED with its reason: never ready, died under load, wrong bytes, counts that
don't match, did not stop.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import time
from pathlib import Path

from corobench import validate
from corobench.cgroup import RunCgroup
from corobench.discover import Program
from corobench.errors import UsageError
from corobench.manifest import Manifest, parse_manifest
from corobench.options import Options
from corobench.paths import PROJECT_ROOT
from corobench.process import Launch, LaunchError, Process
from corobench.runkinds.base import (KindOption, RunKind, RunRequest, base_row, command_for, effective_threads,
                                     refuse_threads)
from corobench.sampler import Sampler
from corobench.scenarios import SCENARIOS
from corobench.scenarios.serverbase import HOST, ServerScenario
from corobench.store import RunRow
from corobench.verify import BadOutput, check_fields, clean_text, last_stderr_line, parse_object

LOADGEN_DIR = PROJECT_ROOT / "loadgen"
WRK_SCRIPT = LOADGEN_DIR / "wrk" / "ping.lua"
READY_TIMEOUT_S = 60.0  # times the manifest's timeout_factor: a JVM under load starts slowly
STOP_GRACE_S = 5.0  # the protocol: exit within 5 s of SIGTERM
SAMPLE_INTERVAL_S = 0.1


class RunFailed(Exception):
    """The run cannot be a number: (failure kind, reason)."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def split_cpus(cpus: set[int]) -> tuple[set[int], set[int]]:
    """The first half of the CPUs for the server, the rest for the client (one CPU: shared)."""
    ordered = sorted(cpus)
    if len(ordered) == 1:
        return set(ordered), set(ordered)
    half = len(ordered) // 2
    return set(ordered[:half]), set(ordered[half:])


def loadgen_manifest() -> Manifest:
    # it may list the server scenarios, whichever modules those are
    return parse_manifest(LOADGEN_DIR / "manifest.toml", {n for n, s in SCENARIOS.items() if s.kind == "server"})


def listening_addresses(pids: list[int]) -> list[str]:
    """host:port of every TCP socket in LISTEN state that one of these processes holds."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found: list[str] = []
    for table, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A" or fields[9] not in inodes:  # 0A = LISTEN
                continue
            hex_addr, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_addr)
            # /proc/net/tcp writes each 32-bit word of the address in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            addr = ipaddress.ip_address(raw)
            if family == 6 and addr.ipv4_mapped:
                addr = addr.ipv4_mapped
            found.append(f"{addr}:{int(hex_port, 16)}")
    return found


def not_loopback(addresses: list[str]) -> list[str]:
    return [a for a in addresses if not ipaddress.ip_address(a.rsplit(":", 1)[0].strip("[]")).is_loopback]


class ServerKind(RunKind):
    name = "server"

    # ---------------------------------------------------------------- CLI and session

    def cli_options(self) -> list[KindOption]:
        return [
            KindOption(("--server-cpus",), "server_cpus", "CPUs for the server [default: the first half]"),
            KindOption(("--client-cpus",), "client_cpus", "CPUs for the load generator [default: the other half]"),
            KindOption(("--loadgen",), "loadgen", "corobench-load, or wrk (http only; replies not verified by "
                                                  "the client)", "corobench-load"),
        ]

    def configure(self, options: Options, given: dict) -> None:
        allowed = set(options.cpus) if options.cpus else os.sched_getaffinity(0)
        server, client = split_cpus(allowed)
        if given.get("server_cpus"):
            server = validate.cpu_list(given["server_cpus"], "--server-cpus")
        if given.get("client_cpus"):
            client = validate.cpu_list(given["client_cpus"], "--client-cpus")
        options.server_cpus, options.client_cpus = server, client
        loadgen = given.get("loadgen") or "corobench-load"
        if loadgen not in ("corobench-load", "wrk"):
            raise UsageError(f"--loadgen must be corobench-load or wrk, not '{loadgen}'")
        if loadgen == "wrk" and shutil.which("wrk") is None:
            raise UsageError("--loadgen wrk: wrk is not on PATH (as root, `corobench setup` installs it)")
        options.loadgen = loadgen

    def tools(self) -> list[Manifest]:
        return [loadgen_manifest()] if (LOADGEN_DIR / "manifest.toml").exists() else []

    def settings(self, options: Options) -> dict:
        return {"server_cpus": sorted(options.server_cpus or []), "client_cpus": sorted(options.client_cpus or []),
                "loadgen": options.loadgen}

    def plan_note(self, options: Options) -> str | None:
        shared = options.server_cpus == options.client_cpus
        return (f"servers on CPU {','.join(map(str, sorted(options.server_cpus or [])))}, "
                f"{options.loadgen} on CPU {','.join(map(str, sorted(options.client_cpus or [])))}"
                + (" (shared: the client competes with the server)" if shared else ""))

    # ---------------------------------------------------------------- one run

    def run(self, req: RunRequest) -> RunRow:
        scenario = req.scenario
        assert isinstance(scenario, ServerScenario)
        options = req.options
        server_cpus = options.server_cpus or split_cpus(os.sched_getaffinity(0))[0]
        threads = effective_threads(req.program, req.threads, server_cpus)
        argv, env = command_for(req.program, scenario, req.params, threads, None)
        row = base_row(req, argv, server_cpus)
        if refuse_threads(req, row):
            return row
        use_wrk = options.loadgen == "wrk" and req.rep > 0 and getattr(scenario, "wrk_ok", False)
        cgroup = RunCgroup.create(req.run_name) if options.use_cgroup else None
        try:
            self._serve(req, row, argv, env, threads, server_cpus, cgroup, use_wrk)
        except RunFailed as failed:
            row.status, row.failure_kind, row.reason = "failed", failed.kind, failed.reason
        finally:
            if cgroup is not None:
                cgroup.remove()
        return row

    def _serve(self, req: RunRequest, row: RunRow, argv: list[str], env: dict, threads: int | None,
               server_cpus: set[int], cgroup: RunCgroup | None, use_wrk: bool) -> None:
        scenario: ServerScenario = req.scenario  # type: ignore[assignment]
        launch = Launch(argv, str(req.program.manifest.folder), env, server_cpus, cgroup)
        try:
            server = Process(launch)
        except LaunchError as exc:
            raise RunFailed("exit", str(exc)) from None
        result: dict = {}
        row.result = result
        with server:
            try:
                ready = self._ready(req, server, threads, result)
                sampler = Sampler(server.pid, cgroup, SAMPLE_INTERVAL_S).start()
                try:
                    target = f"{HOST}:{ready['port']}"
                    if use_wrk:
                        client, window, client_wall = self._wrk(req, target)
                    else:
                        client, window, client_wall = self._load(req, target)
                    result["client"] = client
                except RunFailed as failed:
                    server.wait(1.0)  # a crash is what the client's errors are about: let its end be seen
                    self._died(server, f"; the client saw: {failed.reason}")
                    raise
                finally:
                    sampler.stop()
                self._died(server, "")
                stopped = server.stop(STOP_GRACE_S)
                final_line = server.wait_line(1, 1.0)
                ending = server.ending()
            finally:
                row.stderr_tail = "\n".join([*launch.notes, server.stderr_tail()]).strip() or None
        row.exit_code, row.term_signal = ending.exit_code, ending.term_signal
        row.wall_ns, row.user_s, row.sys_s, row.max_rss_kb = ending.wall_ns, ending.user_s, ending.sys_s, ending.max_rss_kb
        row.cgroup_peak_bytes = cgroup.peak_bytes() if cgroup is not None and not server.cgroup_join_failed else None
        if not stopped:  # where it hung: before its final line, or on its way out after it
            when = "after printing its final line" if final_line is not None else "and printed no final line"
            raise RunFailed("timeout", f"the server did not exit within {STOP_GRACE_S:g} s of SIGTERM ({when}); killed")
        if ending.exit_code != 0:
            raise RunFailed("exit", f"the server exited {self._how(ending)} after SIGTERM: "
                                    f"{last_stderr_line(server.stderr_tail())}")
        if final_line is None:
            raise RunFailed("output", "the server printed no final line after SIGTERM")
        try:
            final = parse_object(final_line)
        except BadOutput as exc:
            raise RunFailed("output", f"final line: {exc}") from None
        result["final"] = final
        extra = server.wait_line(2, 0.2)
        if extra is not None:
            raise RunFailed("output", f"the server printed more than two lines: {clean_text(extra, 80)!r}")
        wrong = check_fields(final, {"scenario": scenario.name, "threads": ready["threads"],
                                     **({"variant": req.program.variant} if req.program.variant else {})})
        if wrong is not None:
            raise RunFailed(wrong.kind, f"final line: {wrong.reason}")
        if use_wrk:
            problem = self._check_wrk_counts(final, client, req)
        else:
            problem = scenario.check_final(req.params, final, client)
        if problem:
            raise RunFailed("checksum", problem)
        row.reported_threads = ready["threads"]
        row.elapsed_ns = window[1] - window[0]
        row.metrics = self._metrics(sampler, window, client, client_wall, req, use_wrk, len(server_cpus))

    # ---------------------------------------------------------------- steps

    def _died(self, server: Process, client_view: str) -> None:
        """A server that ended during the load: that is the failure, whatever the client saw."""
        if server.running:
            return
        ending = server.ending()
        raise RunFailed("signal" if ending.term_signal is not None else "exit",
                        f"server died under load ({self._how(ending)}): {last_stderr_line(server.stderr_tail())}"
                        + client_view[:200])

    @staticmethod
    def _how(ending) -> str:
        return f"signal {ending.term_signal}" if ending.term_signal is not None else f"exit {ending.exit_code}"

    def _ready(self, req: RunRequest, server: Process, threads: int | None, result: dict) -> dict:
        timeout = min(READY_TIMEOUT_S * req.program.manifest.timeout_factor, req.timeout_s)
        line = server.wait_line(0, timeout)
        if line is None:
            if not server.running:
                ending = server.ending()
                kind = {2: "bad-input", 3: "resource"}.get(ending.exit_code or 0, "exit")
                raise RunFailed(kind, f"server never ready: it ended ({self._how(ending)}): "
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
        from corobench.sampler import tree

        wrong_hosts = not_loopback(listening_addresses(tree(server.pid)))
        if wrong_hosts:
            raise RunFailed("output", f"the server listens on {', '.join(wrong_hosts)}: not a loopback address "
                                      f"(it was asked to bind {HOST})")
        return ready

    def _client(self, argv: list[str], cwd: str, timeout_s: float, cpus: set[int]) -> tuple[Process, bool]:
        try:
            proc = Process(Launch(argv, cwd, dict(os.environ), cpus, None))
        except LaunchError as exc:
            raise RunFailed("exit", f"the load generator did not start: {exc}") from None
        return proc, proc.wait(timeout_s)

    def _load(self, req: RunRequest, target: str) -> tuple[dict, tuple[int, int], float]:
        scenario: ServerScenario = req.scenario  # type: ignore[assignment]
        if not (LOADGEN_DIR / "manifest.toml").exists():
            raise RunFailed("exit", f"the load generator is missing: no {LOADGEN_DIR}/manifest.toml")
        tool = loadgen_manifest()
        cpus = req.options.client_cpus or split_cpus(os.sched_getaffinity(0))[1]
        argv = tool.resolve(tool.run) + scenario.client_argv(req.params, target, len(cpus))
        timeout = scenario.client_timeout_s(req.params, req.timeout_s)
        proc, ended = self._client(argv, str(tool.folder), timeout, cpus)
        with proc:
            if not ended:
                proc.kill()
                raise RunFailed("timeout", f"the load did not finish within {timeout:g} s; client and server killed")
            ending = proc.ending()
            out, err = proc.stdout(), proc.stderr_tail()
        if ending.exit_code != 0:
            raise RunFailed("exit", f"corobench-load {self._how(ending)}: {last_stderr_line(err)}")
        lines = [ln for ln in out.splitlines() if ln.strip()]
        try:
            client = parse_object(lines[-1] if lines else "")
        except BadOutput as exc:
            raise RunFailed("output", f"corobench-load's line: {exc}") from None
        errors = client.get("errors") or {}
        failed = {k: v for k, v in errors.items() if v}
        if client.get("mismatched") or failed:
            first = clean_text(str(client.get("first_error") or ""), 200)
            what = (f"{client.get('mismatched')} wrong repl{'y' if client.get('mismatched') == 1 else 'ies'}"
                    if client.get("mismatched") else "errors " + ", ".join(f"{k} {v}" for k, v in failed.items()))
            raise RunFailed("checksum" if client.get("mismatched") else "exit", f"client saw {what}: {first}")
        want = scenario.expected_requests(req.params)
        if want is not None and client.get("ok") != want:
            raise RunFailed("checksum", f"client completed {client.get('ok')} requests, expected {want}")
        if client.get("ok") != client.get("requests"):
            raise RunFailed("output", "client: ok and requests differ without a mismatch")
        window = client.get("window") or {}
        t0, t1 = window.get("start_ns"), window.get("end_ns")
        if type(t0) is not int or type(t1) is not int or t1 <= t0:
            raise RunFailed("output", "corobench-load reported no measured window")
        return client, (t0, t1), ending.wall_ns / 1e9

    def _wrk(self, req: RunRequest, target: str) -> tuple[dict, tuple[int, int], float]:
        """wrk, the field's own tool: the same load, but replies are not verified by the client."""
        p = req.params
        cpus = req.options.client_cpus or split_cpus(os.sched_getaffinity(0))[1]
        base = ["wrk", f"-t{len(cpus)}", f"-c{p['connections']}", "--latency", "-s", str(WRK_SCRIPT),
                f"http://{target}/"]
        total = 0
        summaries = []
        for seconds, measured in ((p.get("warmup_s", 0), False), (p.get("duration", 0) or 10, True)):
            if not seconds:
                continue
            argv = base[:1] + [f"-d{seconds}s"] + base[1:]
            t0 = time.monotonic_ns()
            proc, ended = self._client(argv, str(LOADGEN_DIR), seconds + 60.0, cpus)
            with proc:
                if not ended:
                    proc.kill()
                    raise RunFailed("timeout", "wrk did not finish in time")
                ending = proc.ending()
                out, err = proc.stdout(), proc.stderr_tail()
            t1 = time.monotonic_ns()
            if ending.exit_code != 0:
                raise RunFailed("exit", f"wrk {self._how(ending)}: {last_stderr_line(err)}")
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            try:
                summary = parse_object(lines[-1] if lines else "")
            except BadOutput as exc:
                raise RunFailed("output", f"wrk's JSON line (loadgen/wrk/ping.lua): {exc}") from None
            errors = {k: v for k, v in (summary.get("errors") or {}).items() if v}
            if errors:
                raise RunFailed("exit", "wrk saw errors " + ", ".join(f"{k} {v}" for k, v in errors.items()))
            total += int(summary.get("requests") or 0)
            summaries.append(summary)
            if measured:
                client = {**summary, "tool": "wrk", "total_requests": total,
                          "window": {"start_ns": t0, "end_ns": t1, "seconds": (t1 - t0) / 1e9,
                                     "requests": summary.get("requests")}}
                return client, (t0, t1), ending.wall_ns / 1e9
        raise RunFailed("output", "wrk ran no measured load")

    @staticmethod
    def _check_wrk_counts(final: dict, client: dict, req: RunRequest) -> str | None:
        # wrk counts completed responses; requests in flight when it stopped were served but not
        # counted: the server may be ahead by at most one request per connection per wrk run
        got, counted = final.get("requests"), client["total_requests"]
        slack = 2 * req.params["connections"]
        if type(got) is not int or not counted <= got <= counted + slack:
            return f"server served {got!r} requests, wrk completed {counted} (at most {slack} more were in flight)"
        return None

    @staticmethod
    def _metrics(sampler: Sampler, window: tuple[int, int], client: dict, client_wall_s: float, req: RunRequest,
                 use_wrk: bool, server_cpu_count: int) -> dict:
        w = sampler.window(*window)
        win = client.get("window") or {}
        seconds = win.get("seconds") or w.seconds
        requests = win.get("requests") if win.get("requests") is not None else client.get("requests")
        lat = client.get("latency_us") or {}
        rps = requests / seconds if seconds else None
        cpus = req.options.client_cpus or {0}
        ccpu = client.get("cpu") or {}
        client_cpu = (ccpu.get("user_s") or 0) + (ccpu.get("sys_s") or 0)
        metrics = {
            "loadgen": "wrk" if use_wrk else "corobench-load", "verified_by_client": not use_wrk,
            "window_s": seconds, "requests": requests, "rps": rps,
            "cps": (win.get("connections") / seconds) if win.get("connections") is not None and seconds else None,
            "server_cpu_s": w.cpu_s, "server_cores": w.cores, "server_cpu_share": w.cores / server_cpu_count,
            "cpu_us_per_request": w.cpu_s / requests * 1e6 if requests else None,
            "rps_per_core": rps / w.cores if rps and w.cores > 0 else None,
            "vm_hwm_bytes": sampler.vm_hwm_bytes, "vm_peak_bytes": sampler.vm_peak_bytes,
            "window_rss_peak_bytes": w.rss_peak_bytes, "window_vsz_peak_bytes": w.vsz_peak_bytes,
            "ready_rss_bytes": sampler.samples[0].rss_bytes if sampler.samples else None,
            "threads_peak": w.threads_peak, "cgroup_window_peak_bytes": w.cgroup_peak_bytes,
            "client_cpu_share": client_cpu / (client_wall_s * len(cpus)) if client_wall_s and not use_wrk else None,
            "rss_series": sampler.rss_series(),
        }
        for key in ("mean", "p50", "p90", "p99", "p999", "max"):
            if lat.get(key) is not None:
                metrics[f"lat_{key}_us"] = lat[key]
        return {k: v for k, v in metrics.items() if v is not None}
