//! From a configuration to a layout: which thread hosts which module instances.
//!
//! Hosting rules for kinds with `count=0`:
//! - `ldm`: one `ldm` instance inside each `recv` thread.
//! - `query`: one instance inside each `ldm` thread, or inside each `recv` thread when `ldm`
//!   is hosted there too.
//! - `tc`: one instance inside each `recv` thread (tc colocated with recv).
//! - `main`: inside the first `recv` thread; `rep` and `io` follow `main`, wherever it is.
//! - `send`: no send threads; every thread sends what it produces itself.
//!
//! So `ldm`, `query` and `tc` at 0 with `recv={count=4}` makes each receive thread run
//! recv+ldm+query+tc (the "Receive setup"), while separate `ldm` and `query` threads form a
//! pipeline (the "LDM setup").

use std::fmt;

use super::config::{CpuBinding, ThreadConfig};
use crate::module::{Module, ModuleInstance};

/// One thread of a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSpec {
    pub index: usize,
    /// The kind of thread (the entry it came from).
    pub kind: Module,
    /// Module instances it runs; its own kind's instance first.
    pub modules: Vec<ModuleInstance>,
    /// `Bind` lists exactly one CPU; `Set` the CPUs it may float over.
    pub cpus: CpuBinding,
    pub spintime_us: u32,
    pub realtime: bool,
    pub thread_prio: Option<u8>,
}

impl ThreadSpec {
    pub fn hosts(&self, module: Module) -> bool {
        self.modules.iter().any(|m| m.module == module)
    }
}

/// Every thread of a data node and what runs on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadLayout {
    pub threads: Vec<ThreadSpec>,
}

impl ThreadLayout {
    pub fn from_config(config: &ThreadConfig) -> Self {
        let mut threads = Vec::with_capacity(config.thread_count());
        for kind in Module::ALL {
            let entry = config.entry(kind);
            for instance in 0..entry.count {
                let cpus = match &entry.binding {
                    CpuBinding::Bind(list) => CpuBinding::Bind(super::CpuList::new(vec![
                        list.cpus()[usize::from(instance)],
                    ])),
                    other => other.clone(),
                };
                threads.push(ThreadSpec {
                    index: threads.len(),
                    kind,
                    modules: vec![ModuleInstance {
                        module: kind,
                        instance,
                    }],
                    cpus,
                    spintime_us: entry.spintime_us,
                    realtime: entry.realtime,
                    thread_prio: entry.thread_prio,
                });
            }
        }
        let mut layout = Self { threads };
        layout.place_hosted_modules(config);
        layout
    }

    fn place_hosted_modules(&mut self, config: &ThreadConfig) {
        let recv_threads = self.thread_indexes(Module::Recv);
        let ldm_hosts = if config.count(Module::Ldm) == 0 {
            self.host_one_per_thread(Module::Ldm, &recv_threads);
            recv_threads.clone()
        } else {
            self.thread_indexes(Module::Ldm)
        };
        if config.count(Module::Query) == 0 {
            self.host_one_per_thread(Module::Query, &ldm_hosts);
        }
        if config.count(Module::Tc) == 0 {
            self.host_one_per_thread(Module::Tc, &recv_threads);
        }
        let main_host = match self.thread_indexes(Module::Main).first() {
            Some(&thread) => thread,
            None => {
                let first_recv = recv_threads[0];
                self.host_one_per_thread(Module::Main, &[first_recv]);
                first_recv
            }
        };
        for follower in [Module::Rep, Module::Io] {
            if config.count(follower) == 0 {
                self.host_one_per_thread(follower, &[main_host]);
            }
        }
        for thread in &mut self.threads {
            thread.modules[1..].sort();
        }
    }

    fn thread_indexes(&self, kind: Module) -> Vec<usize> {
        let threads = self.threads.iter().filter(|t| t.kind == kind);
        threads.map(|t| t.index).collect()
    }

    fn host_one_per_thread(&mut self, module: Module, hosts: &[usize]) {
        for (instance, &thread) in hosts.iter().enumerate() {
            self.threads[thread].modules.push(ModuleInstance {
                module,
                instance: instance as u16,
            });
        }
    }

    /// The thread running `module_instance`, if any does.
    pub fn thread_of(&self, module_instance: ModuleInstance) -> Option<usize> {
        let mut threads = self.threads.iter();
        let thread = threads.find(|t| t.modules.contains(&module_instance))?;
        Some(thread.index)
    }

    /// How many instances of `module` the layout runs.
    pub fn instances_of(&self, module: Module) -> usize {
        let modules = self.threads.iter().flat_map(|t| &t.modules);
        modules.filter(|m| m.module == module).count()
    }

    /// The same layout with every CPU binding removed, for running it on a machine that
    /// lacks the CPUs it names.
    pub fn unbound(&self) -> Self {
        let mut layout = self.clone();
        for thread in &mut layout.threads {
            thread.cpus = CpuBinding::Any;
        }
        layout
    }
}

impl fmt::Display for ThreadLayout {
    /// One line per thread: `thread <index> <kind> modules=<module.instance,...> cpus=<list|any>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for thread in &self.threads {
            write!(f, "thread {} {} modules=", thread.index, thread.kind)?;
            for (index, module) in thread.modules.iter().enumerate() {
                if index > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{module}")?;
            }
            match &thread.cpus {
                CpuBinding::Any => writeln!(f, " cpus=any")?,
                CpuBinding::Bind(list) | CpuBinding::Set(list) => writeln!(f, " cpus={list}")?,
            }
        }
        Ok(())
    }
}
