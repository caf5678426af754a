"""corobench scenarios on an asyncio event loop, shared by python-asyncio and python-uvloop.

The two runtimes run this same code; they differ only in the event loop that
asyncio.Runner creates (asyncio's default selector loop or uvloop's libuv loop).
See ../README.md for the design and docs/protocol.md for the rules.
"""

import asyncio
import errno
import os
import sys
from asyncio import QueueEmpty, QueueFull
from time import perf_counter_ns

from cbcli import emit, parse_args, refused, refused_now

VARIANTS = {"blocking": ("to_thread", "sync")}
THREADS = 1  # one Python thread runs every task (to_thread's pool threads are reported in README)

# ------------------------------------------------------------------------------------------
# chain

# An event is a tagged tuple (kind, payload): measured faster than one small __slots__ class
# per kind with a weight() method (see README). The payload is
#   INT        the int S (one shared int object; the tuple is built per event)
#   STR        the one shared str (CPython strings are immutable: passing shares them)
#   STR_PTR    a reference to the one shared StrHolder object
#   STR_CLONE  a bytearray copy of the string's bytes, new for every event
INT, STR, STR_PTR, STR_CLONE = 0, 1, 2, 3
KINDS = {"int": INT, "str": STR, "str_ptr": STR_PTR, "str_clone": STR_CLONE}


class StrHolder:
    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s


async def sender(q, events, kind, payload):
    put, put_nowait = q.put, q.put_nowait
    if kind == STR_CLONE:
        # str and bytes are immutable and CPython shares them where it can (s[:], str(s),
        # bytes(b), ''.join([s]) all return the same object; 1-character strings and
        # 1-byte bytes are cached singletons), so the copy is a new mutable bytearray:
        # one object plus one buffer holding a memcpy of the S bytes.
        for _ in range(events):
            ev = (kind, bytearray(payload))
            try:
                put_nowait(ev)
            except QueueFull:
                await put(ev)
    else:
        for _ in range(events):
            ev = (kind, payload)
            try:
                put_nowait(ev)
            except QueueFull:
                await put(ev)


async def receiver(q, events, counts):
    get, get_nowait = q.get, q.get_nowait
    total = 0
    received = 0
    for _ in range(events):
        try:
            ev = get_nowait()
        except QueueEmpty:
            ev = await get()
        kind, payload = ev
        if kind == INT:
            total += payload
        elif kind == STR:
            total += len(payload)  # ASCII payload: len() in code points == bytes
        elif kind == STR_PTR:
            total += len(payload.s)
        else:
            total += len(payload)
        received += 1
    counts[0] += received
    return total


async def chain_pass(workers, events, queue, kind, payload):
    create_task = asyncio.create_task
    Queue = asyncio.Queue
    counts = [0]
    receivers = []
    senders = []
    t0 = perf_counter_ns()
    for _ in range(workers):
        q = Queue(queue)
        receivers.append(create_task(receiver(q, events, counts)))
        senders.append(create_task(sender(q, events, kind, payload)))
    sums = await asyncio.gather(*receivers)
    elapsed = perf_counter_ns() - t0
    await asyncio.gather(*senders)  # already finished; collects them outside the timing
    return sum(sums), counts[0], elapsed


async def chain(p):
    kind = KINDS[p["etype"]]
    size = p["esize"]
    if kind == INT:
        payload = size
    else:
        try:
            text = "x" * size
        except (MemoryError, OverflowError) as e:
            refused(f"memory refused for a string of {size} bytes: {type(e).__name__}")
        if kind == STR:
            payload = text
        elif kind == STR_PTR:
            payload = StrHolder(text)
        else:
            payload = text.encode("ascii")
    expected_received = p["workers"] * p["events"]
    for pass_no in range(p["warmup"] + 1):
        checksum, received, elapsed = await chain_pass(p["workers"], p["events"], p["queue"], kind, payload)
        if checksum != p["expected"] or received != expected_received:
            raise RuntimeError(
                f"pass {pass_no}: checksum {checksum} received {received}, "
                f"expected {p['expected']} and {expected_received}"
            )
    emit({
        "scenario": "chain",
        "workers": p["workers"],
        "events": p["events"],
        "queue": p["queue"],
        "etype": p["etype"],
        "esize": p["esize"],
        "threads": THREADS,
        "warmup": p["warmup"],
        "received": received,
        "checksum": checksum,
        "elapsed_ns": elapsed,
    })


# ------------------------------------------------------------------------------------------
# tasks


