"""Results of years, made up: sessions of realistic rows for every scenario, written straight into a
results database, and the measurement of `report`, `compare`, `export`, `import` and `site` over them.

    python tests/scale.py measure --sizes 10,30,100 --work /tmp/corobench-scale
        (100 sessions x 1,000 runs = 100,000 runs at the largest size; figures in docs/bundles.md)

`generate` is also the fixture of tests/test_scale.py (a smaller size, in CI) and of the round trip
of every field in tests/test_bundle.py. Each session has 200 cells of 5 runs: chain, tasks,
blocking, echo and http at the quick suite's kinds of sizes, on two machines (the second with a
client host for its servers), toolchains that change half-way through the history, a program that
FAILED with a reason and stderr, and server runs with every metric the server kind stores, an RSS
series and a base64 HDR histogram in the client's result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corobench.store import RunRow, SessionRecord, Store, add_imported_session  # noqa: E402

RUNS_PER_CELL = 5
START = 1_735_700_000  # 2025-01-01, one session a day from there

MACHINE_A = {"hostname": "bench-a", "cpu_model": "AMD EPYC 7B13", "cores": 2, "cores_usable": 2,
             "memory_bytes": 25_276_514_304, "kernel": "6.1.0-18-amd64", "os": "Debian GNU/Linux 12 (bookworm)",
             "python": "3.11.2", "governor": None, "loadavg": [0.3, 0.2, 0.1], "arch": "x86_64",
             "limits": {"open_files": 1048576, "open_files_hard": 1048576, "max_user_processes": 95000}}
MACHINE_B = {**MACHINE_A, "hostname": "bench-b", "cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
             "cores": 8, "cores_usable": 8, "memory_bytes": 33_280_000_000, "kernel": "6.8.0-45-generic",
             "os": "Ubuntu 24.04 LTS"}
CLIENT_HOST = {"hostname": "client1", "cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "cores": 8,
               "memory_bytes": 33_280_000_000, "kernel": "6.8.0-45-generic", "arch": "x86_64"}

CHAIN = ("go", "rust-tokio", "rust-async-std", "kotlin-coroutines", "java-virtual", "node")
BLOCKING = ("rust-tokio:fs", "rust-tokio:spawn_blocking", "rust-tokio:block_in_place", "go", "java-virtual",
            "kotlin-coroutines", "python-asyncio", "node")
SERVERS = ("go:concurrent", "rust-tokio", "rust-monoio", "rust-glommio", "rust-threads:concurrent", "java-threads",
           "cpp-asio", "node")
TOOLCHAINS = {"go": ("go version go1.22.5 linux/amd64", "go version go1.23.2 linux/amd64"),
              "rust-tokio": ("rustc 1.79.0", "rustc 1.82.0"), "rust-async-std": ("rustc 1.79.0", "rustc 1.82.0"),
              "rust-monoio": ("rustc 1.79.0", "rustc 1.82.0"), "rust-glommio": ("rustc 1.79.0", "rustc 1.82.0"),
              "rust-threads": ("rustc 1.79.0", "rustc 1.82.0"), "kotlin-coroutines": ("kotlinc 2.0.20",),
              "java-virtual": ("openjdk 25",), "java-threads": ("openjdk 25",), "node": ("v20.17.0", "v22.9.0"),
              "python-asyncio": ("Python 3.11.2",), "cpp-asio": ("g++ (Debian 12.2.0-14) 12.2.0",)}


@dataclass(frozen=True)
class CellPlan:
    scenario: str
    program: str
    params: dict
    threads: int | None
    speed: float  # the program's relative speed, 1.0 = typical


def _speed(program: str) -> float:
    return 0.6 + (sum(map(ord, program)) % 17) / 10


def cells() -> list[CellPlan]:
    """200 cells, interleaved across scenarios so that any prefix covers every scenario."""
    per: dict[str, list[CellPlan]] = {s: [] for s in ("chain", "tasks", "blocking", "echo", "http")}
    for p in CHAIN:
        for w in (100, 1000):
            for etype in ("int", "str", "str_ptr", "str_clone"):
                per["chain"].append(CellPlan("chain", p, {"workers": w, "events": 10000, "queue": 256, "etype": etype,
                                                          "esize": 10}, None, _speed(p)))
        for n in (1000, 10000, 100000, 1000000):
            per["tasks"].append(CellPlan("tasks", p, {"tasks": n, "sleep_ms": 1000}, None, _speed(p)))
    for p in BLOCKING:
        for n in (100, 1000, 10000):
            per["blocking"].append(CellPlan("blocking", p, {"tasks": n, "iterations": 100, "bytes": 10}, None, _speed(p)))
    for p in SERVERS:
        for conns, conc, per_conn, size, uuids in ((50000, 100, 1, 17, 5), (64, 64, 20000, 1024, 0),
                                                   (256, 256, 5000, 1024, 0), (1000, 1000, 1000, 1024, 0)):
            per["echo"].append(CellPlan("echo", p, {"connections": conns, "concurrency": conc,
                                                    "per_connection": per_conn, "size": size, "uuids": uuids,
                                                    "rate": 0, "duration": 0}, None, _speed(p)))
        for conns in (80, 420, 2020):
            for threads in (1, 2, 4):
                per["http"].append(CellPlan("http", p, {"connections": conns, "duration": 10, "warmup_s": 2,
                                                        "requests": 0, "rate": 0}, threads, _speed(p)))
    out = []
    queues = list(per.values())
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def _histograms(rng: random.Random) -> list[str]:
    """A few real HDR histograms (latencies in ns), reused: encoding one per run would dominate."""
    from hdrh.histogram import HdrHistogram

    out = []
    for k in range(8):
        h = HdrHistogram(1, 60_000_000_000, 3)
        for _ in range(20000):
            h.record_value(int(rng.lognormvariate(13 + k / 4, 0.6)))
        out.append(h.encode().decode())
    return out


class Maker:
    """Rows and sessions, reproducible from a seed."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.histograms = _histograms(self.rng)

    def noise(self) -> float:
        return self.rng.lognormvariate(0, 0.05)

    def run(self, plan: CellPlan, rep: int, factor: float, failed: bool, started: str) -> RunRow:
        impl, _, variant = plan.program.partition(":")
        argv = ["./target/release/" + impl, plan.scenario, *[f"--{k.replace('_', '-')}={v}" for k, v in plan.params.items()]]
        row = RunRow(program=plan.program, impl_id=impl, variant=variant or None, scenario=plan.scenario,
                     params=dict(plan.params), threads=plan.threads, cpus="0" if plan.scenario in ("echo", "http") else None,
                     rep=rep, status="ok", argv=argv, cwd=f"/work/impls/{impl}", started_at=started)
        if failed:
            row.status, row.failure_kind = "failed", "exit"
            row.reason = "exited with signal 9 (SIGKILL): killed by the kernel's OOM killer"
            row.exit_code, row.term_signal = None, 9
            row.stderr_tail = "\n".join(f"worker {i}: allocating arena <{i}> \x1b[31mwarn\x1b[0m" for i in range(40))
            return row
        k = plan.speed * factor * self.noise()
        row.exit_code = 0
        row.user_s, row.sys_s = 0.4 / k, 0.05 / k
        row.loadavg, row.other_cpu_fraction = 0.4, 0.01
        if plan.scenario in ("chain", "tasks", "blocking"):
            size = plan.params.get("workers", plan.params.get("tasks", 1))
            row.elapsed_ns = int(size * 2e4 / k) + 5_000_000
            row.wall_ns = row.elapsed_ns + 30_000_000
            row.max_rss_kb = int(2000 + size * 0.8 / k)
            row.cgroup_peak_bytes = row.max_rss_kb * 900
            row.result = {"scenario": plan.scenario, **plan.params, "checksum": 1, "elapsed_ns": row.elapsed_ns}
            if plan.scenario == "tasks":
                row.metrics = {"spawn_ns": int(size * 300 / k)}
                row.result["spawn_ns"] = row.metrics["spawn_ns"]
            return row
        return self._server(row, plan, k)

    def _server(self, row: RunRow, plan: CellPlan, k: float) -> RunRow:
        conns = plan.params.get("connections") or 80
        rps = 120_000 * k / (1 + conns / 5000)
        window = 10.0
        row.elapsed_ns = int(window * 1e9)
        row.wall_ns = row.elapsed_ns + 3_000_000_000
        row.max_rss_kb = int(8000 + conns * 12 / k)
        row.cgroup_peak_bytes = row.max_rss_kb * 1100
        row.reported_threads = plan.threads or 1
        lat = {"mean": conns / rps * 1e6, "p50": conns / rps * 0.9e6, "p90": conns / rps * 1.4e6,
               "p99": conns / rps * 2.5e6, "p999": conns / rps * 5e6, "max": conns / rps * 12e6}
        rss_series = [[round(i * 0.1, 3), round(8 + i * 0.05 / k, 2)] for i in range(120)]
        row.metrics = {
            "loadgen": "corobench-load", "verified_by_client": True, "window_s": window,
            "requests": int(rps * window), "rps": rps, "server_cpu_s": 9.8, "server_cores": 0.98,
            "server_cpu_share": 0.98, "cpu_us_per_request": 0.98e6 / rps, "rps_per_core": rps / 0.98,
            "vm_hwm_bytes": row.max_rss_kb * 1024, "vm_peak_bytes": row.max_rss_kb * 1024 * 40,
            "window_rss_peak_bytes": row.max_rss_kb * 1000, "window_vsz_peak_bytes": row.max_rss_kb * 40000,
            "ready_rss_bytes": 4_000_000, "threads_peak": (plan.threads or 1) + 2, "cgroup_window_peak_bytes": 9e6,
            "client_cpu_share": 0.7, "server_other_share": 0.01, "client_other_share": 0.02, "agents": 1,
            "clock_error_ns": 0, "rss_series": rss_series,
            **{f"lat_{key}_us": value for key, value in lat.items()},
        }
        row.result = {
            "ready": {"ready": True, "port": 40000 + row.rep, "threads": plan.threads or 1},
            "client": {"tool": "corobench-load", "requests": int(rps * 12), "ok": int(rps * 12),
                       "connections": conns, "latency_us": lat, "histogram": self.rng.choice(self.histograms),
                       "window": {"start_ns": 1, "end_ns": row.elapsed_ns + 1, "requests": int(rps * window)},
                       "cpu": {"user_s": 4.1, "sys_s": 2.9}, "errors": {}, "mismatched": 0},
            "final": {"requests": int(rps * 12), "connections": conns},
        }
        return row


