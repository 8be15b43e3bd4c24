//! SIGINT and SIGTERM during an apply: instead of dying between the journal and sacctmgr, the
//! process notes the signal and the executor stops after the running step. sacctmgr runs in a
//! process group of its own (runner), so a Ctrl-C at the terminal reaches slurmplan only, and
//! the running step ends normally. Only this module touches signal dispositions.

//!
//! Raw libc here, and only here: no crate in the tree installs a signal handler safely (rustix
//! leaves `sigaction` to its unsafe runtime module), and a handler that only stores into an
//! atomic needs nothing more.

use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(sig: libc::c_int) {
    // async-signal-safe: one atomic store
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// While alive, SIGINT and SIGTERM are noted instead of ending the process; dropping it
/// restores what was there before.
pub struct StopOnSignal {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl StopOnSignal {
    /// Installed inside another `StopOnSignal` (an apply in a `reconcile --interval` loop), a
    /// signal the outer one noted is kept, so the inner work stops too; otherwise it starts
    /// from none.
    pub fn install() -> StopOnSignal {
        let mut old = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction is valid; the handler only stores into an atomic.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = note as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut previous) == 0 {
                    old.push((sig, previous));
                }
            }
        }
        let ours = note as extern "C" fn(libc::c_int) as libc::sighandler_t;
        if !old.iter().any(|(_, previous)| previous.sa_sigaction == ours) {
            RECEIVED.store(0, Ordering::SeqCst);
        }
        StopOnSignal { old }
    }

    /// The signal received since `install`, if any.
    pub fn received(&self) -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        for (sig, previous) in &self.old {
            // SAFETY: restores the disposition saved by `install`.
            unsafe {
                libc::sigaction(*sig, previous, std::ptr::null_mut());
            }
        }
    }
}

/// `SIGINT`, `SIGTERM`, or the number.
pub fn name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}
