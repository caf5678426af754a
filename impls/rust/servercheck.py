"""Checks of the Rust servers beyond tests/serverprobe.py: bad input (exit 2,
one stderr line, nothing on stdout), a busy port (exit 3), a partial echo
request, a connection still open at SIGTERM (open_at_stop, exit within 5 s),
and `--threads` where the manifest says "none".

    python3 impls/rust/servercheck.py BINARY SCENARIO [--variant V] [--no-threads]

Exit 0 when every check passed; each failure is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

BAD = [
    ["--host", "10.0.0.1"],
    ["--host", "localhost"],
    ["--host", "0.0.0.0"],  # refused: not a loopback address
    ["--port", "70000"],
    ["--port", "-1"],
    ["--threads", "0"],
    ["--nope", "1"],
    ["--port", "1", "--port", "2"],
    ["--variant", "nope"],
    ["--host"],
    ["--allow-remote=1"],
]
ECHO_BAD = [["--size", "0"], ["--size", "1048577"], ["--uuids", "-1"], ["--uuids", "1001"]]


def run_bad(binary: str, scenario: str, args: list[str]) -> str | None:
    p = subprocess.run([binary, scenario, *args], capture_output=True, timeout=20)
    err = p.stderr.decode(errors="replace")
    if p.returncode != 2 or p.stdout or err.count("\n") != 1:
        return f"{args}: exit {p.returncode}, stdout {p.stdout[:80]!r}, stderr {err[:200]!r}"
    return None


def start(binary: str, scenario: str, extra: list[str]) -> tuple[subprocess.Popen, dict]:
    p = subprocess.Popen([binary, scenario, "--port", "0", *extra], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    line = p.stdout.readline()
    if not line:
        p.kill()
        raise RuntimeError(f"no ready line: {p.stderr.read()[:300]!r}")
    return p, json.loads(line)


def stop(p: subprocess.Popen) -> tuple[dict, float]:
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=6)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise RuntimeError("did not exit within 6 s of SIGTERM") from None
    took = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode} after SIGTERM: {err[:300]!r}")
    return json.loads(out), took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("scenario", choices=["echo", "http"])
    ap.add_argument("--variant")
    ap.add_argument("--no-threads", action="store_true", help="the manifest says threads = none")
    ap.add_argument("--closes-idle", action="store_true",
                    help="the server closes idle connections at stop (actix-web's graceful stop)")
    a = ap.parse_args()
    extra = ["--variant", a.variant] if a.variant else []
    if a.no_threads:
        global BAD
        BAD = [b for b in BAD if b[0] != "--threads"] + [["--threads", "2"]]
    fails: list[str] = []
    for args in BAD + (ECHO_BAD if a.scenario == "echo" else [["--size", "17"]]):
        if r := run_bad(a.binary, a.scenario, args):
            fails.append("bad input accepted or misreported: " + r)

    # --allow-remote with a non-loopback literal passes the parser; binding
    # 192.0.2.1 (TEST-NET, not on this machine) then fails: exit 3, not 2.
    p = subprocess.run([a.binary, a.scenario, "--host", "192.0.2.1", "--allow-remote", *extra],
                       capture_output=True, timeout=20)
    if p.returncode != 3 or p.stdout or p.stderr.count(b"\n") != 1:
        fails.append(f"--allow-remote 192.0.2.1: exit {p.returncode}, stderr {p.stderr[:200]!r}")

    # a busy port: exit 3 with one line
    holder, ready = start(a.binary, a.scenario, extra)
    try:
        p = subprocess.run([a.binary, a.scenario, "--port", str(ready["port"]), *extra],
                           capture_output=True, timeout=20)
        if p.returncode != 3 or p.stdout or p.stderr.count(b"\n") != 1:
            fails.append(f"busy port: exit {p.returncode}, stdout {p.stdout[:80]!r}, stderr {p.stderr[:200]!r}")
        else:
            print("busy port:", p.stderr.decode().strip())
        # a request cut short (echo), then a connection that stays open at
        # SIGTERM (in this order, for the serial server's sake)
        if a.scenario == "echo":
            partial = socket.create_connection(("127.0.0.1", ready["port"]))
            partial.sendall(b"abc")
            time.sleep(0.1)
            partial.close()
        idle = socket.create_connection(("127.0.0.1", ready["port"]))
        time.sleep(0.2)
        final, took = stop(holder)
        idle.close()
        if a.closes_idle:
            if final.get("open_at_stop", 0) != 0 or took > 2.5:
                fails.append(f"idle connection at stop: {final}, exit after {took:.2f} s")
        elif final.get("open_at_stop", 1) != 1 or not 1.5 < took < 5:
            fails.append(f"open connection at stop: {final}, exit after {took:.2f} s")
        if a.scenario == "echo" and (final["partial"] != 1 or final["bytes_in"] != 3 or final["connections"] != 2):
            fails.append(f"partial request: {final}")
        print(f"stop with one connection open: {took:.2f} s, {json.dumps(final)}")
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)

    # an idle server stops at once
    p, _ = start(a.binary, a.scenario, extra)
    final, took = stop(p)
    if took > 2:  # nothing to wait for (generous: the machine is shared)
        fails.append(f"idle stop took {took:.2f} s")
    for f in fails:
        print("FAIL:", f)
    print(f"{a.binary} {a.scenario} {a.variant or ''}: {'ok' if not fails else f'{len(fails)} failed'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