def session_record(index: int, total: int) -> SessionRecord:
    """Session `index` of `total`: every third on machine B (whose servers load from a client host),
    the later half of the history on the newer toolchains."""
    on_b = index % 3 == 2
    newer = index >= total // 2
    toolchains = {impl: versions[-1] if newer else versions[0] for impl, versions in TOOLCHAINS.items()}
    started = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(START + index * 86400))
    finished = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(START + index * 86400 + 3000))
    machine = dict(MACHINE_B if on_b else MACHINE_A)
    if on_b:
        machine["hosts"] = {"client1": CLIENT_HOST}
        topology = {"server": {"host": "local", "cpus": [0, 1, 2, 3], "bind": "10.0.0.1"},
                    "clients": [{"host": "client1", "kind": "ssh", "cpus": [0, 1, 2, 3, 4, 5, 6, 7]}]}
    else:
        topology = {"server": {"host": "local", "cpus": [0], "bind": "127.0.0.1"},
                    "clients": [{"host": "local", "kind": "local", "cpus": [1]}]}
    settings = {"reps": RUNS_PER_CELL, "timeout_s": None, "threads": None, "warmup": None, "cpus": None,
                "suite": "quick", "runtime_info": {}, "server_cpus": topology["server"]["cpus"],
                "client_cpus": [1] if not on_b else [], "loadgen": "corobench-load", "topology": topology}
    return SessionRecord(id=0, started_at=started, finished_at=finished, status="finished",
                         command="corobench run --suite suites/quick.toml", git_commit=f"{index:040x}",
                         machine=machine, toolchains=toolchains, settings=settings, uid=f"scale{index:06d}")


