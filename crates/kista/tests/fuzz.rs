//! The fuzzing harness: what a stranger may send each decoder, from real inputs mutated at
//! random (bytes flipped, cut, repeated, spliced) and from plain noise. Each target must
//! answer with an error or a result and never panic, hang or allocate what the input
//! merely declares. Run by the test command for a bounded number of cases per target;
//! the seeds are the corpus in `tests/fuzz/` and inputs built here from the protocols'
//! own encoders. A failure prints the input, and proptest keeps it in
//! `tests/fuzz/regressions.txt`, tried first from then on (commit it). Its first run
//! found a TIME parameter whose day count overflowed (`protocol/binary.rs`).
//!
//! Targets: the MySQL handshake a stranger answers (and the packet stream under it), the
//! binary protocol's parameter values, the SQL parser's entry, the management commands
//! and request lines, the node's side of the cluster handshake, the frames and signals
//! between nodes, and the sections (request bodies) a data node decodes.

use std::io::{Cursor, Read, Write};

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use kista_sql::protocol::binary::read_parameter;
use kista_sql::protocol::handshake::handshake;
use kista_sql::protocol::packet::PacketStream;
use kista_sql::protocol::wire::Input;
use kista_sql::{User, Users};

/// Where an input that failed is kept, to be tried first by every later run (relative to
/// the crate, where tests run).
const REGRESSIONS: &str = "tests/fuzz/regressions.txt";

/// Cases each target tries per run: enough to walk every decoder's branches from the
/// seeds, few enough for the whole harness to take seconds.
const CASES: u32 = 10_000;

/// A mutation of a seed: what a fuzzer does to an input, one step at a time.
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: usize,
        bits: u8,
    },
    Cut {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Repeat {
        from: usize,
        length: usize,
        times: u8,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, bits)| Mutation::Flip { at, bits }),
        any::<usize>().prop_map(|at| Mutation::Cut { at }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..64, 1u8..8).prop_map(|(from, length, times)| {
            Mutation::Repeat {
                from,
                length,
                times,
            }
        }),
    ]
}

/// `seed` with `mutations` applied in turn.
fn mutated(seed: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for mutation in mutations {
        let place = |at: usize, len: usize| if len == 0 { 0 } else { at % (len + 1) };
        match mutation {
            Mutation::Flip { at, bits } if !bytes.is_empty() => {
                let at = at % bytes.len();
                bytes[at] ^= bits;
            }
            Mutation::Flip { .. } => {}
            Mutation::Cut { at } => bytes.truncate(place(*at, bytes.len())),
            Mutation::Insert {
                at,
                bytes: inserted,
            } => {
                let at = place(*at, bytes.len());
                bytes.splice(at..at, inserted.iter().copied());
            }
            Mutation::Repeat {
                from,
                length,
                times,
            } => {
                let from = place(*from, bytes.len());
                let end = (from + length).min(bytes.len());
                let piece = bytes[from..end].to_vec();
                for _ in 0..*times {
                    bytes.splice(end..end, piece.iter().copied());
                }
            }
        }
    }
    bytes
}

/// An input for a target: a seed mutated, or noise.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let count = seeds.len();
    prop_oneof![
        4 => (0..count, proptest::collection::vec(mutation(), 0..6))
            .prop_map(move |(seed, mutations)| mutated(&seeds[seed], &mutations)),
        1 => proptest::collection::vec(any::<u8>(), 0..512),
    ]
}

/// The seeds of `tests/fuzz/NAME`: one per line.
fn corpus(name: &str) -> Vec<Vec<u8>> {
    let path = format!("{}/tests/fuzz/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(|line| line.as_bytes().to_vec()).collect()
}

/// A client's side of a connection: what it sends, and what it is sent.
struct Exchange {
    sent: Cursor<Vec<u8>>,
    answered: Vec<u8>,
}

impl Read for Exchange {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        self.sent.read(buffer)
    }
}

