//! The rows of one partition replica, in memory drawn from `DataMemory`.
//!
//! Fixed parts live in pages of [`PAGE_BYTES`], one slot per row; a deleted row's slot is
//! reused by the next insert. Variable parts of up to [`VAR_INLINE_BYTES`] are kept in the
//! row's entry of the store's list, longer ones in separate buffers; either way their bytes
//! (rounded up, plus a buffer's bookkeeping) are reserved from `DataMemory` and released
//! when the row is deleted or shrinks. Pages stay with the partition once taken (as in NDB)
//! and go back to the budget when the partition is dropped.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::memory::{DataMemory, DataMemoryExhausted, MemoryAccount, PAGE_BYTES};

/// Bytes charged for a variable part besides its data: the buffer's bookkeeping (charged
/// for one kept inline too, so a row's charge does not depend on where its part is).
const VAR_PART_OVERHEAD_BYTES: u64 = 16;

/// A variable part this long or shorter (a short string or two, with their lengths) is
/// kept in the row's entry of the list, not in a buffer of its own: no allocation per row,
/// and no heap that grows a few pages at a time under a load, for the commonest rows.
const VAR_INLINE_BYTES: usize = 16;

/// A row's variable part: empty if it has none.
type VarPart = SmallVec<[u8; VAR_INLINE_BYTES]>;

/// A row's place in its partition: `page * rows_per_page + slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowId(pub u32);

/// Rows per block of [`NearbyRows`]: 64 map entries of a few words are a few KiB.
const NEARBY_BLOCK_BITS: u32 = 6;
const NEARBY_BLOCK_ROWS: u64 = 1 << NEARBY_BLOCK_BITS;

/// Hashes [`RowId`] keys so that rows of one aligned block of [`NEARBY_BLOCK_ROWS`] land
/// in neighbouring buckets of a hash map, and blocks spread as any hash spreads them.
/// A transaction's new rows take consecutive ids, and its commit visits them in id order:
/// with a plain hash every visit is a cache miss in a map that another transaction's rows
/// went through since, with this one they walk a few cache lines in order. The top bits
/// (hashbrown's tag) are mixed from the whole id, so neighbours rarely share a tag.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NearbyRows;

impl std::hash::BuildHasher for NearbyRows {
    type Hasher = NearbyRowsHasher;

    fn build_hasher(&self) -> NearbyRowsHasher {
        NearbyRowsHasher(0)
    }
}

/// The hasher of [`NearbyRows`]: meant for one `u32` (a [`RowId`]); other input is folded
/// in as FxHash would, so it stays a correct if unremarkable hash.
pub(crate) struct NearbyRowsHasher(u64);

impl std::hash::Hasher for NearbyRowsHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(MIX);
        }
    }

    fn write_u32(&mut self, row: u32) {
        self.0 = u64::from(row);
    }

    fn finish(&self) -> u64 {
        let row = self.0;
        let spread = (row >> NEARBY_BLOCK_BITS).wrapping_mul(MIX);
        // The product's high bits depend on all of the block number: fold them down.
        let block = (spread ^ (spread >> 32)) << NEARBY_BLOCK_BITS;
        let tag = row.wrapping_mul(MIX) & TAG_BITS;
        tag | (block & !TAG_BITS) | (row & (NEARBY_BLOCK_ROWS - 1))
    }
}

/// An odd constant with well-spread bits (2^64 / the golden ratio).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
/// The hash's top 7 bits: hashbrown's tag of a bucket.
const TAG_BITS: u64 = 0xFE00_0000_0000_0000;

pub struct RowStore {
    memory: MemoryAccount,
    slot_bytes: usize,
    rows_per_page: usize,
    pages: Vec<Box<[u8]>>,
    /// Per slot: the variable part, if the row is live and has one (else empty).
    var_parts: Vec<VarPart>,
    live: Vec<bool>,
    free_slots: Vec<RowId>,
    live_rows: usize,
}

fn var_charge(bytes: usize) -> u64 {
    if bytes == 0 {
        return 0;
    }
    (bytes as u64).div_ceil(8) * 8 + VAR_PART_OVERHEAD_BYTES
}

impl RowStore {
    /// Bytes of `DataMemory` it holds.
    pub fn held_bytes(&self) -> u64 {
        self.memory.held_bytes()
    }

