"""TCP listeners of this network namespace from the kernel's sock_diag netlink interface, asking
for LISTEN sockets only. /proc/net/tcp lists every socket — after 50,000 short echo connections,
tens of thousands in TIME_WAIT — and reading it every second cost the server's CPU what the
harness promised not to take; this answer holds the listeners alone."""

from __future__ import annotations

import ipaddress
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN_STATE = 10
HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
REQUEST = struct.Struct("=BBBxI48x")  # inet_diag_req_v2: family, protocol, extensions, states, sockid
MESSAGE = struct.Struct("=BBBB2s2s16s16sI8xIIIII")  # inet_diag_msg (sockid: ports, addresses, if, cookie)


def tcp_listeners(family: int) -> list[tuple[str, int, str]]:
    """(address, port, inode) of every TCP socket in LISTEN of this namespace and `family`
    (socket.AF_INET or AF_INET6). OSError when the kernel cannot answer (no sock_diag)."""
    request = REQUEST.pack(family, socket.IPPROTO_TCP, 0, 1 << TCP_LISTEN_STATE)
    header = HEADER.pack(HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
    found: list[tuple[str, int, str]] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(5.0)
        nl.sendto(header + request, (0, 0))
        while True:
            data = nl.recv(1 << 16)
            offset = 0
            while offset + HEADER.size <= len(data):
                length, kind, _, _, _ = HEADER.unpack_from(data, offset)
                if length < HEADER.size:
                    raise OSError("sock_diag: malformed answer")
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR:
                    (errno,) = struct.unpack_from("=i", data, offset + HEADER.size)
                    raise OSError(-errno, "sock_diag refused the request")
                body = offset + HEADER.size
                if kind == SOCK_DIAG_BY_FAMILY and length >= HEADER.size + MESSAGE.size:
                    fam, state, _, _, sport, _, src, _, _, _, _, _, _, inode = MESSAGE.unpack_from(data, body)
                    if state == TCP_LISTEN_STATE:
                        raw = src[:4] if fam == socket.AF_INET else src
                        addr = ipaddress.ip_address(raw)
                        if fam == socket.AF_INET6 and addr.ipv4_mapped:
                            addr = addr.ipv4_mapped
                        found.append((str(addr), int.from_bytes(sport, "big"), str(inode)))
                offset += (length + 3) & ~3
