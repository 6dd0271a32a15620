//! `kista datad --standalone` as a process: clients connect over TCP and run transactions,
//! and hostile connections are closed with a logged reason without disturbing anyone else.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use kista_datanode::protocol::*;
use kista_signal::{wire, BlockAddress, BlockId, NodeId, Signal, SignalNumber, TypedSignal};
use kista_storage::row::RowLayout;
use kista_storage::schema::{Column, TableSchema};
use kista_storage::types::{ColumnType, Value};
use kista_transport::client::{ClientConnection, Event};
use kista_transport::handshake::{self, Role};
use support::Datad;

const TIMEOUT: Duration = Duration::from_secs(10);
const NODE: NodeId = NodeId(1);

fn schema() -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: "kv".into(),
        columns: vec![
            Column::new(
                "k",
                ColumnType::Int {
                    bytes: 8,
                    signed: true,
                },
            ),
            Column::new("v", ColumnType::varchar(100)),
        ],
        primary_key: vec![0],
    }
}

/// A well-behaved client: sends requests and waits for answers.
struct GoodClient {
    connection: ClientConnection,
    me: BlockAddress,
    answers: mpsc::Receiver<(Signal, Vec<u8>)>,
    node_log: std::sync::Arc<std::sync::Mutex<String>>,
    /// Signals that arrived while waiting for another.
    stash: std::cell::RefCell<Vec<(Signal, Vec<u8>)>>,
}

impl GoodClient {
    fn connect(datad: &Datad) -> Self {
        let (deliver, answers) = mpsc::channel();
        let connection =
            ClientConnection::connect(datad.address, None, None, TIMEOUT, move |event| {
                if let Event::Signal(signal, section) = event {
                    let _ = deliver.send((signal, section.to_vec()));
                }
            })
            .expect("connects");
        let info = NodeInfo::decode(&connection.welcome().info).expect("node info");
        let node = connection.welcome().node;
        assert_eq!(
            info.cluster.nodes().len(),
            1,
            "a standalone node is its cluster"
        );
        assert!(info.cluster.node(node).is_some_and(|n| n.tc_instances >= 1));
        let me = BlockAddress::new(connection.welcome().client_node, BlockId(1), 0);
        Self {
            connection,
            me,
            answers,
            node_log: datad.stderr_handle(),
            stash: Default::default(),
        }
    }

    fn send(&self, signal: Signal, section: &[u8]) {
        self.connection
            .send(&signal, section)
            .expect("connection open");
    }

    fn wait(&self, number: SignalNumber) -> (Signal, Vec<u8>) {
        self.wait_any(&[number])
    }

    /// The first answer that is one of `numbers`; others are kept for later waits.
    fn wait_any(&self, numbers: &[SignalNumber]) -> (Signal, Vec<u8>) {
        let mut stash = self.stash.borrow_mut();
        if let Some(position) = stash
            .iter()
            .position(|(s, _)| numbers.contains(&s.number()))
        {
            return stash.remove(position);
        }
        loop {
            let Ok((signal, section)) = self.answers.recv_timeout(TIMEOUT) else {
                let log = self.node_log.lock().unwrap().clone();
                panic!("no answer {numbers:?}; node log:\n{log}");
            };
            if numbers.contains(&signal.number()) {
                return (signal, section);
            }
            stash.push((signal, section));
        }
    }

    fn create_table(&self) -> (u32, u32) {
        let mut body = Vec::new();
        TableDefinitionBody::new(schema(), vec![]).encode(&mut body);
        let dict = BlockAddress::new(NODE, DICT_BLOCK, 0);
        let request = CreateTableRequest {
            request_id: 1,
            client: self.me,
        };
        self.send(request.to_signal(dict, self.me), &body);
        let (signal, _) = self.wait(CreateTableConf::NUMBER);
        let conf = CreateTableConf::from_signal(&signal).unwrap();
        (conf.table_id, conf.schema_version)
    }

    /// Writes `k = v` and reads it back committed, in two transactions.
    fn write_and_read(&self, table: (u32, u32), client_tx: u64, k: i64, v: &str) {
        let tc = BlockAddress::new(NODE, TC_BLOCK, 0);
        let mut key = Vec::new();
        RowLayout::new(&schema())
            .primary_key_of_values(&[Value::Int(k)], &mut key)
            .unwrap();
        let row = vec![Value::Int(k), Value::Bytes(v.as_bytes().to_vec())];
        for (offset, kind, values) in [
            (0, OperationKind::Write, row.clone()),
            (1, OperationKind::Read, vec![]),
        ] {
            let request = KeyRequest {
                client: self.me,
                client_tx: client_tx + offset,
                op_index: 0,
                table_id: table.0,
                schema_version: table.1,
                kind,
                lock: LockKind::Committed,
                execute: ExecuteMode::Commit,
                index_id: PRIMARY_KEY,
                flags: 0,
            };
            let mut body = Vec::new();
            KeyBody {
                key: key.clone(),
                columns: vec![],
                values,
            }
            .encode(&mut body);
            self.send(request.to_signal(tc, self.me), &body);
            let (signal, message) = self.wait_any(&[ExecuteConf::NUMBER, ReadCommitted::NUMBER]);
            if let Ok(read) = ReadCommitted::from_signal(&signal) {
                // A committed read the coordinator ran itself: row and commit in one signal.
                assert_eq!((kind, read.found), (OperationKind::Read, 1));
                assert_eq!(RowBody::decode(&message).unwrap().values, row);
                continue;
            }
            let conf = ExecuteConf::from_signal(&signal).unwrap();
            assert_eq!(
                conf.outcome,
                TransactionOutcome::Committed,
                "{}",
                String::from_utf8_lossy(&message)
            );
            if kind == OperationKind::Read {
                assert_eq!(conf.reads, 1);
                let (_, bytes) = self.wait(ReadResult::NUMBER);
                assert_eq!(RowBody::decode(&bytes).unwrap().values, row);
            }
        }
    }
}

