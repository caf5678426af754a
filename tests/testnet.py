"""Test hosts for the multi-host path: Linux network namespaces joined to this machine by veth pairs
on a bridge, each running a real OpenSSH server with a key the test generates, on addresses the
test assigns (10.213.N.0/24, N from this process's pid). Traffic goes only between them and this
machine. A host may get its own monotonic clock (a time namespace), a fake `uname -m`, and has its
own empty ~/.cache (a private mount), so that copying the load generator is tested for real.
`close()` removes every namespace, process, link and key, and is called even when a test fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """Why test hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "test hosts need root (network namespaces)"
    for tool in ("ip", "unshare", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"test hosts need {tool}"
    if not Path(SSHD).exists():
        return "test hosts need Debian's openssh-server (.ci/run installs it)"
    probe = f"cbprobe{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        return "cannot create network namespaces here"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc


@dataclass
class TestHost:
    name: str
    netns: str
    address: str
    sshd: subprocess.Popen
    veth: str

    def processes(self, pattern: str) -> list[int]:
        """Processes in this host's network namespace whose command line contains `pattern`."""
        try:
            target = os.stat(f"/run/netns/{self.netns}").st_ino
        except OSError:
            return []
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.stat(f"/proc/{pid}/ns/net").st_ino != target:
                    continue
                cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
                state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if pattern in cmdline and state not in ("Z", "X"):
                found.append(int(pid))
        return found


class TestNetwork:
    def __init__(self, folder: Path):
        self.folder = folder
        self.tag = f"{os.getpid() % 100000}"
        n = 20 + os.getpid() % 200
        self.prefix = f"10.213.{n}"
        self.server_address = f"{self.prefix}.1"
        self.bridge = f"cbbr{self.tag}"
        self.hosts: dict[str, TestHost] = {}
        self.key = folder / "id_ed25519"
        self.ssh_config = folder / "ssh_config"
        self.cache_root = folder / "caches"
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        (folder / "authorized_keys").write_text((folder / "id_ed25519.pub").read_text())
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / "hostkey"))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
        Path("/root/.cache").mkdir(exist_ok=True)
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.server_address}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        self.ssh_config.write_text("")

    def add_host(self, name: str, monotonic_offset_s: int = 0, arch: str | None = None) -> TestHost:
        index = len(self.hosts) + 1
        netns = f"cb{self.tag}{name}"
        veth = f"cv{self.tag}{index}"
        address = f"{self.prefix}.{10 + index}"
        _run("ip", "netns", "add", netns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", f"{veth}p")
        _run("ip", "link", "set", f"{veth}p", "netns", netns)
        _run("ip", "link", "set", veth, "master", self.bridge)
        _run("ip", "link", "set", veth, "up")
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "link", "set", f"{veth}p", "name", "eth0"],
                    ["ip", "addr", "add", f"{address}/24", "dev", "eth0"], ["ip", "link", "set", "eth0", "up"]):
            _run("ip", "netns", "exec", netns, *cmd)
        config = self.folder / f"sshd_{name}.conf"
        config.write_text(
            f"ListenAddress {address}\nPort 22\nHostKey {self.folder / 'hostkey'}\n"
            f"PidFile {self.folder / f'sshd_{name}.pid'}\nAuthorizedKeysFile {self.folder / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nMaxSessions 100\nMaxStartups 100\nLogLevel ERROR\n")
        # its own ~/.cache (the load generator is copied into each host for real), and its own uname
        setup = "mount -t tmpfs tmpfs /root/.cache"
        if arch:  # a host that says it is another architecture
            real = self.folder / "uname.real"
            shutil.copy("/bin/uname", real)
            fake = self.folder / f"uname_{name}"
            fake.write_text(f'#!/bin/sh\n[ "$1" = -m ] && echo {arch} && exit 0\nexec {real} "$@"\n')
            fake.chmod(0o755)
            setup += f" && mount --bind {fake} /bin/uname"
        wrapper = ["unshare", "--mount", "--propagation", "private"]
        if monotonic_offset_s:
            wrapper += ["--time", "--monotonic", str(monotonic_offset_s), "--fork"]
        argv = ["ip", "netns", "exec", netns, *wrapper, "sh", "-c", f"{setup} && exec {SSHD} -D -e -f {config}"]
        sshd = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        host = TestHost(name, netns, address, sshd, veth)
        self.hosts[name] = host
        with self.ssh_config.open("a") as f:
            f.write(f"Host {name}\n  HostName {address}\n  User root\n  IdentityFile {self.key}\n"
                    "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
                    "  LogLevel ERROR\n")
        self._wait_ready(host)
        return host

    def _wait_ready(self, host: TestHost) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if host.sshd.poll() is not None:
                raise RuntimeError(f"sshd of {host.name} ended: {host.sshd.stderr.read().decode()[-500:]}")
            probe = subprocess.run(["ssh", "-F", str(self.ssh_config), "-o", "BatchMode=yes", "-o",
                                    "ConnectTimeout=2", host.name, "true"], capture_output=True, timeout=10)
            if probe.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(f"sshd of {host.name} did not answer within 20 s")

    def hosts_file(self, path: Path, clients: list[dict], **top) -> Path:
        """A hosts file for these test hosts (the server binds this machine's bridge address)."""
        lines = [f'bind = "{top.pop("bind", self.server_address)}"', f'ssh_config = "{self.ssh_config}"']
        lines += [f"{k} = {v!r}".replace("'", '"') for k, v in top.items()]
        for c in clients:
            lines.append("\n[[client]]")
            for k, v in c.items():
                lines.append(f"{k} = " + (f'"{v}"' if isinstance(v, str) else str(v).replace("'", '"')))
        path.write_text("\n".join(lines) + "\n")
        return path

    def close(self) -> None:
        """Everything goes: sshds and whatever runs in the namespaces, links, namespaces, masters."""
        subprocess.run(["pkill", "-f", str(self.ssh_config)], capture_output=True)  # the ssh masters of these hosts
        for host in self.hosts.values():
            for pid in host.processes(""):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.killpg(host.sshd.pid, signal.SIGKILL)
            except OSError:
                pass
            host.sshd.wait(10)
            _run("ip", "link", "del", host.veth, check=False)
            _run("ip", "netns", "del", host.netns, check=False)
        _run("ip", "link", "del", self.bridge, check=False)
        for path in (self.key, self.folder / "hostkey"):
            path.unlink(missing_ok=True)
