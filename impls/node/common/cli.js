'use strict';
// Shared helper for the Node.js implementations of corobench (docs/protocol.md):
// flag parsing and validation, the checksum range check and the one JSON output line.
//
// Bad input   => exit 2, one line on stderr, nothing on stdout (fail()).
// Refused resource => exit 3, one line on stderr (refused()).

const net = require('net');

const MAX_CHECKSUM = (1n << 63n) - 1n;

const ETYPES = ['int', 'str', 'str_ptr', 'str_clone'];

// Server flags (docs/protocol.md "Servers"), shared by echo and http.
const SERVER_FLAGS = [
  { key: 'host', long: '--host', kind: 'host', def: '127.0.0.1' },
  { key: 'port', long: '--port', kind: 'range', min: 0, max: 65535, def: 0n },
  { key: 'threads', long: '--threads', kind: 'count', def: null },
  { key: 'variant', long: '--variant', kind: 'variant', def: null },
  { key: 'allow_remote', long: '--allow-remote', kind: 'switch', def: false },
];

// kind: 'count' (integer >= 1), 'count0' (integer >= 0), 'range' (integer in min..max), 'etype',
// 'variant', 'string', 'host' (an IP literal), 'switch' (no value)
const SPECS = {
  chain: [
    { key: 'workers', short: '-w', long: '--workers', kind: 'count', def: 1000n },
    { key: 'events', short: '-e', long: '--events', kind: 'count', def: 10000n },
    { key: 'queue', short: '-q', long: '--queue', kind: 'count', def: 256n },
    { key: 'etype', short: '-t', long: '--etype', kind: 'etype', def: 'int' },
    { key: 'esize', short: '-s', long: '--esize', kind: 'count', def: 10n },
    { key: 'threads', long: '--threads', kind: 'count', def: null },
    // --warmup 0 is accepted: it is the default and asks for no warm-up pass.
    { key: 'warmup', long: '--warmup', kind: 'count0', def: 0n },
    { key: 'cpuprofile', long: '--cpuprofile', kind: 'string', def: null },
  ],
  tasks: [
    { key: 'tasks', short: '-n', long: '--tasks', kind: 'count', def: 10000n },
    { key: 'sleep_ms', short: '-d', long: '--sleep-ms', kind: 'count0', def: 10000n },
    { key: 'threads', long: '--threads', kind: 'count', def: null },
  ],
  blocking: [
    { key: 'tasks', short: '-n', long: '--tasks', kind: 'count', def: 1000n },
    { key: 'iterations', short: '-i', long: '--iterations', kind: 'count', def: 1000n },
    { key: 'bytes', short: '-b', long: '--bytes', kind: 'count', def: 10n },
    { key: 'variant', long: '--variant', kind: 'variant', def: null },
    { key: 'threads', long: '--threads', kind: 'count', def: null },
  ],
  echo: [
    ...SERVER_FLAGS,
    { key: 'size', long: '--size', kind: 'range', min: 1, max: 1048576, def: 17n },
    { key: 'uuids', long: '--uuids', kind: 'range', min: 0, max: 1000, def: 5n },
    // replies after which the server closes a connection; 0: until the client closes it
    { key: 'perConnection', long: '--per-connection', kind: 'range', min: 0, max: 1000000000, def: 0n },
  ],
  http: SERVER_FLAGS,
};

const SERVER_SCENARIOS = new Set(['echo', 'http']);

/** True for 127.0.0.0/8 and ::1 (in any spelling). */
function isLoopback(host) {
  const family = net.isIP(host) === 6 ? 'ipv6' : 'ipv4';
  const loopback = new net.BlockList();
  loopback.addSubnet('127.0.0.0', 8, 'ipv4');
  loopback.addAddress('::1', 'ipv6');
  return loopback.check(host, family);
}

function oneLine(msg) {
  return String(msg).replace(/\s*\n\s*/g, ' ').trim();
}

/** Bad input: one line on stderr, nothing on stdout, exit 2. */
function fail(msg) {
  process.stderr.write(`${oneLine(msg)}\n`);
  process.exit(2);
}

/** The machine refused a resource: one line on stderr, exit 3. */
function refused(msg) {
  process.stderr.write(`${oneLine(msg)}\n`);
  process.exit(3);
}

function parseInteger(flag, text, min) {
  if (!/^[+-]?[0-9]+$/.test(text)) fail(`${flag}: not an integer: '${text}'`);
  const v = BigInt(text);
  if (v < BigInt(min)) {
    fail(min === 0 ? `${flag}: must not be negative: ${text}` : `${flag}: must be positive: ${text}`);
  }
  if (v > MAX_CHECKSUM) fail(`${flag}: too large: ${text}`);
  return v;
}

function parseEtype(flag, text) {
  if (/^[0-3]$/.test(text)) return ETYPES[Number(text)];
  if (ETYPES.includes(text)) return text;
  fail(`${flag}: unknown event type '${text}' (expected 0-3 or ${ETYPES.join(', ')})`);
  return undefined;
}

/**
 * Parse `<scenario> [flags]`.
 * opts.id        manifest id (for messages)
 * opts.variants  { scenario: [variants] }, the first listed is the default
 * opts.singleThreaded  refuse --threads other than 1
 * opts.cpuprofile      whether --cpuprofile is supported (false for Node)
 * Returns { scenario, ...params } with counts as BigInt, or exits 2.
 */
