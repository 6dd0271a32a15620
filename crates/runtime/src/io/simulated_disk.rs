//! The simulation's disk: in-memory files that fail the way a real disk does when its machine
//! dies.
//!
//! A write goes to the operating system's cache first; only `sync` makes it durable. When
//! the node crashes ([`SimulatedDisk::crash`]), each file keeps what was synced, then a
//! seeded number of its later writes in the order they were made (a cache writes back in
//! the background), then possibly the first bytes of the next one (a torn write), and loses
//! the rest; the file keeps the length its writes gave it, so what was lost reads as zeros
//! (as on file systems that journal a file's size before its data). A disk can also be
//! given a capacity, past which writes fail as on a full disk.
//!
//! The disk outlives the node's blocks: a [`SimulatedDisk`] is a handle, and the file-system
//! block of a restarted node gets a clone of the crashed one's, as a restarted process finds
//! its files again. (Files themselves are never lost: the model keeps a created file and its
//! name, as a file system that journals its metadata does.)

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{checked_relative, unknown_file, FileStorage};
use crate::rng::Rng;

/// A write the file took but has not synced.
struct PendingWrite {
    offset: usize,
    data: Vec<u8>,
}

/// A file's bytes are kept only as far as they were written: past that, up to its length,
/// it holds zeros (so allocating a large file costs nothing).
#[derive(Default)]
struct SimulatedFile {
    /// What survives a crash.
    durable: Vec<u8>,
    /// Writes since the last sync, oldest first; reads see them applied over `durable`.
    pending: Vec<PendingWrite>,
    /// `durable` with `pending` applied: what the file holds now.
    current: Vec<u8>,
    /// The file's length (allocated or written to), never less than `current`'s.
    length: usize,
}

impl SimulatedFile {
    fn write(&mut self, offset: usize, data: &[u8]) {
        write_into(&mut self.current, offset, data);
        self.length = self.length.max(self.current.len());
        self.pending.push(PendingWrite {
            offset,
            data: data.to_vec(),
        });
    }

    fn sync(&mut self) {
        for write in self.pending.drain(..) {
            write_into(&mut self.durable, write.offset, &write.data);
        }
    }

    /// Sets the length, durably at once (a length is metadata, which the file system
    /// journals): bytes past a shorter length are gone.
    fn set_length(&mut self, length: usize) {
        self.sync();
        self.current.truncate(length);
        self.durable.truncate(length);
        self.length = length;
    }

    /// The bytes from `start` to `end` (within the length), zeros past what was written.
    fn read(&self, start: usize, end: usize, buffer: &mut Vec<u8>) {
        let end = end.min(self.length);
        let start = start.min(end);
        let written = self.current.len().clamp(start, end);
        buffer.extend_from_slice(&self.current[start..written]);
        buffer.resize(buffer.len() + (end - written), 0);
    }

    /// Keeps the durable bytes, `kept` whole pending writes in order, and `torn_bytes` of
    /// the next one; loses the rest.
    fn crash(&mut self, kept: usize, torn_bytes: usize) {
        let mut survivor = std::mem::take(&mut self.durable);
        for write in self.pending.iter().take(kept) {
            write_into(&mut survivor, write.offset, &write.data);
        }
        if let Some(torn) = self.pending.get(kept) {
            let torn_bytes = torn_bytes.min(torn.data.len());
            write_into(&mut survivor, torn.offset, &torn.data[..torn_bytes]);
        }
        self.pending.clear();
        self.current.clone_from(&survivor);
        self.durable = survivor;
        self.length = self.length.max(self.current.len());
    }

    /// Bytes this file takes on the disk.
    fn size_bytes(&self) -> usize {
        self.length
    }
}

fn write_into(contents: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if contents.len() < end {
        contents.resize(end, 0);
    }
    contents[offset..end].copy_from_slice(data);
}

#[derive(Default)]
struct DiskState {
    files: HashMap<PathBuf, SimulatedFile>,
    /// Open file numbers of the node's current life.
    open: HashMap<u32, PathBuf>,
    next_file: u32,
    /// How many times each path was opened, over every life of the node.
    opens: HashMap<PathBuf, u64>,
    /// Bytes all files may take together; `None`: unbounded.
    capacity_bytes: Option<usize>,
    /// Files whose every open is refused, as a file with the wrong owner or mode is.
    unreadable: HashSet<PathBuf>,
}

