"""A small reference client for the server protocol (docs/protocol.md, "Servers").

It starts one server program, waits for its ready line, talks to it over loopback with plain
sockets, stops it with SIGTERM and checks the final line against what it did. It checks the
protocol's details (ready line, reply bytes, UUIDs, 404/400, stop and counts) at tiny sizes;
load and latency are corobench-load's job. Used by the server conformance tests and by hand:

    python3 tests/serverprobe.py --impl go echo --connections 20 --per-connection 3
    python3 tests/serverprobe.py --impl rust-tokio:hyper http --requests 50 --connections 4

Exit 0 when the server conforms, 1 with the reasons when it does not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

UUID_V4 = re.compile(rb"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
IO_TIMEOUT_S = 10.0


class ProbeError(Exception):
    """The server broke the protocol: the message says how."""


@dataclass
class Server:
    proc: subprocess.Popen
    ready: dict
    stderr_path: Path

    @property
    def address(self) -> tuple[str, int]:
        return self.ready["host"], self.ready["port"]

    def stderr_tail(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-1500:]
        except OSError:
            return ""


def read_line(proc: subprocess.Popen, timeout_s: float) -> str | None:
    """One line of the server's stdout within the timeout; None on timeout or EOF."""
    deadline = time.monotonic() + timeout_s
    buf = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 1)
        if not chunk:
            return buf.decode(errors="replace") if buf else None
        if chunk == b"\n":
            return buf.decode(errors="replace")
        buf += chunk
    return None


def start(argv: list[str], scenario: str, args: list[str], cwd: str | None, env: dict | None,
          stderr_path: Path) -> Server:
    full = argv + [scenario, "--host", "127.0.0.1", "--port", "0", *args]
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
    line = read_line(proc, READY_TIMEOUT_S)
    if line is None:
        stop_hard(proc)
        tail = stderr_path.read_text(errors="replace")[-800:]
        raise ProbeError(f"no ready line within {READY_TIMEOUT_S:g} s (exit {proc.returncode}); stderr: {tail}")
    try:
        ready = json.loads(line)
    except ValueError:
        stop_hard(proc)
        raise ProbeError(f"ready line is not JSON: {line[:200]!r}") from None
    if not isinstance(ready, dict) or ready.get("ready") is not True or ready.get("scenario") != scenario:
        stop_hard(proc)
        raise ProbeError(f"ready line lacks ready=true/scenario={scenario}: {line[:200]}")
    port = ready.get("port")
    if type(port) is not int or not 0 < port < 65536:
        stop_hard(proc)
        raise ProbeError(f"ready line has no bound port: {line[:200]}")
    if type(ready.get("threads")) is not int or ready["threads"] < 1:
        stop_hard(proc)
        raise ProbeError(f"ready line has no threads >= 1: {line[:200]}")
    ready.setdefault("host", "127.0.0.1")
    return Server(proc, ready, stderr_path)


