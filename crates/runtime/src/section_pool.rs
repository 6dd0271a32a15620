//! Pooled buffers for signal sections (keys, rows, scan batches).
//!
//! A section is allocated on one thread and released on whichever thread executes the signal
//! that carries it, so slots are individually locked; the lock is uncontended because only
//! the owner of a handle touches its slot. Buffers keep their capacity when released, so a
//! steady stream of sections allocates nothing.

use std::ops::Deref;
use std::sync::{Mutex, MutexGuard, PoisonError};

use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::SectionHandle;

/// Sections a node may hold at once unless configured otherwise.
pub const SECTIONS_MAX_DEFAULT: u32 = 16_384;

/// A released buffer larger than this gives its memory back instead of keeping it.
const RETAINED_BYTES_MAX: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SectionPoolExhausted {
    #[error("all {0} sections are in use")]
    NoFreeSection(u32),
    #[error("section of {0} bytes exceeds the limit of {SECTION_BYTES_MAX} bytes")]
    TooLarge(usize),
}

#[derive(Default)]
struct Slot {
    bytes: Vec<u8>,
    in_use: bool,
}

pub struct SectionPool {
    slots: Box<[Mutex<Slot>]>,
    free: Mutex<Vec<u32>>,
}

/// Read access to a section's bytes: a pooled buffer, or a section that came inline.
pub struct SectionGuard<'a>(Guarded<'a>);

enum Guarded<'a> {
    Pooled(MutexGuard<'a, Slot>),
    Inline(&'a [u8]),
}

impl<'a> SectionGuard<'a> {
    /// The bytes of a section a signal carried inline.
    pub(crate) fn inline(bytes: &'a [u8]) -> Self {
        Self(Guarded::Inline(bytes))
    }
}

impl Deref for SectionGuard<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Guarded::Pooled(slot) => &slot.bytes,
            Guarded::Inline(bytes) => bytes,
        }
    }
}

impl SectionPool {
    pub fn new(sections_max: u32) -> Self {
        Self {
            slots: (0..sections_max).map(|_| Mutex::default()).collect(),
            free: Mutex::new((0..sections_max).rev().collect()),
        }
    }

    pub fn allocate(&self, bytes: &[u8]) -> Result<SectionHandle, SectionPoolExhausted> {
        self.allocate_leaving(bytes, 0)
    }

    /// Like [`SectionPool::allocate`], for a signal arriving from outside the node: fails
    /// while only the node's reserve is free ([`SectionPool::reserve`]), so that a flood
    /// of client operations waits in the transport (which retries) and never leaves the
    /// node's own work, such as a REDO or dictionary file write, without a section: a
    /// data node that cannot write its files stops.
    pub fn allocate_from_outside(
        &self,
        bytes: &[u8],
    ) -> Result<SectionHandle, SectionPoolExhausted> {
        self.allocate_leaving(bytes, self.reserve())
    }

    /// Sections only the node's own work may take: an eighth of the pool.
    pub fn reserve(&self) -> usize {
        self.slots.len() / 8
    }

    fn allocate_leaving(
        &self,
        bytes: &[u8],
        left_free: usize,
    ) -> Result<SectionHandle, SectionPoolExhausted> {
        let (handle, mut slot) = self.take_slot(bytes.len(), left_free)?;
        slot.bytes.clear();
        slot.bytes.extend_from_slice(bytes);
        Ok(handle)
    }

    /// A section holding `bytes` itself, not a copy: the slot's own buffer comes back
    /// (emptied) for the caller to fill next. For large writes handed to the `io`
    /// thread, which would otherwise be copied whole.
    pub fn allocate_owned(
        &self,
        bytes: Vec<u8>,
    ) -> Result<(SectionHandle, Vec<u8>), SectionPoolExhausted> {
        let (handle, mut slot) = self.take_slot(bytes.len(), 0)?;
        let mut previous = std::mem::replace(&mut slot.bytes, bytes);
        previous.clear();
        Ok((handle, previous))
    }

    /// A free slot for a section of `length` bytes, marked in use, and its lock; fails
    /// unless more than `left_free` slots are free.
    fn take_slot(
        &self,
        length: usize,
        left_free: usize,
    ) -> Result<(SectionHandle, MutexGuard<'_, Slot>), SectionPoolExhausted> {
        if length > SECTION_BYTES_MAX {
            return Err(SectionPoolExhausted::TooLarge(length));
        }
        let index = {
            let mut free = lock(&self.free);
            if free.len() <= left_free {
                return Err(SectionPoolExhausted::NoFreeSection(self.slots.len() as u32));
            }
            free.pop().expect("more slots free than left free")
        };
        let mut slot = lock(&self.slots[index as usize]);
        assert!(
            !slot.in_use,
            "section {index} was on the free list while in use"
        );
        slot.in_use = true;
        Ok((SectionHandle(index), slot))
    }

