'use strict';
// corobench for Node.js: async functions and promises on the single-threaded event loop.
// See ../README.md for the design and docs/protocol.md for the rules.

const fs = require('fs');
const fsp = require('fs/promises');
const v8 = require('v8');
const { setTimeout: sleep } = require('timers/promises');
const { parseArgs, emit, fail, refused, num } = require('../common/cli.js');
const { Channel, EMPTY } = require('./channel.js');

const ID = 'node';
const VARIANTS = { blocking: ['promises', 'sync'] };
const THREADS = 1; // one JavaScript thread runs every task

// Describes how far the program got, for the exit-3 message when a resource is refused.
let progress = () => '';

// ---------------------------------------------------------------------------------------------
// chain

// One class per kind of message; each run uses one kind, so every call site stays monomorphic.
class IntEvent {
  constructor(value) {
    this.value = value;
  }

  weight() {
    return this.value;
  }
}

class StrEvent {
  // V8 strings are immutable: passing a string shares its characters.
  constructor(s) {
    this.s = s;
  }

  weight() {
    return this.s.length; // the payload is ASCII, so UTF-16 length == length in bytes
  }
}

class StrHolder {
  constructor(s) {
    this.s = s;
  }
}

class StrPtrEvent {
  // References the one shared holder object.
  constructor(holder) {
    this.holder = holder;
  }

  weight() {
    return this.holder.s.length;
  }
}

class StrCloneEvent {
  // Owns its own copy of the characters (a new string per event, see makeEventFactory).
  constructor(s) {
    this.s = s;
  }

  weight() {
    return this.s.length;
  }
}

function makeString(size) {
  // A flat one-byte string (String.prototype.repeat would build a tree of cons strings).
  return Buffer.alloc(size, 'x').toString('latin1');
}

function makeEventFactory(etype, esize, big) {
  switch (etype) {
    case 'int': {
      const v = big ? esize : Number(esize); // BigInt only when S > 2^53-1
      return () => new IntEvent(v);
    }
    case 'str': {
      const s = makeString(num(esize));
      return () => new StrEvent(s);
    }
    case 'str_ptr': {
      const holder = new StrHolder(makeString(num(esize)));
      return () => new StrPtrEvent(holder);
    }
    case 'str_clone': {
      const bytes = Buffer.from(makeString(num(esize)), 'latin1');
      // V8 strings are immutable and slice()/concat() may share or link the original, so the
      // copy is made by decoding the bytes into a new string: Buffer#toString('latin1')
      // allocates a new sequential one-byte V8 string (an external string with its own
      // malloc'd copy above ~1 MB) and copies the S bytes into it, once per event.
      return () => new StrCloneEvent(bytes.toString('latin1'));
    }
    default:
      throw new Error(`unknown etype ${etype}`);
  }
}

async function sender(ch, events, make) {
  for (let i = 0; i < events; i++) {
    const ev = make();
    if (!ch.trySend(ev)) await ch.send(ev);
  }
}

// Sums in a Number: exact because events * esize <= 2^53-1 (checked by the caller).
async function receiver(ch, events, counts) {
  let sum = 0;
  let i = 0;
  for (; i < events; i++) {
    let ev = ch.tryRecv();
    if (ev === EMPTY) ev = await ch.recv();
    sum += ev.weight();
  }
  counts.received += i;
  return sum;
}

// Same, for a receiver whose checksum can exceed 2^53-1 (only possible with huge -e/-s).
async function receiverBig(ch, events, counts) {
  let sum = 0n;
  let i = 0;
  for (; i < events; i++) {
    let ev = ch.tryRecv();
    if (ev === EMPTY) ev = await ch.recv();
    sum += BigInt(ev.weight());
  }
  counts.received += i;
  return sum;
}

