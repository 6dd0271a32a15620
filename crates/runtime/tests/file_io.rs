//! Blocks do file I/O only by asking the file-system block, which runs on real files in the
//! multi-threaded runtime and on in-memory files in the simulation.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kista_runtime::io::{
    DiskStorage, FileOperation, FileReply, FileRequest, FileStatus, FileSystemBlock, SimulatedDisk,
    FILE_SYSTEM_BLOCK,
};
use kista_runtime::simulation::{Simulation, SimulationOptions};
use kista_runtime::thread_config::ThreadLayout;
use kista_runtime::{
    start, Block, BlockRegistration, Context, Module, ModuleInstance, RuntimeOptions,
};
use kista_signal::{BlockAddress, BlockId, NodeId, Signal, SignalNumber, TypedSignal};

const SCRIPT_BLOCK: BlockId = BlockId(7);
const NODE: NodeId = NodeId(1);

/// What one request got back: its status, length and the bytes of a read.
type Outcome = (FileStatus, u32, Vec<u8>);

/// Performs `steps` one after another, each after the previous reply, using the file number
/// the last `Open` returned, and records every reply.
struct Script {
    steps: Vec<(FileOperation, Vec<u8>)>,
    next_step: usize,
    file: u32,
    outcomes: Arc<Mutex<Vec<Outcome>>>,
}

impl Script {
    fn request_next(&mut self, ctx: &mut Context<'_>) {
        let Some((operation, data)) = self.steps.get(self.next_step) else {
            return;
        };
        let request = FileRequest {
            request_id: self.next_step as u64,
            file: self.file,
            operation: *operation,
        };
        self.next_step += 1;
        ctx.request_io(&request, data).unwrap();
    }
}

impl Block for Script {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if let Ok(reply) = FileReply::from_signal(signal) {
            assert_eq!(reply.request_id as usize, self.next_step - 1);
            if matches!(self.steps[self.next_step - 1].0, FileOperation::Open { .. })
                && reply.status == FileStatus::Ok
            {
                self.file = reply.file;
            }
            let data = ctx
                .section()
                .map(|bytes| bytes.to_vec())
                .unwrap_or_default();
            self.outcomes
                .lock()
                .unwrap()
                .push((reply.status, reply.length, data));
        }
        self.request_next(ctx);
    }
}

fn journal_steps() -> Vec<(FileOperation, Vec<u8>)> {
    vec![
        (
            FileOperation::Open {
                create: true,
                truncate: false,
            },
            b"redo/part0.log".to_vec(),
        ),
        (
            FileOperation::Write { offset: 0 },
            b"epoch 1: committed".to_vec(),
        ),
        (FileOperation::Write { offset: 6 }, b"2".to_vec()),
        (FileOperation::Sync, Vec::new()),
        (FileOperation::Allocate { bytes: 32 }, Vec::new()),
        (
            FileOperation::Read {
                offset: 0,
                length: 100,
            },
            Vec::new(),
        ),
        (FileOperation::Close, Vec::new()),
        (
            FileOperation::Read {
                offset: 0,
                length: 4,
            },
            Vec::new(),
        ),
        (
            FileOperation::Open {
                create: false,
                truncate: false,
            },
            b"../outside".to_vec(),
        ),
        (
            FileOperation::Open {
                create: false,
                truncate: false,
            },
            b"redo/missing.log".to_vec(),
        ),
    ]
}

fn expected_journal_outcomes() -> Vec<Outcome> {
    vec![
        (FileStatus::Ok, 0, Vec::new()),
        (FileStatus::Ok, 18, Vec::new()),
        (FileStatus::Ok, 1, Vec::new()),
        (FileStatus::Ok, 0, Vec::new()),
        (FileStatus::Ok, 0, Vec::new()),
        (FileStatus::Ok, 32, allocated_journal()),
        (FileStatus::Ok, 0, Vec::new()),
        (FileStatus::UnknownFile, 0, Vec::new()),
        (FileStatus::InvalidPath, 0, Vec::new()),
        (FileStatus::NotFound, 0, Vec::new()),
    ]
}

/// The journal after the allocation made it 32 bytes long.
fn allocated_journal() -> Vec<u8> {
    let mut journal = b"epoch 2: committed".to_vec();
    journal.resize(32, 0);
    journal
}

fn script(outcomes: &Arc<Mutex<Vec<Outcome>>>) -> Script {
    Script {
        steps: journal_steps(),
        next_step: 0,
        file: 0,
        outcomes: outcomes.clone(),
    }
}

fn kick() -> Signal {
    let address = BlockAddress::new(NODE, SCRIPT_BLOCK, 0);
    Signal::new(SignalNumber(1), address, address)
}

#[test]
fn a_block_writes_syncs_and_reads_a_file_in_the_simulation() {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let mut simulation = Simulation::new(&SimulationOptions::default());
    let file_system = FileSystemBlock::new(Box::new(SimulatedDisk::new()));
    simulation
        .add_block(
            BlockAddress::new(NODE, FILE_SYSTEM_BLOCK, 0),
            Box::new(file_system),
        )
        .unwrap();
    simulation
        .add_block(
            BlockAddress::new(NODE, SCRIPT_BLOCK, 0),
            Box::new(script(&outcomes)),
        )
        .unwrap();
    simulation.inject(kick());
    simulation.run_until_idle(1000).unwrap();
    assert_eq!(*outcomes.lock().unwrap(), expected_journal_outcomes());
    assert_eq!(simulation.sections().in_use(), 0);
}

#[test]
fn a_block_writes_syncs_and_reads_a_real_file_through_the_io_thread() {
    let directory = std::env::temp_dir().join(format!("kista-file-io-{}", std::process::id()));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let layout =
        ThreadLayout::from_config(&"ldm={count=1},recv={count=1},io={count=1}".parse().unwrap());
    let blocks = vec![
        BlockRegistration {
            block: FILE_SYSTEM_BLOCK,
            instance: 0,
            host: ModuleInstance {
                module: Module::Io,
                instance: 0,
            },
            implementation: Box::new(FileSystemBlock::new(Box::new(DiskStorage::new(&directory)))),
        },
        BlockRegistration {
            block: SCRIPT_BLOCK,
            instance: 0,
            host: ModuleInstance {
                module: Module::Ldm,
                instance: 0,
            },
            implementation: Box::new(script(&outcomes)),
        },
    ];
    let node = start(&layout, blocks, vec![kick()], &RuntimeOptions::default()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while outcomes.lock().unwrap().len() < journal_steps().len() {
        assert!(Instant::now() < deadline, "{:?}", outcomes.lock().unwrap());
        std::thread::sleep(Duration::from_millis(2));
    }
    node.stop().unwrap();
    let on_disk = std::fs::read(directory.join("redo/part0.log"));
    std::fs::remove_dir_all(&directory).unwrap();
    assert_eq!(*outcomes.lock().unwrap(), expected_journal_outcomes());
    assert_eq!(on_disk.unwrap(), allocated_journal());
}
