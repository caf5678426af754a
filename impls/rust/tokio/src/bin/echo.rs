//! corobench-tokio-echo: a task per connection, reading and writing with
//! `AsyncReadExt`/`AsyncWriteExt` (accept loop: the library's server module).

use corobench_common::server::{self, Counts, Echo, Totals};
use corobench_common::{self as common};
use corobench_tokio::{BINARIES, SERVERS, SPEC};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-tokio-echo", BINARIES);
    let a = server::server_args_only(&SPEC, &SERVERS);
    let echo = Echo::new(&a);
    corobench_tokio::server::run(a, &TOTALS, |s| echo_conn(s, echo))
}

async fn echo_conn(mut s: TcpStream, e: Echo) {
    let mut buf = e.buffer();
    let mut c = Counts::default();
    'conn: loop {
        let mut got = 0;
        while got < e.size {
            match s.read(&mut buf[got..e.size]).await {
                Ok(0) | Err(_) => {
                    e.ended(got, &mut c);
                    break 'conn;
                }
                Ok(n) => got += n,
            }
        }
        e.make_reply(&mut buf, &mut c);
        if s.write_all(&buf).await.is_err() {
            break;
        }
        if e.replied(&mut c) {
            break;
        }
    }
    TOTALS.add(&c);
}
