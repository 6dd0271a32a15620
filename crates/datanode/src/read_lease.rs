//! The read lease: how long this node may still answer reads from its own replicas.
//!
//! A read served by one replica alone is only as fresh as that replica. A node that was
//! paused, or cut off, may have been removed from the cluster while it could not tell, and
//! the others may have committed writes it never saw; answering reads from its stale rows
//! would hand a client an older value than one already acknowledged to another.
//!
//! The membership keeps the lease (NDB has no such thing; this is how leader leases in
//! Raft-based stores bound stale reads). Each heartbeat carries its send time on this
//! node's clock, and every member echoes it back at once. A member can begin removing this
//! node only after not hearing it for the heartbeat grace, which it cannot do before the
//! grace has passed since it received the heartbeat it echoed; the president additionally
//! stops echoing a survivor it may remove for not confirming a round. So until the oldest
//! of the members' latest echoes plus the grace, no membership without this node can have
//! committed a write. The lease ends [`LEASE_SHARE_OF_GRACE`] of the grace after that
//! oldest echo, the rest being slack for clocks that run at different rates.
//!
//! A node alone in its membership needs no lease; a node that lost a connection to a member
//! drops the lease until the member echoes again (a lost connection makes that member
//! suspect this node at once, without waiting for the grace).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::protocol::ErrorCode;

/// The share of the heartbeat grace, as (numerator, denominator), that a lease lasts past
/// the oldest echo: three quarters, so that at the smallest grace (two heartbeat
/// intervals) the lease still outlasts the interval until the next echo.
pub const LEASE_SHARE_OF_GRACE: (u64, u64) = (3, 4);

/// Until when this node may serve reads, on the runtime's clock; shared by the membership,
/// which renews it, and every block that reads a partition.
#[derive(Debug, Default)]
pub struct ReadLease {
    /// 0 until the first renewal: a node that has not heard every member echo serves no
    /// reads. `u64::MAX` when the node is alone in its membership.
    valid_until_ns: AtomicU64,
    /// Whether the node ever held a lease: until then it tells clients it does not serve
    /// yet (a cluster's first start), so they do not spend their retries on it.
    held_once: AtomicBool,
}

impl ReadLease {
    pub fn renew_until(&self, valid_until_ns: u64) {
        self.valid_until_ns.store(valid_until_ns, Ordering::Release);
        if valid_until_ns > 0 {
            self.held_once.store(true, Ordering::Release);
        }
    }

    pub fn was_ever_held(&self) -> bool {
        self.held_once.load(Ordering::Acquire)
    }

    pub fn valid_until_ns(&self) -> u64 {
        self.valid_until_ns.load(Ordering::Acquire)
    }

    /// Whether a read that arrived by `now_ns` may be answered from this node's replicas;
    /// otherwise the error to answer instead (temporary: another replica, or this one a
    /// moment later, can serve it).
    #[inline]
    pub fn check(&self, now_ns: u64) -> Result<(), (ErrorCode, String)> {
        if now_ns < self.valid_until_ns() {
            return Ok(());
        }
        let message = "this data node has not heard every other member confirm it is still \
                       in the cluster recently, so it serves no reads now (it may have been \
                       paused or cut off and removed)";
        Err((ErrorCode::ReadLeaseLapsed, message.to_string()))
    }
}

/// The lease a node holds when the oldest latest echo from its members carried
/// `oldest_echo_ns` and members are suspected after `grace_ns` of silence.
pub fn lease_end_ns(oldest_echo_ns: u64, grace_ns: u64) -> u64 {
    let (numerator, denominator) = LEASE_SHARE_OF_GRACE;
    oldest_echo_ns.saturating_add(grace_ns / denominator * numerator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_lease_serves_no_reads_until_renewed() {
        let lease = ReadLease::default();
        assert_eq!(
            lease.check(0).map_err(|e| e.0),
            Err(ErrorCode::ReadLeaseLapsed)
        );
        lease.renew_until(lease_end_ns(1_000, 400));
        assert!(lease.check(1_299).is_ok());
        assert!(lease.check(1_300).is_err(), "three quarters of the grace");
    }
}
