//! corobench-async-std-http: the shared httparse connection over futures-io,
//! a task per connection (accept loop: the library's server module).

use corobench_async_std::{BINARIES, SPEC};
use corobench_common::server::{self, futures_io, Totals};
use corobench_common::{self as common};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-async-std-http", BINARIES);
    let a = server::server_args_only(&SPEC, &futures_io::SERVERS);
    corobench_async_std::server::run(a, &TOTALS, |s| futures_io::http_conn(s, &TOTALS))
}
