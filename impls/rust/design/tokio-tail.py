"""Design measurement: where rust-tokio's http p99 tail comes from (../README.md, "tokio's tail").

The http server of rust-tokio built with the diagnostic feature (its runtime shape from
COROBENCH_TOKIO_RUNTIME, the scheduler's counters on stderr at stop), on CPU 0 with one worker,
loaded from CPU 1 by corobench-load (closed loop, keep-alive, every reply checked), each shape at
each connection count, the shapes interleaved within a repetition.

    RUSTFLAGS="--cfg tokio_unstable" cargo build --release --locked -p corobench-tokio \\
        --features tailbench --target-dir /tmp/tailbench-target      # from impls/rust
    python3 design/tokio-tail.py /tmp/tailbench-target/release/corobench-tokio-http \\
        multi,current,nolifo 80,200,300,2020 [REPS] [SECONDS]
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LOADGEN = ROOT / "loadgen/target/x86_64-unknown-linux-gnu/release/corobench-load"


def one(server: str, shape: str, connections: int, seconds: float) -> dict:
    env = {"COROBENCH_TOKIO_RUNTIME": shape, "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(["taskset", "-c", "0", server, "http", "--host", "127.0.0.1", "--port", "0",
                             "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    port = json.loads(proc.stdout.readline())["port"]
    load = subprocess.run(["taskset", "-c", "1", str(LOADGEN), "http", "--target", f"127.0.0.1:{port}",
                           "--connections", str(connections), "--duration", str(seconds), "--warmup-s", "2",
                           "--threads", "1"], capture_output=True, text=True, timeout=seconds + 60)
    proc.terminate()
    out, err = proc.communicate(timeout=10)
    summary = json.loads(load.stdout.strip().splitlines()[-1])
    final = json.loads(out.strip().splitlines()[-1])
    assert final["requests"] == summary["requests"] and summary["mismatched"] == 0, (final, summary)
    assert not any(summary["errors"].values()), summary
    counters = next(json.loads(line) for line in err.splitlines() if line.startswith('{"tailbench"'))
    lat = summary["latency_us"]
    return {"rps": summary["window"]["ok"] / summary["window"]["seconds"], "p50_ms": lat["p50"] / 1e3,
            "p99_ms": lat["p99"] / 1e3, "p999_ms": lat["p999"] / 1e3, "max_ms": lat["max"] / 1e3,
            "overflows_per_s": counters["overflows"] / (seconds + 2),
            "io_ready_per_s": counters["io_ready"] / (seconds + 2)}


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    server, shapes, counts = sys.argv[1], sys.argv[2].split(","), [int(c) for c in sys.argv[3].split(",")]
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 5.0
    results: dict[tuple[str, int], list[dict]] = {}
    for rep in range(reps):
        for c in counts:
            for shape in (shapes if rep % 2 == 0 else shapes[::-1]):
                results.setdefault((shape, c), []).append(one(server, shape, c, seconds))
    print("| runtime | connections | requests/s | p50 | p99 | p99.9 | max | local-queue overflows/s |")
    print("|---|---|---|---|---|---|---|---|")
    for c in counts:
        for shape in shapes:
            runs = results[(shape, c)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            p99s = "–".join(f"{r['p99_ms']:.1f}" for r in sorted(runs, key=lambda r: r["p99_ms"]))
            print(f"| {shape} | {c} | {med['rps'] / 1e3:.1f}k | {med['p50_ms']:.2f} ms | {med['p99_ms']:.1f} ms "
                  f"({p99s}) | {med['p999_ms']:.1f} ms | {med['max_ms']:.1f} ms | {med['overflows_per_s']:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
