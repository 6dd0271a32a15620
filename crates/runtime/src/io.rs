//! File I/O for blocks: requests travel as signals to the node's file-system block, which runs
//! on the `io` module and answers each with a [`FileReply`].
//!
//! Blocks never touch files. They call [`Context::request_io`](crate::Context::request_io);
//! the [`FileSystemBlock`] (NDB's NDBFS) executes the request on a [`FileStorage`]: real files
//! under the node's data directory in production ([`DiskStorage`]), in-memory files that
//! lose unsynced writes at a crash in the simulation ([`SimulatedDisk`]), so the same block
//! code runs in both. Data travels in
//! sections: the path for `Open`, the bytes for `Write`, and the bytes read in the reply.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::{
    BlockId, PayloadError, PayloadReader, PayloadWriter, Signal, SignalNumber, TypedSignal,
};

use crate::block::{Block, Context};

mod simulated_disk;

pub use simulated_disk::SimulatedDisk;

/// The file-system block's id; its instance 0 runs on `io.0`.
pub const FILE_SYSTEM_BLOCK: BlockId = BlockId(251);

/// What a block asks of the file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOperation {
    /// Opens the file whose relative path is the request's data; the reply names the file.
    /// `truncate` empties it first.
    Open {
        create: bool,
        truncate: bool,
    },
    /// Makes the file `bytes` long, what it gains reserved and written with zeros (synced),
    /// so later writes within it neither grow the file, nor run out of space, nor make
    /// the file system record the blocks as written.
    Allocate {
        bytes: u64,
    },
    /// Writes the request's data at `offset`.
    Write {
        offset: u64,
    },
    /// Reads up to `length` bytes at `offset`; the reply carries them.
    Read {
        offset: u64,
        length: u32,
    },
    /// Makes the file's written data durable.
    Sync,
    Close,
}

/// A request, as a signal to [`FILE_SYSTEM_BLOCK`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRequest {
    /// Chosen by the requester to match the reply.
    pub request_id: u64,
    /// From the reply to `Open`; ignored by `Open` itself.
    pub file: u32,
    pub operation: FileOperation,
}

impl FileRequest {
    /// Opens the file the request's data names afresh: created if missing, emptied if not.
    pub fn open_empty(request_id: u64) -> Self {
        FileRequest {
            request_id,
            file: 0,
            operation: FileOperation::Open {
                create: true,
                truncate: true,
            },
        }
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileStatus {
    Ok = 0,
    NotFound = 1,
    PermissionDenied = 2,
    /// The path is absolute, empty, or climbs out of the data directory.
    InvalidPath = 3,
    /// No open file has that number.
    UnknownFile = 4,
    /// More data than one section carries.
    TooLarge = 5,
    /// The section pool had no room for the data read.
    OutOfSections = 6,
    /// Any other operating-system error.
    Failed = 7,
    /// The disk is full.
    NoSpace = 8,
}

impl FileStatus {
    fn from_code(code: u32) -> Self {
        match code {
            0 => FileStatus::Ok,
            1 => FileStatus::NotFound,
            2 => FileStatus::PermissionDenied,
            3 => FileStatus::InvalidPath,
            4 => FileStatus::UnknownFile,
            5 => FileStatus::TooLarge,
            6 => FileStatus::OutOfSections,
            8 => FileStatus::NoSpace,
            _ => FileStatus::Failed,
        }
    }

    fn from_io(error: &std::io::Error) -> Self {
        if error
            .get_ref()
            .is_some_and(|inner| inner.is::<UnknownFile>())
        {
            return FileStatus::UnknownFile;
        }
        match error.kind() {
            ErrorKind::NotFound => FileStatus::NotFound,
            ErrorKind::PermissionDenied => FileStatus::PermissionDenied,
            ErrorKind::InvalidInput => FileStatus::InvalidPath,
            ErrorKind::StorageFull => FileStatus::NoSpace,
            _ => FileStatus::Failed,
        }
    }
}

/// The answer to a [`FileRequest`], sent back to the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileReply {
    pub request_id: u64,
    pub file: u32,
    pub status: FileStatus,
    /// Bytes written or read.
    pub length: u32,
}

const OPEN: u32 = 0;
const WRITE: u32 = 1;
const READ: u32 = 2;
const SYNC: u32 = 3;
const CLOSE: u32 = 4;
const ALLOCATE: u32 = 5;
/// Bits of an `Open`'s length word.
const OPEN_CREATE: u32 = 1;
const OPEN_TRUNCATE: u32 = 2;

impl TypedSignal for FileRequest {
    const NUMBER: SignalNumber = SignalNumber(0xF000);

