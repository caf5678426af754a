'use strict';
// The server scenarios (docs/protocol.md "Servers: echo and http") on Node's event loop:
// echo over the `net` module, http over the `http` module. One JavaScript thread serves every
// connection, so the counts are plain variables (no per-connection totals to merge).

const crypto = require('crypto');
const http = require('http');
const net = require('net');
const { emit, refused } = require('../common/cli.js');

const THREADS = 1;
const STOP_WAIT_MS = 2000; // how long open connections may take to end after SIGTERM

function readyLine(p, port, extra) {
  const line = { ready: true, scenario: p.scenario, host: p.host, port, ...extra, threads: THREADS };
  if (p.variantGiven) line.variant = p.variant;
  emit(line);
}

/**
 * Listens on p.host:p.port, prints the ready line, and on SIGTERM/SIGINT closes the listener,
 * waits up to 2 s for the open connections to end, destroys the rest and prints the final
 * line made by finalLine(connections accepted, connections still open after the wait).
 */
function serve(server, p, readyExtra, finalLine) {
  const open = new Set();
  let listening = false;
  let accepted = 0;
  let drained = null;
  let stopping = false;
  server.on('connection', (socket) => {
    accepted++;
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      if (open.size === 0 && drained !== null) drained();
    });
  });
  server.on('error', (err) => {
    if (!listening) {
      refused(`bind/listen on ${p.host} port ${p.port} failed: ${err.code || ''} ${err.message}`);
    }
    // An accept that fails (EMFILE, ENFILE, ENOMEM) is the machine refusing a resource.
    refused(`accepted ${accepted} connections, then ${err.syscall || 'accept'} failed: ${err.message}`);
  });

  function stop() {
    if (stopping) return;
    stopping = true;
    server.close(); // stop accepting (http: also closes idle keep-alive connections)
    let finished = false;
    const finish = (openAtStop) => {
      if (finished) return;
      finished = true;
      emit(finalLine(accepted, openAtStop));
      process.exit(0);
    };
    if (open.size === 0) {
      finish(0);
      return;
    }
    const timer = setTimeout(() => {
      const left = open.size;
      // Finish once their 'close' events have run (echo counts the partial ones there).
      drained = () => finish(left);
      setTimeout(() => finish(left), 500).unref();
      for (const s of open) s.destroy();
    }, STOP_WAIT_MS);
    drained = () => {
      clearTimeout(timer);
      finish(0);
    };
  }
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  server.listen({ host: p.host, port: Number(p.port) }, () => {
    listening = true;
    readyLine(p, server.address().port, readyExtra);
  });
}

// ---------------------------------------------------------------------------------------------
// echo

function echo(p) {
  const size = Number(p.size);
  const uuids = Number(p.uuids);
  const perConnection = Number(p.perConnection);
  const replyLen = size + 37 * uuids;
  let requests = 0;
  let bytesIn = 0;
  let bytesOut = 0;
  let partial = 0;

  const server = net.createServer({ noDelay: true }, (socket) => {
    // The reply is built in place: request bytes are copied once, from each chunk straight
    // into the reply buffer, and the UUIDs are written after them. A chunk may end a request
    // and start the next one.
    let reply = null;
    let got = 0;
    let replies = 0;
    socket.on('data', (chunk) => {
      let off = 0;
      const len = chunk.length;
      while (off < len) {
        if (reply === null) reply = Buffer.allocUnsafe(replyLen);
        const n = Math.min(size - got, len - off);
        chunk.copy(reply, got, off, off + n);
        got += n;
        off += n;
        if (got === size) {
          let pos = size;
          for (let i = 0; i < uuids; i++) {
            reply[pos++] = 10; // '\n'
            pos += reply.write(crypto.randomUUID(), pos, 36, 'latin1');
          }
          const out = reply;
          requests++;
          bytesIn += size;
          bytesOut += replyLen;
          reply = null;
          got = 0;
          if (++replies === perConnection) {
            socket.end(out); // the R-th reply: write it and close the connection
            return;
          }
          socket.write(out);
        }
      }
    });
    socket.on('error', () => {}); // a reset ends the connection; 'close' follows
    socket.on('close', () => {
      if (got > 0) partial++; // EOF (or reset) inside a request
    });
  });

  serve(server, p, { size, uuids, per_connection: perConnection }, (connections, openAtStop) => {
    const line = {
      scenario: 'echo',
      size,
      uuids,
      per_connection: perConnection,
      threads: THREADS,
      connections,
      requests,
      uuids_generated: requests * uuids,
      bytes_in: bytesIn,
      bytes_out: bytesOut,
      partial,
      open_at_stop: openAtStop,
    };
    if (p.variantGiven) line.variant = p.variant;
    return line;
  });
}

// ---------------------------------------------------------------------------------------------
// http

const PING = '/ping/';
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const NOT_FOUND = 'Not Found';
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request';

function httpServer(p) {
  let requests = 0;
  let notFound = 0;
  let badRequests = 0;

  // Node's defaults otherwise: keep-alive (5 s idle timeout), Date header, llhttp parser.
  const server = http.createServer({ noDelay: true }, (req, res) => {
    const url = req.url;
    if (req.method === 'GET' && url.startsWith(PING)) {
      const token = url.slice(PING.length);
      if (TOKEN.test(token)) {
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': token.length });
        res.end(token);
        requests++;
        return;
      }
    }
    notFound++;
    res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': NOT_FOUND.length });
    res.end(NOT_FOUND);
  });
  // llhttp rejected the request line or headers. Without this listener Node answers 400 too,
  // but without a Content-Length; this is the handler Node's documentation shows.
  server.on('clientError', (err, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    badRequests++;
    socket.end(BAD_REQUEST);
  });

  serve(server, p, {}, (connections, openAtStop) => {
    const line = {
      scenario: 'http',
      threads: THREADS,
      requests,
      connections,
      not_found: notFound,
      bad_requests: badRequests,
      open_at_stop: openAtStop,
    };
    if (p.variantGiven) line.variant = p.variant;
    return line;
  });
}

module.exports = { echo, http: httpServer };
