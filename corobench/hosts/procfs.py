"""Reading Linux's /proc: a process tree's CPU time and memory, its sockets, the CPUs' counters.

Pure readers (a `proc` root can be a test's folder); LocalHost uses them on this machine.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from corobench.hosts.base import CpuTimes

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PROC = Path("/proc")
MAX_TREE = 10_000  # processes one tree walk visits: a fork bomb is not walked to its end


@dataclass
class ProcStat:
    cpu_s: float
    rss_bytes: int
    vsz_bytes: int
    threads: int


def read_stat(pid: int, proc: Path = PROC) -> ProcStat | None:
    """utime+stime, RSS, VSZ and threads of one process from /proc/PID/stat; None if it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    fields = text.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None  # a zombie holds no memory and runs no more
    # fields[0] is field 3 (state): utime is field 14, stime 15, num_threads 20, vsize 23, rss 24
    utime, stime = int(fields[11]), int(fields[12])
    return ProcStat(cpu_s=(utime + stime) / CLOCK_TICKS, threads=int(fields[17]),
                    vsz_bytes=int(fields[20]), rss_bytes=int(fields[21]) * PAGE)


def children(pid: int, proc: Path = PROC) -> list[int]:
    """Direct children of a process (of all its threads)."""
    out: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def tree(pid: int, proc: Path = PROC) -> list[int]:
    """The process and all its descendants (up to MAX_TREE of them)."""
    seen: list[int] = []
    known: set[int] = set()
    todo = [pid]
    while todo and len(seen) < MAX_TREE:
        p = todo.pop()
        if p in known:
            continue
        known.add(p)
        seen.append(p)
        todo += children(p, proc)
    return seen


def read_status_peaks(pid: int, proc: Path = PROC) -> tuple[int | None, int | None]:
    """(VmHWM, VmPeak) in bytes: the kernel's own high-water marks of RSS and virtual size."""
    hwm = peak = None
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
            elif line.startswith("VmPeak:"):
                peak = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return hwm, peak


def socket_inodes(pids: list[int], proc: Path = PROC) -> set[str]:
    inodes: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(proc / str(pid) / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(proc / str(pid) / "fd" / fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


TCP_LISTEN = "0A"
UDP_UNCONNECTED = "07"  # TCP_CLOSE: a bound UDP socket that receives from anyone


def _address(hex_addr: str, family: int) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_addr)
    # /proc/net/* writes each 32-bit word of the address in host (little-endian) order
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    addr = ipaddress.ip_address(raw)
    if family == 6 and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    return addr


@dataclass(frozen=True)
class Listener:
    proto: str  # "tcp" or "udp"
    address: str  # an IP literal
    port: int
    inode: str

    def __str__(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.proto} {host}:{self.port}"


def listeners(net: Path) -> list[Listener]:
    """Every socket of a network namespace (its /proc/PID/net) that accepts connections (TCP
    LISTEN) or datagrams from anyone (bound, unconnected UDP)."""
    found: list[Listener] = []
    files = (("tcp", TCP_LISTEN, 4), ("tcp6", TCP_LISTEN, 6), ("udp", UDP_UNCONNECTED, 4), ("udp6", UDP_UNCONNECTED, 6))
    tcp = _tcp_by_netlink(net)
    if tcp is not None:
        found, files = tcp, files[2:]
    for name, state, family in files:
        try:
            lines = (net / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != state:
                continue
            hex_addr, hex_port = fields[1].split(":")
            port = int(hex_port, 16)
            if port == 0:
                continue  # created but never bound: it receives nothing
            found.append(Listener(name.rstrip("6"), str(_address(hex_addr, family)), port, fields[9]))
    return found


def _tcp_by_netlink(net: Path) -> list[Listener] | None:
    """The TCP listeners from sock_diag, which answers with listeners alone (/proc/net/tcp lists
    every socket, TIME_WAIT included: tens of thousands after a short-connection run), when `net`
    is this process's own namespace; None when it is another's or the kernel cannot answer."""
    try:
        if (net.parent / "ns" / "net").stat().st_ino != (PROC / "self" / "ns" / "net").stat().st_ino:
            return None
        from corobench.hosts import sockdiag

        return [Listener("tcp", address, port, inode)
                for family in (socket.AF_INET, socket.AF_INET6)
                for address, port, inode in sockdiag.tcp_listeners(family) if port != 0]
    except OSError:
        return None


def held_listeners(pids: list[int], allowed, foreign: set[str], proc: Path = PROC) -> list[str]:
    """The listeners at addresses `allowed(address)` refuses that these processes hold. The
    namespace's listeners are read first (a few lines); the processes' descriptors are read only
    when a refused listener is new, and one found to be someone else's is remembered in
    `foreign`, so that a server with 10,000 connections is not scanned every time."""
    live = next((p for p in pids if (proc / str(p) / "net").exists()), None)
    if live is None:
        return []
    suspects = [ln for ln in listeners(proc / str(live) / "net")
                if not allowed(ln.address) and ln.inode not in foreign]
    if not suspects:
        return []
    ours = socket_inodes(pids, proc)
    held = []
    for ln in suspects:
        if ln.inode in ours:
            held.append(str(ln))
        else:
            foreign.add(ln.inode)
    return sorted(set(held))


def cpu_times(proc: Path = PROC) -> CpuTimes | None:
    """Busy and total ticks of each CPU from /proc/stat. Not busy: idle and iowait, and irq and
    softirq — the kernel's interrupt work, which during a server run is mostly the run's own
    network traffic (loopback delivery runs in softirq, counted in no process's CPU time: 40-60 %
    of the client's CPU with 10,000 short echo connections), so counting it as other processes'
    would call every quiet echo run busy. Steal stays busy: the hypervisor gave the CPU to others."""
    busy: dict[int, int] = {}
    total: dict[int, int] = {}
    try:
        lines = (proc / "stat").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *values = line.split()
        try:
            cpu = int(name[3:])
            ticks = [int(v) for v in values[:8]]
        except ValueError:
            continue
        idle = sum(ticks[3:7])  # idle, iowait, irq, softirq
        total[cpu] = sum(ticks)
        busy[cpu] = total[cpu] - idle
    return CpuTimes(CLOCK_TICKS, busy, total) if total else None
