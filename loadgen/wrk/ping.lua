-- wrk script for corobench's http scenario (docs/protocol.md): GET /ping/<token>, and at the
-- end ONE JSON line on stdout that the harness reads.
--
--   wrk -t1 -c80 -d10s --latency -s loadgen/wrk/ping.lua http://127.0.0.1:PORT
--
-- The token is static: wrk then builds the request once and sends the same bytes every time,
-- without calling Lua per request, which is wrk's fastest mode (a request() or response()
-- function would run Lua for every request). So wrk checks only the status of each response
-- (non-2xx/3xx are counted in errors.status), not the body: corobench-load is the client that
-- verifies every reply; wrk is here as the field's reference for raw request rate.
-- wrk adds the Host header itself; HTTP/1.1 keep-alive is its default.

wrk.method = "GET"
wrk.path = "/ping/wrk-static-token_0123456789"

-- Lines of the text report that wrk prints itself go to stdout too; the JSON line is the last
-- one and starts with {"tool":"wrk".
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"tool":"wrk","requests":%d,"duration_s":%.6f,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"count":%d,"mean":%.3f,"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"max":%.3f}}\n',
    summary.requests, summary.duration / 1e6, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    summary.requests, latency.mean, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9), latency.max))
end
