"""Design measurement: the echo server as asyncio.Protocol (what cbserve.py does) against asyncio
streams (StreamReader.readexactly + StreamWriter.write). Prints the port, serves until SIGTERM,
then prints the process CPU time. Load it with corobench-load, e.g.

    python design/echo-compare.py protocol|streams [uvloop]
    corobench-load echo --target 127.0.0.1:PORT --connections 20000 --concurrency 50
"""

import asyncio
import os
import signal
import sys
from uuid import uuid4

S, U = 17, 5


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = bytearray()

    def data_received(self, data):
        buf = self.buf
        if not buf and len(data) == S:
            self.transport.write(data + "".join(["\n" + str(uuid4()) for _ in range(U)]).encode())
            return
        buf += data
        while len(buf) >= S:
            self.transport.write(bytes(buf[:S]) + "".join(["\n" + str(uuid4()) for _ in range(U)]).encode())
            del buf[:S]


async def handle(reader, writer):
    try:
        while True:
            data = await reader.readexactly(S)
            writer.write(data + "".join(["\n" + str(uuid4()) for _ in range(U)]).encode())
    except asyncio.IncompleteReadError:
        pass
    finally:
        writer.close()


async def main(mode):
    loop = asyncio.get_running_loop()
    if mode == "protocol":
        server = await loop.create_server(Echo, "127.0.0.1", 0, backlog=4096)
    else:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    await stop
    t = os.times()
    print(f"{mode}: cpu {t.user + t.system:.2f} s", flush=True)


if __name__ == "__main__":
    factory = None
    if len(sys.argv) > 2 and sys.argv[2] == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as r:
        r.run(main(sys.argv[1]))
