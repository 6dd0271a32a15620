//! A parsed thread configuration: how many threads of each kind, and how they are bound.

use std::fmt;

use super::cpu_list::CpuList;
use crate::module::Module;

/// The longest `spintime` a thread may be configured with, as in NDB.
pub const SPINTIME_US_MAX: u32 = 9000;
/// `thread_prio` ranges over 0..=10; 10 is the highest priority.
pub const THREAD_PRIO_MAX: u8 = 10;

/// How a thread's CPUs are chosen.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum CpuBinding {
    /// The operating system decides.
    #[default]
    Any,
    /// `cpubind`: each thread of the entry is pinned to one CPU of the list, in order.
    Bind(CpuList),
    /// `cpuset`: every thread of the entry floats over all CPUs of the list.
    Set(CpuList),
}

/// One `kind={...}` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadEntry {
    /// Threads of this kind. 0 means the module's instances are hosted by other threads.
    pub count: u16,
    pub binding: CpuBinding,
    /// How long an idle thread spins before it sleeps.
    pub spintime_us: u32,
    /// Ask for real-time (FIFO) scheduling.
    pub realtime: bool,
    /// 0..=10, mapped to a nice value; `None` leaves the priority alone.
    pub thread_prio: Option<u8>,
}

impl ThreadEntry {
    pub const fn with_count(count: u16) -> Self {
        Self {
            count,
            binding: CpuBinding::Any,
            spintime_us: 0,
            realtime: false,
            thread_prio: None,
        }
    }
}

/// Thread counts a kind allows (NDB's limits, so that its configurations carry over).
pub const fn count_range(module: Module) -> (u16, u16) {
    match module {
        Module::Ldm | Module::Query => (0, 332),
        Module::Tc => (0, 160),
        Module::Recv => (1, 80),
        Module::Send => (0, 80),
        Module::Main | Module::Rep | Module::Io => (0, 1),
    }
}

/// The count a kind gets when the configuration does not mention it: one `recv` thread runs
/// every block module, and one `io` thread does file I/O.
pub const fn default_count(module: Module) -> u16 {
    match module {
        Module::Recv | Module::Io => 1,
        _ => 0,
    }
}

/// A whole thread configuration: one entry per kind, in [`Module::ALL`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadConfig {
    entries: [ThreadEntry; 8],
}

impl Default for ThreadConfig {
    fn default() -> Self {
        Self {
            entries: Module::ALL.map(|module| ThreadEntry::with_count(default_count(module))),
        }
    }
}

impl ThreadConfig {
    /// A configuration with the given counts and no binding; kinds not listed get their
    /// default count.
    pub fn with_counts(counts: &[(Module, u16)]) -> Self {
        let mut config = Self::default();
        for &(module, count) in counts {
            config.entries[module.index()].count = count;
        }
        config
    }

    pub fn entry(&self, module: Module) -> &ThreadEntry {
        &self.entries[module.index()]
    }

    pub fn entry_mut(&mut self, module: Module) -> &mut ThreadEntry {
        &mut self.entries[module.index()]
    }

    pub fn count(&self, module: Module) -> u16 {
        self.entry(module).count
    }

    /// Total threads this configuration starts.
    pub fn thread_count(&self) -> usize {
        self.entries
            .iter()
            .map(|entry| usize::from(entry.count))
            .sum()
    }
}

impl fmt::Display for ThreadConfig {
    /// The canonical string: every kind, in canonical order, with only non-default keys.
    /// Parsing it gives back an equal configuration.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, (module, entry)) in Module::ALL.iter().zip(&self.entries).enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{module}={{count={}", entry.count)?;
            match &entry.binding {
                CpuBinding::Any => {}
                CpuBinding::Bind(list) => write!(f, ",cpubind={list}")?,
                CpuBinding::Set(list) => write!(f, ",cpuset={list}")?,
            }
            if entry.spintime_us != 0 {
                write!(f, ",spintime={}", entry.spintime_us)?;
            }
            if entry.realtime {
                f.write_str(",realtime=1")?;
            }
            if let Some(prio) = entry.thread_prio {
                write!(f, ",thread_prio={prio}")?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}
