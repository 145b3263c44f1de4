//! Ctrl-C for commands that write in steps (`ingest`): the first one asks
//! the command to stop after the step it is in (what it committed stays,
//! and it says how to go on); a second one ends the process at once, as
//! Ctrl-C does everywhere else. A commit is never torn either way: the
//! store's durability does not depend on finishing a step.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first Ctrl-C (SIGINT) or SIGTERM.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// The exit code of a command stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(EXIT_INTERRUPTED as libc::c_int) };
    }
}

/// Installs the handler; `STOP` tells whether it fired.
pub fn catch() -> &'static AtomicBool {
    #[cfg(unix)]
    // SAFETY: the handler only touches an atomic and calls _exit, both
    // async-signal-safe; `signal` replaces the disposition atomically.
    unsafe {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
    &STOP
}