impl Write for Exchange {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.answered.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `payload` as one MySQL packet numbered `sequence`.
fn packet(sequence: u8, payload: &[u8]) -> Vec<u8> {
    let length = (payload.len() as u32).to_le_bytes();
    let mut bytes = vec![length[0], length[1], length[2], sequence];
    bytes.extend_from_slice(payload);
    bytes
}

/// Handshake answers as drivers send them: protocol 4.1, a user, a 20-byte proof, a
/// database, a plugin and connection attributes.
fn handshake_answers() -> Vec<Vec<u8>> {
    let answer = |user: &str, database: Option<&str>, attributes: bool| {
        let mut flags: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0020_0000;
        if database.is_some() {
            flags |= 0x0000_0008;
        }
        if attributes {
            flags |= 0x0010_0000;
        }
        let mut payload = flags.to_le_bytes().to_vec();
        payload.extend_from_slice(&(16u32 << 20).to_le_bytes());
        payload.push(45);
        payload.extend_from_slice(&[0; 23]);
        payload.extend_from_slice(user.as_bytes());
        payload.push(0);
        payload.push(20);
        payload.extend_from_slice(&[7; 20]);
        if let Some(database) = database {
            payload.extend_from_slice(database.as_bytes());
            payload.push(0);
        }
        payload.extend_from_slice(b"mysql_native_password\0");
        if attributes {
            let pairs = b"\x0c_client_name\x07pymysql\x04_pid\x0512345";
            payload.push(pairs.len() as u8);
            payload.extend_from_slice(pairs);
        }
        packet(1, &payload)
    };
    vec![
        answer("root", None, false),
        answer("app", Some("shop"), true),
        answer("", Some(""), true),
    ]
}

fn users() -> Users {
    Users::new(vec![User::new("root", ""), User::new("app", "secret")])
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_strangers_handshake_answer_is_refused_or_accepted_never_a_panic(
        sent in input(handshake_answers()),
    ) {
        let mut stream = PacketStream::new(Exchange {
            sent: Cursor::new(sent),
            answered: Vec::new(),
        });
        let _ = handshake(&mut stream, &users(), 1, "8.0.0-kista");
    }

    #[test]
    fn packets_reassemble_or_fail_whatever_their_headers_declare(
        sent in input(vec![
            packet(0, b"\x03SELECT 1"),
            // A full-length packet's header (a longer payload continues in the next), its
            // bytes cut short.
            [&[0xff, 0xff, 0xff, 0][..], &[0x16; 64]].concat(),
            packet(0, b""),
        ]),
    ) {
        let mut stream = PacketStream::new(Exchange {
            sent: Cursor::new(sent),
            answered: Vec::new(),
        });
        let mut payload = Vec::new();
        while let Ok(true) = stream.read_payload(&mut payload) {}
    }

    #[test]
    fn a_parameter_value_reads_or_fails_for_any_type_and_bytes(
        type_code in any::<u8>(),
        unsigned in any::<bool>(),
        bytes in input(vec![
            vec![0x2a, 0, 0, 0, 0, 0, 0, 0],
            b"\x05hello".to_vec(),
            vec![0xfc, 0xff, 0xff, b'x'],
            vec![11, 0xe8, 0x07, 12, 31, 23, 59, 59, 0x40, 0x42, 0x0f, 0],
        ]),
    ) {
        let mut input = Input::new(&bytes);
        let _ = read_parameter(&mut input, type_code, unsigned);
    }

    #[test]
    fn the_sql_parser_answers_any_statement_with_a_tree_or_an_error(
        text in input(corpus("sql.txt")),
    ) {
        let text = String::from_utf8_lossy(&text).into_owned();
        // On a connection's stack, as statements are parsed in the front end.
        let parsed = std::thread::Builder::new()
            .stack_size(kista_sql::server::CONNECTION_STACK_BYTES)
            .spawn(move || {
                let _ = kista_sql::session::parse(&text);
            })
            .unwrap()
            .join();
        prop_assert!(parsed.is_ok(), "the parser panicked");
    }

    #[test]
    fn a_management_request_is_a_command_or_unknown(
        line in input(corpus("mgm.txt")),
    ) {
        let mut reader = std::io::BufReader::new(Cursor::new(line));
        while let Some(request) = kista_mgm::admin::read_request(&mut reader) {
            let _ = request.parse::<kista_mgm::command::Command>();
        }
    }

    #[test]
    fn a_node_admits_no_stranger_to_a_keyed_cluster_whatever_it_sends(
        sent in input(hellos()),
    ) {
        use kista_transport::handshake::accept;
        let exchange = |sent: &[u8]| Exchange {
            sent: Cursor::new(sent.to_vec()),
            answered: Vec::new(),
        };
        // Without the key no bytes prove it (the node's nonce is new each time).
        prop_assert!(accept(&mut exchange(&sent), Some(cluster_key())).is_err());
        let _ = accept(&mut exchange(&sent), None);
    }

    #[test]
    fn a_request_body_decodes_or_fails_never_a_panic(
        bytes in input(request_bodies()),
        columns in 0usize..64,
    ) {
        use kista_datanode::protocol::{
            ColumnSourcesBody, CopyBatchBody, IndexUpkeepBody, KeyBatchBody, KeyBody,
            KeyBodyRef, RowBody, RowsBody, ScanBody, TableDefinitionBody,
        };
        // Every decoder of a section a client or a peer sends a data node.
        let _ = KeyBody::decode(&bytes);
        if let Ok(body) = KeyBodyRef::parse(&bytes) {
            let _ = body.columns().count();
            let values = body.encoded_values();
            let _ = kista_storage::codec::read_values(&mut kista_storage::codec::Reader::new(values));
        }
        let mut offset = KeyBatchBody::FIRST_OFFSET;
        while let Some(Ok(entry)) = KeyBatchBody::entry_at(&bytes, offset) {
            prop_assert!(entry.next_offset > offset, "a batch's walk moves on");
            offset = entry.next_offset;
        }
        let _ = KeyBatchBody::count(&bytes);
        let _ = RowBody::decode(&bytes);
        let _ = RowsBody::decode(&bytes);
        let _ = ScanBody::decode(&bytes);
        let _ = TableDefinitionBody::decode(&bytes);
        let _ = IndexUpkeepBody::decode(&bytes);
        let _ = ColumnSourcesBody::decode(&bytes, columns);
        let _ = CopyBatchBody::decode(&bytes);
    }

    #[test]
    fn a_clients_signal_is_admitted_or_refused_never_a_panic(
        number in 0u16..400,
        receiver in prop_oneof![Just(10u8), Just(11u8), Just(16u8), 0u8..64],
        words in proptest::collection::vec(any::<u32>(), 0..=kista_signal::PAYLOAD_WORDS_MAX),
        client in 64u8..=255,
    ) {
        use kista_signal::{BlockAddress, BlockId, NodeId, Signal, SignalNumber};
        // The dictionary (10), the coordinators (11), the info block (16): the typed
        // decoding of every signal a client may send them, on any payload.
        let me = BlockAddress::new(NodeId(client), BlockId(1), 0);
        let to = BlockAddress::new(NodeId(1), BlockId(receiver), 0);
        let signal = Signal::with_words(SignalNumber(number), to, me, &words);
        let _ = kista_datanode::protocol::check_client_signal(&signal, NodeId(client));
    }

    #[test]
    fn frames_between_nodes_decode_or_fail_never_a_panic(
        bytes in input(signal_frames()),
    ) {
        let mut frames = kista_transport::FrameReader::default();
        let mut stream = Cursor::new(bytes);
        while frames.read_from(&mut stream).is_ok_and(|read| read > 0) {
            while let Ok(Some(_)) = frames.next_signal() {}
        }
    }
}

/// Sections as clients send them, from the encoders: a key operation alone and two in a
/// batch, a row, a table's definition, a scan with a filter.
fn request_bodies() -> Vec<Vec<u8>> {
    use kista_datanode::protocol::{KeyBatchBody, KeyBody, RowBody, ScanBody, TableDefinitionBody};
    use kista_storage::filter::{CompareOp, Filter};
    use kista_storage::partition::{ScanRange, ScanVersions};
    use kista_storage::schema::{Column, TableSchema};
    use kista_storage::types::{ColumnType, Value};
    let values = vec![
        Value::Int(-7),
        Value::Bytes(b"text".to_vec()),
        Value::Null,
        Value::Double(2.5),
        Value::Time(-1),
    ];
    let encoded = |encode: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = Vec::new();
        encode(&mut bytes);
        bytes
    };
    let key = KeyBody {
        key: vec![1, 2, 3, 4],
        columns: vec![0, 1],
        values: values.clone(),
    };
    let key_bytes = encoded(&|out| key.encode(out));
    let batch = encoded(&|out| {
        KeyBatchBody::start(out);
        KeyBatchBody::push(out, 0, &key_bytes);
        KeyBatchBody::push(out, 1, &key_bytes);
    });
    let schema = TableSchema {
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
    };
    let scan = ScanBody {
        range: ScanRange::Full,
        filter: Some(Filter::And(vec![
            Filter::Compare {
                column: 0,
                op: CompareOp::Ge,
                value: Value::Int(3),
            },
            Filter::Like {
                column: 1,
                pattern: b"a%".to_vec(),
            },
            Filter::Not(Box::new(Filter::IsNull(1))),
        ])),
        columns: vec![0, 1],
        versions: ScanVersions::Committed,
    };
    vec![
        key_bytes.clone(),
        batch,
        encoded(&|out| RowBody::encode(&values, out)),
        encoded(&|out| TableDefinitionBody::new(schema.clone(), Vec::new()).encode(out)),
        encoded(&|out| scan.encode(out)),
    ]
}