function parseArgs(argv, opts) {
  if (argv.length === 0) fail(`missing scenario (expected one of: ${Object.keys(SPECS).join(', ')})`);
  const scenario = argv[0];
  const spec = Object.prototype.hasOwnProperty.call(SPECS, scenario) ? SPECS[scenario] : null;
  if (spec === null) fail(`unknown scenario '${scenario}' (expected one of: ${Object.keys(SPECS).join(', ')})`);

  const byName = new Map();
  for (const f of spec) {
    byName.set(f.long, f);
    if (f.short) byName.set(f.short, f);
  }
  const seen = new Map();
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i];
    let name = arg;
    let value;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      if (eq >= 0) {
        name = arg.slice(0, eq);
        value = arg.slice(eq + 1);
      }
    } else if (!arg.startsWith('-') || arg.length === 1) {
      fail(`unexpected argument '${arg}'`);
    }
    const f = byName.get(name);
    if (f === undefined) fail(`unknown flag '${name}' for scenario ${scenario}`);
    if (seen.has(f.key)) fail(`flag ${f.long} given more than once`);
    if (f.kind === 'switch') {
      if (value !== undefined) fail(`flag ${f.long} takes no value`);
      value = '';
    } else if (value === undefined) {
      if (i + 1 >= argv.length) fail(`flag ${name} needs a value`);
      value = argv[++i];
    }
    seen.set(f.key, value);
  }

  const out = { scenario };
  for (const f of spec) {
    const given = seen.has(f.key);
    const text = seen.get(f.key);
    const flag = f.long;
    switch (f.kind) {
      case 'count':
        out[f.key] = given ? parseInteger(flag, text, 1) : f.def;
        break;
      case 'count0':
        out[f.key] = given ? parseInteger(flag, text, 0) : f.def;
        break;
      case 'range':
        out[f.key] = given ? parseInteger(flag, text, f.min) : f.def;
        if (out[f.key] > BigInt(f.max)) fail(`${flag}: out of range ${f.min} .. ${f.max}: ${text}`);
        break;
      case 'etype':
        out[f.key] = given ? parseEtype(flag, text) : f.def;
        break;
      case 'host':
        if (!given) out[f.key] = f.def;
        else if (net.isIP(text) === 0) fail(`${flag}: not an IP address literal: '${text}'`);
        else out[f.key] = text;
        break;
      case 'switch':
        out[f.key] = given;
        break;
      case 'variant': {
        const variants = (opts.variants && opts.variants[scenario]) || [];
        out.variantGiven = given;
        if (!given) {
          out[f.key] = variants.length > 0 ? variants[0] : null;
        } else if (variants.includes(text)) {
          out[f.key] = text;
        } else {
          fail(variants.length === 0 ? `${flag}: ${opts.id} has no variants of ${scenario} (got '${text}')` : `${flag}: unknown variant '${text}' for ${opts.id} (expected one of: ${variants.join(', ')})`);
        }
        break;
      }
      case 'string':
        if (given && text === '') fail(`${flag}: empty value`);
        out[f.key] = given ? text : f.def;
        break;
      default:
        throw new Error(`bad spec kind ${f.kind}`);
    }
  }

  if (out.cpuprofile !== null && out.cpuprofile !== undefined && !opts.cpuprofile) {
    fail(`--cpuprofile is not supported by ${opts.id}`);
  }
  if (out.threads !== null && opts.singleThreaded && out.threads !== 1n) {
    fail(`--threads ${out.threads}: ${opts.id} is single-threaded by design (only --threads 1 is accepted)`);
  }

  if (SERVER_SCENARIOS.has(scenario)) {
    if (!out.allow_remote && !isLoopback(out.host)) {
      fail(`--host ${out.host}: not a loopback address (give --allow-remote to serve other addresses)`);
    }
    return out;
  }

  // Expected checksum must lie in 0 .. 2^63-1.
  let expected;
  if (scenario === 'chain') expected = out.workers * out.events * out.esize;
  else if (scenario === 'tasks') expected = out.tasks;
  else expected = out.tasks * out.iterations * out.bytes;
  if (expected > MAX_CHECKSUM) {
    fail(`expected checksum ${expected} is beyond 2^63-1`);
  }
  out.expected = expected;
  return out;
}

/**
 * Build the one output line. Values may be strings, Numbers (integers) or BigInts;
 * BigInts are printed exactly (JSON.stringify cannot print them).
 */
function jsonLine(obj) {
  const parts = [];
  for (const [k, v] of Object.entries(obj)) {
    let s;
    if (typeof v === 'bigint') s = v.toString();
    else if (typeof v === 'number') {
      if (!Number.isSafeInteger(v)) throw new Error(`${k}: not a safe integer: ${v}`);
      s = String(v);
    } else s = JSON.stringify(v);
    parts.push(`${JSON.stringify(k)}:${s}`);
  }
  return `{${parts.join(',')}}`;
}

/** Print the result line on stdout (the only thing ever printed there). */
function emit(obj) {
  process.stdout.write(`${jsonLine(obj)}\n`);
}

/** Count as a Number; only for counts that size loops or allocations. */
function num(v) {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) refused(`cannot handle a count of ${v}: beyond 2^53-1`);
  return Number(v);
}

module.exports = { parseArgs, emit, jsonLine, fail, refused, num, MAX_CHECKSUM, ETYPES };
