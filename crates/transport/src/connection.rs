//! One TCP connection's sending side, shared by node and client: an outgoing buffer any
//! thread appends signals to, and a send thread that writes it out in batches.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use kista_signal::{wire, NodeId, Signal};

use crate::OUTGOING_BYTES_MAX;

pub(crate) struct Connection {
    /// The node id at the other end.
    pub peer: NodeId,
    stream: TcpStream,
    outgoing: Mutex<Vec<u8>>,
    ready: Condvar,
    closed: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl Connection {
    pub fn new(stream: TcpStream, peer: NodeId) -> std::io::Result<Arc<Self>> {
        stream.set_nodelay(true)?;
        Ok(Arc::new(Self {
            peer,
            stream,
            outgoing: Mutex::new(Vec::new()),
            ready: Condvar::new(),
            closed: AtomicBool::new(false),
            reason: Mutex::new(None),
        }))
    }

    /// Appends a signal for the send thread. False when the connection is closed; a peer
    /// that lets [`OUTGOING_BYTES_MAX`] pile up is not reading and is closed.
    pub fn queue(&self, signal: &Signal, section: &[u8]) -> bool {
        self.append(wire::encoded_len(signal, section.len()), |outgoing| {
            // Sections come from the pool, which never holds more than the wire allows.
            let encoded = wire::encode(signal, section, outgoing);
            debug_assert!(encoded.is_ok(), "section larger than the wire limit");
        })
    }

    /// Appends signals already in wire form for the send thread, leaving `frames` empty;
    /// false as for `queue`. When nothing waits to be sent the buffers are swapped, not
    /// copied: `frames` gets the connection's empty one.
    pub fn queue_frames(&self, frames: &mut Vec<u8>) -> bool {
        let queued = self.append(frames.len(), |outgoing| {
            if outgoing.is_empty() {
                std::mem::swap(outgoing, frames);
            } else {
                outgoing.extend_from_slice(frames);
            }
        });
        frames.clear();
        queued
    }

    /// Appends `length` bytes that `write` puts in the outgoing buffer, under its lock.
    fn append(&self, length: usize, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut outgoing = self.outgoing.lock().unwrap_or_else(|p| p.into_inner());
        if outgoing.len() + length > OUTGOING_BYTES_MAX {
            drop(outgoing);
            self.close(format!(
                "the peer is not reading: {OUTGOING_BYTES_MAX} bytes wait to be sent"
            ));
            return false;
        }
        let was_empty = outgoing.is_empty();
        write(&mut outgoing);
        drop(outgoing);
        if was_empty {
            self.ready.notify_one();
        }
        true
    }

    /// Closes the connection; the first reason given is the one kept.
    pub fn close(&self, reason: String) {
        let mut kept = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if kept.is_none() {
            *kept = Some(reason);
        }
        drop(kept);
        self.closed.store(true, Ordering::Release);
        let _ = self.stream.shutdown(Shutdown::Both);
        // Take the lock so a send thread between its check and its wait sees the flag.
        drop(self.outgoing.lock().unwrap_or_else(|p| p.into_inner()));
        self.ready.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub fn reason(&self) -> Option<String> {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Starts the send thread: it writes whatever has queued up, one batch per write, until
    /// the connection closes.
    pub fn spawn_sender(self: &Arc<Self>, name: String) -> std::io::Result<JoinHandle<()>> {
        let connection = Arc::clone(self);
        std::thread::Builder::new()
            .name(name)
            .spawn(move || connection.send_until_closed())
    }

    fn send_until_closed(&self) {
        let mut batch = Vec::new();
        loop {
            {
                let mut outgoing = self.outgoing.lock().unwrap_or_else(|p| p.into_inner());
                while outgoing.is_empty() && !self.is_closed() {
                    outgoing = self.ready.wait(outgoing).unwrap_or_else(|p| p.into_inner());
                }
                if self.is_closed() {
                    return;
                }
                std::mem::swap(&mut *outgoing, &mut batch);
            }
            if let Err(error) = (&self.stream).write_all(&batch) {
                self.close(format!("writing to the peer failed: {error}"));
                return;
            }
            batch.clear();
        }
    }
}
