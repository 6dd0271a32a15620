//! `DataMemory`: the node-wide budget for row data, with a hard limit.
//!
//! Every partition draws the memory for its rows from one `DataMemory` shared by all `ldm`
//! instances of the node. A reservation that would pass the limit fails with an error naming
//! the limit; whatever was reserved before stays intact. Freed memory goes back to the budget
//! at once, so deletes make room for later inserts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Rows' fixed-size parts are allocated in pages of this size.
pub const PAGE_BYTES: usize = 32 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "DataMemory exhausted: {requested_bytes} more bytes needed, {used_bytes} of the \
     {limit_bytes}-byte limit in use (raise the data memory limit or delete rows)"
)]
pub struct DataMemoryExhausted {
    pub requested_bytes: u64,
    pub used_bytes: u64,
    pub limit_bytes: u64,
}

/// The budget. Shared between threads (`Arc<DataMemory>`).
#[derive(Debug)]
pub struct DataMemory {
    limit_bytes: u64,
    used_bytes: AtomicU64,
}

impl DataMemory {
    pub fn new(limit_bytes: u64) -> Self {
        Self {
            limit_bytes,
            used_bytes: AtomicU64::new(0),
        }
    }

    /// Takes `bytes` from the budget, or fails without taking anything.
    pub fn reserve(&self, bytes: u64) -> Result<(), DataMemoryExhausted> {
        let mut used = self.used_bytes.load(Ordering::Relaxed);
        loop {
            let wanted = used
                .checked_add(bytes)
                .filter(|&total| total <= self.limit_bytes);
            let Some(wanted) = wanted else {
                return Err(DataMemoryExhausted {
                    requested_bytes: bytes,
                    used_bytes: used,
                    limit_bytes: self.limit_bytes,
                });
            };
            match self.used_bytes.compare_exchange_weak(
                used,
                wanted,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => used = actual,
            }
        }
    }

    /// Gives back `bytes` reserved earlier.
    ///
    /// # Panics
    /// If more is released than is in use: the accounting would be corrupt.
    pub fn release(&self, bytes: u64) {
        let before = self.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
        assert!(
            before >= bytes,
            "DataMemory released {bytes} bytes with only {before} in use"
        );
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes.load(Ordering::Relaxed)
    }

    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }
}

/// One structure's share of the budget (a partition's rows, its hash index, an ordered
/// index): reserves from the node's `DataMemory`, counts what it holds (so an operator sees
/// where the memory went: `kista_info.partitions`) and gives it all back when dropped.
#[derive(Debug)]
pub struct MemoryAccount {
    memory: Arc<DataMemory>,
    held_bytes: u64,
}

impl MemoryAccount {
    pub fn new(memory: Arc<DataMemory>) -> Self {
        Self {
            memory,
            held_bytes: 0,
        }
    }

    /// Takes `bytes` from the node's budget, or fails without taking anything.
    pub fn reserve(&mut self, bytes: u64) -> Result<(), DataMemoryExhausted> {
        self.memory.reserve(bytes)?;
        self.held_bytes += bytes;
        Ok(())
    }

    /// Gives back `bytes` this account reserved.
    ///
    /// # Panics
    /// If more is released than the account holds: the accounting would be corrupt.
    pub fn release(&mut self, bytes: u64) {
        assert!(
            bytes <= self.held_bytes,
            "released {bytes} bytes of an account holding {}",
            self.held_bytes
        );
        self.held_bytes -= bytes;
        self.memory.release(bytes);
    }

    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }
}

/// A structure dropped gives back all it held.
impl Drop for MemoryAccount {
    fn drop(&mut self) {
        self.memory.release(self.held_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stop_at_the_limit_and_releases_make_room_again() {
        let memory = DataMemory::new(100);
        memory.reserve(60).unwrap();
        let error = memory.reserve(50).unwrap_err();
        assert_eq!(
            error,
            DataMemoryExhausted {
                requested_bytes: 50,
                used_bytes: 60,
                limit_bytes: 100
            }
        );
        assert!(error.to_string().contains("100-byte limit"));
        assert_eq!(
            memory.used_bytes(),
            60,
            "a failed reservation takes nothing"
        );
        memory.reserve(40).unwrap();
        memory.release(60);
        memory.reserve(50).unwrap();
        assert_eq!(memory.used_bytes(), 90);
    }

    #[test]
    fn reservations_from_many_threads_never_pass_the_limit() {
        let memory = std::sync::Arc::new(DataMemory::new(10_000));
        let granted: u64 = (0..4)
            .map(|_| {
                let memory = memory.clone();
                std::thread::spawn(move || {
                    (0..5_000).filter(|_| memory.reserve(1).is_ok()).count() as u64
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .sum();
        assert_eq!(granted, 10_000);
        assert_eq!(memory.used_bytes(), 10_000);
    }

    #[test]
    #[should_panic(expected = "released")]
    fn releasing_more_than_reserved_is_caught() {
        DataMemory::new(10).release(1);
    }
}