    fn write(&self, payload: &mut PayloadWriter<'_>) {
        payload.put_u64(self.request_id);
        payload.put_u32(self.file);
        let (code, offset, length) = match self.operation {
            FileOperation::Open { create, truncate } => (
                OPEN,
                0,
                (u32::from(create) * OPEN_CREATE) | (u32::from(truncate) * OPEN_TRUNCATE),
            ),
            FileOperation::Allocate { bytes } => (ALLOCATE, bytes, 0),
            FileOperation::Write { offset } => (WRITE, offset, 0),
            FileOperation::Read { offset, length } => (READ, offset, length),
            FileOperation::Sync => (SYNC, 0, 0),
            FileOperation::Close => (CLOSE, 0, 0),
        };
        payload.put_u32(code);
        payload.put_u64(offset);
        payload.put_u32(length);
    }

    fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
        let request_id = payload.u64()?;
        let file = payload.u32()?;
        let (code, offset, length) = (payload.u32()?, payload.u64()?, payload.u32()?);
        let operation = match code {
            OPEN => FileOperation::Open {
                create: length & OPEN_CREATE != 0,
                truncate: length & OPEN_TRUNCATE != 0,
            },
            ALLOCATE => FileOperation::Allocate { bytes: offset },
            WRITE => FileOperation::Write { offset },
            READ => FileOperation::Read { offset, length },
            SYNC => FileOperation::Sync,
            _ => FileOperation::Close,
        };
        Ok(FileRequest {
            request_id,
            file,
            operation,
        })
    }
}

impl TypedSignal for FileReply {
    const NUMBER: SignalNumber = SignalNumber(0xF001);

    fn write(&self, payload: &mut PayloadWriter<'_>) {
        payload.put_u64(self.request_id);
        payload.put_u32(self.file);
        payload.put_u32(self.status as u32);
        payload.put_u32(self.length);
    }

    fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(FileReply {
            request_id: payload.u64()?,
            file: payload.u32()?,
            status: FileStatus::from_code(payload.u32()?),
            length: payload.u32()?,
        })
    }
}

/// Where files live. Numbers name open files; each storage hands them out itself.
pub trait FileStorage: Send {
    fn open(&mut self, path: &Path, create: bool, truncate: bool) -> std::io::Result<u32>;
    /// Makes the file `bytes` long (longer or shorter) with its blocks reserved.
    fn allocate(&mut self, file: u32, bytes: u64) -> std::io::Result<()>;
    fn write_at(&mut self, file: u32, offset: u64, data: &[u8]) -> std::io::Result<()>;
    /// Appends up to `length` bytes read at `offset` to `buffer`.
    fn read_at(
        &mut self,
        file: u32,
        offset: u64,
        length: usize,
        buffer: &mut Vec<u8>,
    ) -> std::io::Result<()>;
    fn sync(&mut self, file: u32) -> std::io::Result<()>;
    fn close(&mut self, file: u32) -> std::io::Result<()>;
}

/// Executes [`FileRequest`]s on a [`FileStorage`].
pub struct FileSystemBlock {
    storage: Box<dyn FileStorage>,
    /// Reused for every read, so reads allocate only when they grow.
    read_buffer: Vec<u8>,
}

impl FileSystemBlock {
    pub fn new(storage: Box<dyn FileStorage>) -> Self {
        Self {
            storage,
            read_buffer: Vec::new(),
        }
    }

