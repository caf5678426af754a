"""Design measurement: rust-tokio's `fs` and `block_in_place` blocking variants against
design/blocking-reference (the public tokio-goroutine-perf program's work: 1000 tasks x 1000
iterations, 10 bytes from /dev/urandom to /dev/null, one warm-up iteration), run interleaved
in pairs so that both see the same machine. Time per iteration from each program's own clock,
peak RSS from /usr/bin/time.

    corobench build --impl rust-tokio
    (cd design/blocking-reference && cargo build --release --locked)
    python3 design/compare-blocking.py [PAIRS]     # from impls/rust; PAIRS defaults to 5
"""

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OURS = HERE.parent / "target/release/corobench-tokio"
REFERENCE = HERE / "blocking-reference/target/release/blocking-reference"
UNIT_MS = {"ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1e3}


def measure(argv: list[str]) -> tuple[str, float]:
    """stdout and peak RSS (MiB) of one run."""
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True, check=True)
    return done.stdout, int(done.stderr.strip().splitlines()[-1]) / 1024


def ours_ms(variant: str) -> tuple[float, float]:
    out, rss = measure([str(OURS), "blocking", "--tasks", "1000", "--iterations", "1000", "--bytes", "10",
                        "--variant", variant])
    return json.loads(out)["elapsed_ns"] / 1000 / 1e6, rss


def reference_ms(variant: str) -> tuple[float, float]:
    # it prints "<total> total, <avg> avg per iteration" with Rust's Debug durations
    out, rss = measure([str(REFERENCE), variant])
    value, unit = re.fullmatch(r"([0-9.]+)(ns|µs|ms|s)", out.split(",")[1].split()[0]).groups()
    return float(value) * UNIT_MS[unit], rss


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for variant in ("fs", "block_in_place"):
        ours, reference = [], []
        for _ in range(pairs):
            ours.append(ours_ms(variant))
            reference.append(reference_ms(variant))
        o_ms, r_ms = [t for t, _ in ours], [t for t, _ in reference]
        ratio = statistics.median(o_ms) / statistics.median(r_ms)
        print(f"{variant}: rust-tokio {statistics.median(o_ms):.2f} ms/iteration ({min(o_ms):.2f}-{max(o_ms):.2f}), "
              f"reference {statistics.median(r_ms):.2f} ({min(r_ms):.2f}-{max(r_ms):.2f}): ratio {ratio:.2f}; "
              f"peak RSS {statistics.median(m for _, m in ours):.1f} vs "
              f"{statistics.median(m for _, m in reference):.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
