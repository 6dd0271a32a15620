//! Automatic thread configuration from a CPU count (after RonDB's `AutomaticThreadConfig`).
//!
//! | CPUs | ldm | tc | recv | send | main | rep |
//! |-----:|----:|---:|-----:|-----:|-----:|----:|
//! |    1 |   0 |  0 |    1 |    0 |    0 |   0 |
//! |    2 |   1 |  0 |    1 |    0 |    0 |   0 |
//! |    4 |   2 |  1 |    1 |    0 |    0 |   0 |
//! |    6 |   3 |  1 |    1 |    1 |    0 |   0 |
//! |    8 |   4 |  2 |    1 |    1 |    0 |   0 |
//! |   10 |   5 |  2 |    1 |    1 |    1 |   0 |
//! |   12 |   6 |  3 |    1 |    1 |    1 |   0 |
//! |   14 |   7 |  3 |    2 |    1 |    1 |   0 |
//! |   16 |   8 |  4 |    2 |    1 |    1 |   0 |
//! |   18 |   8 |  4 |    3 |    1 |    1 |   1 |
//! |   20 |   9 |  5 |    3 |    1 |    1 |   1 |
//! |   24 |  11 |  6 |    3 |    2 |    1 |   1 |
//! |   32 |  16 |  8 |    4 |    2 |    1 |   1 |
//! |   40 |  20 | 10 |    5 |    3 |    1 |   1 |
//! |   48 |  24 | 12 |    6 |    4 |    1 |   1 |
//!
//! A count between rows takes the row below it and gives the spare CPUs to `ldm` (so an odd
//! count adds one `ldm`). Above 48 CPUs: `ldm` n/2, `tc` n/4, `recv` n/8, `send` n/12, one
//! `main`, one `rep`, and the remainder to `ldm`. Query instances run inside the `ldm` threads
//! (no separate query threads), modules with no thread are hosted as the layout rules say,
//! one `io` thread is always added (it sleeps on file I/O and is not counted), and no thread
//! is bound: pin threads with an explicit configuration string.

use super::config::ThreadConfig;
use crate::module::Module;

/// The largest CPU count the automatic configuration accepts (it keeps every kind within its
/// count limit).
pub const AUTO_CPUS_MAX: u32 = 512;

/// (cpus, ldm, tc, recv, send, main, rep)
const TABLE: [(u32, u16, u16, u16, u16, u16, u16); 15] = [
    (1, 0, 0, 1, 0, 0, 0),
    (2, 1, 0, 1, 0, 0, 0),
    (4, 2, 1, 1, 0, 0, 0),
    (6, 3, 1, 1, 1, 0, 0),
    (8, 4, 2, 1, 1, 0, 0),
    (10, 5, 2, 1, 1, 1, 0),
    (12, 6, 3, 1, 1, 1, 0),
    (14, 7, 3, 2, 1, 1, 0),
    (16, 8, 4, 2, 1, 1, 0),
    (18, 8, 4, 3, 1, 1, 1),
    (20, 9, 5, 3, 1, 1, 1),
    (24, 11, 6, 3, 2, 1, 1),
    (32, 16, 8, 4, 2, 1, 1),
    (40, 20, 10, 5, 3, 1, 1),
    (48, 24, 12, 6, 4, 1, 1),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("automatic thread configuration needs 1 to {AUTO_CPUS_MAX} CPUs, got {0}")]
pub struct AutoConfigError(pub u32);

/// The configuration for a machine (or share of one) with `cpus` CPUs.
pub fn automatic_config(cpus: u32) -> Result<ThreadConfig, AutoConfigError> {
    if !(1..=AUTO_CPUS_MAX).contains(&cpus) {
        return Err(AutoConfigError(cpus));
    }
    let (ldm, tc, recv, send, main, rep) = if cpus > 48 {
        let n = cpus as u16;
        (n / 2, n / 4, n / 8, n / 12, 1, 1)
    } else {
        let row = TABLE.iter().rev().find(|row| row.0 <= cpus);
        let &(_, ldm, tc, recv, send, main, rep) = row.unwrap_or(&TABLE[0]);
        (ldm, tc, recv, send, main, rep)
    };
    let used = ldm + tc + recv + send + main + rep;
    let spare = cpus as u16 - used;
    Ok(ThreadConfig::with_counts(&[
        (Module::Ldm, ldm + spare),
        (Module::Query, 0),
        (Module::Tc, tc),
        (Module::Recv, recv),
        (Module::Send, send),
        (Module::Main, main),
        (Module::Rep, rep),
        (Module::Io, 1),
    ]))
}
