//! Free TCP ports on 127.0.0.1 to write into a cluster configuration, for `kista up` and
//! the tests' clusters (which include this file).
//!
//! A data node's port is fixed in the configuration, so it must be chosen before the node
//! starts and stay free until then. A port the kernel hands out for `bind(0)` comes from
//! its ephemeral range, the same range every outgoing connection's local port comes from:
//! between choosing it and the data node binding it, any connection on the machine may
//! take it (CI saw "Address already in use" this way). So the ports are chosen below that
//! range, where only a listener asking for that exact port can compete, at a random place
//! so two processes choosing at once rarely meet, and each is bound once to prove it free.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::Mutex;

/// The lowest port chosen: under it are the well-known and commonly configured ones.
const CHOSEN_PORT_MIN: u16 = 10_000;
/// Candidates tried before giving up.
const ATTEMPTS_MAX: usize = 1_000;
/// The kernel's ephemeral range starts here when /proc does not say.
const EPHEMERAL_PORT_MIN_DEFAULT: u16 = 32_768;

/// Ports handed out by this process: not free-looking twice before their owner binds them.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// `count` distinct ports, each free on 127.0.0.1 now and outside the kernel's ephemeral
/// range.
pub fn free_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let ceiling = ephemeral_port_min();
    if ceiling <= CHOSEN_PORT_MIN + 1 {
        return Err(std::io::Error::other(format!(
            "no ports between {CHOSEN_PORT_MIN} and the ephemeral range's start {ceiling}"
        )));
    }
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    let mut chosen = Vec::with_capacity(count);
    for _ in 0..ATTEMPTS_MAX {
        if chosen.len() == count {
            break;
        }
        let port = fastrand::u16(CHOSEN_PORT_MIN..ceiling);
        if handed_out.contains(&port) || chosen.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            chosen.push(port);
        }
    }
    if chosen.len() < count {
        return Err(std::io::Error::other(format!(
            "found {} of {count} free ports below {ceiling} in {ATTEMPTS_MAX} attempts",
            chosen.len()
        )));
    }
    handed_out.extend(&chosen);
    Ok(chosen)
}

/// The first port of `/proc/sys/net/ipv4/ip_local_port_range`.
fn ephemeral_port_min() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_PORT_MIN_DEFAULT)
}