    /// # Panics
    /// On a handle that is not allocated: reading a released section would hand out another
    /// signal's data.
    pub fn read(&self, handle: SectionHandle) -> SectionGuard<'_> {
        let slot = lock(self.slot(handle));
        assert!(slot.in_use, "read of released section {}", handle.0);
        SectionGuard(Guarded::Pooled(slot))
    }

    /// # Panics
    /// On a double release, which would let two signals share one buffer.
    pub fn release(&self, handle: SectionHandle) {
        {
            let mut slot = lock(self.slot(handle));
            assert!(slot.in_use, "section {} released twice", handle.0);
            slot.in_use = false;
            if slot.bytes.capacity() > RETAINED_BYTES_MAX {
                slot.bytes = Vec::new();
            }
        }
        lock(&self.free).push(handle.0);
    }

    /// Sections currently allocated.
    pub fn in_use(&self) -> usize {
        self.slots.len() - lock(&self.free).len()
    }

    fn slot(&self, handle: SectionHandle) -> &Mutex<Slot> {
        let slot = self.slots.get(handle.0 as usize);
        slot.unwrap_or_else(|| panic!("section handle {} outside the pool", handle.0))
    }
}

/// A panic while holding a slot lock cannot leave a slot half-written in a way later users
/// could misread (`in_use` is set last), so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_allocated_read_and_reused() {
        let pool = SectionPool::new(2);
        let first = pool.allocate(b"row bytes").unwrap();
        assert_eq!(&*pool.read(first), b"row bytes");
        let second = pool.allocate(b"").unwrap();
        assert_eq!(pool.in_use(), 2);
        assert_eq!(
            pool.allocate(b"x"),
            Err(SectionPoolExhausted::NoFreeSection(2))
        );
        pool.release(first);
        let third = pool.allocate(b"again").unwrap();
        assert_eq!(third, first);
        assert_eq!(&*pool.read(third), b"again");
        pool.release(second);
        pool.release(third);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn an_owned_section_keeps_its_buffer_and_gives_back_the_slots() {
        let pool = SectionPool::new(1);
        let first = pool.allocate(b"old bytes").unwrap();
        pool.release(first);
        let bytes = b"handed over".to_vec();
        let pointer = bytes.as_ptr();
        let (handle, previous) = pool.allocate_owned(bytes).unwrap();
        assert_eq!(&*pool.read(handle), b"handed over");
        assert_eq!(pool.read(handle).as_ptr(), pointer, "not copied");
        assert!(
            previous.is_empty() && previous.capacity() >= 9,
            "the slot's buffer"
        );
        assert_eq!(
            pool.allocate_owned(Vec::new()).map(|(h, _)| h),
            Err(SectionPoolExhausted::NoFreeSection(1))
        );
        pool.release(handle);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn signals_from_outside_leave_the_reserve_to_the_nodes_own_work() {
        let pool = SectionPool::new(16);
        assert_eq!(pool.reserve(), 2);
        let outside: Vec<_> = (0..14)
            .map(|_| pool.allocate_from_outside(b"client op").unwrap())
            .collect();
        assert_eq!(
            pool.allocate_from_outside(b"one more"),
            Err(SectionPoolExhausted::NoFreeSection(16)),
            "the last two are the node's"
        );
        let file_write = pool.allocate(b"redo page").unwrap();
        let local = pool.allocate(b"local signal").unwrap();
        assert_eq!(pool.in_use(), 16);
        for handle in outside.into_iter().chain([file_write, local]) {
            pool.release(handle);
        }
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn oversized_sections_are_refused() {
        let pool = SectionPool::new(1);
        let huge = vec![0; SECTION_BYTES_MAX + 1];
        assert!(matches!(
            pool.allocate(&huge),
            Err(SectionPoolExhausted::TooLarge(_))
        ));
    }

    #[test]
    #[should_panic(expected = "released twice")]
    fn releasing_twice_is_caught() {
        let pool = SectionPool::new(1);
        let handle = pool.allocate(b"x").unwrap();
        pool.release(handle);
        pool.release(handle);
    }
}
