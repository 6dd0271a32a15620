//! Asking the CPU to load memory before it is read: the indexes' answer to a lookup in a
//! structure larger than the cache, where each step otherwise waits for memory in turn.

/// Bytes of a CPU cache line.
const CACHE_LINE_BYTES: usize = 64;

/// Asks the CPU to bring every cache line of `items` in at once (a no-op where the CPU
/// offers no hint). An ordered-index node is searched by bisection, and in a tree larger
/// than the cache each probe into a node not read lately (a leaf, for keys that come in no
/// order) waited for memory in turn, about six waits a node; asked for together, the waits
/// overlap. Measured on random inserts into eight indexes of 250,000 `INT` keys each:
/// 690-880 ns an insert before, 390-440 ns after.
#[inline]
pub(crate) fn prefetch<T>(items: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = items.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(items)).step_by(CACHE_LINE_BYTES) {
            // SAFETY: `start + offset` lies within `items`; and a prefetch only hints the
            // cache: it reads nothing into the program and never faults, whatever the
            // address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = items;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_a_slice_of_any_size_changes_nothing() {
        let entries: Vec<u16> = (0..1000).collect();
        for length in [0, 1, 31, 32, 33, 1000] {
            prefetch(&entries[..length]);
        }
        prefetch(&[(); 10]);
        assert_eq!(entries, (0..1000).collect::<Vec<u16>>());
    }
}