impl DiskState {
    fn file(&mut self, file: u32) -> std::io::Result<&mut SimulatedFile> {
        let path = self.open.get(&file).ok_or_else(|| unknown_file(file))?;
        Ok(self.files.entry(path.clone()).or_default())
    }

    fn used_bytes(&self) -> usize {
        self.files.values().map(SimulatedFile::size_bytes).sum()
    }

    /// Fails as a full disk would when `file` growing to `end` bytes passes the capacity.
    fn check_room(&mut self, file: u32, end: usize) -> std::io::Result<()> {
        let growth = end.saturating_sub(self.file(file)?.size_bytes());
        match self.capacity_bytes {
            Some(capacity) if self.used_bytes() + growth > capacity => Err(std::io::Error::new(
                ErrorKind::StorageFull,
                "no space left on the simulated disk",
            )),
            _ => Ok(()),
        }
    }
}

/// A node's disk in the simulation; clones are handles to the same disk.
#[derive(Clone, Default)]
pub struct SimulatedDisk(Arc<Mutex<DiskState>>);

impl SimulatedDisk {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, DiskState> {
        // A test that panicked while holding the lock leaves a disk still worth reading.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes writes that would take the disk past `capacity_bytes` fail (`None`: no limit).
    pub fn set_capacity(&self, capacity_bytes: Option<usize>) {
        self.state().capacity_bytes = capacity_bytes;
    }

    /// The bytes every file takes together now.
    pub fn used_bytes(&self) -> usize {
        self.state().used_bytes()
    }

    /// The machine died: every file keeps its synced bytes, a seeded prefix of its later
    /// writes and perhaps part of the next one, and open file numbers are forgotten.
    pub fn crash(&self, rng: &mut Rng) {
        let mut state = self.state();
        state.open.clear();
        let mut paths: Vec<PathBuf> = state.files.keys().cloned().collect();
        // The same seed must tear the same bytes whatever the map's order.
        paths.sort();
        for path in paths {
            let file = state.files.get_mut(&path).expect("listed above");
            let pending = file.pending.len() as u64;
            let kept = rng.below(pending + 1) as usize;
            let torn_bytes = file
                .pending
                .get(kept)
                .map_or(0, |write| rng.below(write.data.len() as u64 + 1) as usize);
            file.crash(kept, torn_bytes);
        }
    }

    /// What `path` holds now, synced or not (for tests that look at the disk).
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state();
        let file = state.files.get(path)?;
        let mut contents = Vec::with_capacity(file.length);
        file.read(0, file.length, &mut contents);
        Some(contents)
    }

    /// How many times `path` was opened (for tests of how files are kept).
    pub fn opens(&self, path: &Path) -> u64 {
        self.state().opens.get(path).copied().unwrap_or(0)
    }

    /// Replaces what `path` holds, durably (for tests that damage files).
    pub fn put(&self, path: &Path, contents: Vec<u8>) {
        let mut state = self.state();
        let file = state.files.entry(path.to_path_buf()).or_default();
        file.length = contents.len();
        file.current.clone_from(&contents);
        file.durable = contents;
        file.pending.clear();
    }

    /// Removes `path` (for tests that lose files).
    pub fn remove(&self, path: &Path) {
        self.state().files.remove(path);
    }

    /// Refuses every open of `path` from now on with `PermissionDenied` (for tests of
    /// files that cannot be read), or (`unreadable` false) no longer.
    pub fn set_unreadable(&self, path: &Path, unreadable: bool) {
        let mut state = self.state();
        match unreadable {
            true => state.unreadable.insert(path.to_path_buf()),
            false => state.unreadable.remove(path),
        };
    }
}

