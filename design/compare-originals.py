"""Design measurement: our programs against the public programs the seed suites reproduce ("the
originals"), whole processes, interleaved in pairs (the order swapped every pair, so both see the
same machine), each run's own output checked. Not part of the harness: it answers "does ours do
the same work at no more cost", the question docs/implementations.md records the answers to.

    python3 design/compare-originals.py ORIGINALS CELL[,CELL...] [PAIRS]

ORIGINALS is a folder with the originals built as their READMEs say (not in this repository):
  tgp/target/release/perf       tokio-goroutine-perf on its tokio 1.21 (argv[1] picks the variant)
  tgp154/target/release/perf    the same source on our tokio 1.54 (its Cargo.lock updated)
  tgp/gobuild/goroutine         its goroutine.go (runtime.GC() after every iteration)
  tgp/gobuild-nogc/goroutine-nogc  the same without that runtime.GC() call
  art/java/VirtualThreads.class async-runtimes-benchmarks' Java virtual-threads program
  echo/rust/target/release/{serial,concurrent}   the echo comparison's Rust servers (round 1:
                                serial, no UUIDs; round 2: a thread per connection, 5 UUIDs), on
                                ports 9011 and 9012 as written

Cells (peak RSS from wait4's ru_maxrss; servers also VmPeak/VmHWM from /proc before SIGTERM):
  go-blocking, tokio-sync, tokio-fs, tokio-block_in_place   1000 tasks x 1000 iterations, 10 B
  java-virtual-100k, java-virtual-1m                        N tasks sleeping 10 s
  threads-echo-serial     50,000 connections, 1 exchange, U = 0, 100 in flight (seed-echo round 1)
  threads-echo-concurrent 50,000 connections, 1 exchange, U = 5, 100 in flight (round 2)
Servers run on CPU 0 and the load generator on CPU 1, as the harness pins them.
"""

import json
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOADGEN = ROOT / "loadgen/target/x86_64-unknown-linux-gnu/release/corobench-load"
RUST = ROOT / "impls/rust/target/release"
UNIT_MS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
MiB = 1024 * 1024


@dataclass
class Sample:
    figures: dict[str, float] = field(default_factory=dict)