async function chainPass(workers, events, queue, make, recv) {
  const counts = { received: 0 };
  const done = new Array(workers);
  const t0 = process.hrtime.bigint();
  for (let w = 0; w < workers; w++) {
    const ch = new Channel(queue);
    done[w] = recv(ch, events, counts);
    sender(ch, events, make);
  }
  const sums = await Promise.all(done);
  const elapsed = process.hrtime.bigint() - t0;
  let checksum = 0n;
  for (const s of sums) checksum += BigInt(s);
  return { checksum, received: BigInt(counts.received), elapsed };
}

async function chain(p) {
  const workers = num(p.workers);
  const events = num(p.events);
  const queue = num(p.queue);
  const warmup = num(p.warmup);
  const big = p.events * p.esize > BigInt(Number.MAX_SAFE_INTEGER);
  const make = makeEventFactory(p.etype, p.esize, big);
  const recv = big ? receiverBig : receiver;
  const expectedReceived = p.workers * p.events;
  let r;
  for (let pass = 0; pass <= warmup; pass++) {
    r = await chainPass(workers, events, queue, make, recv);
    if (r.checksum !== p.expected || r.received !== expectedReceived) {
      throw new Error(`pass ${pass}: checksum ${r.checksum} received ${r.received}, expected ${p.expected} and ${expectedReceived}`);
    }
  }
  emit({
    scenario: 'chain',
    workers: p.workers,
    events: p.events,
    queue: p.queue,
    etype: p.etype,
    esize: p.esize,
    threads: THREADS,
    warmup: p.warmup,
    received: r.received,
    checksum: r.checksum,
    elapsed_ns: r.elapsed,
  });
}

// ---------------------------------------------------------------------------------------------
// tasks

// Spawned in chunks: between two chunks, with the clock stopped, the heap is checked, because
// V8 aborts the whole process at its heap limit; stop cleanly (exit 3) at 80% of it instead.
const SPAWN_CHUNK = 65536;

async function tasks(p) {
  const n = num(p.tasks);
  const delay = num(p.sleep_ms); // timers clamp 0 to 1 ms
  const heapLimit = v8.getHeapStatistics().heap_size_limit;
  // A task is one timer promise that resolves to 1 after D ms (timers/promises' setTimeout
  // with a value): the promise is the task's state, nothing else is kept per task.
  const timers = new Array(n);
  let spawnNs = 0n;
  let spawned = 0n; // end of the last chunk
  for (let start = 0; start < n; start += SPAWN_CHUNK) {
    if (start > 0 && v8.getHeapStatistics().used_heap_size > 0.8 * heapLimit) {
      refused(`started ${start} of ${n} tasks: JavaScript heap limit reached (${Math.round(heapLimit / 2 ** 20)} MiB)`);
    }
    const end = Math.min(n, start + SPAWN_CHUNK);
    const t0 = process.hrtime.bigint();
    for (let i = start; i < end; i++) timers[i] = sleep(delay, 1);
    spawned = process.hrtime.bigint();
    spawnNs += spawned - t0;
  }
  const ones = await Promise.all(timers);
  let checksum = 0;
  for (let i = 0; i < n; i++) checksum += ones[i];
  // From before the first spawn until all have finished, less the heap checks between chunks.
  const elapsedNs = spawnNs + (process.hrtime.bigint() - spawned);
  emit({
    scenario: 'tasks',
    tasks: p.tasks,
    sleep_ms: p.sleep_ms,
    threads: THREADS,
    checksum,
    spawn_ns: spawnNs,
    elapsed_ns: elapsedNs,
  });
}

// ---------------------------------------------------------------------------------------------
// blocking

// fs.promises: every open/read/write/close is a request to the libuv thread pool.
let openFiles = 0; // files the running tasks hold open (for the exit-3 message)

