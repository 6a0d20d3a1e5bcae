//! The process's limit on open files, which bounds how many connections the server can hold.
//!
//! Many systems start processes with a soft limit of 1,024 descriptors and a far higher hard
//! limit; a server that kept the soft one would fail to accept long before its connection
//! limit, leaving clients waiting in the listen backlog. So, as Go's runtime does for every
//! program, the soft limit is raised as far as the connection limit needs (never above the
//! hard one), and if even that is too low, the connection limit is lowered to fit and a
//! warning says so.

/// Descriptors kept for everything but client connections: the data directory's files
/// (log segments, SSTables, the manifest), the listener, connections waiting for a place or
/// being throttled, and the runtime's own.
pub const DESCRIPTORS_RESERVED: u64 = 1024;

/// Raises the soft limit on open files to fit `connections_wanted` connections and the
/// reserve, as far as the hard limit allows, and returns how many connections fit.
pub fn fit_connections(connections_wanted: usize) -> usize {
    let wanted = (connections_wanted as u64).saturating_add(DESCRIPTORS_RESERVED);
    let Some((available, hard)) = raise_open_files_limit(wanted) else {
        // Unknown limit: nothing to raise, nothing to fit to.
        return connections_wanted;
    };
    let fitting = usize::try_from(available.saturating_sub(DESCRIPTORS_RESERVED))
        .unwrap_or(usize::MAX)
        .max(1);
    if fitting < connections_wanted {
        tracing::warn!(
            connections_wanted,
            connections_max = fitting,
            open_files_soft_limit = available,
            open_files_hard_limit = hard,
            "the open-files limit cannot hold the connection limit; serving at most \
             {fitting} connections (raise `ulimit -n` to lift this)"
        );
    }
    fitting.min(connections_wanted)
}

/// Raises the soft limit on open files to `wanted` if it is lower, as far as the hard limit
/// allows, and returns the soft and hard limits then; `None` for unlimited or unknown.
pub fn raise_open_files_limit(wanted: u64) -> Option<(u64, u64)> {
    let (soft, hard) = open_files_limit()?;
    if soft < wanted {
        let raised = wanted.min(hard);
        if set_open_files_limit(raised, hard) {
            return Some((raised, hard));
        }
    }
    Some((soft, hard))
}

/// The soft and hard limits on open files; `None` for unlimited or unknown.
// `rlim_t` is a u64 on Linux, but not on every Unix.
#[allow(clippy::unnecessary_cast)]
fn open_files_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the call to fill in.
    let result = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if result != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let hard = if limit.rlim_max == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        limit.rlim_max as u64
    };
    Some((limit.rlim_cur as u64, hard))
}

/// Sets the soft limit on open files (the hard one unchanged); whether it took.
#[allow(clippy::unnecessary_cast)]
fn set_open_files_limit(soft: u64, hard: u64) -> bool {
    let limit = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: if hard == u64::MAX {
            libc::RLIM_INFINITY
        } else {
            hard as libc::rlim_t
        },
    };
    // SAFETY: `limit` is a valid rlimit; lowering nothing and raising the soft limit up to
    // the hard one is allowed to any process.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_limit_within_the_hard_limit_fits_whole() {
        let (_, hard) = open_files_limit().expect("a finite open-files limit");
        let wanted = usize::try_from(hard.saturating_sub(DESCRIPTORS_RESERVED))
            .unwrap()
            .min(2_000);
        assert_eq!(fit_connections(wanted), wanted);
        let (soft, _) = open_files_limit().unwrap();
        assert!(soft >= wanted as u64 + DESCRIPTORS_RESERVED, "{soft}");
    }

    #[test]
    fn a_connection_limit_past_the_hard_limit_is_lowered_to_it() {
        let (_, hard) = open_files_limit().expect("a finite open-files limit");
        if hard == u64::MAX {
            return;
        }
        let fitting = fit_connections(usize::MAX / 2);
        assert_eq!(fitting as u64, hard - DESCRIPTORS_RESERVED);
    }
}
