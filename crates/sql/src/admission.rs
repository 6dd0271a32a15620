//! Who gets a connection, and for how long. A stranger must not be able to lock the
//! accounts out, so:
//!
//! - connections still logging in are bounded apart from the logged-in ones
//!   ([`LOGGING_IN_MAX`]): a new one closes the one logging in longest when the bound is
//!   reached, and none may take longer than `connect_timeout`;
//! - logged-in connections are bounded by `--connections-max`, and one more is kept for an
//!   account with CONNECTION_ADMIN or SUPER (MySQL's rule), so an administrator gets in
//!   when every ordinary slot is taken;
//! - a connection waiting for its client longer than `wait_timeout` is closed, and a
//!   client that stops reading its answers for [`WRITE_TIMEOUT`] is dropped.
//!
//! The timeouts are enforced by one thread ([`watch_timeouts`]) that closes the sockets of
//! connections that overstayed, which wakes their threads wherever they block.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::error::SqlError;

/// Connections that may be logging in at once: far more than honest clients ever have in
/// flight (a login takes a round trip or two), few enough that their threads cost little.
pub const LOGGING_IN_MAX: usize = 256;
/// Connections kept beyond `connections_max` for an administrator.
pub const ADMIN_CONNECTIONS: usize = 1;
/// MySQL's `connect_timeout` default: seconds a client has to log in.
pub const CONNECT_TIMEOUT_S_DEFAULT: u64 = 10;
/// MySQL's `wait_timeout` default: seconds a logged-in connection may wait for its
/// client.
pub const WAIT_TIMEOUT_S_DEFAULT: u64 = 28_800;
/// MySQL's `net_write_timeout`: a client that takes no bytes of its answer for this long
/// is gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the timeouts are checked: a connection overstays by at most this much.
const TIMEOUT_CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// The bounds on one front end's connections.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub connections_max: usize,
    pub connect_timeout: Duration,
    pub wait_timeout: Duration,
}

impl Limits {
    /// Sockets open at once at most: the logged-in connections, the administrator's, and
    /// those logging in.
    pub fn sockets_max(&self) -> usize {
        self.connections_max + ADMIN_CONNECTIONS + LOGGING_IN_MAX
    }
}

/// The logged-in connections, counted against [`Limits::connections_max`].
pub struct Admission {
    limits: Limits,
    logged_in: AtomicUsize,
}

/// A logged-in connection's place; given back when dropped.
pub struct Admitted(Arc<Admission>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.logged_in.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    pub fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            logged_in: AtomicUsize::new(0),
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A place for a connection that just logged in; an `administrator` may take the
    /// one kept beyond the limit. Error 1040 when none is left.
    pub fn admit(self: &Arc<Self>, administrator: bool) -> Result<Admitted, SqlError> {
        let max = self.limits.connections_max + if administrator { ADMIN_CONNECTIONS } else { 0 };
        let taken = self
            .logged_in
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < max).then_some(now + 1)
            });
        match taken {
            Ok(_) => Ok(Admitted(self.clone())),
            Err(_) => Err(too_many_connections(self.limits.connections_max)),
        }
    }
}

/// MySQL's refusal at the connection limit.
pub fn too_many_connections(connections_max: usize) -> SqlError {
    SqlError::new(
        1040,
        "08004",
        format!("Too many connections (the limit is {connections_max})"),
    )
}

/// Closes overstaying connections every [`TIMEOUT_CHECK_INTERVAL`] until `stopping`.
pub fn watch_timeouts(catalog: &Catalog, limits: Limits, stopping: &AtomicBool) {
    while !stopping.load(Ordering::SeqCst) {
        std::thread::sleep(TIMEOUT_CHECK_INTERVAL);
        (catalog.processes).close_overdue(limits.connect_timeout, limits.wait_timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_place_is_kept_for_an_administrator() {
        let admission = Admission::new(Limits {
            connections_max: 2,
            connect_timeout: Duration::from_secs(CONNECT_TIMEOUT_S_DEFAULT),
            wait_timeout: Duration::from_secs(WAIT_TIMEOUT_S_DEFAULT),
        });
        let first = admission.admit(false).unwrap();
        let _second = admission.admit(false).unwrap();
        assert_eq!(admission.admit(false).err().map(|e| e.code), Some(1040));
        let admin = admission.admit(true).unwrap();
        assert_eq!(
            admission.admit(true).err().map(|e| e.code),
            Some(1040),
            "one kept place, not one per administrator"
        );
        drop(first);
        assert_eq!(
            admission.admit(false).err().map(|e| e.code),
            Some(1040),
            "the administrator counts among the connections"
        );
        drop(admin);
        let _again = admission.admit(false).unwrap();
        assert!(
            admission.admit(true).is_ok(),
            "kept again for an administrator"
        );
    }
}
