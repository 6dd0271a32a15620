//! The multi-threaded runtime: starts one scheduler thread per thread of a layout, wires a
//! job buffer between every pair of threads, places blocks, and stops it all again.

mod gateway;
mod os;
mod router;
mod routes;
mod thread;

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kista_signal::{BlockAddress, BlockId, NodeId, Signal};

pub use gateway::{InjectBatch, InjectError, Injector, Remote, RemoteSink, EXTERNAL_SIGNALS_MAX};
pub use os::available_cpus;
pub use router::PENDING_SIGNALS_MAX;
pub use router::TIMERS_PER_THREAD_MAX;

pub(crate) use self::router::Router;
use self::router::Wake;
use self::routes::RouteTable;
use self::thread::{LocalBlocks, SchedulerThread, Shared};
use crate::block::Block;
use crate::fence::{NodeFence, StopReason};
use crate::job_buffer::{Consumer, JobBuffer, Producer};
use crate::module::ModuleInstance;
use crate::rng::Rng;
use crate::section_pool::{SectionPool, SECTIONS_MAX_DEFAULT};
use crate::stats::{ThreadCounters, ThreadStatsSnapshot};
use crate::thread_config::{CpuBinding, CpuList, ThreadLayout, ThreadSpec};

/// Knobs of the runtime beyond the thread layout. The defaults suit a laptop.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    pub node: NodeId,
    /// Slots of each job buffer (one per ordered pair of threads), rounded up to a power of
    /// two. A slot is 128 bytes; memory is touched only where signals flow.
    pub job_buffer_signals: usize,
    /// Signals a thread executes from one job buffer before visiting the next (NDB: 75).
    pub batch_per_input: usize,
    /// Longest an idle thread sleeps before it looks again (NDB: 10 ms).
    pub idle_sleep_max: Duration,
    /// Sections the node's pool holds.
    pub sections_max: u32,
    /// Seed for the threads' random number generators.
    pub seed: u64,
    /// Where signals to other nodes and clients go (the transport); without one, sending
    /// to another node is a bug that stops the node.
    pub remote: Option<Remote>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            node: NodeId(1),
            job_buffer_signals: 1024,
            batch_per_input: 75,
            idle_sleep_max: Duration::from_millis(10),
            sections_max: SECTIONS_MAX_DEFAULT,
            seed: 0x006b_6973_7461,
            remote: None,
        }
    }
}

/// A block instance to run, and the module instance whose thread hosts it. Usually the
/// block's instance number is its host's (`ldm` block 3 on `ldm.3`), but it need not be.
pub struct BlockRegistration {
    pub block: BlockId,
    pub instance: u16,
    pub host: ModuleInstance,
    pub implementation: Box<dyn Block>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("block {block} is placed on {host}, but the thread layout runs no {host}")]
    NoSuchModuleInstance { block: u8, host: ModuleInstance },
    #[error("two blocks registered at {0}")]
    DuplicateBlock(BlockAddress),
    #[error("initial signal to {0}: no block is registered there")]
    UnroutableInitialSignal(BlockAddress),
    #[error("thread {thread} ({kind}) is bound to CPU {cpu}, which this machine does not offer (available: {available})")]
    CpuNotAvailable {
        thread: usize,
        kind: crate::Module,
        cpu: u16,
        available: CpuList,
    },
    #[error("cannot read the CPUs available to this process: {0}")]
    CpuQuery(std::io::Error),
    #[error("thread {thread} could not be set up: {reason}")]
    ThreadSetup { thread: usize, reason: String },
    #[error("cannot start a thread: {0}")]
    Spawn(std::io::Error),
}

/// A scheduler thread panicked: a block or the runtime broke an invariant.
#[derive(Debug, thiserror::Error)]
#[error("thread {thread} ({kind}) failed: {message}")]
pub struct ThreadFailure {
    pub thread: usize,
    pub kind: crate::Module,
    pub message: String,
}

/// A node whose threads are running.
pub struct RunningNode {
    shared: Arc<Shared>,
    routes: Arc<RouteTable>,
    layout: ThreadLayout,
    handles: Vec<JoinHandle<()>>,
    stats: StatsSource,
}

/// Takes statistics snapshots of a running node from any thread.
#[derive(Clone)]
pub struct StatsSource {
    shared: Arc<Shared>,
    layout: Arc<ThreadLayout>,
    /// `[thread]` → its inbound job buffers, for queue-depth statistics.
    inbound: Arc<Vec<Vec<Arc<JobBuffer>>>>,
}

impl StatsSource {
    /// A snapshot of every thread's statistics.
    pub fn snapshot(&self) -> Vec<ThreadStatsSnapshot> {
        self.layout
            .threads
            .iter()
            .map(|spec| {
                let inbound: usize = self.inbound[spec.index].iter().map(|b| b.depth()).sum();
                ThreadStatsSnapshot::new(
                    spec.index,
                    spec.kind,
                    spec.modules.clone(),
                    &self.shared.counters[spec.index],
                    inbound as u64,
                )
            })
            .collect()
    }
}

