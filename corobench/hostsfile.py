"""Hosts files: where a server run's load comes from, as configuration (TOML).

    bind = "10.0.0.1"              # the address the server binds: one of this machine's (default 127.0.0.1)
    server_cpus = "0-3"            # optional: the server's CPUs here (default: all of them)
    ssh_config = "ssh_config"      # optional: an ssh_config file for every host (default: the user's own)

    [[client]]
    name = "client1"               # how results and messages name it
    ssh = "bench@10.0.0.2"         # an ssh destination as `ssh` understands it, or "local"
    cpus = "0-7"                   # optional: its CPUs for the agents (default: all of them)
    agents = 1                     # optional: agent processes there, each on its own share of the CPUs
    sources = ["10.0.0.2"]         # optional: source addresses its connections spread over
    ssh_options = ["-p", "2222"]   # optional: more ssh options for this host

Paths are relative to the file. The server runs where corobench runs, bound to `bind` alone; the
harness checks that it listens nowhere else.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from pathlib import Path

from corobench import validate
from corobench.errors import UsageError
from corobench.files import read_toml

TOP_KEYS = {"bind", "server_cpus", "ssh_config", "client"}
CLIENT_KEYS = {"name", "ssh", "cpus", "agents", "sources", "ssh_options"}
MAX_AGENTS_PER_HOST = 256


@dataclass(frozen=True)
class ClientHost:
    name: str
    ssh: str  # a destination, or "local"
    cpus: set[int] | None
    agents: int = 1
    sources: tuple[str, ...] = ()
    ssh_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostsFile:
    path: Path
    bind: str
    server_cpus: set[int] | None
    ssh_config: str | None
    clients: tuple[ClientHost, ...] = field(default_factory=tuple)


def _cpus(value: object, where: str) -> set[int]:
    if not isinstance(value, str):
        raise UsageError(f"{where}: cpus must be a string like \"0-3\" or \"0,2\"")
    cpus: set[int] = set()
    for part in value.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise UsageError(f"{where}: cpus takes a list like 0,1 or 0-3, not {value[:40]!r}")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first or last > validate.MAX_CPU:
            raise UsageError(f"{where}: cpus {value}: CPUs go from 0 to at most {validate.MAX_CPU}, low to high")
        cpus.update(range(first, last + 1))
    return cpus


def is_local_address(address: str) -> bool:
    """Whether this machine has the address (a socket can be bound to it)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            s.bind((address, 0))
            return True
        except OSError:
            return False


def _strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise UsageError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def load_hosts(path: Path | str) -> HostsFile:
    path = Path(path)
    data = read_toml(path, "hosts file")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown key(s): {', '.join(sorted(unknown))}")
    bind = data.get("bind", "127.0.0.1")
    try:
        bind = str(ipaddress.ip_address(bind if isinstance(bind, str) else ""))
    except ValueError:
        raise UsageError(f"{path}: bind must be an IP address of this machine, not {str(bind)[:40]!r}") from None
    if not is_local_address(bind):
        raise UsageError(f"{path}: bind {bind} is not an address of this machine (the server runs here)")
    server_cpus = _cpus(data["server_cpus"], f"{path}: server_cpus") if "server_cpus" in data else None
    ssh_config = data.get("ssh_config")
    if ssh_config is not None:
        if not isinstance(ssh_config, str) or not ssh_config:
            raise UsageError(f"{path}: ssh_config must be a path")
        ssh_config = str((path.parent / ssh_config).resolve())
    entries = data.get("client")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: needs at least one [[client]] table")
    clients: list[ClientHost] = []
    for i, entry in enumerate(entries, 1):
        where = f"{path}: client {i}"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: must be a table")
        unknown = set(entry) - CLIENT_KEYS
        if unknown:
            raise UsageError(f"{where}: unknown key(s): {', '.join(sorted(unknown))}")
        name, ssh = entry.get("name"), entry.get("ssh")
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise UsageError(f"{where}: name must be letters, digits, '-', '_' or '.'")
        if any(c.name == name for c in clients) or name == "local" and ssh != "local":
            raise UsageError(f"{where}: the name {name!r} is taken")
        if not isinstance(ssh, str) or not ssh.strip() or ssh.startswith("-"):
            raise UsageError(f"{where}: ssh must be a destination (user@host, a Host of your ssh config) or \"local\"")
        agents = entry.get("agents", 1)
        if isinstance(agents, bool) or not isinstance(agents, int) or not 1 <= agents <= MAX_AGENTS_PER_HOST:
            raise UsageError(f"{where}: agents must be a whole number from 1 to {MAX_AGENTS_PER_HOST}")
        sources = _strings(entry.get("sources", []), where, "sources")
        for s in sources:
            try:
                ipaddress.ip_address(s)
            except ValueError:
                raise UsageError(f"{where}: source {s[:40]!r} is not an IP address") from None
        cpus = _cpus(entry["cpus"], where) if "cpus" in entry else None
        if ssh == "local" and cpus is not None:
            cpus = validate.cpu_list(entry["cpus"], f"{where}: cpus")
        clients.append(ClientHost(name, ssh, cpus, agents, sources,
                                  _strings(entry.get("ssh_options", []), where, "ssh_options")))
    return HostsFile(path, bind, server_cpus, ssh_config, tuple(clients))


def topology_from_file(path: Path | str, options, server_cpus: set[int] | None = None):
    """The topology a hosts file describes: the server here, bound to its address; each client's agents."""
    from corobench.hosts.local import LocalHost
    from corobench.hosts.ssh import SshHost
    from corobench.topology import ClientSlot, Topology, share_cpus, split_cpus

    hosts = load_hosts(path)
    here = options.host or LocalHost(use_cgroups=options.use_cgroup)
    allowed = set(options.cpus) if options.cpus else here.cpus()
    local_clients = [c for c in hosts.clients if c.ssh == "local"]
    default_server, default_client = split_cpus(allowed) if local_clients else (allowed, set())
    slots = []
    for c in hosts.clients:
        if c.ssh == "local":
            host, cpus = here, c.cpus or default_client
        else:
            host = SshHost(c.name, c.ssh, list(c.ssh_options), hosts.ssh_config, c.cpus)
            cpus = c.cpus
        parts = share_cpus(cpus, c.agents) if cpus else [None] * c.agents
        slots += [ClientSlot(host, part, list(c.sources)) for part in parts]
    return Topology(here, server_cpus or hosts.server_cpus or default_server, slots, bind=hosts.bind)