/// A cluster key for the node's side of the handshake target.
fn cluster_key() -> &'static kista_transport::cluster_key::ClusterKey {
    static KEY: std::sync::OnceLock<kista_transport::cluster_key::ClusterKey> =
        std::sync::OnceLock::new();
    KEY.get_or_init(|| kista_transport::cluster_key::ClusterKey::generate().unwrap())
}

/// Hellos as dialers send them (each role, with and without a key), each followed by 32
/// bytes where a proof goes: what the dialer's side writes before it reads an answer.
fn hellos() -> Vec<Vec<u8>> {
    use kista_signal::NodeId;
    use kista_transport::handshake::{dial, Role};
    let roles = [
        Role::Client(None),
        Role::Client(Some(NodeId(64))),
        Role::Peer(NodeId(2)),
        Role::Admin,
    ];
    let mut hellos = Vec::new();
    for role in roles {
        for key in [None, Some(cluster_key())] {
            let mut recorded = Exchange {
                sent: Cursor::new(Vec::new()),
                answered: Vec::new(),
            };
            let _ = dial(&mut recorded, role, key);
            recorded.answered.extend_from_slice(&[7; 32]);
            hellos.push(recorded.answered);
        }
    }
    hellos
}

/// Frames as nodes send them: a few signals with payloads and sections.
fn signal_frames() -> Vec<Vec<u8>> {
    use kista_signal::{BlockAddress, Signal, SignalNumber};
    let frame = |number: u16, words: &[u32], section: &[u8]| {
        let signal = Signal::with_words(
            SignalNumber(number),
            BlockAddress::from_word(0x0001_0002),
            BlockAddress::from_word(0x0003_0004),
            words,
        );
        let mut bytes = Vec::new();
        kista_signal::wire::encode(&signal, section, &mut bytes).unwrap();
        bytes
    };
    vec![
        frame(1, &[], &[]),
        frame(300, &[1, 2, 3, 4, 5], b"key bytes and values"),
        [frame(17, &[u32::MAX; 8], &[0xff; 64]), frame(2, &[9], b"")].concat(),
    ]
}
