//! Execution modules: the units a thread configuration places on threads.

use std::fmt;

/// An execution module. Each has one or more instances; a thread hosts one or more module
/// instances. The order of the variants is the canonical order of thread configurations and
/// layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Module {
    /// Local data manager: owns partition replicas.
    Ldm,
    /// Executes committed reads on partitions an `ldm` owns.
    Query,
    /// Transaction coordinator.
    Tc,
    /// Reads sockets and routes incoming signals.
    Recv,
    /// Writes outgoing buffers to sockets.
    Send,
    /// Dictionary, distribution, membership, restarts, checkpoints.
    Main,
    /// Change streams.
    Rep,
    /// File I/O.
    Io,
}

impl Module {
    pub const ALL: [Module; 8] = [
        Module::Ldm,
        Module::Query,
        Module::Tc,
        Module::Recv,
        Module::Send,
        Module::Main,
        Module::Rep,
        Module::Io,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Module::Ldm => "ldm",
            Module::Query => "query",
            Module::Tc => "tc",
            Module::Recv => "recv",
            Module::Send => "send",
            Module::Main => "main",
            Module::Rep => "rep",
            Module::Io => "io",
        }
    }

    pub fn from_name(name: &str) -> Option<Module> {
        Module::ALL.into_iter().find(|module| module.name() == name)
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One instance of a module, printed `ldm.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModuleInstance {
    pub module: Module,
    pub instance: u16,
}

impl fmt::Display for ModuleInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.module, self.instance)
    }
}