/// Starts `layout`'s threads with `blocks` placed on them; `initial_signals` are executed
/// first, by the threads hosting their receivers.
pub fn start(
    layout: &ThreadLayout,
    blocks: Vec<BlockRegistration>,
    initial_signals: Vec<Signal>,
    options: &RuntimeOptions,
) -> Result<RunningNode, StartError> {
    check_cpus_exist(layout)?;
    let thread_count = layout.threads.len();
    let mut routes = RouteTable::new(options.node);
    let mut local_blocks: Vec<LocalBlocks> =
        (0..thread_count).map(|_| LocalBlocks::new()).collect();
    for registration in blocks {
        let thread =
            layout
                .thread_of(registration.host)
                .ok_or(StartError::NoSuchModuleInstance {
                    block: registration.block.0,
                    host: registration.host,
                })?;
        let address = BlockAddress::new(options.node, registration.block, registration.instance);
        if !routes.place(address, thread) {
            return Err(StartError::DuplicateBlock(address));
        }
        local_blocks[thread].insert(
            registration.block.0,
            address.instance(),
            registration.implementation,
        );
    }
    let routes = Arc::new(routes);
    let (outputs, inputs) = wire_job_buffers(thread_count, options.job_buffer_signals);
    let inbound: Vec<Vec<Arc<JobBuffer>>> = inputs
        .iter()
        .map(|consumers| consumers.iter().map(|c| Arc::clone(c.buffer())).collect())
        .collect();
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        wake: (0..thread_count).map(|_| Wake::default()).collect(),
        counters: (0..thread_count)
            .map(|_| ThreadCounters::default())
            .collect(),
        sections: Arc::new(SectionPool::new(options.sections_max)),
        external: (0..thread_count)
            .map(|_| gateway::ExternalQueue::default())
            .collect(),
        started: Instant::now(),
        fence: NodeFence::default(),
        stop_reason: StopReason::default(),
    });
    let mut routers: Vec<Router> = outputs
        .into_iter()
        .enumerate()
        .map(|(thread, outputs)| {
            let remote = options.remote.clone().map(|remote| router::RemoteRoute {
                sink: remote.0,
                sections: Arc::clone(&shared.sections),
            });
            Router::new(
                thread,
                Arc::clone(&routes),
                outputs,
                remote,
                Arc::clone(&shared),
            )
        })
        .collect();
    for signal in initial_signals {
        let thread = routes
            .thread_of(signal.receiver())
            .ok_or(StartError::UnroutableInitialSignal(signal.receiver()))?;
        routers[thread].local.push_back(signal);
    }
    let threads = local_blocks
        .into_iter()
        .zip(inputs)
        .zip(routers)
        .enumerate()
        .map(|(index, ((blocks, inputs), router))| {
            let spec = &layout.threads[index];
            SchedulerThread::new(
                index,
                blocks,
                inputs,
                router,
                Rng::new(options.seed ^ (index as u64).wrapping_mul(0x9E37_79B9)),
                Arc::clone(&shared),
                options.batch_per_input.max(1),
                u64::from(spec.spintime_us) * 1000,
                u64::try_from(options.idle_sleep_max.as_nanos()).unwrap_or(u64::MAX),
            )
        });
    let handles = spawn_all(layout, threads.collect(), &shared)?;
    Ok(RunningNode {
        stats: StatsSource {
            shared: Arc::clone(&shared),
            layout: Arc::new(layout.clone()),
            inbound: Arc::new(inbound),
        },
        shared,
        routes,
        layout: layout.clone(),
        handles,
    })
}

/// Fails before any thread starts if a binding names a CPU this process cannot use.
fn check_cpus_exist(layout: &ThreadLayout) -> Result<(), StartError> {
    if layout.threads.iter().all(|t| t.cpus == CpuBinding::Any) {
        return Ok(());
    }
    let available = available_cpus().map_err(StartError::CpuQuery)?;
    for thread in &layout.threads {
        let (CpuBinding::Bind(list) | CpuBinding::Set(list)) = &thread.cpus else {
            continue;
        };
        if let Some(&cpu) = list.cpus().iter().find(|cpu| !available.contains(cpu)) {
            return Err(StartError::CpuNotAvailable {
                thread: thread.index,
                kind: thread.kind,
                cpu,
                available: CpuList::new(available),
            });
        }
    }
    Ok(())
}

/// One job buffer per ordered pair of distinct threads: `outputs[from][to]` and
/// `inputs[to]` (in order of `from`).
#[allow(clippy::type_complexity)]
fn wire_job_buffers(
    threads: usize,
    capacity: usize,
) -> (Vec<Vec<Option<Producer>>>, Vec<Vec<Consumer>>) {
    let mut outputs: Vec<Vec<Option<Producer>>> = (0..threads)
        .map(|_| (0..threads).map(|_| None).collect())
        .collect();
    let mut inputs: Vec<Vec<Consumer>> = (0..threads).map(|_| Vec::new()).collect();
    for (from, row) in outputs.iter_mut().enumerate() {
        for (to, output) in row.iter_mut().enumerate() {
            if from != to {
                let (producer, consumer) = JobBuffer::with_capacity(capacity);
                *output = Some(producer);
                inputs[to].push(consumer);
            }
        }
    }
    (outputs, inputs)
}

