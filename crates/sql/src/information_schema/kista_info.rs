//! `kista_info`: what the data nodes tell of themselves (NDB's ndbinfo), read with plain
//! SELECT. Each query asks every live node's `info` block through the native client; a node
//! that does not answer has no rows (its `nodes` row says so).

use std::collections::HashMap;

use kista_client::types::Value;
use kista_client::{Client, ClientError, DataNodeStatus, NodeId, INFO_ROWS_PER_BLOCK_MAX};

use super::Kind::{Number, Real, Text};
use super::{number, text, SeenBy, SystemRows, SystemTableDef};
use crate::catalog::Catalog;
use crate::error::SqlResult;

pub const DATABASE: &str = "kista_info";

pub(super) const ALL: &[SystemTableDef] = &[
    SystemTableDef {
        name: "nodes",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("node_group", Number),
            ("status", Text),
        ],
        rows: nodes,
    },
    SystemTableDef {
        name: "threads",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("thread_no", Number),
            ("modules", Text),
            ("user_percent", Real),
            ("system_percent", Real),
            ("spin_percent", Real),
            ("signals_per_second", Number),
            ("queue_depth", Number),
            ("load_level", Number),
        ],
        rows: threads,
    },
    SystemTableDef {
        name: "memory",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("memory_type", Text),
            ("used_bytes", Number),
            ("total_bytes", Number),
        ],
        rows: memory,
    },
    SystemTableDef {
        name: "counters",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("counter_name", Text),
            ("value", Number),
        ],
        rows: counters,
    },
    SystemTableDef {
        name: "partitions",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("database_name", Text),
            ("table_name", Text),
            ("table_id", Number),
            ("partition_id", Number),
            ("ldm_instance", Number),
            ("role", Text),
            ("row_count", Number),
            ("memory_bytes", Number),
            ("open_transactions", Number),
        ],
        rows: partitions,
    },
    SystemTableDef {
        name: "transactions",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("tc_instance", Number),
            ("transaction_id", Number),
            ("client_node_id", Number),
            ("state", Text),
            ("operations", Number),
            ("age_ms", Number),
            ("idle_ms", Number),
        ],
        rows: transactions,
    },
    SystemTableDef {
        name: "locks",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("database_name", Text),
            ("table_name", Text),
            ("partition_id", Number),
            ("row_id", Number),
            ("transaction_id", Number),
            ("mode", Text),
            ("state", Text),
        ],
        rows: locks,
    },
    SystemTableDef {
        name: "certificates",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("role", Text),
            ("file", Text),
            ("expires", Text),
            ("seconds_left", Number),
        ],
        rows: certificates,
    },
    SystemTableDef {
        name: "config",
        seen_by: SeenBy::Everyone,
        columns: &[
            ("node_id", Number),
            ("config_param", Text),
            ("value", Number),
        ],
        rows: config,
    },
];

/// What `ask` answers for each live node, with the node's id; a node lost meanwhile has
/// no rows, and the others still answer.
fn from_live_nodes<T>(
    client: &Client,
    ask: impl Fn(&Client, NodeId) -> Result<T, ClientError>,
) -> Vec<(Value, T)> {
    let live = client.data_nodes().into_iter().filter(|n| n.live);
    let answer = |n: DataNodeStatus| Some((number(u64::from(n.node.0)), ask(client, n.node).ok()?));
    live.filter_map(answer).collect()
}

/// Tells the reader that `node`'s list of `table` was cut at its bound: a block lists at
/// most [`INFO_ROWS_PER_BLOCK_MAX`] rows (so a node's answer fits one signal section).
fn warn_if_cut(rows: &mut SystemRows, table: &str, node: &Value, cut: bool) {
    if cut {
        rows.warn(format!(
            "kista_info.{table}: node {} listed only part of its rows (at most \
             {INFO_ROWS_PER_BLOCK_MAX} per block)",
            String::from_utf8_lossy(&crate::value::to_text(node))
        ));
    }
}

fn nodes(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for node in catalog.client().data_nodes() {
        let status = if node.live {
            "started"
        } else {
            "not reachable"
        };
        let group = number(u64::from(node.node_group));
        rows.push(vec![number(u64::from(node.node.0)), group, text(status)]);
    }
    Ok(())
}

fn threads(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    let percent = |permille: u32| Value::Double(f64::from(permille) / 10.0);
    for (node, loads) in from_live_nodes(catalog.client(), Client::thread_loads) {
        for load in loads {
            rows.push(vec![
                node.clone(),
                number(u64::from(load.thread)),
                text(load.modules),
                percent(load.user_permille),
                percent(load.system_permille),
                percent(load.spin_permille),
                number(load.signals_per_second),
                number(u64::from(load.queue_depth)),
                number(u64::from(load.load_level)),
            ]);
        }
    }
    Ok(())
}

