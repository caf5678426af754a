//! corobench-tokio-http: a task per connection, either common's httparse
//! connection loop over tokio's socket (`httparse`, the default) or hyper 1.x's http1 server
//! (`hyper`, keep-alive, over hyper-util's `TokioIo`); accept loop: the
//! library's server module.

use corobench_common::server::hyper_ping::Ping;
use corobench_common::server::{self, conn, Counts, Totals};
use corobench_common::{self as common};
use corobench_tokio::server::TokioStream;
use corobench_tokio::{BINARIES, SERVERS, SPEC};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Counts of the connections that ended, added once per connection (with
/// hyper: when hyper drops the connection's service, `Ping`).
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-tokio-http", BINARIES);
    let a = server::server_args_only(&SPEC, &SERVERS);
    if a.variant == "hyper" {
        corobench_tokio::server::run(a, &TOTALS, http_hyper_conn)
    } else {
        corobench_tokio::server::run(a, &TOTALS, http_conn)
    }
}

async fn http_conn(s: TcpStream) {
    TOTALS.add(&conn::http(&mut TokioStream(s)).await);
}

/// hyper's http1 server on one connection; the shared `Ping` service adds
/// the connection's counts to the totals when hyper drops it at the end.
async fn http_hyper_conn(s: TcpStream) {
    let ping = Ping::new(|c: &Counts| TOTALS.add(c));
    // Keep-alive is hyper's default; errors (a client gone, a malformed
    // request that hyper answered 400) only end this connection.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(s), ping)
        .await;
}
