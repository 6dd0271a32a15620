//! Clients find tables by name and list them (the SQL front end keeps no schema of its
//! own). Any dictionary answers from its copy of the definitions: the master publishes each
//! change to every dictionary before it tells the client that made it, so a table a client
//! was told exists is found through any live node.

use kista_runtime::Context;
use kista_signal::TypedSignal;
use kista_storage::codec::Writer;

use super::Dictionary;
use crate::protocol::*;
use crate::send_with_bytes;

impl Dictionary {
    pub(super) fn look_up_table(&mut self, ctx: &mut Context, request: TableLookupRequest) {
        let name = ctx
            .section()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        // Two tables share a name only for a moment of a table's replacement (a copying
        // ALTER's switch, `replace.rs`), here before the replaced one's rename arrived:
        // the newer is the replacement.
        let found = (self.tables.iter())
            .filter(|(_, table)| {
                table.index_of.is_none() && same_table_name(&table.definition.schema.name, &name)
            })
            .max_by_key(|(&table_id, _)| table_id);
        let Some((&table_id, table)) = found else {
            let message = format!("no table `{name}`");
            return self.refuse(
                ctx,
                request.client,
                request.request_id,
                ErrorCode::NoSuchTable,
                &message,
            );
        };
        let body = table.definition.encoded();
        let conf = TableLookupConf {
            request_id: request.request_id,
            table_id,
            schema_version: table.version,
            partitions: self.partitions_per_table(),
        };
        send_with_bytes(ctx, conf.to_signal(request.client, ctx.address()), body);
    }

    pub(super) fn list_tables(&mut self, ctx: &mut Context, request: TableListRequest) {
        let mut listed: Vec<(u32, &str)> = self
            .tables
            .iter()
            .filter(|(&id, table)| table.index_of.is_none() && id > request.after_table_id)
            .map(|(&id, table)| (id, table.definition.schema.name.as_str()))
            .collect();
        listed.sort_unstable_by_key(|&(id, _)| id);
        let mut body = Vec::new();
        let mut writer = Writer(&mut body);
        let mut count = 0;
        for &(id, name) in &listed {
            if count > 0 && writer.0.len() + name.len() + 8 > TABLE_LIST_BYTES_MAX {
                break;
            }
            writer.u32(id);
            writer.bytes(name.as_bytes());
            count += 1;
        }
        let conf = TableListConf {
            request_id: request.request_id,
            count: count as u32,
            more: u32::from(count < listed.len()),
        };
        send_with_bytes(ctx, conf.to_signal(request.client, ctx.address()), &body);
    }
}

/// Whether two table names name one table: names keep the case they were created with
/// and are found in any case (MySQL's `lower_case_table_names=2`), compared as the SQL
/// front end lowercases them.
pub(super) fn same_table_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    let lower = |name: &str| {
        name.chars()
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    lower(a) == lower(b)
}

#[cfg(test)]
mod tests {
    use super::same_table_name;

    #[test]
    fn a_table_name_is_found_in_any_case_of_any_letter() {
        assert!(same_table_name("app/Users", "app/users"));
        assert!(same_table_name("app/ÄRGER_Log", "app/ärger_log"));
        assert!(!same_table_name("app/users", "app/user"));
        assert!(!same_table_name("app/users", "other/users"));
    }
}
