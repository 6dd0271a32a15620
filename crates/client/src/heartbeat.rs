//! The client's heartbeats. A data node process that is stopped (SIGSTOP, a long pause) or
//! cut off keeps its TCP connections open, so a connection that stays open proves nothing.
//! Every heartbeat interval the client pings a coordinator on each live node; a node that
//! leaves `misses_max` pings in a row unanswered is given up: its connection is closed,
//! which fails what was in flight there ([`InFlight::lose_node`]) and takes the node out
//! of routing. The interval and count are the cluster's own (each node's Welcome says), so
//! the client gives up on a node about when the cluster declares it failed.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use kista_datanode::protocol::ClientPing;
use kista_signal::{BlockAddress, TypedSignal};

use crate::in_flight::InFlight;
use crate::nodes::DataNodes;

pub(crate) struct Heartbeats {
    /// Set to stop the thread; the condition variable wakes it at once.
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeats {
    pub fn start(
        nodes: Arc<DataNodes>,
        in_flight: Arc<InFlight>,
        me: BlockAddress,
    ) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("kista-client-heartbeat".into())
            .spawn(move || beat_until_stopped(&nodes, &in_flight, me, &stopping))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn beat_until_stopped(
    nodes: &DataNodes,
    in_flight: &InFlight,
    me: BlockAddress,
    stop: &(Mutex<bool>, Condvar),
) {
    let (interval_ms, misses_max) = nodes.heartbeat();
    let interval = Duration::from_millis(u64::from(interval_ms));
    let mut sequence = 0u64;
    let (stopped, wake) = stop;
    let mut is_stopped = stopped.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        is_stopped = wake
            .wait_timeout_while(is_stopped, interval, |stopped| !*stopped)
            .unwrap_or_else(|p| p.into_inner())
            .0;
        if *is_stopped {
            return;
        }
        // Pings sent so far: 1..=sequence.
        let live = in_flight.live();
        for link in nodes.links().filter(|link| live.contains(link.node)) {
            let unanswered = sequence.saturating_sub(in_flight.last_pong(link.node));
            if unanswered >= u64::from(misses_max) {
                link.shut_down(format!(
                    "data node {} answered none of {unanswered} heartbeats ({interval_ms} ms \
                     apart): given up as failed",
                    link.node.0
                ));
                continue;
            }
            let ping = ClientPing {
                client: me,
                sequence: sequence + 1,
            };
            // A closed connection is reported by its receive thread.
            let _ = link.send(&ping.to_signal(link.coordinator(), me), &[]);
        }
        sequence += 1;
    }
}