/// Every table's cluster name (`database/table`), by id.
fn table_names(client: &Client) -> SqlResult<HashMap<u32, String>> {
    Ok(client.tables()?.into_iter().collect())
}

/// The database and table of table `id`: its cluster name split at the first `/` (whole,
/// with no database, when it has none).
fn named(names: &HashMap<u32, String>, id: u32) -> (&str, &str) {
    let name = names.get(&id).map_or("", String::as_str);
    name.split_once('/').unwrap_or(("", name))
}

/// Every partition replica of every live node, named by its table (an index's own table,
/// or a front end's system table, shows under its cluster name).
fn partitions(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    let client = catalog.client();
    let names = table_names(client)?;
    for (node, (held, cut)) in from_live_nodes(client, Client::node_partitions) {
        warn_if_cut(rows, "partitions", &node, cut);
        for partition in held {
            let (database, table) = named(&names, partition.table_id);
            rows.push(vec![
                node.clone(),
                text(database),
                text(table),
                number(u64::from(partition.table_id)),
                number(u64::from(partition.partition)),
                number(u64::from(partition.ldm)),
                text(partition.role.name()),
                number(partition.committed_rows),
                number(partition.memory_bytes),
                number(u64::from(partition.open_transactions)),
            ]);
        }
    }
    Ok(())
}

/// Every transaction the live nodes' coordinators have open (this query's own, when it
/// runs in one, among them).
fn transactions(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for (node, (open, cut)) in from_live_nodes(catalog.client(), Client::node_transactions) {
        warn_if_cut(rows, "transactions", &node, cut);
        for transaction in open {
            let state = match transaction.state {
                0 => "executing",
                1 => "committing",
                2 => "completing",
                _ => "aborting",
            };
            rows.push(vec![
                node.clone(),
                number(u64::from(transaction.tc)),
                number(transaction.transaction),
                number(u64::from(transaction.client_node)),
                text(state),
                number(u64::from(transaction.operations)),
                number(transaction.age_ms),
                number(transaction.idle_ms),
            ]);
        }
    }
    Ok(())
}

/// Every row lock held or waited for on the live nodes; `transaction_id` is the one
/// `transactions` shows for it on the node that coordinates it.
fn locks(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    let client = catalog.client();
    let names = table_names(client)?;
    for (node, (held, cut)) in from_live_nodes(client, Client::node_locks) {
        warn_if_cut(rows, "locks", &node, cut);
        for lock in held {
            let (database, table) = named(&names, lock.table_id);
            rows.push(vec![
                node.clone(),
                text(database),
                text(table),
                number(u64::from(lock.partition)),
                number(u64::from(lock.row)),
                number(lock.transaction),
                text(if lock.exclusive { "X" } else { "S" }),
                text(if lock.granted { "granted" } else { "waiting" }),
            ]);
        }
    }
    Ok(())
}

/// One row per name and value of each live node (`counters`, `config`).
fn named_rows(rows: &mut SystemRows, nodes: Vec<(Value, Vec<(String, u64)>)>) -> SqlResult<()> {
    for (node, values) in nodes {
        for (name, value) in values {
            rows.push(vec![node.clone(), text(name), number(value)]);
        }
    }
    Ok(())
}

/// The TLS certificate this front end serves MySQL clients with, and when it expires
/// (none without `--tls-cert`).
fn certificates(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    let Some(tls) = &catalog.tls else {
        return Ok(());
    };
    let served = tls.served();
    let now_s = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map_or(0, |since| since.as_secs() as i64);
    let expiry = |seconds: i64| {
        (
            text(crate::tls::utc_text(seconds)),
            Value::Int(seconds - now_s),
        )
    };
    let (expires, left) = served
        .not_after_s
        .map_or((Value::Null, Value::Null), expiry);
    rows.push(vec![
        number(u64::from(catalog.client().node_id().0)),
        text("sql"),
        text(served.file.display().to_string()),
        expires,
        left,
    ]);
    Ok(())
}

fn config(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    named_rows(rows, from_live_nodes(catalog.client(), Client::node_config))
}

fn counters(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    named_rows(
        rows,
        from_live_nodes(catalog.client(), Client::node_counters),
    )
}

fn memory(catalog: &Catalog, rows: &mut SystemRows) -> SqlResult<()> {
    for (node, values) in from_live_nodes(catalog.client(), Client::node_counters) {
        let value = |name: &str| values.iter().find(|(n, _)| n == name).map_or(0, |v| v.1);
        rows.push(vec![
            node,
            text("data memory"),
            number(value("data_memory_used_bytes")),
            number(value("data_memory_limit_bytes")),
        ]);
    }
    Ok(())
}
