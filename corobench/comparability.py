"""The comparability key: which stored results may stand side by side.

Two results are comparable when the same program, built with the same toolchain, did the same work
(scenario, parameters, --threads) on the same kind of machine (and, for servers, under the same
load layout). `compare`, reports and the results site put results side by side only within one
key; comparing across keys is allowed when asked, and then labelled with what differs
(`difference`).

What identifies a machine (`machine_identity`) is what decides how fast it runs a program and
stays put across sessions:

- architecture, CPU model (as the kernel names it, whitespace normalised) and logical cores;
- memory, rounded UP to whole GiB: the kernel's MemTotal is always a little under the installed
  amount and moves by megabytes with the kernel version, so a 24 GiB machine reads 23.4–23.9 GiB
  and always rounds to 24.

Left out on purpose: the hostname (a renamed or re-created VM of the same type is the same
machine; two machines of one type are one class of machine), the load average and limits (they
describe a moment, not the machine), and the kernel and OS versions: those are upgrades of the
same machine, like a toolchain's, whose effect the history of a key should show rather than hide
by starting a new key; `comparable` names a kernel difference as a note.

The load layout of a server run (`topology_identity`): the load generator, the server's CPU count
and whether it served on loopback, and per client host its kind, name, CPU count, number of
agents and (for another machine) that machine's identity. Batch scenarios have none.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping

from corobench.scenarios import SCENARIOS
from corobench.store import SessionRecord, params_key

UNKNOWN = "unknown"


# --------------------------------------------------------------------------- machines

def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value not in (None, "") else UNKNOWN


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def machine_identity(machine: Mapping) -> dict:
    """What of a session's machine dict enters its fingerprint (see the module's docstring)."""
    memory = machine.get("memory_bytes")
    gib = math.ceil(memory / 2**30) if type(memory) in (int, float) and memory > 0 else None
    return {"arch": _text(machine.get("arch")), "cpu_model": _text(machine.get("cpu_model")),
            "cores": _count(machine.get("cores")), "memory_gib": gib}


def _digest(prefix: str, identity: object) -> str:
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def machine_fingerprint(machine: Mapping) -> str:
    """A short, stable name of the machine's identity, e.g. `m-3f2a9c0d1e4b`."""
    return _digest("m", machine_identity(machine if isinstance(machine, Mapping) else {}))


def machine_label(machine: Mapping) -> str:
    """The identity as a reader wants it: `AMD EPYC 7B13, 2 cores, 24 GiB, x86_64`."""
    m = machine_identity(machine if isinstance(machine, Mapping) else {})
    cores = f"{m['cores']} cores" if m["cores"] is not None else "? cores"
    memory = f"{m['memory_gib']} GiB" if m["memory_gib"] is not None else "? GiB"
    return f"{m['cpu_model']}, {cores}, {memory}, {m['arch']}"


# --------------------------------------------------------------------------- load topology

def _cpu_count(cpus: Any) -> int | None:
    return len(cpus) if isinstance(cpus, list) else None


def _is_loopback(bind: Any) -> bool:
    try:
        return ipaddress.ip_address(str(bind or "127.0.0.1")).is_loopback
    except ValueError:
        return False


def topology_identity(settings: Mapping, hosts: Mapping | None = None) -> dict | None:
    """The load layout of a session's server runs, or None when it ran none (batch scenarios only).

    Sessions stored before topologies were recorded have only `server_cpus` and `client_cpus`:
    they read as one local agent on those CPUs, which is what they ran."""
    if not isinstance(settings, Mapping):
        return None
    topology = settings.get("topology")
    loadgen = settings.get("loadgen")
    if not isinstance(topology, Mapping):
        if "server_cpus" not in settings and loadgen is None:
            return None
        return {"loadgen": _text(loadgen), "server": {"cpus": _cpu_count(settings.get("server_cpus")),
                                                      "loopback": True},
                "clients": [{"host": "local", "kind": "local", "cpus": _cpu_count(settings.get("client_cpus")),
                             "agents": 1, "machine": None}]}
    server = topology.get("server") if isinstance(topology.get("server"), Mapping) else {}
    loopback = _is_loopback(server.get("bind"))
    per_host: dict[tuple, int] = {}
    for client in topology.get("clients") or []:
        if not isinstance(client, Mapping):
            continue
        name, kind = _text(client.get("host")), _text(client.get("kind"))
        slot = (name, kind, _cpu_count(client.get("cpus")))
        per_host[slot] = per_host.get(slot, 0) + 1  # agents: one slot each
    host_machines = hosts if isinstance(hosts, Mapping) else {}
    clients = []
    for (name, kind, cpus), agents in sorted(per_host.items(), key=lambda item: repr(item[0])):
        other = host_machines.get(name) if kind != "local" else None
        clients.append({"host": name, "kind": kind, "cpus": cpus, "agents": agents,
                        "machine": machine_fingerprint(other) if isinstance(other, Mapping) else None})
    return {"loadgen": _text(loadgen),
            "server": {"cpus": _cpu_count(server.get("cpus")), "loopback": loopback},
            "clients": clients}


def topology_fingerprint(settings: Mapping, hosts: Mapping | None = None) -> str | None:
    """A short name of the load layout (`t-…`), or None for a session without server runs."""
    identity = topology_identity(settings, hosts)
    return _digest("t", identity) if identity is not None else None