    /// A store for rows whose fixed part is `fixed_bytes` long.
    pub fn new(memory: Arc<DataMemory>, fixed_bytes: usize) -> Self {
        let slot_bytes = fixed_bytes.max(1);
        assert!(
            slot_bytes <= PAGE_BYTES,
            "fixed part of {slot_bytes} bytes exceeds a page"
        );
        Self {
            memory: MemoryAccount::new(memory),
            slot_bytes,
            rows_per_page: PAGE_BYTES / slot_bytes,
            pages: Vec::new(),
            var_parts: Vec::new(),
            live: Vec::new(),
            free_slots: Vec::new(),
            live_rows: 0,
        }
    }

    pub fn live_rows(&self) -> usize {
        self.live_rows
    }

    /// Stores a new row. On error nothing changed.
    pub fn insert(&mut self, fixed: &[u8], var: &[u8]) -> Result<RowId, DataMemoryExhausted> {
        self.memory.reserve(var_charge(var.len()))?;
        let row = match self.free_slots.pop() {
            Some(row) => row,
            None => match self.add_page() {
                Ok(row) => row,
                Err(error) => {
                    self.memory.release(var_charge(var.len()));
                    return Err(error);
                }
            },
        };
        let index = row.0 as usize;
        self.slot_mut(row)[..fixed.len()].copy_from_slice(fixed);
        self.var_parts[index] = VarPart::from_slice(var);
        self.live[index] = true;
        self.live_rows += 1;
        Ok(row)
    }

    /// Replaces a live row's contents. On error the row is unchanged.
    pub fn update(
        &mut self,
        row: RowId,
        fixed: &[u8],
        var: &[u8],
    ) -> Result<(), DataMemoryExhausted> {
        let index = self.check_live(row);
        let old_charge = var_charge(self.var_parts[index].len());
        let new_charge = var_charge(var.len());
        if new_charge > old_charge {
            self.memory.reserve(new_charge - old_charge)?;
        } else {
            self.memory.release(old_charge - new_charge);
        }
        self.slot_mut(row)[..fixed.len()].copy_from_slice(fixed);
        self.var_parts[index] = VarPart::from_slice(var);
        Ok(())
    }

    /// Frees a live row; its slot and variable bytes are reused.
    pub fn delete(&mut self, row: RowId) {
        let index = self.check_live(row);
        let var = std::mem::take(&mut self.var_parts[index]);
        self.release_var(&var);
        self.live[index] = false;
        self.live_rows -= 1;
        self.free_slots.push(row);
    }

    /// The fixed and variable parts of a live row.
    pub fn get(&self, row: RowId) -> (&[u8], &[u8]) {
        let index = self.check_live(row);
        let (page, slot) = (index / self.rows_per_page, index % self.rows_per_page);
        let start = slot * self.slot_bytes;
        let fixed = &self.pages[page][start..start + self.slot_bytes];
        (fixed, &self.var_parts[index])
    }

    /// Moves the contents of live row `source` into live row `target` and frees `source`:
    /// how a committed update replaces the old version with its copy. Never needs memory.
    pub fn replace_with(&mut self, target: RowId, source: RowId) {
        assert_ne!(target, source, "a row cannot replace itself");
        let (target_index, source_index) = (self.check_live(target), self.check_live(source));
        let var = std::mem::take(&mut self.var_parts[source_index]);
        let (page, slot) = (
            source_index / self.rows_per_page,
            source_index % self.rows_per_page,
        );
        let start = slot * self.slot_bytes;
        let fixed: Vec<u8> = self.pages[page][start..start + self.slot_bytes].to_vec();
        self.slot_mut(target).copy_from_slice(&fixed);
        let old = std::mem::replace(&mut self.var_parts[target_index], var);
        self.release_var(&old);
        self.delete(source);
    }

