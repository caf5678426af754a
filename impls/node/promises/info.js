'use strict';
// The manifest's `info` command: one line of the runtime settings that shape the figures.
const v8 = require('v8');

const h = v8.getHeapStatistics();
const pool = process.env.UV_THREADPOOL_SIZE;
const flags = process.execArgv.length > 0 ? process.execArgv.join(' ') : 'none';
process.stdout.write(
  `node ${process.version}, V8 ${process.versions.v8}, heap limit ${Math.round(h.heap_size_limit / 2 ** 20)} MiB, `
  + `UV_THREADPOOL_SIZE ${pool === undefined ? '4 (default)' : pool}, node flags: ${flags}\n`,
);
