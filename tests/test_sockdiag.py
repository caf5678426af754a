"""The listen check's TCP listeners from sock_diag agree with /proc/net/tcp{,6}."""

import shutil
import socket
from pathlib import Path

from corobench.hosts.procfs import listeners


def test_sock_diag_finds_what_proc_net_tcp_lists(tmp_path):
    v4, v6 = socket.socket(socket.AF_INET), socket.socket(socket.AF_INET6)
    try:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::1", 0))
        v6.listen()
        mine = {("127.0.0.1", v4.getsockname()[1]), ("::1", v6.getsockname()[1])}
        client = socket.create_connection(v4.getsockname())  # established sockets are not listeners
        by_netlink = {(ln.proto, ln.address, ln.port, ln.inode) for ln in listeners(Path("/proc/self/net"))
                      if ln.proto == "tcp"}
        # a copy of the files, which listeners() cannot tie to this namespace: it parses them
        copy = tmp_path / "1" / "net"
        copy.mkdir(parents=True)
        for name in ("tcp", "tcp6"):
            shutil.copyfile(f"/proc/self/net/{name}", copy / name)
        by_file = {(ln.proto, ln.address, ln.port, ln.inode) for ln in listeners(copy)}
        client.close()
    finally:
        v4.close()
        v6.close()
    assert by_netlink == by_file
    ports = {(address, port) for _, address, port, _ in by_netlink}
    assert mine <= ports