def generate(db: Path, sessions: int, runs_per_session: int = 1000, seed: int = 1) -> int:
    """Write `sessions` sessions of `runs_per_session` runs (a multiple of 5, at most 1,000) into
    the database at `db`; the number of runs written."""
    plans = cells()[:runs_per_session // RUNS_PER_CELL]
    maker = Maker(seed)
    written = 0
    with Store(db, for_writing=True) as store:
        for index in range(sessions):
            record = session_record(index, sessions)
            newer = index >= sessions // 2
            runs = []
            for rep in range(1, RUNS_PER_CELL + 1):  # interleaved, as the harness runs them
                for plan in plans:
                    failed = plan.program == "node" and plan.params.get("tasks") == 1000000
                    factor = (1.15 if newer and plan.program.startswith("rust-tokio") else 1.0) * (
                        2.5 if record.machine["cores"] == 8 else 1.0)
                    runs.append(maker.run(plan, rep, factor, failed, record.started_at))
            add_imported_session(store, record, runs)
            written += len(runs)
    return written


# --------------------------------------------------------------------------- measurement

def measured(argv: list[str], env: dict) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, exit code) of one command (with `env` added to ours): its own
    rusage, from wait4."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: nothing reads it while we wait
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            print(f"  {' '.join(argv[-4:])}: exit {code}: {err.read().decode(errors='replace').strip()[-300:]}",
                  file=sys.stderr)
    return seconds, usage.ru_maxrss / 1024, code


