//! A data node's memory allocated and written at start (`touch_memory = true`), as NDB's
//! data nodes do with their DataMemory: a write later never waits for the kernel to find
//! it a page.
//!
//! Kista's rows, index buckets and tree nodes come from the C allocator, which grows a
//! thread's heap a page at a time as they are first written: a load of a million rows into
//! `kista up` took ~40,000 page faults and ~11,700 `mprotect` calls a data node (glibc grows
//! a thread's arena by exactly what it needs), about a tenth of the node's CPU. Here the
//! allocator is told to keep what it has (never trim, never give memory back), to serve
//! every thread from its one main heap and to take allocations up to 32 MiB from it; then
//! `data_memory` bytes are allocated in chunks, a byte written in each page, and freed
//! again, into that heap, where the node's allocations find them.
//!
//! The cost: the node holds `data_memory` resident from its start, and one heap serves
//! all of its threads (each thread keeps a cache of small chunks of its own, so only
//! larger allocations share the heap's lock). Linux with glibc only; elsewhere the setting
//! is refused with a message and the node starts without it.

use std::time::{Duration, Instant};

/// Bytes allocated at a time while touching: below glibc's largest threshold for
/// allocating apart from the heap (32 MiB), so every chunk comes from the heap.
const CHUNK_BYTES: usize = 1 << 20;

/// The smallest page there is: one byte written every this many is a write to every page.
const PAGE_BYTES: usize = 4096;

/// The largest allocation the heap serves once the allocator is set up; larger ones are
/// mapped apart (and faulted as they are written), as before.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const HEAP_ALLOCATION_BYTES_MAX: i32 = 32 << 20;

/// How the heap grows when it must: in steps of this much past the request, not a page.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const HEAP_GROWTH_PAD_BYTES: i32 = 64 << 20;

/// Why memory could not be touched.
#[derive(Debug, thiserror::Error)]
pub enum TouchError {
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    #[error("touch_memory needs Linux with glibc; the node starts without it")]
    Unsupported,
    #[error("the C allocator refused setting {0} (touch_memory); the node starts without it")]
    AllocatorRefused(&'static str),
    #[error(
        "touch_memory: data_memory is {wanted_mib} MiB but this machine has {available_mib} MiB \
         available; the node starts without touching it (lower data_memory to touch it)"
    )]
    NotEnoughMemory { wanted_mib: u64, available_mib: u64 },
}

/// Sets the allocator up to keep and share what it is given, then allocates and writes
/// `bytes` and frees them into its heap. Returns how long it took. Call it once, on the
/// process's first thread before any other thread allocates: glibc gives a thread its heap
/// at its first allocation, and a thread that has one keeps it.
pub fn touch(bytes: u64) -> Result<Duration, TouchError> {
    let started = Instant::now();
    // More than the machine has would end in the kernel killing the node mid-touch.
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    if let Some(available) = available_bytes(&meminfo).filter(|&available| bytes > available) {
        return Err(TouchError::NotEnoughMemory {
            wanted_mib: bytes >> 20,
            available_mib: available >> 20,
        });
    }
    keep_freed_memory()?;
    let mut chunks = Vec::new();
    let mut left = bytes;
    while left > 0 {
        let size = usize::try_from(left).map_or(CHUNK_BYTES, |left| left.min(CHUNK_BYTES));
        // Zeroed memory fresh from the kernel is not written by the allocator; a byte
        // written in each page makes the kernel supply it now.
        let mut chunk = vec![0u8; size];
        chunk
            .iter_mut()
            .step_by(PAGE_BYTES)
            .for_each(|byte| *byte = 1);
        // Read, as far as the compiler knows, so the writes before the free are kept.
        std::hint::black_box(&chunk);
        chunks.push(chunk);
        left -= size as u64;
    }
    drop(chunks);
    Ok(started.elapsed())
}

/// The memory the kernel says it can give without swapping (`MemAvailable` of
/// /proc/meminfo), if it says.
fn available_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// glibc's settings for a heap that keeps what it frees and serves every thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() -> Result<(), TouchError> {
    let settings = [
        // One heap (the main one) for every thread: memory freed by this thread is found
        // by the node's threads.
        (libc::M_ARENA_MAX, 1, "M_ARENA_MAX"),
        // -1: never trim the heap (mallopt(3)), so what is freed stays written.
        (libc::M_TRIM_THRESHOLD, -1, "M_TRIM_THRESHOLD"),
        (
            libc::M_MMAP_THRESHOLD,
            HEAP_ALLOCATION_BYTES_MAX,
            "M_MMAP_THRESHOLD",
        ),
        (libc::M_TOP_PAD, HEAP_GROWTH_PAD_BYTES, "M_TOP_PAD"),
    ];
    for (parameter, value, name) in settings {
        // SAFETY: mallopt only changes the allocator's parameters; glibc takes its own
        // lock to do so, so threads allocating meanwhile see the old or the new value.
        // Every value is within what mallopt(3) documents for its parameter.
        if unsafe { libc::mallopt(parameter, value) } != 1 {
            return Err(TouchError::AllocatorRefused(name));
        }
    }
    Ok(())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() -> Result<(), TouchError> {
    Err(TouchError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let meminfo = "MemTotal:       24683232 kB\nMemFree:        20000000 kB\n\
                       MemAvailable:   23370000 kB\nBuffers:          1000 kB\n";
        assert_eq!(available_bytes(meminfo), Some(23_370_000 << 10));
        assert_eq!(available_bytes("MemTotal: 1 kB\n"), None, "an old kernel's");
        assert_eq!(available_bytes(""), None);
    }

    #[test]
    fn more_than_the_machine_has_is_refused_before_anything_is_touched() {
        let refused = touch(u64::MAX >> 1).expect_err("no machine has 8 EiB");
        assert!(
            matches!(refused, TouchError::NotEnoughMemory { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("starts without touching"));
    }
}