    fn perform(
        &mut self,
        request: &FileRequest,
        ctx: &mut Context<'_>,
    ) -> Result<(u32, u32), FileStatus> {
        let io = |result: std::io::Result<()>| result.map_err(|e| FileStatus::from_io(&e));
        let data_length = || ctx.section().map_or(0, |data| data.len() as u32);
        match request.operation {
            FileOperation::Open { create, truncate } => {
                let path = ctx
                    .section()
                    .map(|data| String::from_utf8_lossy(&data).into_owned());
                let path = path.ok_or(FileStatus::InvalidPath)?;
                let file = self
                    .storage
                    .open(Path::new(&path), create, truncate)
                    .map_err(|e| FileStatus::from_io(&e))?;
                Ok((file, 0))
            }
            FileOperation::Write { offset } => {
                let length = data_length();
                let data = ctx.section();
                io(self
                    .storage
                    .write_at(request.file, offset, data.as_deref().unwrap_or(&[])))?;
                Ok((request.file, length))
            }
            FileOperation::Read { offset, length } => {
                if length as usize > SECTION_BYTES_MAX {
                    return Err(FileStatus::TooLarge);
                }
                self.read_buffer.clear();
                io(self.storage.read_at(
                    request.file,
                    offset,
                    length as usize,
                    &mut self.read_buffer,
                ))?;
                Ok((request.file, self.read_buffer.len() as u32))
            }
            FileOperation::Allocate { bytes } => {
                io(self.storage.allocate(request.file, bytes)).map(|()| (request.file, 0))
            }
            FileOperation::Sync => io(self.storage.sync(request.file)).map(|()| (request.file, 0)),
            FileOperation::Close => {
                io(self.storage.close(request.file)).map(|()| (request.file, 0))
            }
        }
    }
}

impl Block for FileSystemBlock {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let Ok(request) = FileRequest::from_signal(signal) else {
            return;
        };
        let outcome = self.perform(&request, ctx);
        let mut reply = FileReply {
            request_id: request.request_id,
            file: request.file,
            status: FileStatus::Ok,
            length: 0,
        };
        let mut data = None;
        match outcome {
            Ok((file, length)) => {
                (reply.file, reply.length) = (file, length);
                if matches!(request.operation, FileOperation::Read { .. }) {
                    match ctx.allocate_section(&self.read_buffer) {
                        Ok(section) => data = Some(section),
                        Err(_) => reply.status = FileStatus::OutOfSections,
                    }
                }
            }
            Err(status) => reply.status = status,
        }
        let mut signal = reply.to_signal(signal.sender(), ctx.address());
        if let Some(section) = data {
            ctx.attach_section(&mut signal, section);
        }
        ctx.send(signal);
    }
}

/// Accepts only relative paths that stay inside the root: no `..`, no root, not empty.
fn checked_relative(path: &Path) -> std::io::Result<&Path> {
    let inside = path.components().all(|c| matches!(c, Component::Normal(_)));
    if path.as_os_str().is_empty() || !inside {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            "path must stay inside the data directory",
        ));
    }
    Ok(path)
}

/// A request named a file number that is not open.
#[derive(Debug, thiserror::Error)]
#[error("no open file {0}")]
struct UnknownFile(u32);

fn unknown_file(file: u32) -> std::io::Error {
    std::io::Error::other(UnknownFile(file))
}

/// Real files under a data directory.
pub struct DiskStorage {
    root: PathBuf,
    files: HashMap<u32, File>,
    next_file: u32,
}

impl DiskStorage {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            files: HashMap::new(),
            next_file: 1,
        }
    }

    fn file(&self, file: u32) -> std::io::Result<&File> {
        self.files.get(&file).ok_or_else(|| unknown_file(file))
    }
}

/// Bytes written at a time while a file is filled with zeros.
const ZEROS_CHUNK_BYTES: usize = 1 << 20;

/// Writes zeros over `range` of `file` and syncs them. Reserved blocks are *unwritten* to
/// the file system (ext4, XFS) until written: the first write of each then changes the
/// file's extents, through the file system's journal, when the block reaches the disk. A
/// REDO log written that way during a load doubled the machine's system time once another
/// program synced its own files (docs/benchmarks.md, "REDO log files written whole at
/// their creation"); written once at creation, the log's blocks are plain overwrites ever
/// after (NDB's `InitFragmentLogFiles=FULL`).
fn write_zeros(file: &File, range: std::ops::Range<u64>) -> std::io::Result<()> {
    let zeros = vec![0u8; ZEROS_CHUNK_BYTES];
    let mut at = range.start;
    while at < range.end {
        let chunk = usize::try_from(range.end - at)
            .map_or(ZEROS_CHUNK_BYTES, |left| left.min(ZEROS_CHUNK_BYTES));
        file.write_all_at(&zeros[..chunk], at)?;
        at += chunk as u64;
    }
    file.sync_data()
}

