//! corobench-threads-echo: `concurrent` (the default) starts a thread per
//! connection, the original's second round; `serial` serves each connection
//! on the accepting thread, one at a time, the original's first round
//! (accept loop and stop: the library's server module).

use std::io::{Read, Write};
use std::net::TcpStream;

use corobench_common::server::{self, Counts, Echo, Scenario, Totals};
use corobench_common::{self as common};
use corobench_threads::server::{read_error, ReadError};
use corobench_threads::{BINARIES, SERVERS, SPEC};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-threads-echo", BINARIES);
    let a = server::server_args_only(&SPEC, &SERVERS);
    debug_assert_eq!(a.scenario, Scenario::Echo);
    let echo = Echo::new(&a);
    corobench_threads::server::run(&a, &TOTALS, a.variant == "serial", move |s| echo_conn(s, echo))
}

fn echo_conn(mut s: TcpStream, e: Echo) {
    let mut buf = e.buffer();
    let mut c = Counts::default();
    'conn: loop {
        let mut got = 0;
        while got < e.size {
            match s.read(&mut buf[got..e.size]) {
                Ok(0) => {
                    e.ended(got, &mut c);
                    break 'conn;
                }
                Ok(n) => got += n,
                Err(err) => match read_error(&err) {
                    ReadError::Retry => {}
                    ReadError::LeftOpen => return,
                    ReadError::Ended => {
                        e.ended(got, &mut c);
                        break 'conn;
                    }
                },
            }
        }
        e.make_reply(&mut buf, &mut c);
        if s.write_all(&buf).is_err() {
            break;
        }
        if e.replied(&mut c) {
            break;
        }
    }
    TOTALS.add(&c);
}