impl FileStorage for SimulatedDisk {
    fn open(&mut self, path: &Path, create: bool, truncate: bool) -> std::io::Result<u32> {
        let path = checked_relative(path)?.to_path_buf();
        let mut state = self.state();
        if state.unreadable.contains(&path) {
            return Err(std::io::Error::new(
                ErrorKind::PermissionDenied,
                "the file may not be opened",
            ));
        }
        if !create && !state.files.contains_key(&path) {
            return Err(std::io::Error::new(ErrorKind::NotFound, "no such file"));
        }
        let file = state.files.entry(path.clone()).or_default();
        if truncate {
            // The file's new length, as any metadata, is taken as durable at once.
            *file = SimulatedFile::default();
        }
        state.next_file += 1;
        let file = state.next_file;
        *state.opens.entry(path.clone()).or_default() += 1;
        state.open.insert(file, path);
        Ok(file)
    }

    fn allocate(&mut self, file: u32, bytes: u64) -> std::io::Result<()> {
        let mut state = self.state();
        let length =
            usize::try_from(bytes).map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))?;
        state.check_room(file, length)?;
        state.file(file)?.set_length(length);
        Ok(())
    }

    fn write_at(&mut self, file: u32, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let mut state = self.state();
        let start =
            usize::try_from(offset).map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))?;
        state.check_room(file, start + data.len())?;
        state.file(file)?.write(start, data);
        Ok(())
    }

    fn read_at(
        &mut self,
        file: u32,
        offset: u64,
        length: usize,
        buffer: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let mut state = self.state();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        state
            .file(file)?
            .read(start, start.saturating_add(length), buffer);
        Ok(())
    }

    fn sync(&mut self, file: u32) -> std::io::Result<()> {
        self.state().file(file)?.sync();
        Ok(())
    }

    fn close(&mut self, file: u32) -> std::io::Result<()> {
        self.state()
            .open
            .remove(&file)
            .map(drop)
            .ok_or_else(|| unknown_file(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk_with_log() -> (SimulatedDisk, u32) {
        let mut disk = SimulatedDisk::new();
        let file = disk.open(Path::new("redo/log"), true, false).unwrap();
        disk.write_at(file, 0, b"synced.").unwrap();
        disk.sync(file).unwrap();
        disk.write_at(file, 7, b"one.").unwrap();
        disk.write_at(file, 11, b"two.").unwrap();
        (disk, file)
    }

    #[test]
    fn what_was_synced_survives_every_crash_and_what_follows_is_a_prefix_of_the_writes() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (disk, _) = disk_with_log();
            disk.crash(&mut Rng::new(seed));
            let mut after = disk.contents(Path::new("redo/log")).unwrap();
            assert_eq!(after.len(), 15, "the length the writes gave it");
            while after.last() == Some(&0) {
                after.pop();
            }
            assert!(after.starts_with(b"synced."), "seed {seed}");
            assert!(
                b"synced.one.two.".starts_with(&after),
                "seed {seed}: {:?}",
                String::from_utf8_lossy(&after)
            );
            seen.insert(after.len());
        }
        // Nothing kept, every torn length, and everything kept all happen.
        assert_eq!(seen, (7..=15).collect());
    }

    #[test]
    fn a_crash_forgets_open_files_and_a_synced_file_loses_nothing() {
        let (mut disk, file) = disk_with_log();
        disk.sync(file).unwrap();
        disk.crash(&mut Rng::new(1));
        assert!(
            disk.write_at(file, 0, b"x").is_err(),
            "the old life's number"
        );
        let again = disk.open(Path::new("redo/log"), false, false).unwrap();
        let mut read = Vec::new();
        disk.read_at(again, 0, 100, &mut read).unwrap();
        assert_eq!(read, b"synced.one.two.");
    }

    #[test]
    fn a_full_disk_refuses_growth_but_takes_overwrites() {
        let (mut disk, file) = disk_with_log();
        disk.set_capacity(Some(16));
        let error = disk.write_at(file, 15, b"ab").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::StorageFull);
        disk.write_at(file, 15, b"a").unwrap();
        disk.write_at(file, 0, b"SYNCED").unwrap();
        assert_eq!(
            disk.contents(Path::new("redo/log")).unwrap(),
            b"SYNCED.one.two.a"
        );
    }
}