async function ioPromises(size) {
  const buf = Buffer.allocUnsafe(size);
  const src = await fsp.open('/dev/urandom', 'r');
  openFiles++;
  try {
    let got = 0;
    while (got < size) {
      const { bytesRead } = await src.read(buf, got, size - got, null);
      if (bytesRead === 0) throw new Error('unexpected end of /dev/urandom');
      got += bytesRead;
    }
  } finally {
    await src.close();
    openFiles--;
  }
  const dst = await fsp.open('/dev/null', 'w');
  openFiles++;
  let put = 0;
  try {
    while (put < size) {
      const { bytesWritten } = await dst.write(buf, put, size - put, null);
      put += bytesWritten;
    }
  } finally {
    await dst.close();
    openFiles--;
  }
  return put;
}

// Synchronous fs calls inside an async task: the system calls run on the event-loop thread.
async function ioSync(size) {
  const buf = Buffer.allocUnsafe(size);
  const src = fs.openSync('/dev/urandom', 'r');
  try {
    let got = 0;
    while (got < size) {
      const n = fs.readSync(src, buf, got, size - got, null);
      if (n === 0) throw new Error('unexpected end of /dev/urandom');
      got += n;
    }
  } finally {
    fs.closeSync(src);
  }
  const dst = fs.openSync('/dev/null', 'w');
  let put = 0;
  try {
    while (put < size) put += fs.writeSync(dst, buf, put, size - put, null);
  } finally {
    fs.closeSync(dst);
  }
  return put;
}

async function blockingIteration(io, n, size) {
  const running = new Array(n);
  for (let i = 0; i < n; i++) running[i] = io(size);
  const written = await Promise.all(running);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += written[i];
  return sum;
}

// libuv's thread pool: UV_THREADPOOL_SIZE threads (default 4, at least 1, at most 1024), as
// libuv reads it when the first request is queued.
function threadpoolSize() {
  const env = process.env.UV_THREADPOOL_SIZE;
  if (env === undefined) return 4;
  const v = parseInt(env, 10) || 0; // libuv: atoi()
  return Math.min(Math.max(v, 1), 1024);
}

async function blocking(p) {
  const n = num(p.tasks);
  const iterations = num(p.iterations);
  const size = num(p.bytes);
  const io = p.variant === 'sync' ? ioSync : ioPromises;
  progress = () => ` (${openFiles} files open by ${n} tasks)`;
  await blockingIteration(io, n, size); // unmeasured warm-up iteration
  let checksum = 0n;
  const t0 = process.hrtime.bigint();
  for (let it = 0; it < iterations; it++) {
    checksum += BigInt(await blockingIteration(io, n, size));
  }
  const elapsed = process.hrtime.bigint() - t0;
  emit({
    scenario: 'blocking',
    tasks: p.tasks,
    iterations: p.iterations,
    bytes: p.bytes,
    variant: p.variant,
    threads: THREADS,
    pool_threads: p.variant === 'sync' ? 0 : threadpoolSize(),
    checksum,
    elapsed_ns: elapsed,
  });
}

// ---------------------------------------------------------------------------------------------

const RESOURCE_CODES = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN', 'ENOSPC']);

function fatal(err) {
  if (err && RESOURCE_CODES.has(err.code)) {
    refused(`${err.syscall || 'resource'} refused: ${err.message}${progress()}`);
  }
  if (err instanceof RangeError && /allocation|Invalid (array|string|typed array) length|out of memory/i.test(err.message)) {
    refused(`memory refused: ${err.message}`);
  }
  process.stderr.write(`${String((err && err.stack) || err).split('\n')[0]}\n`);
  process.exit(1);
}

function main() {
  const p = parseArgs(process.argv.slice(2), {
    id: ID,
    variants: VARIANTS,
    singleThreaded: true,
    cpuprofile: false,
  });
  // The servers' modules (net, http, crypto) are loaded only for them: they would add to the
  // memory of the batch scenarios.
  const server = (name) => (q) => require('./servers.js')[name](q);
  const run = { chain, tasks, blocking, echo: server('echo'), http: server('http') }[p.scenario];
  let r;
  try {
    r = run(p);
  } catch (err) {
    fatal(err);
  }
  if (r instanceof Promise) r.catch(fatal);
}

main();
