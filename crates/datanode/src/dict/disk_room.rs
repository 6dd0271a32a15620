//! Schema changes while a member's disk has no room for its schema file. The change that
//! meets the full disk waits for room (it is applied in memory everywhere, so only its
//! write can wait; the node does not stop); the member tells the master, which refuses
//! every later change at once with 4262 (disk full, temporary) instead of leaving each
//! client to time out, until the member says its file is written again. A member tells a
//! new master again, since the old one's knowledge is lost with it.

use kista_runtime::Context;
use kista_signal::{NodeId, Signal};

use super::{relay, Dictionary};
use crate::cluster::NodeSet;
use crate::protocol::*;

impl Dictionary {
    /// This node's schema file waits for room (`waits`) or was written again: tell the
    /// master.
    pub(super) fn tell_schema_file_room(&self, ctx: &mut Context, waits: bool) {
        let Some(master) = self.master() else {
            return;
        };
        let report = SchemaFileRoom {
            node: u32::from(self.settings.node.0),
            waits: u32::from(waits),
        };
        ctx.send_typed(master, &report);
    }

    /// The master's record of a member's report.
    pub(super) fn schema_file_room(&mut self, report: SchemaFileRoom) {
        let Ok(node) = u8::try_from(report.node).map(NodeId) else {
            return;
        };
        if report.waits != 0 && !self.failed_nodes.contains(node) {
            self.schema_files_waiting.insert(node);
        } else {
            self.schema_files_waiting.remove(node);
        }
    }

    /// Nodes that failed wait for nothing any more; with a new master, this node's
    /// waiting file is reported to it.
    pub(super) fn schema_file_room_after_failure(
        &mut self,
        ctx: &mut Context,
        failed: NodeSet,
        master_before: NodeId,
    ) {
        self.schema_files_waiting = self.schema_files_waiting.minus(failed);
        if self.master_node != master_before && self.schema_write_waited {
            self.tell_schema_file_room(ctx, true);
        }
    }

    /// Why `request` is refused at once: a schema change while a member's schema file
    /// waits for room.
    pub(super) fn refused_for_room(&self, request: &Signal) -> Option<String> {
        if self.schema_files_waiting.is_empty() || !relay::is_schema_change(request) {
            return None;
        }
        let nodes: Vec<String> = (self.schema_files_waiting.iter())
            .map(|node| node.0.to_string())
            .collect();
        Some(format!(
            "the disk of data node(s) {} is full: its schema file waits for room, and \
             schema changes are refused until it is written",
            nodes.join(", ")
        ))
    }
}
