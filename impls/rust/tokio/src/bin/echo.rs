//! corobench-tokio-echo: a task per connection running common's echo loop
//! over tokio's socket (`AsyncReadExt`/`AsyncWriteExt`; accept loop: the
//! library's server module).

use corobench_common::server::{self, conn, Echo, Totals};
use corobench_common::{self as common};
use corobench_tokio::server::TokioStream;
use corobench_tokio::{BINARIES, SERVERS, SPEC};
use tokio::net::TcpStream;

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-tokio-echo", BINARIES);
    let a = server::server_args_only(&SPEC, &SERVERS);
    let echo = Echo::new(&a);
    corobench_tokio::server::run(a, &TOTALS, |s| echo_conn(s, echo))
}

async fn echo_conn(s: TcpStream, e: Echo) {
    TOTALS.add(&conn::echo(&mut TokioStream(s), e).await);
}