def commands(results: Path, work: Path) -> dict[str, list[str]]:
    """Each command over the generated results; `latest~3` ran on the latest session's machine
    (every third session is machine B's), so the two may be compared without --across-machines."""
    cli = [sys.executable, "-m", "corobench", "--results", str(results)]
    return {
        "report": [*cli, "report", "latest", "--baseline", "latest~3", "--out", str(work / "report")],
        "compare": [*cli, "compare", "latest~3", "latest"],
        "export": [*cli, "export", "--out", str(work / "all.jsonl.gz")],
        "import": [sys.executable, "-m", "corobench", "--results", str(work / "imported"), "import",
                   str(work / "all.jsonl.gz")],
        "site": [*cli, "site", "--out", str(work / "site")],
    }


def measure(sizes: list[int], work: Path, runs_per_session: int) -> list[dict]:
    import shutil

    env: dict[str, str] = {}
    # the CLI with export, import and site registered even where cli.py does not name them yet
    launcher = work / "run_corobench.py"
    figures = []
    for size in sizes:
        folder = work / f"{size}-sessions"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        results = folder / "results"
        t0 = time.monotonic()
        runs = generate(results / "corobench.sqlite", size, runs_per_session)
        made = time.monotonic() - t0
        db_mib = (results / "corobench.sqlite").stat().st_size / 2**20
        print(f"{size} sessions, {runs} runs: generated in {made:.1f} s, database {db_mib:.0f} MiB", flush=True)
        row = {"sessions": size, "runs": runs, "db_mib": round(db_mib, 1)}
        for name, argv in commands(results, folder).items():
            argv = [sys.executable, str(launcher), *argv[3:]]
            seconds, rss, code = measured(argv, env)
            row[name] = (round(seconds, 2), round(rss), code)
            print(f"  {name:8} {seconds:7.2f} s  peak RSS {rss:6.0f} MiB  exit {code}", flush=True)
        bundle = folder / "all.jsonl.gz"
        row["bundle_mib"] = round(bundle.stat().st_size / 2**20, 1) if bundle.exists() else None
        site = folder / "site"
        row["site_mib"] = round(sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 2**20, 1)
        row["largest_data_js_mib"] = round(max(p.stat().st_size for p in (site / "data").glob("*.js")) / 2**20, 2)
        figures.append(row)
        print(json.dumps(row), flush=True)
    return figures


LAUNCHER = """import sys
from corobench.cli import cli
from corobench.cli_results import COMMANDS
for command in COMMANDS:
    if command.name not in cli.commands:
        cli.add_command(command)
from corobench.cli import main
sys.argv[0] = "corobench"
main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    gen = sub.add_parser("generate", help="write synthetic sessions into a results folder")
    gen.add_argument("results", type=Path)
    gen.add_argument("--sessions", type=int, default=100)
    gen.add_argument("--runs", type=int, default=1000, help="runs per session (a multiple of 5, at most 1000)")
    meas = sub.add_parser("measure", help="time report, compare, export, import and site at several sizes")
    meas.add_argument("--sizes", default="10,30,100", help="sessions at each size, comma-separated")
    meas.add_argument("--runs", type=int, default=1000)
    meas.add_argument("--work", type=Path, default=Path("/tmp/corobench-scale"))
    args = parser.parse_args()
    if args.what == "generate":
        n = generate(args.results / "corobench.sqlite", args.sessions, args.runs)
        print(f"{args.sessions} sessions, {n} runs in {args.results}")
        return
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "run_corobench.py").write_text(LAUNCHER)
    figures = measure([int(s) for s in args.sizes.split(",")], args.work, args.runs)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
