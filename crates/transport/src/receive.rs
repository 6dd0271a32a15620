//! The inbound path of every node-side connection, accepted or dialed: read frames, check
//! each signal, stage it for the node and publish in batches, waiting (not dropping) while
//! the node is full.

use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kista_runtime::{InjectBatch, InjectError, Injector};
use kista_signal::{NodeId, Signal};

use crate::connection::Connection;
use crate::faults::LinkFaults;
use crate::frames::FrameReader;
use crate::server::Validator;

/// Signals a receive thread stages before it hands them to the node, even in mid-read.
const STAGED_SIGNALS_MAX: usize = 256;
/// How long a receive thread waits when the node cannot take more signals yet.
const BACKPRESSURE_WAIT: Duration = Duration::from_micros(200);

/// What a connection's signals must satisfy to enter the node.
pub(crate) struct Admission<'a> {
    /// This node: every signal must be addressed to it.
    pub node: NodeId,
    /// Checks a client's signals; `None` for peers, which are cluster members.
    pub validate: Option<&'a Validator>,
    /// For peers: where instructions to cut or delay links go.
    pub faults: Option<&'a LinkFaults>,
    /// Counts the connections closed for a signal `check` refused.
    pub refused_signals: &'a AtomicU64,
}

/// Reads `stream` until it closes or breaks the rules, closing `connection` with the reason.
pub(crate) fn receive_until_closed(
    injector: &Injector,
    admission: &Admission<'_>,
    connection: &Connection,
    stream: &mut TcpStream,
) {
    let mut frames = FrameReader::default();
    let mut batch = InjectBatch::default();
    loop {
        let read = match frames.read_from(stream) {
            Ok(read) => read,
            Err(error) => return connection.close(format!("reading failed: {error}")),
        };
        if read == 0 {
            let reason = match frames.partial_bytes() {
                0 => "the peer closed the connection".to_string(),
                partial => format!("the peer closed the connection {partial} bytes into a signal (truncated frame)"),
            };
            return connection.close(reason);
        }
        // The signals before a fault still enter the node, as they would one by one.
        let staged = stage_whole_signals(injector, admission, connection, &mut frames, &mut batch);
        let outcome = staged.and_then(|()| publish(injector, connection, &mut batch));
        if let Err(reason) = outcome {
            injector.discard(&mut batch);
            return connection.close(reason);
        }
        if connection.is_closed() {
            injector.discard(&mut batch);
            return;
        }
    }
}

/// Checks and stages every whole signal `frames` holds, publishing on the way when the batch
/// is full or the section pool has to wait for the node.
fn stage_whole_signals(
    injector: &Injector,
    admission: &Admission<'_>,
    connection: &Connection,
    frames: &mut FrameReader,
    batch: &mut InjectBatch,
) -> Result<(), String> {
    loop {
        let (signal, section) = match frames.next_signal() {
            Ok(Some(next)) => next,
            Ok(None) => return Ok(()),
            Err(error) => return Err(format!("malformed frame: {error}")),
        };
        if let Err(reason) = check(admission, connection, &signal, section) {
            admission.refused_signals.fetch_add(1, Ordering::Relaxed);
            return Err(reason);
        }
        // A cut is held on the sending side (each node of the pair holds what it sends).
        if admission.faults.is_some_and(|faults| faults.apply(&signal)) {
            continue;
        }
        loop {
            match injector.stage(batch, signal, section) {
                Ok(()) => break,
                Err(error) if error.is_temporary() && !connection.is_closed() => {
                    // No section free: let the node work through what is staged first.
                    publish(injector, connection, batch)?;
                    std::thread::sleep(BACKPRESSURE_WAIT);
                }
                Err(InjectError::NoSuchBlock(address)) => {
                    return Err(format!(
                        "a signal is addressed to {address}, where no block is"
                    ));
                }
                Err(error) => return Err(error.to_string()),
            }
        }
        if batch.len() >= STAGED_SIGNALS_MAX {
            publish(injector, connection, batch)?;
        }
    }
}

fn check(
    admission: &Admission<'_>,
    connection: &Connection,
    signal: &Signal,
    section: &[u8],
) -> Result<(), String> {
    let sender = signal.sender().node();
    if sender != connection.peer {
        return Err(format!(
            "a signal claims to come from node {}, the connection is node {}",
            sender.0, connection.peer.0
        ));
    }
    let receiver = signal.receiver();
    if receiver.node() != admission.node {
        return Err(format!(
            "a signal is addressed to node {}, this is node {}",
            receiver.node().0,
            admission.node.0
        ));
    }
    match admission.validate {
        Some(validate) => validate(signal, section, connection.peer),
        None => Ok(()),
    }
}

/// Hands the staged signals to the node, waiting while a receiving thread's queue is full.
fn publish(
    injector: &Injector,
    connection: &Connection,
    batch: &mut InjectBatch,
) -> Result<(), String> {
    loop {
        match injector.publish(batch) {
            Ok(()) => return Ok(()),
            Err(error) if error.is_temporary() && !connection.is_closed() => {
                std::thread::sleep(BACKPRESSURE_WAIT);
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}
