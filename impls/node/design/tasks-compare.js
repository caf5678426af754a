// Design measurement: the independent reference for node's tasks scenario, a program that
// awaits N timer promises and nothing else. Compare peak RSS with main.js tasks:
//   /usr/bin/time -f %M node design/tasks-compare.js N D   vs   node promises/main.js tasks -n N -d D
// Usage: node tasks-compare.js N D
'use strict';
const { setTimeout: sleep } = require('timers/promises');
const n = Number(process.argv[2]);
const d = Number(process.argv[3]);
const t0 = process.hrtime.bigint();
const timers = [];
for (let i = 0; i < n; i++) timers.push(sleep(d, 1));
const t1 = process.hrtime.bigint();
Promise.all(timers).then((ones) => {
  let sum = 0;
  for (const x of ones) sum += x;
  const t2 = process.hrtime.bigint();
  console.log(JSON.stringify({ tasks: n, checksum: sum, spawn_ns: Number(t1 - t0), elapsed_ns: Number(t2 - t0) }));
});
