// Design measurement (not part of the benchmark): own Channel with sync fast paths vs
// the same Channel awaiting every operation vs the npm package async-channel@0.2.0.
// W=1000 pairs, E=10000 int events, Q=256. Usage (async-channel from a scratch dir):
//   (cd /tmp/achan && npm init -y && npm install async-channel@0.2.0)
//   NODE_PATH=/tmp/achan/node_modules node channel-compare.js mine|mineawait|ac
// async-channel is required lazily, only for the 'ac' mode
const { Channel, EMPTY } = require('../promises/channel.js');
const W = 1000, E = 10000, Q = 256;
class IntEvent { constructor(v) { this.value = v; } weight() { return this.value; } }
async function runMine() {
  const t0 = process.hrtime.bigint(); const done = [];
  for (let w = 0; w < W; w++) {
    const ch = new Channel(Q);
    done.push((async () => { let s = 0; for (let i = 0; i < E; i++) { let ev = ch.tryRecv(); if (ev === EMPTY) ev = await ch.recv(); s += ev.weight(); } return s; })());
    (async () => { for (let i = 0; i < E; i++) { const ev = new IntEvent(10); if (!ch.trySend(ev)) await ch.send(ev); } })();
  }
  const r = await Promise.all(done); return [Number(process.hrtime.bigint() - t0) / 1e6, r.reduce((a, b) => a + b)];
}
async function runMineAwait() {
  const t0 = process.hrtime.bigint(); const done = [];
  for (let w = 0; w < W; w++) {
    const ch = new Channel(Q);
    done.push((async () => { let s = 0; for (let i = 0; i < E; i++) { const ev = await ch.recv(); s += ev.weight(); } return s; })());
    (async () => { for (let i = 0; i < E; i++) { await ch.send(new IntEvent(10)); } })();
  }
  const r = await Promise.all(done); return [Number(process.hrtime.bigint() - t0) / 1e6, r.reduce((a, b) => a + b)];
}
async function runAC() {
  const { Channel: AC } = require('async-channel');
  const t0 = process.hrtime.bigint(); const done = [];
  for (let w = 0; w < W; w++) {
    const ch = new AC(Q);
    done.push((async () => { let s = 0; for (let i = 0; i < E; i++) { const ev = await ch.get(); s += ev.weight(); } return s; })());
    (async () => { for (let i = 0; i < E; i++) { await ch.push(new IntEvent(10)); } })();
  }
  const r = await Promise.all(done); return [Number(process.hrtime.bigint() - t0) / 1e6, r.reduce((a, b) => a + b)];
}
(async () => {
  const which = process.argv[2];
  const f = { mine: runMine, mineawait: runMineAwait, ac: runAC }[which];
  for (let i = 0; i < 3; i++) console.log(which, ...(await f()));
})();