    /// Every live row, in slot order.
    pub fn row_ids(&self) -> impl Iterator<Item = RowId> + '_ {
        self.row_ids_from(RowId(0))
    }

    /// Every live row from `first` on, in slot order: how a scan resumes.
    pub fn row_ids_from(&self, first: RowId) -> impl Iterator<Item = RowId> + '_ {
        let start = (first.0 as usize).min(self.live.len());
        let live = self.live[start..]
            .iter()
            .enumerate()
            .filter(|(_, &live)| live);
        live.map(move |(offset, _)| RowId((start + offset) as u32))
    }

    /// Gives back what a variable part that is gone was charged (nothing to give for a row
    /// without one: no touch of the shared `DataMemory` counter).
    fn release_var(&mut self, var: &VarPart) {
        if !var.is_empty() {
            self.memory.release(var_charge(var.len()));
        }
    }

    fn check_live(&self, row: RowId) -> usize {
        let index = row.0 as usize;
        assert!(
            self.live.get(index).copied().unwrap_or(false),
            "row {} is not live",
            row.0
        );
        index
    }

    fn slot_mut(&mut self, row: RowId) -> &mut [u8] {
        let index = row.0 as usize;
        let (page, slot) = (index / self.rows_per_page, index % self.rows_per_page);
        let start = slot * self.slot_bytes;
        &mut self.pages[page][start..start + self.slot_bytes]
    }

    /// Takes a page from the budget and returns its first slot (the rest become free).
    fn add_page(&mut self) -> Result<RowId, DataMemoryExhausted> {
        self.memory.reserve(PAGE_BYTES as u64)?;
        let first = self.pages.len() * self.rows_per_page;
        self.pages.push(vec![0; PAGE_BYTES].into_boxed_slice());
        self.var_parts
            .resize_with(first + self.rows_per_page, VarPart::new);
        self.live.resize(first + self.rows_per_page, false);
        let rest = (first + 1..first + self.rows_per_page).rev();
        self.free_slots
            .extend(rest.map(|index| RowId(index as u32)));
        Ok(RowId(first as u32))
    }
}

impl RowStore {
    /// Whether [`RowStore::release_some`] freed every row and page.
    pub fn is_released(&self) -> bool {
        self.var_parts.is_empty() && self.pages.is_empty()
    }

