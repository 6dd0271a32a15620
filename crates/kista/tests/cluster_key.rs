//! The cluster key `kista up` makes: a process that cannot prove it holds it runs no
//! management command, leases no client node id, joins as no data node and sends no signal
//! into a data node, nor keeps members out by holding connections open; a client holding
//! it is still held to what a client may send. Every refusal is counted in the metrics.

mod support;

use std::net::TcpStream;
use std::time::Duration;

use kista_datanode::protocol::{Abort, EndBatch, ExecuteMode, LDM_BLOCK, TC_BLOCK};
use kista_mgm::admin::AdminClient;
use kista_mgm::lease::Registration;
use kista_signal::{BlockAddress, BlockId, NodeId, TypedSignal};
use kista_transport::client::ClientConnection;
use kista_transport::cluster_key::ClusterKey;
use kista_transport::handshake::{self, HandshakeError, Role};
use kista_transport::server::HANDSHAKES_MAX;
use support::{http_get, metrics_targets, mysql, run_kista, spawn_up, ShutdownOnDrop};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn only_processes_holding_the_cluster_key_join_lease_an_id_or_send_a_signal() {
    let dir = std::env::temp_dir().join(format!("kista-key-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let up = spawn_up(&dir, &["--data-memory", "64M"]);
    let mgm = up.address.to_string();
    let cluster = ShutdownOnDrop::new(&mgm, &dir);
    let key = ClusterKey::load(&dir.join("cluster.key")).expect("kista up made the key");
    let strangers_key = ClusterKey::generate().expect("random");

    // The management server: no command for a process without the key, or with another.
    for command in ["shutdown", "1 restart", "config", "register client"] {
        let (code, _, stderr) = run_kista(&["mgm", "--mgm", &mgm, "-e", command], LIMIT);
        assert_eq!(code, Some(1), "{command}: {stderr}");
        assert!(stderr.contains("--key-file"), "{command}: {stderr}");
    }
    let refused = AdminClient::connect(&mgm, Some(&strangers_key), LIMIT).err();
    let refused = refused
        .expect("another cluster's key is refused")
        .to_string();
    assert!(refused.contains("did not prove"), "{refused}");
    // Nor does a front end started without it get anything.
    let args = ["sql", "--mgm", &mgm, "--port", "0", "--user", "evil:evil"];
    let (code, _, stderr) = run_kista(&args, LIMIT);
    assert_ne!(code, Some(0), "a front end without the key does not start");
    assert!(stderr.contains("--key-file"), "{stderr}");

    // With the key: a lease, and the data nodes' addresses.
    let mut admin = AdminClient::connect(&mgm, Some(&key), LIMIT).expect("the key admits");
    let registered = admin.request("register client").expect("leased");
    let registration = Registration::parse(&registered).expect("a registration");
    let leased = registration.client_node;
    let node_1 = &registration.data_nodes[0].address;

    // A data node: no client (even under the leased id) and no peer without the key.
    for (role, with) in [
        (Role::Client(Some(leased)), None),
        (Role::Client(None), None),
        (Role::Peer(NodeId(2)), None),
        (Role::Client(Some(leased)), Some(&strangers_key)),
        (Role::Peer(NodeId(2)), Some(&strangers_key)),
    ] {
        let mut stream = TcpStream::connect(node_1).expect("the port answers");
        stream.set_read_timeout(Some(LIMIT)).expect("a timeout");
        match handshake::dial(&mut stream, role, with) {
            Err(HandshakeError::Refused(reason)) => {
                assert!(reason.contains("--key-file"), "{role:?}: {reason}")
            }
            Err(HandshakeError::NodeUnproven) => assert!(with.is_some(), "{role:?}"),
            other => panic!("{role:?} without the key: {other:?}"),
        }
    }

    // A client holding the key is still held to what a client may send: a signal to an
    // internal block, or one naming another client's transaction, closes its connection.
    let me = BlockAddress::new(leased, BlockId(1), 0);
    let other = BlockAddress::new(NodeId(leased.0 + 1), BlockId(1), 0);
    let tc = BlockAddress::new(NodeId(1), TC_BLOCK, 0);
    let ldm = BlockAddress::new(NodeId(1), LDM_BLOCK, 0);
    let end_batch = EndBatch {
        client: other,
        client_tx: 1,
        execute: ExecuteMode::Commit,
    };
    let hostile = [
        Abort { tc, transaction: 1 }.to_signal(ldm, me),
        end_batch.to_signal(tc, me),
    ];
    for signal in hostile {
        let connected = ClientConnection::connect(node_1, Some(leased), Some(&key), LIMIT, |_| {});
        let connection = connected.expect("the key admits a client under its leased id");
        connection.send(&signal, &[]).expect("queued");
        support::wait_until(LIMIT, "the node closes the connection", || {
            connection.is_closed()
        });
    }

    // Strangers holding connections open without a word, past what may shake hands at
    // once: the oldest are let go for newer ones, and members still get in.
    let strangers: Vec<TcpStream> = (0..3 * HANDSHAKES_MAX)
        .flat_map(|_| [TcpStream::connect(node_1), TcpStream::connect(&mgm)])
        .map(|stranger| stranger.expect("the ports answer"))
        .collect();
    let mut member = AdminClient::connect(&mgm, Some(&key), LIMIT).expect("a member gets in");
    assert!(member.request("show").is_ok());
    let connected = ClientConnection::connect(node_1, Some(leased), Some(&key), LIMIT, |_| {});
    connected.expect("a member's client gets in past the strangers");
    drop(strangers);

    // Counted where operators look.
    let targets = metrics_targets(&up.startup);
    let metric = |target: &str, node: &str, reason: &str| -> f64 {
        let body = http_get(target, "/metrics").unwrap_or_default();
        let name = format!("kista_transport_refused_total{{node=\"{node}\",reason=\"{reason}\"}}");
        (body.lines())
            .find_map(|line| line.strip_prefix(&name))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0.0)
    };
    let mgmd_refused = metric(&targets[0], "49", "unauthenticated");
    assert!(
        mgmd_refused >= 6.0,
        "the management server counted {mgmd_refused}"
    );
    assert!(metric(&targets[1], "1", "unauthenticated") >= 5.0);
    assert!(metric(&targets[1], "1", "signal") >= 2.0);
    let displaced = metric(&targets[1], "1", "displaced");
    assert!(displaced >= (2 * HANDSHAKES_MAX) as f64, "{displaced}");

    // And the cluster served on throughout.
    drop(admin);
    let show = support::run_mgm(&mgm, &cluster.key_file, "show", LIMIT);
    assert_eq!(show.0, Some(0), "{}", show.2);
    assert_eq!(show.1.matches("started").count(), 3, "{}", show.1);
    let port = up.sql_address().port();
    assert_eq!(mysql(port, "SELECT 1").expect("SQL serves").trim(), "1");
    drop(cluster);
    drop(up);
    let _ = std::fs::remove_dir_all(&dir);
}
