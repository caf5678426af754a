//! `--watch-stdin`: the harness (or the ssh connection that carries the agent's stdin) keeps
//! stdin open for as long as it wants the load; EOF means it is gone, and a load that nobody
//! will read must not go on hitting the server. The process then stops at once, exit 4.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The one stderr line of an exit 4.
pub const STDIN_CLOSED: &str = "corobench-load: stdin closed: load stopped";

/// Set once the summary line is being printed: the load is over, and an EOF from then on
/// changes nothing (the run ended well; it must not become an exit 4).
static FINISHED: AtomicBool = AtomicBool::new(false);

/// Say that the load is over. Called holding stdout's lock, before the summary line: the
/// watcher decides under the same lock, so either the summary is printed and the exit is 0, or
/// it is not printed and the exit is 4.
pub fn load_finished() {
    FINISHED.store(true, Ordering::Release);
}

/// Start the thread that watches stdin (what arrives on it is read and ignored).
pub fn watch_stdin() -> io::Result<()> {
    std::thread::Builder::new().name("watch-stdin".into()).spawn(|| {
        let mut buf = [0u8; 1024];
        let mut stdin = io::stdin().lock();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // an unreadable stdin cannot tell us the harness is still there either
                Err(_) => break,
            }
        }
        // Holding stdout's lock, no interval or summary line is cut in the middle: what the
        // reader has is whole lines. Exiting the process ends every connection at once (the
        // kernel closes the sockets); the event loops are not asked to wind down.
        let _stdout = io::stdout().lock();
        if FINISHED.load(Ordering::Acquire) {
            return;
        }
        let mut err = io::stderr().lock();
        let _ = writeln!(err, "{STDIN_CLOSED}");
        // SAFETY: _exit ends the process without running anything else; every line already
        // written was flushed when it was written.
        unsafe { libc::_exit(4) }
    })?;
    Ok(())
}