impl FileStorage for DiskStorage {
    fn open(&mut self, path: &Path, create: bool, truncate: bool) -> std::io::Result<u32> {
        let full = self.root.join(checked_relative(path)?);
        if create {
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)?;
            }
        }
        let handle = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(truncate)
            .open(full)?;
        let file = self.next_file;
        self.next_file += 1;
        self.files.insert(file, handle);
        Ok(file)
    }

    fn write_at(&mut self, file: u32, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.file(file)?.write_all_at(data, offset)
    }

    fn read_at(
        &mut self,
        file: u32,
        offset: u64,
        length: usize,
        buffer: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let handle = self.file(file)?;
        let start = buffer.len();
        buffer.resize(start + length, 0);
        let mut filled = 0;
        while filled < length {
            match handle.read_at(&mut buffer[start + filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buffer.truncate(start + filled);
        Ok(())
    }

    fn allocate(&mut self, file: u32, bytes: u64) -> std::io::Result<()> {
        let handle = self.file(file)?;
        let former_end = handle.metadata()?.len().min(bytes);
        handle.set_len(bytes)?;
        let length = libc::off_t::try_from(bytes)
            .map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))?;
        // SAFETY: the descriptor belongs to `handle`, which stays open for the call;
        // posix_fallocate reads no memory of ours.
        let code = unsafe { libc::posix_fallocate(handle.as_raw_fd(), 0, length) };
        match code {
            // A file system that cannot reserve blocks keeps the file sparse: writes may
            // then find the disk full, and say so.
            0 | libc::EOPNOTSUPP | libc::EINVAL => {}
            errno => return Err(std::io::Error::from_raw_os_error(errno)),
        }
        write_zeros(handle, former_end..bytes)
    }

    fn sync(&mut self, file: u32) -> std::io::Result<()> {
        self.file(file)?.sync_data()
    }

    fn close(&mut self, file: u32) -> std::io::Result<()> {
        self.files
            .remove(&file)
            .map(drop)
            .ok_or_else(|| unknown_file(file))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    /// The extent list header `FS_IOC_FIEMAP` fills (linux/fiemap.h).
    #[repr(C)]
    #[derive(Default)]
    struct FiemapHeader {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
    }

    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct FiemapExtent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }

    #[repr(C)]
    struct Fiemap {
        header: FiemapHeader,
        extents: [FiemapExtent; 64],
    }

    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;

    /// Whether any of the file's extents is unwritten; `None` where the file system does
    /// not say (tmpfs).
    fn has_unwritten_extents(file: &File) -> Option<bool> {
        let mut map = Fiemap {
            header: FiemapHeader {
                length: u64::MAX,
                extent_count: 64,
                ..FiemapHeader::default()
            },
            extents: [FiemapExtent::default(); 64],
        };
        // SAFETY: `map` is a `struct fiemap` with room for the 64 extents its header
        // announces, alive through the call; the descriptor is `file`'s, open meanwhile.
        let code = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut map) };
        let mapped = map.header.mapped_extents as usize;
        (code == 0 && mapped > 0).then(|| {
            map.extents[..mapped.min(64)]
                .iter()
                .any(|extent| extent.flags & FIEMAP_EXTENT_UNWRITTEN != 0)
        })
    }

    #[test]
    fn an_allocated_file_is_written_with_zeros_after_what_it_held() {
        let directory = std::env::temp_dir().join(format!("kista-allocate-{}", std::process::id()));
        let mut storage = DiskStorage::new(directory.clone());
        let file = storage.open(Path::new("redo.log"), true, true).unwrap();
        storage.write_at(file, 0, b"kept").unwrap();
        storage.allocate(file, 3 << 20).unwrap();
        let mut read = Vec::new();
        storage.read_at(file, 0, 3 << 20, &mut read).unwrap();
        assert_eq!(&read[..4], b"kept");
        assert!(read[4..].iter().all(|&byte| byte == 0));
        assert_eq!(read.len(), 3 << 20);

        // On a file system that reserves blocks as unwritten (ext4, XFS), reserving alone
        // leaves them so and the allocation does not.
        let reserved = File::create(directory.join("reserved.log")).unwrap();
        // SAFETY: the descriptor is `reserved`'s, open for the call.
        let code = unsafe { libc::posix_fallocate(reserved.as_raw_fd(), 0, 1 << 20) };
        if code == 0 && has_unwritten_extents(&reserved) == Some(true) {
            let handle = storage.file(file).unwrap();
            assert_eq!(has_unwritten_extents(handle), Some(false));
        }
        std::fs::remove_dir_all(directory).unwrap();
    }
}