def rusage_run(argv: list[str], check) -> Sample:
    """One whole process under GNU time: its peak RSS (%M) and wall from fork to reap (%e). Not
    wait4 from here: ru_maxrss survives exec, so a child forked from this Python starts at its
    ~16 MiB."""
    proc = subprocess.run(["/usr/bin/time", "-f", "corobench-time %M %e", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{argv[0]} exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    rss_kb, wall = proc.stderr.strip().splitlines()[-1].split()[1:]
    return Sample({"wall_s": float(wall), "peak_rss_mib": int(rss_kb) / 1024, **check(proc.stdout)})


def ours_blocking(out: str) -> dict[str, float]:
    line = json.loads(out.strip().splitlines()[-1])
    assert line["checksum"] == 1000 * 1000 * 10, line  # every task wrote its 10 bytes, every iteration
    return {"ms_per_iteration": line["elapsed_ns"] / 1e6 / 1000}


def tgp_blocking(out: str) -> dict[str, float]:
    # "<total> total, <avg> avg per iteration" with Rust's Debug durations
    value, unit = re.fullmatch(r"([0-9.]+)(ns|µs|ms|s)", out.split(",")[1].split()[0]).groups()
    return {"ms_per_iteration": float(value) * UNIT_MS[unit]}


def go_blocking(out: str) -> dict[str, float]:
    # Go's Duration.String(): "25.1s total, 25.1ms avg per iteration"
    value, unit = re.fullmatch(r"([0-9.]+)(ns|µs|us|ms|s)", out.split(",")[1].split()[0]).groups()
    return {"ms_per_iteration": float(value) * UNIT_MS[unit]}


def ours_tasks(n: int):
    def check(out: str) -> dict[str, float]:
        line = json.loads(out.strip().splitlines()[-1])
        assert line["checksum"] == n, line  # every task woke
        return {}
    return check


def said(text: str):
    def check(out: str) -> dict[str, float]:
        assert text in out, out[:200]
        return {}
    return check


def java() -> str:
    return str(ROOT / "impls/java/target/jdk/bin/java")


def wait_port(port: int, deadline_s: float = 10) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.01)
    sys.exit(f"nothing listens on 127.0.0.1:{port}")


def proc_status(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmPeak", "VmHWM", "Threads"):
            fields[key] = int(value.split()[0])
    return {"vm_peak_mib": fields["VmPeak"] / 1024, "vm_hwm_mib": fields["VmHWM"] / 1024}


def run_server(argv: list[str], fixed_port: int | None, load: list[str], connections: int) -> Sample:
    """Start the server on CPU 0, load it from CPU 1 with corobench-load (every reply checked), read
    its peak figures, stop it."""
    proc = subprocess.Popen(["taskset", "-c", "0", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if fixed_port is None:
        port = json.loads(proc.stdout.readline())["port"]
    else:
        port = fixed_port
        wait_port(port)
    done = subprocess.run(["taskset", "-c", "1", str(LOADGEN), *load, "--target", f"127.0.0.1:{port}",
                           "--threads", "1"], capture_output=True, text=True)
    status = proc_status(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if done.returncode != 0:
        sys.exit(f"load against {argv[0]} failed ({done.returncode}): {done.stderr.strip()[:300]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # every connection got its one reply, each checked by the load generator
    assert result["connections"] == result["ok"] == connections and result["mismatched"] == 0, result
    assert not any(result["errors"].values()), result
    return Sample({"connections_per_s": result["window"]["connections"] / result["window"]["seconds"], **status})


def cells(originals: Path) -> dict[str, tuple]:
    """name: (ours, original) as zero-argument callables returning a Sample."""
    tgp, tgp154 = originals / "tgp/target/release/perf", originals / "tgp154/target/release/perf"
    blocking = ["blocking", "--tasks", "1000", "--iterations", "1000", "--bytes", "10"]
    out = {
        "go-blocking": (
            lambda: rusage_run([str(ROOT / "impls/go/bin/corobench-go"), *blocking, "--threads", "2"], ours_blocking),
            lambda: rusage_run([str(originals / "tgp/gobuild/goroutine")], go_blocking),
            lambda: rusage_run([str(originals / "tgp/gobuild-nogc/goroutine-nogc")], go_blocking),
        ),
    }
    for variant in ("sync", "fs", "block_in_place"):
        out[f"tokio-{variant}"] = (
            lambda v=variant: rusage_run([str(RUST / "corobench-tokio"), *blocking, "--variant", v, "--threads", "2"],
                                         ours_blocking),
            lambda v=variant: rusage_run([str(tgp154), v], tgp_blocking),
            lambda v=variant: rusage_run([str(tgp), v], tgp_blocking),
        )
    jflags = ["-Xlog:disable", "-Xlog:all=warning:stderr", "-Xlog:os+thread=off:stderr"]
    jar = ROOT / "impls/java/virtual/target/corobench-java-virtual.jar"
    for label, n in (("100k", 100_000), ("1m", 1_000_000)):
        out[f"java-virtual-{label}"] = (
            lambda n=n: rusage_run([java(), *jflags, "-jar", str(jar), "tasks", "--tasks", str(n), "--sleep-ms", "10000"],
                                   ours_tasks(n)),
            lambda n=n: rusage_run([java(), "-cp", str(originals / "art/java"), "VirtualThreads", str(n)],
                                   said("All fibers complete")),
        )
    echo = [str(RUST / "corobench-threads-echo"), "echo", "--host", "127.0.0.1", "--port", "0", "--size", "17",
            "--per-connection", "1"]
    k = 50_000  # as suites/seed-echo.toml: 50,000 connections, 100 in flight, 17 B
    serial_load = ["echo", "--connections", str(k), "--concurrency", "100", "--per-connection", "1", "--size", "17",
                   "--uuids", "0"]
    concurrent_load = ["echo", "--connections", str(k), "--concurrency", "100", "--per-connection", "1", "--size", "17",
                       "--uuids", "5"]
    rust_echo = originals / "echo/rust/target/release"
    out["threads-echo-serial"] = (
        lambda: run_server([*echo, "--uuids", "0", "--variant", "serial"], None, serial_load, k),
        lambda: run_server([str(rust_echo / "serial")], 9011, serial_load, k),
    )
    out["threads-echo-concurrent"] = (
        lambda: run_server([*echo, "--uuids", "5", "--variant", "concurrent"], None, concurrent_load, k),
        lambda: run_server([str(rust_echo / "concurrent")], 9012, concurrent_load, k),
    )
    return out


def summary(samples: list[Sample]) -> dict[str, tuple[float, float, float]]:
    keys = samples[0].figures.keys()
    return {key: (statistics.median(s.figures[key] for s in samples), min(s.figures[key] for s in samples),
                  max(s.figures[key] for s in samples)) for key in keys}


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    originals, wanted = Path(sys.argv[1]), sys.argv[2].split(",")
    pairs = int(sys.argv[3]) if len(sys.argv) == 4 else 3
    known = cells(originals)
    for name in wanted:
        if name not in known:
            sys.exit(f"unknown cell {name!r}; known: {', '.join(known)}")
    for name in wanted:
        programs = known[name]
        samples: list[list[Sample]] = [[] for _ in programs]
        for pair in range(pairs):
            order = list(range(len(programs)))
            if pair % 2:
                order.reverse()
            for i in order:
                samples[i].append(programs[i]())
        labels = ["ours", "original", "original (variant)"]
        base = summary(samples[0])
        for label, group in zip(labels, samples):
            figures = summary(group)
            # ours / this one: below 1 means ours takes less (time, memory) or, for rates, serves fewer
            text = ", ".join(f"{k} {m:.2f} ({lo:.2f}-{hi:.2f})" + (f" [ours/this {base[k][0] / m:.2f}]" if label != "ours" else "")
                             for k, (m, lo, hi) in figures.items())
            print(f"{name} {label}: {text}", flush=True)


if __name__ == "__main__":
    main()
