//! The client's heartbeats. A data node process that is stopped (SIGSTOP, a long pause) or
//! cut off keeps its TCP connections open, so a connection that stays open proves nothing.
//! Every heartbeat interval the client pings a coordinator on each live node; a node that
//! leaves `misses_max` pings in a row unanswered is given up: its connection is closed,
//! which fails what was in flight there ([`InFlight::lose_node`]) and takes the node out
//! of routing. The interval and count are the cluster's own (each node's Welcome says), so
//! the client gives up on a node about when the cluster declares it failed.
//!
//! A second thread connects again, every interval, to each node of a cluster whose
//! connection is gone (every node's, when the whole cluster restarted): a node that
//! restarts is used again once it answers a heartbeat as started (it has its data back).
//! Meanwhile requests fail at once as temporary (4035).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use kista_datanode::protocol::ClientPing;
use kista_signal::{BlockAddress, TypedSignal};

use crate::in_flight::InFlight;
use crate::nodes::{DataNodeLink, DataNodes};

pub(crate) struct Heartbeats {
    /// Set to stop the threads; the condition variable wakes them at once.
    stop: Arc<(Mutex<bool>, Condvar)>,
    threads: Vec<JoinHandle<()>>,
}

impl Heartbeats {
    pub fn start(
        nodes: Arc<DataNodes>,
        in_flight: Arc<InFlight>,
        me: BlockAddress,
    ) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (stopping, beating, beat_for) = (stop.clone(), nodes.clone(), in_flight.clone());
        let heartbeat = std::thread::Builder::new()
            .name("kista-client-heartbeat".into())
            .spawn(move || beat_until_stopped(&beating, &beat_for, me, &stopping))?;
        let stopping = stop.clone();
        let mut heartbeats = Self {
            stop,
            threads: vec![heartbeat],
        };
        // On failure, dropping `heartbeats` stops the first thread.
        let reconnect = std::thread::Builder::new()
            .name("kista-client-reconnect".into())
            .spawn(move || reconnect_until_stopped(&nodes, &in_flight, me, &stopping))?;
        heartbeats.threads.push(reconnect);
        Ok(heartbeats)
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        for thread in self.threads.drain(..) {
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
    every_interval_until_stopped(interval, stop, || {
        let sent = in_flight.pings_sent();
        let sequence = in_flight.next_ping();
        // Every connected node, started or not (a restarting one says when it started).
        for slot in nodes.slots() {
            let link = slot.link();
            let Some(link) = link.as_ref().filter(|link| !link.is_closed()) else {
                continue;
            };
            let unanswered = sent.saturating_sub(in_flight.last_pong(link.node));
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
                sequence,
            };
            // A closed connection is reported by its receive thread.
            let _ = link.send(&ping.to_signal(link.coordinator(), me), &[]);
        }
    });
}

/// Connects again, each interval, to every node whose connection is gone; the node is
/// used once it answers a heartbeat as started.
fn reconnect_until_stopped(
    nodes: &DataNodes,
    in_flight: &Arc<InFlight>,
    me: BlockAddress,
    stop: &(Mutex<bool>, Condvar),
) {
    let interval = Duration::from_millis(u64::from(nodes.heartbeat().0));
    every_interval_until_stopped(interval, stop, || {
        // Every node lost too: a cluster restarted whole comes back node by node.
        for slot in nodes.slots().iter().filter(|slot| slot.needs_connection()) {
            let Some(address) = &slot.address else {
                continue;
            };
            let (id, key) = (Some(me.node()), nodes.key());
            let connected = DataNodeLink::connect(address, id, key, interval, in_flight, false);
            if let Ok(link) = connected {
                slot.replace(link);
            }
        }
    });
}

/// Runs `work` every `interval` until `stop` is set.
fn every_interval_until_stopped(
    interval: Duration,
    stop: &(Mutex<bool>, Condvar),
    mut work: impl FnMut(),
) {
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
        drop(is_stopped);
        work();
        is_stopped = stopped.lock().unwrap_or_else(|p| p.into_inner());
    }
}
