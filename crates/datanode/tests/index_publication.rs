//! A unique index added to a table in use reaches the coordinators only once every `ldm`
//! holds the table that keeps its entries: a coordinator that applied the table's new
//! definition sends each write's entry to an `ldm` at once, by its own way, and nothing
//! orders that after the dictionary's definition of the index table on the way to the
//! same `ldm` (a real cluster under load refused such writes: "no table 2", 723).

mod support;

use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::{TableDefinition, TableDefinitionBody, TableDefinitionConf};
use kista_signal::BlockAddress;
use kista_storage::schema::{IndexKind, IndexSchema};
use support::{cluster_settings, counters, Node};

#[test]
fn a_new_unique_index_reaches_the_coordinators_after_every_ldm_applied_its_index_table() {
    for seed in 0..4 {
        let settings = cluster_settings(2, 2, NodeSettings::new);
        let coordinators: Vec<BlockAddress> = (settings.iter())
            .flat_map(|node| node.shape().tc_addresses().collect::<Vec<_>>())
            .collect();
        let mut cluster = Node::start_cluster(settings, 64 << 20, 70 + seed);
        cluster.run_for_ms(200);
        let plain = TableDefinitionBody::new(counters(), Vec::new());
        let (table_id, _) = cluster.create_table(&plain).expect("created");
        let by_value = IndexSchema {
            name: "by_value".into(),
            kind: IndexKind::Unique,
            columns: vec![1],
        };
        let (_, version) = cluster.create_index(table_id, &by_value).expect("created");

        let definitions = cluster.delivered::<TableDefinition>();
        let index_table = (definitions.iter())
            .find(|(_, _, definition)| definition.index_of == table_id)
            .map(|(_, _, definition)| definition.table_id)
            .expect("an index table published");
        let confirmations = cluster.delivered::<TableDefinitionConf>();
        let index_table_applied_ns = (confirmations.iter())
            .filter(|(_, _, conf)| conf.table_id == index_table)
            .map(|(at_ns, _, _)| *at_ns)
            .max()
            .expect("the index table confirmed");
        let learned: Vec<(u64, BlockAddress)> = (definitions.iter())
            .filter(|(_, receiver, definition)| {
                definition.table_id == table_id
                    && definition.schema_version == version
                    && coordinators.contains(receiver)
            })
            .map(|(at_ns, receiver, _)| (*at_ns, *receiver))
            .collect();
        assert_eq!(
            learned.len(),
            coordinators.len(),
            "seed {seed}: {learned:?}"
        );
        for (at_ns, coordinator) in learned {
            assert!(
                at_ns > index_table_applied_ns,
                "seed {seed}: {coordinator:?} learned of the index at {at_ns} ns, before the \
                 index table was applied everywhere ({index_table_applied_ns} ns)"
            );
        }
    }
}
