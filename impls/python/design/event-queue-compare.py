# Design measurement (not part of the benchmark): tagged tuples vs __slots__ classes as events,
# and "await q.put()/q.get()" vs the *_nowait fast paths (full()/empty() checks or try/except).
# W=1000, E=2000, Q=256. Usage: python3 event-queue-compare.py tuple|class await|nowait|tryexc
import asyncio, sys, time
W, E, Q = 1000, 2000, 256
mode, qmode = sys.argv[1], sys.argv[2]
class IntEvent:
    __slots__ = ("value",)
    def __init__(self, v): self.value = v
    def weight(self): return self.value
INT = 0
async def sender(q, n):
    put = q.put
    if mode == "tuple":
        if qmode == "tryexc":
            put_nowait = q.put_nowait
            for _ in range(n):
                ev = (INT, 10)
                try: put_nowait(ev)
                except asyncio.QueueFull: await put(ev)
        elif qmode == "await":
            for _ in range(n): await put((INT, 10))
        else:
            full, put_nowait = q.full, q.put_nowait
            for _ in range(n):
                ev = (INT, 10)
                if full(): await put(ev)
                else: put_nowait(ev)
    else:
        if qmode == "await":
            for _ in range(n): await put(IntEvent(10))
        else:
            full, put_nowait = q.full, q.put_nowait
            for _ in range(n):
                ev = IntEvent(10)
                if full(): await put(ev)
                else: put_nowait(ev)
async def receiver(q, n):
    total = 0
    get = q.get
    empty, get_nowait = q.empty, q.get_nowait
    for _ in range(n):
        if qmode == "tryexc":
            try: ev = get_nowait()
            except asyncio.QueueEmpty: ev = await get()
        elif qmode == "await": ev = await get()
        else: ev = await get() if empty() else get_nowait()
        if mode == "tuple":
            kind, p = ev
            if kind == INT: total += p
            else: total += len(p)
        else:
            total += ev.weight()
    return total
async def main():
    t0 = time.perf_counter()
    rs = []
    for _ in range(W):
        q = asyncio.Queue(Q)
        rs.append(asyncio.create_task(receiver(q, E)))
        asyncio.create_task(sender(q, E))
    s = sum(await asyncio.gather(*rs))
    print(mode, qmode, s == W*E*10, "%.0f ns/event" % ((time.perf_counter()-t0)/(W*E)*1e9))
asyncio.run(main())
