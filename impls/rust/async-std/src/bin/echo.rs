//! corobench-async-std-echo: the shared futures-io echo connection, a task
//! per connection (accept loop: the library's server module).

use corobench_async_std::{BINARIES, SPEC};
use corobench_common::server::{self, futures_io, Echo, Totals};
use corobench_common::{self as common};

/// Counts of the connections that ended, added once per connection.
static TOTALS: Totals = Totals::new();

fn main() {
    common::hand_off("corobench-async-std-echo", BINARIES);
    let a = server::server_args_only(&SPEC, &futures_io::SERVERS);
    let echo = Echo::new(&a);
    corobench_async_std::server::run(a, &TOTALS, move |s| futures_io::echo_conn(s, echo, &TOTALS))
}