def topology_label(settings: Mapping, hosts: Mapping | None = None) -> str | None:
    """`corobench-load; server 1 CPU; clients: local ×1 on 1 CPU`."""
    t = topology_identity(settings, hosts)
    if t is None:
        return None
    plural = lambda n: "? CPUs" if n is None else f"{n} CPU" + ("" if n == 1 else "s")  # noqa: E731
    clients = ", ".join(f"{c['host']} ×{c['agents']}" + (f" on {plural(c['cpus'])}" if c["cpus"] is not None else "")
                        for c in t["clients"])
    where = "" if t["server"]["loopback"] else " over the network"
    return f"{t['loadgen']}; server {plural(t['server']['cpus'])}{where}; clients: {clients or 'none'}"


# --------------------------------------------------------------------------- the key

@dataclass(frozen=True)
class ComparabilityKey:
    scenario: str
    params_key: str  # store.params_key: the parameters as canonical JSON
    threads: int | None  # --threads, where given: part of what the program was asked to do
    program: str  # impl or impl:variant
    toolchain: str  # the implementation's toolchain version, as the session recorded it
    machine: str  # machine_fingerprint
    topology: str | None  # topology_fingerprint for server scenarios, None for batch ones

    @property
    def id(self) -> str:
        """A short name of the key, for file and element names."""
        return _digest("k", [getattr(self, f.name) for f in fields(self)])


def _impl_id(item: Any) -> str:
    impl = getattr(item, "impl_id", None)
    if isinstance(impl, str) and impl:
        return impl
    runs = getattr(item, "runs", None)  # a Cell: its verified runs know their implementation
    if runs:
        return runs[0].impl_id
    return str(item.program).split(":", 1)[0]


def key_factory(session: SessionRecord) -> Callable[[Any], ComparabilityKey]:
    """key(session, ·) with the session's fingerprints computed once, for many cells or runs."""
    machine = machine_fingerprint(session.machine)
    hosts = session.machine.get("hosts") if isinstance(session.machine, Mapping) else None
    topology = topology_fingerprint(session.settings, hosts)
    toolchains = session.toolchains if isinstance(session.toolchains, Mapping) else {}

    def key(item: Any) -> ComparabilityKey:
        scenario = SCENARIOS.get(item.scenario)
        server = scenario is not None and scenario.kind == "server"
        return ComparabilityKey(item.scenario, params_key(item.params), item.threads, item.program,
                                str(toolchains.get(_impl_id(item), UNKNOWN)), machine, topology if server else None)

    return key


def key(session: SessionRecord, cell_or_run: Any) -> ComparabilityKey:
    """The comparability key of a cell (results.Cell) or a run (store.RunRow) of this session."""
    return key_factory(session)(cell_or_run)


def difference(a: ComparabilityKey, b: ComparabilityKey) -> str | None:
    """What tells two keys apart, as a label for a comparison made across keys; None if equal."""
    parts = []
    for f in fields(ComparabilityKey):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x != y:
            parts.append(f"{f.name.replace('_', ' ')} {x} vs {y}")
    return "; ".join(parts) or None


# --------------------------------------------------------------------------- two sessions

@dataclass(frozen=True)
class Comparability:
    comparable: bool
    why: str | None  # one line, when not comparable
    notes: tuple[str, ...] = ()  # what differs but keeps them comparable (kernel, toolchains)


def _kernel(machine: Mapping) -> str:
    parts = str(machine.get("kernel") or "").split(".")
    return ".".join(parts[:2]) if parts[0] else UNKNOWN


def comparable(a: SessionRecord, b: SessionRecord) -> Comparability:
    """Whether two sessions' results may be compared, and if not why, in one line: different
    machines, or (when both ran servers) a different load layout. Toolchain versions differ per
    program: those cells' keys differ, and the notes name them."""
    problems = []
    ma, mb = a.machine if isinstance(a.machine, Mapping) else {}, b.machine if isinstance(b.machine, Mapping) else {}
    if machine_fingerprint(ma) != machine_fingerprint(mb):
        problems.append(f"different machines: {machine_label(ma)} vs {machine_label(mb)}")
    ta, tb = topology_identity(a.settings, ma.get("hosts")), topology_identity(b.settings, mb.get("hosts"))
    if ta is not None and tb is not None and ta != tb:
        problems.append(f"different load layouts: {topology_label(a.settings, ma.get('hosts'))} vs "
                        f"{topology_label(b.settings, mb.get('hosts'))}")
    notes = []
    if _kernel(ma) != _kernel(mb):
        notes.append(f"kernel {_kernel(ma)} vs {_kernel(mb)}")
    ca = a.toolchains if isinstance(a.toolchains, Mapping) else {}
    cb = b.toolchains if isinstance(b.toolchains, Mapping) else {}
    changed = [f"{impl} ({ca[impl]} vs {cb[impl]})" for impl in sorted(set(ca) & set(cb)) if ca[impl] != cb[impl]]
    if changed:
        notes.append("toolchains differ: " + ", ".join(changed))
    return Comparability(not problems, "; ".join(problems) or None, tuple(notes))


__all__ = ["Comparability", "ComparabilityKey", "comparable", "difference", "key", "key_factory",
           "machine_fingerprint", "machine_identity", "machine_label", "topology_fingerprint", "topology_identity",
           "topology_label"]
