// Design measurement: timers/promises setTimeout vs new Promise(r => setTimeout(r, D)).
// Usage: node --max-semi-space-size=64 sleep-compare.js N D timers|newpromise
const N = +process.argv[2], D = +process.argv[3], mode = process.argv[4];
const { setTimeout: tsleep } = require('timers/promises');
let counter = 0, allDone; const fin = new Promise(r => allDone = r);
const psleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sleep = mode === 'timers' ? tsleep : psleep;
async function task() { await sleep(D); if (++counter === N) allDone(); }
const t0 = process.hrtime.bigint(); for (let i = 0; i < N; i++) task(); const t1 = process.hrtime.bigint();
fin.then(() => console.log(JSON.stringify({ spawn_ns: Number(t1 - t0), elapsed_ns: Number(process.hrtime.bigint() - t0), counter })));