    /// Frees up to `rows` rows of a store being dropped, from its last slot, and its pages
    /// once no row is left: how many slots it freed.
    pub fn release_some(&mut self, rows: usize) -> usize {
        let mut released = 0;
        while released < rows {
            let Some(var) = self.var_parts.pop() else {
                break;
            };
            self.release_var(&var);
            released += 1;
        }
        if self.var_parts.is_empty() {
            self.memory.release((self.pages.len() * PAGE_BYTES) as u64);
            self.pages = Vec::new();
            self.live = Vec::new();
            self.free_slots = Vec::new();
            self.live_rows = 0;
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn store(limit_bytes: u64, fixed_bytes: usize) -> (Arc<DataMemory>, RowStore) {
        let memory = Arc::new(DataMemory::new(limit_bytes));
        let store = RowStore::new(memory.clone(), fixed_bytes);
        (memory, store)
    }

    fn nearby_hash(row: u32) -> u64 {
        use std::hash::BuildHasher;
        NearbyRows.hash_one(RowId(row))
    }

    #[test]
    fn rows_of_a_block_hash_side_by_side_with_tags_of_their_own_and_blocks_spread() {
        let block = 5 * NEARBY_BLOCK_ROWS as u32;
        let first = nearby_hash(block);
        let mut tags = std::collections::HashSet::new();
        for offset in 0..NEARBY_BLOCK_ROWS as u32 {
            let hash = nearby_hash(block + offset);
            // Bucket bits: the block's place plus the row's offset in it.
            assert_eq!(hash & !TAG_BITS, (first & !TAG_BITS) + u64::from(offset));
            tags.insert(hash >> 57);
        }
        assert!(
            tags.len() >= 60,
            "neighbours share tags: {} of 64",
            tags.len()
        );
        // Rows a power of two apart (what an id mask alone would pile into one bucket)
        // land in different places.
        let places: std::collections::HashSet<u64> = (0..1024u32)
            .map(|i| (nearby_hash(i << 16) >> NEARBY_BLOCK_BITS) & 0xffff)
            .collect();
        assert!(places.len() >= 1000, "only {} places", places.len());
        let map: HashMap<RowId, u32, NearbyRows> =
            (0..100_000).map(|row| (RowId(row * 3), row)).collect();
        assert!((0..100_000).all(|row| map[&RowId(row * 3)] == row));
    }

    #[test]
    fn short_and_long_variable_parts_read_back_and_are_charged_alike() {
        // A row's entry in the list is three words, whether its part is kept there or not.
        assert_eq!(std::mem::size_of::<VarPart>(), 24);
        let (memory, mut rows) = store(1 << 20, 8);
        let inline = [7u8; VAR_INLINE_BYTES];
        let spilled = [9u8; VAR_INLINE_BYTES + 1];
        let a = rows.insert(&[1; 8], &inline).unwrap();
        let b = rows.insert(&[2; 8], &spilled).unwrap();
        assert!(!rows.var_parts[a.0 as usize].spilled(), "kept in the list");
        assert!(
            rows.var_parts[b.0 as usize].spilled(),
            "in a buffer of its own"
        );
        assert_eq!(rows.get(a).1, inline);
        assert_eq!(rows.get(b).1, spilled);
        let charged =
            |parts: &[usize]| PAGE_BYTES as u64 + parts.iter().map(|&n| var_charge(n)).sum::<u64>();
        assert_eq!(memory.used_bytes(), charged(&[16, 17]));
        // Each way across the line, then one into the other's place.
        rows.update(a, &[1; 8], &spilled).unwrap();
        rows.update(b, &[2; 8], &inline).unwrap();
        assert_eq!((rows.get(a).1, rows.get(b).1), (&spilled[..], &inline[..]));
        assert_eq!(memory.used_bytes(), charged(&[17, 16]));
        rows.replace_with(a, b);
        assert_eq!(rows.get(a), (&[2u8; 8][..], &inline[..]));
        assert_eq!(memory.used_bytes(), charged(&[16]));
        rows.delete(a);
        assert_eq!(memory.used_bytes(), charged(&[]));
    }

    #[test]
    fn rows_are_stored_read_updated_and_deleted() {
        let (memory, mut rows) = store(1 << 20, 8);
        let a = rows.insert(&[1; 8], b"variable").unwrap();
        let b = rows.insert(&[2; 8], b"").unwrap();
        assert_eq!(rows.get(a), (&[1u8; 8][..], &b"variable"[..]));
        assert_eq!(rows.get(b), (&[2u8; 8][..], &b""[..]));
        rows.update(a, &[3; 8], b"longer variable part").unwrap();
        assert_eq!(rows.get(a).1, b"longer variable part");
        rows.delete(b);
        assert_eq!(rows.live_rows(), 1);
        assert_eq!(rows.row_ids().collect::<Vec<_>>(), [a]);
        assert_eq!(memory.used_bytes(), PAGE_BYTES as u64 + var_charge(20));
        drop(rows);
        assert_eq!(memory.used_bytes(), 0);
    }

    #[test]
    fn exhausting_data_memory_fails_cleanly_and_deletes_make_room_again() {
        // Room for one page and 100 bytes of variable parts.
        let (memory, mut rows) = store(PAGE_BYTES as u64 + 100, 1024);
        let per_page = PAGE_BYTES / 1024;
        let mut ids: Vec<RowId> = (0..per_page)
            .map(|n| rows.insert(&[n as u8; 1024], b"").unwrap())
            .collect();
        let error = rows.insert(&[0; 1024], b"").unwrap_err();
        assert_eq!(error.limit_bytes, PAGE_BYTES as u64 + 100);
        assert_eq!(
            rows.live_rows(),
            per_page,
            "the failed insert left nothing behind"
        );
        assert!(rows.update(ids[0], &[9; 1024], &[0; 200]).is_err());
        assert_eq!(
            rows.get(ids[0]),
            (&[0u8; 1024][..], &b""[..]),
            "a failed update leaves the row"
        );
        for (n, &id) in ids.iter().enumerate() {
            assert_eq!(
                rows.get(id).0[0],
                n as u8,
                "committed rows survive exhaustion"
            );
        }
        rows.delete(ids.pop().unwrap());
        let reused = rows.insert(&[7; 1024], b"").unwrap();
        assert_eq!(rows.get(reused).0[0], 7);
        assert_eq!(memory.used_bytes(), PAGE_BYTES as u64);
    }

    #[test]
    fn a_copy_replaces_its_row_without_new_memory() {
        let (memory, mut rows) = store(1 << 20, 4);
        let anchor = rows.insert(&[1; 4], b"old variable part").unwrap();
        let copy = rows.insert(&[2; 4], b"new").unwrap();
        let before = memory.used_bytes();
        rows.replace_with(anchor, copy);
        assert_eq!(rows.get(anchor), (&[2u8; 4][..], &b"new"[..]));
        assert_eq!(rows.row_ids().collect::<Vec<_>>(), [anchor]);
        assert!(memory.used_bytes() < before);
        assert_eq!(rows.row_ids_from(RowId(1)).count(), 0);
    }

    #[test]
    #[should_panic(expected = "is not live")]
    fn reading_a_deleted_row_is_caught() {
        let (_, mut rows) = store(1 << 20, 4);
        let row = rows.insert(&[0; 4], b"").unwrap();
        rows.delete(row);
        rows.get(row);
    }
}