/// Spawns every thread, applies its CPU binding and priority, and lets them run only once
/// all are set up; if any setup fails, all threads exit without running a block.
fn spawn_all(
    layout: &ThreadLayout,
    threads: Vec<SchedulerThread>,
    shared: &Arc<Shared>,
) -> Result<Vec<JoinHandle<()>>, StartError> {
    let (report, reports) = mpsc::sync_channel::<Result<(), (usize, String)>>(threads.len());
    let mut handles = Vec::with_capacity(threads.len());
    // Each thread waits on its gate until the gates are dropped below; by then the stop flag
    // says whether to run.
    let mut gates = Vec::with_capacity(threads.len());
    let mut failure = None;
    for thread in threads {
        let spec = layout.threads[thread.index].clone();
        let (gate, wait_at_gate) = mpsc::channel::<()>();
        let report = report.clone();
        let shared = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name(format!("kista-{}-{}", spec.kind, spec.index))
            .spawn(move || {
                let _ = shared.wake[spec.index].thread.set(std::thread::current());
                let setup = set_up_thread(&spec).map_err(|reason| (spec.index, reason));
                let _ = report.send(setup);
                let _ = wait_at_gate.recv();
                let _stop_on_panic = StopOnPanic(&shared);
                thread.run();
            });
        match spawned {
            Ok(handle) => {
                handles.push(handle);
                gates.push(gate);
            }
            Err(error) => {
                failure = Some(StartError::Spawn(error));
                break;
            }
        }
    }
    drop(report);
    for _ in 0..handles.len() {
        if let Ok(Err((thread, reason))) = reports.recv() {
            failure.get_or_insert(StartError::ThreadSetup { thread, reason });
        }
    }
    if failure.is_some() {
        shared.request_stop();
    }
    drop(gates);
    match failure {
        Some(error) => {
            for handle in handles {
                let _ = handle.join();
            }
            Err(error)
        }
        None => Ok(handles),
    }
}

fn set_up_thread(spec: &ThreadSpec) -> Result<(), String> {
    match &spec.cpus {
        CpuBinding::Any => {}
        CpuBinding::Bind(list) | CpuBinding::Set(list) => os::bind_current_thread(list.cpus())
            .map_err(|e| format!("cannot bind to CPUs {list}: {e}"))?,
    }
    if spec.realtime {
        os::set_current_thread_realtime()
            .map_err(|e| format!("cannot use real-time scheduling: {e}"))?;
    }
    if let Some(prio) = spec.thread_prio {
        os::set_current_thread_priority(prio)
            .map_err(|e| format!("cannot set thread_prio={prio}: {e}"))?;
    }
    Ok(())
}

/// Brings the whole node down if its thread panics: a broken invariant must not leave the
/// other threads running on half-updated state.
struct StopOnPanic<'a>(&'a Shared);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.request_stop();
        }
    }
}

impl RunningNode {
    pub fn layout(&self) -> &ThreadLayout {
        &self.layout
    }

    /// A snapshot of every thread's statistics.
    pub fn stats(&self) -> Vec<ThreadStatsSnapshot> {
        self.stats.snapshot()
    }

    /// A handle for taking statistics from another thread.
    pub fn stats_source(&self) -> StatsSource {
        self.stats.clone()
    }

    pub fn sections(&self) -> &SectionPool {
        &self.shared.sections
    }

    /// A handle that puts signals from outside (the transport) into this node.
    pub fn injector(&self) -> Injector {
        Injector {
            shared: Arc::clone(&self.shared),
            routes: Arc::clone(&self.routes),
        }
    }

    /// Whether a thread has stopped the node (after a panic, or a block's
    /// `Context::stop_node`).
    pub fn has_stopped(&self) -> bool {
        self.shared.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Why a block stopped the node, if one did.
    pub fn stop_reason(&self) -> Option<String> {
        self.shared.stop_reason.get()
    }

    /// Stops every thread and waits for them. Returns the final statistics, or the first
    /// thread failure.
    pub fn stop(mut self) -> Result<Vec<ThreadStatsSnapshot>, ThreadFailure> {
        self.join_all()?;
        Ok(self.stats())
    }

    fn join_all(&mut self) -> Result<(), ThreadFailure> {
        self.shared.request_stop();
        let mut failure = None;
        for (index, handle) in self.handles.drain(..).enumerate() {
            if let Err(payload) = handle.join() {
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".to_string());
                failure.get_or_insert(ThreadFailure {
                    thread: index,
                    kind: self.layout.threads[index].kind,
                    message,
                });
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

impl Drop for RunningNode {
    fn drop(&mut self) {
        let _ = self.join_all();
    }
}
