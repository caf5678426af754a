"""Where a server run's pieces are: the server on this machine, its load from one or more agents.

By default one agent on this machine, the server on the first half of the CPUs and the client on
the other half (today's one-machine run). `--clients N` runs N agents here, each pinned to its own
share of the client CPUs; a hosts file (hostsfile.py) puts agents on other machines. The same run
logic serves every layout.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from corobench.hosts.base import Host

LOOPBACK = "127.0.0.1"


@dataclass
class ClientSlot:
    """One agent: the host it runs on, the CPUs it is pinned to there, its source addresses."""

    host: Host
    cpus: set[int] | None
    sources: list[str] = field(default_factory=list)


@dataclass
class Topology:
    server: Host
    server_cpus: set[int]
    clients: list[ClientSlot]
    bind: str = LOOPBACK  # the address the server binds (one of this machine's), and clients connect to

    @property
    def on_loopback(self) -> bool:
        return ipaddress.ip_address(self.bind).is_loopback

    @property
    def spans_hosts(self) -> bool:
        return any(c.host.kind != "local" for c in self.clients)

    def allowed(self, address: str) -> bool:
        """Where the server may listen: any loopback address by default; else the bind address alone."""
        ip = ipaddress.ip_address(address)
        if self.on_loopback:
            return ip.is_loopback
        return ip == ipaddress.ip_address(self.bind)

    def target(self, port: int) -> str:
        host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"{host}:{port}"

    def describe(self) -> dict:
        """What is stored with the session: who ran where."""
        return {"server": {"host": self.server.name, "cpus": sorted(self.server_cpus), "bind": self.bind},
                "clients": [{"host": c.host.name, "kind": c.host.kind, "cpus": sorted(c.cpus) if c.cpus else None,
                             **({"sources": c.sources} if c.sources else {})} for c in self.clients]}

    def hosts(self) -> list[Host]:
        seen: dict[str, Host] = {self.server.name: self.server}
        for c in self.clients:
            seen.setdefault(c.host.name, c.host)
        return list(seen.values())


def split_cpus(cpus: set[int]) -> tuple[set[int], set[int]]:
    """The first half of the CPUs for the server, the rest for the client (one CPU: shared)."""
    ordered = sorted(cpus)
    if len(ordered) == 1:
        return set(ordered), set(ordered)
    half = len(ordered) // 2
    return set(ordered[:half]), set(ordered[half:])


def share_cpus(cpus: set[int], parts: int) -> list[set[int]]:
    """CPUs for `parts` agents: each its own CPUs where there are enough, else round-robin singles."""
    ordered = sorted(cpus)
    if parts <= len(ordered):
        size, extra = divmod(len(ordered), parts)
        out, at = [], 0
        for i in range(parts):
            n = size + (1 if i < extra else 0)
            out.append(set(ordered[at:at + n]))
            at += n
        return out
    return [{ordered[i % len(ordered)]} for i in range(parts)]