/// Opens a raw connection, optionally shakes hands, sends `bytes`, and reports whether the
/// node closed it (end of file) within the timeout.
fn node_closes_after(datad: &Datad, hello: bool, bytes: &[u8]) -> bool {
    let mut stream = TcpStream::connect(datad.address).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut node = NodeId(0);
    if hello {
        node = handshake::dial(&mut stream, Role::Client(None), None)
            .unwrap()
            .client_node;
    }
    let bytes = bytes
        .iter()
        .map(|&b| if b == 0xEE { node.0 } else { b })
        .collect::<Vec<_>>();
    let _ = stream.write_all(&bytes);
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => true,
        // A close with our bytes unread arrives as a reset; only a timeout means "still open".
        Err(error) => !matches!(
            error.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// The wire form of `signal`; sender node bytes 0xEE are replaced by the connection's id.
fn frame(signal: &Signal, section: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    wire::encode(signal, section, &mut bytes).unwrap();
    bytes
}

#[test]
fn clients_run_transactions_and_hostile_connections_are_closed_alone() {
    let datad = Datad::start(&[
        "--thread-config",
        "ldm={count=1},tc={count=1},recv={count=1}",
    ]);
    let good = GoodClient::connect(&datad);
    let table = good.create_table();
    good.write_and_read(table, 1, 1, "before");

    let tc = BlockAddress::new(NODE, TC_BLOCK, 0);
    let ldm = BlockAddress::new(NODE, LDM_BLOCK, 0);
    let me = BlockAddress::new(NodeId(0xEE), BlockId(1), 0);
    let end = |client| EndBatch {
        client,
        client_tx: 9,
        execute: ExecuteMode::Commit,
    };
    let mut bad_version = frame(&end(me).to_signal(tc, me), &[]);
    bad_version[0] = 7;
    let mut huge_section = frame(&end(me).to_signal(tc, me), &[]);
    huge_section[12..16].copy_from_slice(&(64u32 << 20).to_le_bytes());
    let truncated = frame(&end(me).to_signal(tc, me), b"some section bytes");
    let spoofed = BlockAddress::new(NodeId(3), BlockId(1), 0);
    let mut malformed = end(me).to_signal(tc, me);
    malformed.payload[3] = 99; // not an ExecuteMode
    let unknown = Signal::with_words(SignalNumber(4242), tc, me, &[]);

    let hostile: Vec<(&str, bool, Vec<u8>)> = vec![
        (
            "garbage instead of a handshake",
            false,
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        ),
        ("a bad format version", true, bad_version),
        ("a section over the limit", true, huge_section),
        (
            "a spoofed sender",
            true,
            frame(&end(spoofed).to_signal(tc, spoofed), &[]),
        ),
        (
            "another client's name",
            true,
            frame(&end(spoofed).to_signal(tc, me), &[]),
        ),
        (
            "a signal to an internal block",
            true,
            frame(&Abort { tc, transaction: 1 }.to_signal(ldm, me), &[]),
        ),
        ("a malformed payload", true, frame(&malformed, &[])),
        ("an unknown signal", true, frame(&unknown, &[])),
    ];
    for (what, hello, bytes) in &hostile {
        assert!(
            node_closes_after(&datad, *hello, bytes),
            "{what}: the node closes the connection"
        );
    }
    // A connection that sends half a frame and then hangs up (half a frame alone is not an
    // error: the rest may be on its way).
    {
        let mut stream = TcpStream::connect(datad.address).unwrap();
        handshake::dial(&mut stream, Role::Client(None), None).unwrap();
        stream.write_all(&truncated[..10]).unwrap();
    }

    good.write_and_read(table, 3, 2, "after");
    let mut datad = datad;
    assert!(datad.is_running(), "no hostile input stopped the node");
    drop(good);
    let (clean, stdout, stderr) = datad.stop();
    assert!(clean, "stops cleanly on SIGTERM: {stderr}");
    assert!(stdout.contains("stopped"), "{stdout}");
    for reason in [
        "handshake failed",
        "unsupported signal format version 7",
        "at most 1048576 are allowed",
        "claims to come from node 3",
        "names client",
        "may not address block 12",
        "malformed signal",
        "not one a client may send",
        "truncated frame",
    ] {
        assert!(
            stderr.contains(reason),
            "the log names {reason:?}:\n{stderr}"
        );
    }
}