async def tasks(p):
    n = p["tasks"]
    delay = p["sleep_ms"] / 1000  # asyncio.sleep(0) just yields once, without a timer
    sleep = asyncio.sleep
    create_task = asyncio.create_task
    done = asyncio.get_running_loop().create_future()
    counter = 0

    async def task():
        nonlocal counter
        await sleep(delay)
        counter += 1
        if counter == n:
            done.set_result(None)

    running = []
    append = running.append
    reserve = bytearray(1 << 20)  # freed to be able to report a MemoryError
    t0 = perf_counter_ns()
    try:
        for _ in range(n):
            append(create_task(task()))
    except MemoryError:
        del reserve
        refused_now(f"started {len(running)} of {n} tasks: out of memory (MemoryError)")
    t1 = perf_counter_ns()
    del reserve
    await done
    t2 = perf_counter_ns()
    del running
    emit({
        "scenario": "tasks",
        "tasks": p["tasks"],
        "sleep_ms": p["sleep_ms"],
        "threads": THREADS,
        "checksum": counter,
        "spawn_ns": t1 - t0,
        "elapsed_ns": t2 - t0,
    })


# ------------------------------------------------------------------------------------------
# blocking


def do_io(size):
    """Read `size` bytes from /dev/urandom and write them to /dev/null with os-level calls."""
    fd = os.open("/dev/urandom", os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, size)
        if len(data) < size:
            parts = [data]
            got = len(data)
            while got < size:
                chunk = os.read(fd, size - got)
                if not chunk:
                    raise EOFError("unexpected end of /dev/urandom")
                parts.append(chunk)
                got += len(chunk)
            data = b"".join(parts)
    finally:
        os.close(fd)
    fd = os.open("/dev/null", os.O_WRONLY | os.O_CLOEXEC)
    try:
        written = os.write(fd, data)
        if written < size:
            view = memoryview(data)
            while written < size:
                written += os.write(fd, view[written:])
    finally:
        os.close(fd)
    return written


async def io_to_thread(size):
    # The whole open/read/close/open/write/close sequence runs on one thread of the loop's
    # default executor (ThreadPoolExecutor, min(32, cores + 4) threads).
    return await asyncio.to_thread(do_io, size)


async def io_sync(size):
    # The system calls run on the event-loop thread and block it.
    return do_io(size)


async def blocking_iteration(io, n, size):
    create_task = asyncio.create_task
    running = [create_task(io(size)) for _ in range(n)]
    return sum(await asyncio.gather(*running))


async def blocking(p):
    io = io_sync if p["variant"] == "sync" else io_to_thread
    n, size = p["tasks"], p["bytes"]
    await blocking_iteration(io, n, size)  # unmeasured warm-up iteration
    checksum = 0
    t0 = perf_counter_ns()
    for _ in range(p["iterations"]):
        checksum += await blocking_iteration(io, n, size)
    elapsed = perf_counter_ns() - t0
    emit({
        "scenario": "blocking",
        "tasks": p["tasks"],
        "iterations": p["iterations"],
        "bytes": p["bytes"],
        "variant": p["variant"],
        "threads": THREADS,
        # to_thread: the loop's default executor, a ThreadPoolExecutor whose max_workers is
        # min(32, os.cpu_count() + 4) (Python 3.11: all CPUs, not the affinity mask)
        "pool_threads": 0 if p["variant"] == "sync" else min(32, (os.cpu_count() or 1) + 4),
        "checksum": checksum,
        "elapsed_ns": elapsed,
    })


# ------------------------------------------------------------------------------------------

RESOURCE_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.ENOSPC}


def run(prog_id, loop_factory=None, argv=None):
    """Entry point: parse the flags and run the scenario on a loop made by loop_factory."""
    p = parse_args(sys.argv[1:] if argv is None else argv, prog_id, variants=VARIANTS)
    if p["scenario"] in ("echo", "http"):
        import cbserve  # httptools is imported only for the servers

        scenario = cbserve.serve
    else:
        scenario = {"chain": chain, "tasks": tasks, "blocking": blocking}[p["scenario"]]
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(scenario(p))
    except SystemExit:
        raise
    except MemoryError:
        refused_now(f"{p['scenario']}: memory refused (MemoryError)")
    except OSError as e:
        if e.errno in RESOURCE_ERRNOS:
            refused(f"{p['scenario']}: {e.strerror} ({errno.errorcode.get(e.errno, e.errno)})")
        raise
    except RuntimeError as e:
        if "can't start new thread" in str(e):
            refused(f"{p['scenario']}: thread creation refused: {e}")
        raise


def main(prog_id, loop_factory=None):
    try:
        run(prog_id, loop_factory)
    except SystemExit:
        raise
    except BaseException as e:  # any other failure: one line on stderr, exit 1
        sys.stderr.write(" ".join(f"{prog_id}: {type(e).__name__}: {e}".split()) + "\n")
        raise SystemExit(1)