def stop_hard(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def stop(server: Server) -> dict:
    """SIGTERM, then the final line within the protocol's 5 s, exit 0."""
    proc = server.proc
    proc.send_signal(signal.SIGTERM)
    line = read_line(proc, STOP_TIMEOUT_S)
    try:
        proc.wait(timeout=max(0.5, STOP_TIMEOUT_S))
    except subprocess.TimeoutExpired:
        stop_hard(proc)
        raise ProbeError(f"did not exit within {STOP_TIMEOUT_S:g} s of SIGTERM") from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind
        except OSError:
            pass
    if proc.returncode != 0:
        raise ProbeError(f"exit {proc.returncode} after SIGTERM; stderr: {server.stderr_tail()}")
    if line is None:
        raise ProbeError("no final line after SIGTERM")
    rest = proc.stdout.read().decode(errors="replace").strip()
    if rest:
        raise ProbeError(f"more than one line after the ready line: {rest[:200]!r}")
    try:
        final = json.loads(line)
    except ValueError:
        raise ProbeError(f"final line is not JSON: {line[:200]!r}") from None
    if not isinstance(final, dict):
        raise ProbeError("final line is not a JSON object")
    return final


def connect(address: tuple[str, int]) -> socket.socket:
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(IO_TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.connect(address)
    return sock


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProbeError(f"connection closed after {len(buf)} of {n} reply bytes")
        buf += chunk
    return bytes(buf)


# --------------------------------------------------------------------------- echo

def echo_request(seq: int, size: int) -> bytes:
    head = f"{seq:x}:".encode()
    pattern = b"abcdefg0123456789"
    body = (head + pattern * (size // len(pattern) + 2))[:size]
    return body


def check_echo_reply(request: bytes, reply: bytes, uuids: int) -> None:
    if reply[: len(request)] != request:
        raise ProbeError(f"echoed bytes differ: sent {request[:40]!r}, got {reply[:40]!r}")
    rest = reply[len(request):]
    parts = rest.split(b"\n")
    if parts[0] != b"" or len(parts) != uuids + 1:
        raise ProbeError(f"expected {uuids} newline-prefixed UUIDs after the echo, got {rest[:120]!r}")
    seen = set()
    for u in parts[1:]:
        if not UUID_V4.match(u):
            raise ProbeError(f"not a lowercase UUID v4: {u!r}")
        if u in seen:
            raise ProbeError(f"UUID repeated within one reply: {u!r}")
        seen.add(u)


@dataclass
class Tally:
    connections: int = 0
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, connections: int, requests: int) -> None:
        with self.lock:
            self.connections += connections
            self.requests += requests


def run_workers(n_workers: int, jobs: list, work) -> None:
    """Run work(job) for each job on n_workers threads; the first ProbeError is raised."""
    queue = list(jobs)
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                if not queue or failures:
                    return
                job = queue.pop()
            try:
                work(job)
            except BaseException as exc:  # noqa: BLE001 - reported by the caller
                with lock:
                    failures.append(exc)
                return

    threads = [threading.Thread(target=worker) for _ in range(max(1, n_workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        exc = failures[0]
        raise exc if isinstance(exc, ProbeError) else ProbeError(f"{exc.__class__.__name__}: {exc}")


def probe_echo(server: Server, size: int, uuids: int, connections: int, per_connection: int,
               concurrency: int) -> dict:
    tally = Tally()

    def one_connection(index: int) -> None:
        sock = connect(server.address)
        try:
            for r in range(per_connection):
                request = echo_request(index * per_connection + r, size)
                # send in two pieces at times: the server must read until S bytes arrived
                if size > 1 and r % 2 == 1:
                    sock.sendall(request[: size // 2])
                    time.sleep(0.001)
                    sock.sendall(request[size // 2:])
                else:
                    sock.sendall(request)
                reply = recv_exact(sock, size + 37 * uuids)
                check_echo_reply(request, reply, uuids)
        finally:
            sock.close()
        tally.add(1, per_connection)

    run_workers(concurrency, list(range(connections)), one_connection)
    time.sleep(0.05)
    final = stop(server)
    expect = {
        "scenario": "echo", "connections": tally.connections, "requests": tally.requests,
        "uuids_generated": uuids * tally.requests, "bytes_in": size * tally.requests,
        "bytes_out": (size + 37 * uuids) * tally.requests, "partial": 0, "size": size, "uuids": uuids,
        "threads": server.ready["threads"],
    }
    check_counts(final, expect)
    return final


# --------------------------------------------------------------------------- http

def http_response(sock: socket.socket, buf: bytearray) -> tuple[int, dict, bytes, bytearray]:
    """Read one response (status, headers, body) using Content-Length; return leftover bytes."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ProbeError(f"connection closed before a full response head: {bytes(buf[:120])!r}")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status_line = lines[0].decode(errors="replace")
    m = re.match(r"^HTTP/1\.[01] (\d{3})", status_line)
    if not m:
        raise ProbeError(f"bad status line: {status_line[:120]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.decode(errors="replace").partition(":")
        if not sep:
            raise ProbeError(f"bad header line: {line[:120]!r}")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        # HTTP/1.1 lets a response that closes the connection end its body at EOF (net/http's 400)
        if headers.get("connection", "").lower() != "close":
            raise ProbeError(f"response without Content-Length that keeps the connection: {head[:200]!r}")
        body = bytearray(rest)
        while chunk := sock.recv(65536):
            body += chunk
        return int(m.group(1)), headers, bytes(body), bytearray()
    length = int(headers["content-length"])
    body = bytearray(rest)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ProbeError("connection closed inside a response body")
        body += chunk
    return int(m.group(1)), headers, bytes(body[:length]), bytearray(body[length:])


def ping(sock: socket.socket, host_header: str, token: str, buf: bytearray, extra: str = "") -> bytearray:
    sock.sendall(f"GET /ping/{token} HTTP/1.1\r\nHost: {host_header}\r\n{extra}\r\n".encode())
    status, headers, body, buf = http_response(sock, buf)
    if status != 200:
        raise ProbeError(f"GET /ping/{token}: status {status}, expected 200")
    if body != token.encode():
        raise ProbeError(f"GET /ping/{token}: body {body[:80]!r}, expected the token")
    if not headers.get("content-type", "").startswith("text/plain"):
        raise ProbeError(f"GET /ping/{token}: Content-Type {headers.get('content-type')!r}, expected text/plain")
    return buf


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        sock.settimeout(IO_TIMEOUT_S)
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def probe_http(server: Server, requests: int, connections: int) -> dict:
    host_header = f"{server.address[0]}:{server.address[1]}"
    tally = Tally()
    per = [requests // connections + (1 if i < requests % connections else 0) for i in range(connections)]

    def one_connection(index: int) -> None:
        sock = connect(server.address)
        buf = bytearray()
        try:
            for r in range(per[index]):
                buf = ping(sock, host_header, f"t{index}-{r}_{'x' * (r % 7)}", buf)
        finally:
            sock.close()
        tally.add(1, per[index])

    run_workers(min(connections, 16), list(range(connections)), one_connection)

    # a 404 on a well-formed request keeps the connection; a ping after it still works
    sock = connect(server.address)
    buf = bytearray()
    sock.sendall(f"GET /nothing-here HTTP/1.1\r\nHost: {host_header}\r\n\r\n".encode())
    status, _, _, buf = http_response(sock, buf)
    if status != 404:
        raise ProbeError(f"GET /nothing-here: status {status}, expected 404")
    buf = ping(sock, host_header, "after-404", buf)
    # Connection: close is honoured
    buf = ping(sock, host_header, "last", buf, extra="Connection: close\r\n")
    if not closed_by_peer(sock):
        raise ProbeError("the server kept the connection open after 'Connection: close'")
    sock.close()
    tally.add(1, 2)

    # a malformed request gets 400 and the connection is closed: a request line that is not three
    # tokens, and a header line without a colon (what every HTTP/1.1 parser rejects)
    for malformed in (b"GARBAGE\r\n\r\n", f"GET /ping/x HTTP/1.1\r\nHost: {host_header}\r\nNoColonHere\r\n\r\n".encode()):
        sock = connect(server.address)
        sock.sendall(malformed)
        status, _, _, _ = http_response(sock, bytearray())
        if status != 400:
            raise ProbeError(f"malformed request {malformed[:30]!r}: status {status}, expected 400")
        if not closed_by_peer(sock):
            raise ProbeError("the server kept the connection open after a 400")
        sock.close()
        tally.add(1, 0)

    time.sleep(0.05)
    final = stop(server)
    expect = {"scenario": "http", "requests": tally.requests, "threads": server.ready["threads"]}
    check_counts(final, expect)
    if final.get("connections") is not None and final["connections"] != tally.connections:
        raise ProbeError(f"final line: connections {final['connections']}, expected {tally.connections}")
    return final


def check_counts(final: dict, expect: dict) -> None:
    for key, want in expect.items():
        got = final.get(key)
        if got != want or type(got) is bool:
            raise ProbeError(f"final line: {key} is {got!r}, expected {want!r} (line: {json.dumps(final)[:300]})")


# --------------------------------------------------------------------------- CLI

def resolve_impl(name: str) -> tuple[list[str], str, dict, str | None]:
    """argv prefix, cwd, env and variant of an implementation id or id:variant."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from corobench.discover import discover

    impl_id, _, variant = name.partition(":")
    for m in discover():
        if m.id == impl_id:
            return m.resolve(m.run), str(m.folder), {**os.environ, **m.env}, variant or None
    raise SystemExit(f"serverprobe: unknown implementation {impl_id}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", help="implementation id or id:variant (resolved through its manifest)")
    ap.add_argument("--threads", type=int)
    sub = ap.add_subparsers(dest="scenario", required=True)
    e = sub.add_parser("echo")
    e.add_argument("--size", type=int, default=17)
    e.add_argument("--uuids", type=int, default=5)
    e.add_argument("--connections", type=int, default=20)
    e.add_argument("--per-connection", type=int, default=2)
    e.add_argument("--concurrency", type=int, default=4)
    h = sub.add_parser("http")
    h.add_argument("--requests", type=int, default=40)
    h.add_argument("--connections", type=int, default=4)
    for p in (e, h):
        p.add_argument("argv", nargs="*", help="server argv prefix (instead of --impl)")
    a = ap.parse_args()
    if a.impl:
        argv, cwd, env, variant = resolve_impl(a.impl)
    elif a.argv:
        argv, cwd, env, variant = a.argv, None, None, None
    else:
        ap.error("give --impl ID or the server's argv")
    extra: list[str] = []
    if a.scenario == "echo":
        extra += ["--size", str(a.size), "--uuids", str(a.uuids)]
    if a.threads:
        extra += ["--threads", str(a.threads)]
    if variant:
        extra += ["--variant", variant]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            server = start(argv, a.scenario, extra, cwd, env, Path(tmp) / "stderr")
            try:
                if variant and server.ready.get("variant") != variant:
                    raise ProbeError(f"ready line: variant {server.ready.get('variant')!r}, expected {variant!r}")
                if a.scenario == "echo":
                    for key in ("size", "uuids"):
                        if server.ready.get(key) != getattr(a, key):
                            raise ProbeError(f"ready line: {key} {server.ready.get(key)!r}, expected {getattr(a, key)}")
                    final = probe_echo(server, a.size, a.uuids, a.connections, a.per_connection, a.concurrency)
                else:
                    final = probe_http(server, a.requests, a.connections)
            finally:
                if server.proc.poll() is None:
                    stop_hard(server.proc)
        except ProbeError as exc:
            print(f"serverprobe: FAIL: {exc}", file=sys.stderr)
            return 1
        except OSError as exc:
            print(f"serverprobe: FAIL: {exc.__class__.__name__}: {exc}", file=sys.stderr)
            return 1
    print(f"serverprobe: ok: ready {json.dumps(server.ready)}; final {json.dumps(final)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
