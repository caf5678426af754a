//! corobench-threads-http: a thread per connection over the shared httparse
//! connection (accept loop and stop: the library's server module).

use std::io::{Read, Write};
use std::net::TcpStream;

use corobench_common::server::{self, HttpConn, HttpNext, Totals};
use corobench_common::{self as common};
use corobench_threads::server::{read_error, ReadError};
use corobench_threads::{BINARIES, SERVERS, SPEC};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-threads-http", BINARIES);
    let a = server::server_args_only(&SPEC, &SERVERS);
    corobench_threads::server::run(&a, &TOTALS, false, http_conn)
}

fn http_conn(mut s: TcpStream) {
    let mut h = HttpConn::new();
    loop {
        match s.read(h.read_buf()) {
            Ok(0) => break,
            Ok(n) => h.received(n),
            Err(err) => match read_error(&err) {
                ReadError::Retry => continue,
                ReadError::LeftOpen => return,
                ReadError::Ended => break,
            },
        }
        let next = h.process();
        if !h.out.is_empty() {
            if s.write_all(&h.out).is_err() {
                break;
            }
            h.written();
        }
        if next == HttpNext::Close {
            break;
        }
    }
    TOTALS.add(&h.counts);
}
