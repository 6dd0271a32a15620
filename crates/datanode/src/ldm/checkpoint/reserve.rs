//! Disk space a data manager holds in reserve for its local checkpoints: a file,
//! `lcp/ldm-<instance>/reserve`, allocated as large as the largest checkpoint file it has
//! written in this life (up to [`RESERVE_BYTES_MAX`]). When the disk refuses a checkpoint
//! for want of space, the reserve is released and the checkpoint tried again at once, into
//! the space it gave back: that checkpoint frees the REDO log, so a disk that fills up
//! (another process, a log, a copy) costs no writes before the operator hears of it; only
//! the checkpoint after needs the space freed. The REDO log needs no reserve: its files are
//! allocated whole when created.
//!
//! The file stays open for the node's life. Its size at the start is not read: a reserve
//! left by the last life counts as held until released or resized. It grows in steps of
//! [`GROW_STEP_BYTES`] (each allocation holds the file-system thread that long), again
//! after each checkpoint written, and shrinks back to what it held when the disk has no
//! room for a step.

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;

use super::CHECKPOINT_REQUEST;

/// The reserve's requests have this bit, with the checkpoint's.
pub(super) const RESERVE_REQUEST: u64 = CHECKPOINT_REQUEST | (1 << 40);
const OPENING: u64 = RESERVE_REQUEST | 1;
const GROWING: u64 = RESERVE_REQUEST | 2;
const RESIZING: u64 = RESERVE_REQUEST | 3;

/// The most one data manager holds in reserve: a partial checkpoint's file is far smaller,
/// a whole one's (a node's first of a life) may be larger, and then only this much of it is
/// sure to fit.
pub(crate) const RESERVE_BYTES_MAX: u64 = 256 << 20;
/// Bytes one allocation adds to the reserve.
const GROW_STEP_BYTES: u64 = 8 << 20;

pub(super) struct CheckpointReserve {
    path: String,
    state: State,
    /// Bytes the file holds for sure (the last allocation that succeeded).
    held_bytes: u64,
    /// Whether the file may hold more than `held_bytes`: a reserve left by the last life.
    may_hold_more: bool,
    /// What it should hold: the largest checkpoint file written in this life, capped.
    wanted_bytes: u64,
    /// An allocation is in flight (of this many bytes).
    growing_to: Option<u64>,
    /// The disk had no room to grow: said once, tried again after the next checkpoint.
    short_said: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Opening,
    Open {
        file: u32,
    },
    /// Its file cannot be opened: no reserve in this life (said once).
    Unavailable,
}

impl CheckpointReserve {
    pub fn new(instance: u16) -> Self {
        Self {
            path: format!("lcp/ldm-{instance}/reserve"),
            state: State::Closed,
            held_bytes: 0,
            may_hold_more: true,
            wanted_bytes: 0,
            growing_to: None,
            short_said: false,
        }
    }

    /// Opens the file once, before the node's first checkpoint (requests to the file
    /// system are answered in order, so it is open before that checkpoint can need it).
    pub fn open_once(&mut self, ctx: &mut Context) {
        if self.state != State::Closed {
            return;
        }
        let request = FileRequest {
            request_id: OPENING,
            file: 0,
            operation: FileOperation::Open {
                create: true,
                truncate: false,
            },
        };
        if ctx.request_io(&request, self.path.as_bytes()).is_ok() {
            self.state = State::Opening;
        }
    }

    /// A checkpoint of `file_bytes` was written: the reserve grows to hold one as large.
    pub fn checkpoint_written(&mut self, ctx: &mut Context, file_bytes: u64) {
        self.wanted_bytes = self.wanted_bytes.max(file_bytes.min(RESERVE_BYTES_MAX));
        self.grow(ctx);
    }

    /// The disk refused a checkpoint for want of space: gives the reserve back to the
    /// file system, saying how much it held (`None`: it held nothing to give).
    pub fn release(&mut self, ctx: &mut Context) -> Option<u64> {
        let State::Open { file } = self.state else {
            return None;
        };
        if self.held_bytes == 0 && !self.may_hold_more && self.growing_to.is_none() {
            return None;
        }
        let held = self.held_bytes.max(self.growing_to.unwrap_or(0));
        if !self.resize(ctx, file, 0) {
            return None;
        }
        self.may_hold_more = false;
        // An allocation in flight is undone by this one, which the file system runs after.
        self.growing_to = None;
        Some(held)
    }

    /// The file system's answer to one of the reserve's requests.
    pub fn replied(&mut self, ctx: &mut Context, reply: FileReply) {
        match (reply.request_id, reply.status) {
            (OPENING, FileStatus::Ok) => {
                self.state = State::Open { file: reply.file };
                self.grow(ctx);
            }
            (OPENING, status) => {
                self.state = State::Unavailable;
                ctx.warn(&format!(
                    "the checkpoint space reserve {} cannot be opened ({status:?}): no disk \
                     space is held in reserve for checkpoints",
                    self.path
                ));
            }
            (GROWING, status) => self.grown(ctx, status),
            _ => {}
        }
    }

    fn grown(&mut self, ctx: &mut Context, status: FileStatus) {
        let Some(target) = self.growing_to.take() else {
            return; // released meanwhile
        };
        let State::Open { file } = self.state else {
            return;
        };
        if status == FileStatus::Ok {
            self.held_bytes = target;
            self.may_hold_more = false;
            if target >= self.wanted_bytes {
                self.short_said = false;
            }
            return self.grow(ctx);
        }
        // The file may have been lengthened without its blocks: back to what it held.
        self.resize(ctx, file, self.held_bytes);
        if !std::mem::replace(&mut self.short_said, true) {
            ctx.warn(&format!(
                "the disk has no room to hold {} MiB in reserve for checkpoints in {} \
                 ({status:?}; {} MiB held): free space on the data directory's disk",
                self.wanted_bytes >> 20,
                self.path,
                self.held_bytes >> 20
            ));
        }
    }

    /// Allocates the next step toward what is wanted, unless one is in flight.
    fn grow(&mut self, ctx: &mut Context) {
        let State::Open { file } = self.state else {
            return;
        };
        if self.growing_to.is_some() || self.held_bytes >= self.wanted_bytes {
            return;
        }
        let target = (self.held_bytes + GROW_STEP_BYTES).min(self.wanted_bytes);
        let request = FileRequest {
            request_id: GROWING,
            file,
            operation: FileOperation::Allocate { bytes: target },
        };
        if ctx.request_io(&request, &[]).is_ok() {
            self.growing_to = Some(target);
        }
    }

    /// Makes the file `bytes` long; false when no request could be sent (no section
    /// free: the file keeps its size).
    fn resize(&mut self, ctx: &mut Context, file: u32, bytes: u64) -> bool {
        let request = FileRequest {
            request_id: RESIZING,
            file,
            operation: FileOperation::Allocate { bytes },
        };
        let sent = ctx.request_io(&request, &[]).is_ok();
        if sent {
            self.held_bytes = bytes;
        }
        sent
    }
}

/// Whether `request_id` is one of the reserve's requests.
pub(super) fn is_reserve_request(request_id: u64) -> bool {
    request_id & RESERVE_REQUEST == RESERVE_REQUEST
}
