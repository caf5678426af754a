// Design measurement (not part of the benchmark): ways to copy an S-byte string, ns per copy.
// Usage: node str-clone-copies.js S
const S = +process.argv[2] || 10, N = 1e7;
const s = Buffer.alloc(S, 'x').toString('latin1');
const b = Buffer.from(s, 'latin1');
const u = new Uint8Array(b);
const variants = {
  'Buffer.from(str,latin1)': () => Buffer.from(s, 'latin1'),
  'Buffer.from(buf)': () => Buffer.from(b),
  'buf.toString(latin1)': () => b.toString('latin1'),
  'buf.latin1Slice': () => b.latin1Slice(0, S),
  'Uint8Array.slice': () => u.slice(),
  'new Uint8Array(u)': () => new Uint8Array(u),
  'Buffer.allocUnsafe+copy': () => { const c = Buffer.allocUnsafe(S); b.copy(c); return c; },
  'allocUnsafe+set': () => { const c = Buffer.allocUnsafe(S); c.set(b); return c; },
};
for (let rep = 0; rep < 2; rep++) for (const [k, f] of Object.entries(variants)) {
  let sum = 0; const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) sum += f().length;
  const dt = Number(process.hrtime.bigint() - t0) / N;
  if (rep) console.log(S, k.padEnd(26), dt.toFixed(1), 'ns', sum === N * S);
}
