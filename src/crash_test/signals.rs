//! Ctrl-C and SIGTERM during a crash test: they only raise a flag, which the run checks
//! between operations and while it waits, so it can kill the processes it started, remove
//! its data and still print the report of what it did.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C or SIGTERM arrived.
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Makes SIGINT and SIGTERM raise the flag instead of ending the process.
pub fn stop_on_signals() {
    extern "C" fn on_signal(_: libc::c_int) {
        // Only an atomic store: async-signal-safe.
        STOP.store(true, Ordering::Relaxed);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only stores to an atomic, which is async-signal-safe;
        // the function pointer has the `extern "C" fn(c_int)` signature `signal` expects.
        unsafe {
            libc::signal(signal, on_signal as *const () as libc::sighandler_t);
        }
    }
}
