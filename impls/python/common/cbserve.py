"""The server scenarios (docs/protocol.md "Servers: echo and http") on an asyncio event loop.

Both are asyncio.Protocol classes, asyncio's callback-level API: the loop calls data_received()
with each chunk the socket gave, without a coroutine, a StreamReader buffer or a future per
read (see ../README.md for the measurement against streams). http parses with httptools
(llhttp, the parser of Node's http module), as uvicorn does.

One Python thread serves every connection. Each connection keeps its own count of requests
and adds it to the totals when it ends (connection_lost), as the protocol asks.
"""

import asyncio
import errno
import re
import signal
import socket
import sys
from uuid import uuid4

import httptools

from cbcli import emit, refused, refused_now

THREADS = 1
STOP_WAIT_S = 2.0  # how long open connections may take to end after SIGTERM
# asyncio's default listen backlog is 100; the kernel's limit (net.core.somaxconn) is what Node
# (511), Go and the load generator's bursts of connects expect.
BACKLOG = socket.SOMAXCONN


class Totals:
    """Counts of the connections that ended, plus the connections still open."""

    def __init__(self):
        self.connections = 0
        self.requests = 0
        self.partial = 0
        self.not_found = 0
        self.bad_requests = 0
        self.open = set()  # transports of the connections still open
        self.drained = None  # a future set when the last open connection ends (while stopping)

    def opened(self, transport):
        self.connections += 1
        self.open.add(transport)

    def closed(self, transport):
        self.open.discard(transport)
        if not self.open and self.drained is not None and not self.drained.done():
            self.drained.set_result(None)


def _nodelay(transport):
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


# ------------------------------------------------------------------------------------------
# echo


class EchoProtocol(asyncio.Protocol):
    """Reads S bytes, replies with them and U newline-prefixed UUIDs, until the client closes, or
    until R replies (per_connection, when not 0) were written: then the server closes."""

    __slots__ = ("transport", "buf", "requests", "size", "uuids", "per_connection", "totals")

    def __init__(self, size, uuids, per_connection, totals):
        self.size = size
        self.uuids = uuids
        self.per_connection = per_connection
        self.totals = totals
        self.buf = bytearray()  # bytes of a request not yet complete (appending is amortised O(1))
        self.requests = 0

    def connection_made(self, transport):
        self.transport = transport
        _nodelay(transport)
        self.totals.opened(transport)

    def reply(self, request):
        uuids = "".join(["\n" + str(uuid4()) for _ in range(self.uuids)]).encode("ascii")
        self.transport.write(request + uuids)
        self.requests += 1
        if self.requests == self.per_connection:
            self.transport.close()  # flushes the reply, then closes

    def data_received(self, data):
        size = self.size
        buf = self.buf
        if not buf and len(data) == size:  # the usual case: one whole request in one read
            self.reply(data)
            return
        buf += data
        while len(buf) >= size and not self.transport.is_closing():
            self.reply(bytes(buf[:size]))
            del buf[:size]  # bytearray drops a prefix without moving the rest

    def eof_received(self):
        return False  # close the transport

    def connection_lost(self, exc):
        t = self.totals
        t.requests += self.requests
        if self.buf:
            t.partial += 1
        t.closed(self.transport)


# ------------------------------------------------------------------------------------------
# http

PING = b"/ping/"
TOKEN = re.compile(rb"[A-Za-z0-9_-]{1,64}")
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n%b\r\nNot Found"
BAD_REQUEST = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n"
               b"Connection: close\r\n\r\nBad Request")
OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%b\r\n%b"
CLOSE = b"Connection: close\r\n"
KEEP_ALIVE = b"Connection: keep-alive\r\n"


class HttpProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive: GET /ping/<token> answers the token, anything else 404; a request
    llhttp cannot parse gets 400 and the connection is closed."""

    __slots__ = ("transport", "parser", "url", "requests", "not_found", "totals", "closing")

    def __init__(self, totals):
        self.totals = totals
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.requests = 0
        self.not_found = 0
        self.closing = False

    def connection_made(self, transport):
        self.transport = transport
        _nodelay(transport)
        self.totals.opened(transport)

    # httptools callbacks (called from inside feed_data)
    def on_message_begin(self):
        self.url = b""

    def on_url(self, url):
        self.url += url  # may come in pieces when the request line is split across reads

    def on_message_complete(self):
        parser = self.parser
        keep_alive = parser.should_keep_alive()
        # HTTP/1.1 keeps the connection by default; a 1.0 client that asked for it is told so.
        conn = b"" if keep_alive and parser.get_http_version() == "1.1" else KEEP_ALIVE if keep_alive else CLOSE
        url = self.url
        if parser.get_method() == b"GET" and url.startswith(PING) and TOKEN.fullmatch(url, len(PING)):
            token = url[len(PING):]
            self.transport.write(OK % (len(token), conn, token))
            self.requests += 1
        else:
            self.transport.write(NOT_FOUND % conn)
            self.not_found += 1
        if not keep_alive:
            self.closing = True
            self.transport.close()

    def data_received(self, data):
        if self.closing or self.parser is None:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # A well-formed request asking to switch protocols: not served here.
            self.closing = True
            self.transport.write(NOT_FOUND % CLOSE)
            self.not_found += 1
            self.transport.close()
        except httptools.HttpParserError:
            self.closing = True
            self.transport.write(BAD_REQUEST)
            self.totals.bad_requests += 1
            self.transport.close()

    def connection_lost(self, exc):
        self.parser = None  # the parser refers back to this protocol: break the cycle now
        t = self.totals
        t.requests += self.requests
        t.not_found += self.not_found
        t.closed(self.transport)


# ------------------------------------------------------------------------------------------


async def serve(p):
    """Listen, print the ready line, serve until SIGTERM/SIGINT, then stop as the protocol says
    and print the final line."""
    loop = asyncio.get_running_loop()
    totals = Totals()
    if p["scenario"] == "echo":
        size, uuids, per_connection = p["size"], p["uuids"], p["per_connection"]

        def factory():
            return EchoProtocol(size, uuids, per_connection, totals)
    else:

        def factory():
            return HttpProtocol(totals)

    resource_errnos = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}

    def on_error(loop, context):
        # The loop reports a failed accept() here (and would only log it and retry later).
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in resource_errnos:
            # exit at once: unwinding would run the loop, and this handler, again
            refused_now(f"accepted {totals.connections} connections, then accept failed: {exc.strerror}")
        loop.default_exception_handler(context)

    loop.set_exception_handler(on_error)
    try:
        server = await loop.create_server(factory, p["host"], p["port"], backlog=BACKLOG)
    except OSError as e:
        refused(f"bind/listen on {p['host']} port {p['port']} failed: {e.strerror or e}")
    port = server.sockets[0].getsockname()[1]
    ready = {"ready": True, "scenario": p["scenario"], "host": p["host"], "port": port}
    if p["scenario"] == "echo":
        ready.update(size=p["size"], uuids=p["uuids"], per_connection=p["per_connection"])
    ready["threads"] = THREADS
    if p["variant_given"]:
        ready["variant"] = p["variant"]
    emit(ready)

    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    await stop

    server.close()  # stop accepting
    open_at_stop = 0
    if totals.open:
        totals.drained = loop.create_future()
        try:
            await asyncio.wait_for(asyncio.shield(totals.drained), STOP_WAIT_S)
        except asyncio.TimeoutError:
            open_at_stop = len(totals.open)
            for transport in list(totals.open):
                transport.abort()
            await asyncio.sleep(0.05)  # let connection_lost() add their counts

    if p["scenario"] == "echo":
        s, u, n = p["size"], p["uuids"], totals.requests
        final = {"scenario": "echo", "size": s, "uuids": u, "per_connection": p["per_connection"], "threads": THREADS,
                 "connections": totals.connections, "requests": n,
                 # every request read exactly S bytes and got one reply of S + 37U bytes
                 "uuids_generated": u * n, "bytes_in": s * n, "bytes_out": (s + 37 * u) * n,
                 "partial": totals.partial, "open_at_stop": open_at_stop}
    else:
        final = {"scenario": "http", "threads": THREADS, "requests": totals.requests,
                 "connections": totals.connections, "not_found": totals.not_found,
                 "bad_requests": totals.bad_requests, "open_at_stop": open_at_stop}
    if p["variant_given"]:
        final["variant"] = p["variant"]
    emit(final)
    sys.stdout.flush()
