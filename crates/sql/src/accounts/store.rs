//! The accounts table in the cluster (`#kista/accounts`): one row per account with its
//! password's hashes (never the password) and its grants, so every SQL front end sees the
//! same accounts, and they are kept on disk with the cluster.

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{ColumnType, Value};
use kista_client::{ExecuteMode, LockKind, Transaction};

use super::privileges::{Grant, Level, PrivilegeSet};
use super::statements::AccountName;
use crate::catalog::Catalog;
use crate::error::{SqlError, SqlResult};
use crate::protocol::auth::User;

/// The cluster's name of the accounts table.
pub const ACCOUNTS_TABLE: &str = "#kista/accounts";
/// Longest account name (MySQL's).
pub const ACCOUNT_NAME_CHARS_MAX: usize = 32;
/// Longest host part (MySQL's).
const HOST_CHARS_MAX: usize = 255;

/// An account as the table keeps it.
#[derive(Clone)]
pub struct StoredAccount {
    pub name: AccountName,
    pub user: User,
    pub grants: Vec<Grant>,
}

pub fn schema() -> TableSchema {
    let int = |bytes| ColumnType::Int {
        bytes,
        signed: false,
    };
    TableSchema {
        extra_metadata: Vec::new(),
        name: ACCOUNTS_TABLE.into(),
        columns: vec![
            Column::new(
                "name",
                ColumnType::varchar(ACCOUNT_NAME_CHARS_MAX as u32 * 4),
            ),
            Column::new("host", ColumnType::varchar(HOST_CHARS_MAX as u32 * 4)),
            Column::new("empty_password", int(1)),
            Column::new("native_stage2", ColumnType::VarBinary { max_length: 20 }),
            Column::new("sha2_stage2", ColumnType::VarBinary { max_length: 32 }),
            Column::new("grants", ColumnType::TEXT),
        ],
        primary_key: vec![0],
    }
}

/// Error 1470 for a name longer than MySQL allows.
pub fn check_name(name: &AccountName) -> SqlResult<()> {
    if name.name.chars().count() > ACCOUNT_NAME_CHARS_MAX
        || name.host.chars().count() > HOST_CHARS_MAX
    {
        return Err(SqlError::new(
            1470,
            "HY000",
            format!(
                "String '{}' is too long for user name (should be no longer than {ACCOUNT_NAME_CHARS_MAX})",
                name.name
            ),
        ));
    }
    Ok(())
}

/// The key of account `name` (accounts are told apart by name: every host matches).
fn key(name: &str) -> [Value; 1] {
    [Value::Bytes(name.as_bytes().to_vec())]
}

/// Reads the account `name` in `transaction` (`lock`ed); `None`: no such account.
pub fn read(
    catalog: &Catalog,
    transaction: &mut Transaction<'_>,
    name: &str,
    lock: LockKind,
) -> SqlResult<Option<StoredAccount>> {
    let table = catalog.accounts_table()?;
    let op = transaction.read(&table, &key(name), lock)?;
    let done = transaction.execute(ExecuteMode::NoCommit)?.wait()?;
    done.row(op).map(account_of).transpose()
}

/// The account `name` as committed now; `None`: no such account.
pub fn find(catalog: &Catalog, name: &str) -> SqlResult<Option<StoredAccount>> {
    let mut transaction = catalog.client().transaction();
    let found = read(catalog, &mut transaction, name, LockKind::Committed)?;
    transaction.execute(ExecuteMode::Commit)?.wait()?;
    Ok(found)
}

/// Writes `account` (insert when `new`: error 630 if it exists) in `transaction`.
pub fn write(
    catalog: &Catalog,
    transaction: &mut Transaction<'_>,
    account: &StoredAccount,
    new: bool,
) -> SqlResult<()> {
    let table = catalog.accounts_table()?;
    let (empty, native, sha2) = account.user.hashes();
    let row = vec![
        Value::Bytes(account.name.name.as_bytes().to_vec()),
        Value::Bytes(account.name.host.as_bytes().to_vec()),
        Value::UInt(u64::from(empty)),
        Value::Bytes(native.to_vec()),
        Value::Bytes(sha2.to_vec()),
        Value::Bytes(encode_grants(&account.grants).into_bytes()),
    ];
    if new {
        transaction.insert(&table, row)?;
    } else {
        transaction.write(&table, row)?;
    }
    Ok(())
}

/// Deletes account `name` in `transaction`.
pub fn delete(catalog: &Catalog, transaction: &mut Transaction<'_>, name: &str) -> SqlResult<()> {
    let table = catalog.accounts_table()?;
    transaction.delete(&table, &key(name))?;
    Ok(())
}

fn account_of(row: &[Value]) -> SqlResult<StoredAccount> {
    let text = |value: &Value| match value {
        Value::Bytes(bytes) => Ok(String::from_utf8_lossy(bytes).into_owned()),
        _ => Err(damaged("a name")),
    };
    let bytes = |value: &Value| match value {
        Value::Bytes(bytes) => Ok(bytes.clone()),
        _ => Err(damaged("a hash")),
    };
    let [name, host, empty, native, sha2, grants] = row else {
        return Err(damaged("its columns"));
    };
    let name = AccountName {
        name: text(name)?,
        host: text(host)?,
    };
    let native: [u8; 20] = bytes(native)?.try_into().map_err(|_| damaged("a hash"))?;
    let sha2: [u8; 32] = bytes(sha2)?.try_into().map_err(|_| damaged("a hash"))?;
    let empty = matches!(empty, Value::UInt(1) | Value::Int(1));
    Ok(StoredAccount {
        user: User::from_hashes(&name.name, empty, native, sha2),
        name,
        grants: decode_grants(&text(grants)?)?,
    })
}

fn damaged(what: &str) -> SqlError {
    SqlError::new(
        1033,
        "HY000",
        format!("The accounts table holds a row with a damaged {what}"),
    )
}

/// Grants as text: one line per grant, `level TAB privilege bits TAB grant option`,
/// the level `*`, `db` or `db.table` (names cannot hold a tab or a new line... nor a dot
/// that is not the separator: database names cannot hold one). The bits carry
/// [`KNOWS_ADDED_PRIVILEGES`] too, which no privilege uses.
fn encode_grants(grants: &[Grant]) -> String {
    (grants.iter())
        .map(|grant| {
            let level = match &grant.level {
                Level::Global => "*".to_string(),
                Level::Database(database) => database.clone(),
                Level::Table(database, table) => format!("{database}.{table}"),
            };
            let option = u8::from(grant.grant_option);
            let bits = grant.privileges.0 | KNOWS_ADDED_PRIVILEGES;
            format!("{level}\t{bits}\t{option}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Marks a grant written by a front end that knows SUPER, CONNECTION_ADMIN and
/// SYSTEM_VARIABLES_ADMIN: one without it, holding every privilege known before them
/// globally, was ALL PRIVILEGES and reads as ALL (a REVOKE of a new one, written with the
/// mark, stays revoked). Front ends of earlier builds ignore the bit.
const KNOWS_ADDED_PRIVILEGES: u32 = 1 << 31;

fn decode_grants(text: &str) -> SqlResult<Vec<Grant>> {
    (text.lines())
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut parts = line.split('\t');
            let (Some(level), Some(bits), Some(option), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(damaged("grant"));
            };
            let level = match level.split_once('.') {
                _ if level == "*" => Level::Global,
                None => Level::Database(level.to_string()),
                Some((database, table)) => Level::Table(database.into(), table.into()),
            };
            let bits: u32 = bits.parse().map_err(|_| damaged("grant"))?;
            let privileges = PrivilegeSet(bits & !KNOWS_ADDED_PRIVILEGES);
            let privileges = match bits & KNOWS_ADDED_PRIVILEGES {
                0 => privileges.kept_before_added_privileges(&level),
                _ => privileges,
            };
            Ok(Grant {
                level,
                privileges,
                grant_option: option == "1",
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_read_back_as_written() {
        let grants = vec![
            Grant {
                level: Level::Global,
                privileges: PrivilegeSet(3),
                grant_option: true,
            },
            Grant {
                level: Level::Database("shop".into()),
                privileges: PrivilegeSet(1),
                grant_option: false,
            },
            Grant {
                level: Level::Table("shop".into(), "orders".into()),
                privileges: PrivilegeSet(4),
                grant_option: false,
            },
        ];
        assert_eq!(decode_grants(&encode_grants(&grants)).unwrap(), grants);
        assert!(decode_grants("x\ty").is_err());
    }

    #[test]
    fn all_privileges_kept_before_super_existed_reads_as_all() {
        let all = PrivilegeSet::all_at(&Level::Global);
        let super_ = PrivilegeSet::named("SUPER").unwrap();
        // ALL ON *.* as a front end before SUPER wrote it: the 22 privileges it knew.
        let old_all = format!("*\t{}\t0", (1u32 << 22) - 1);
        assert_eq!(decode_grants(&old_all).unwrap()[0].privileges, all);
        // Less than all of them, or at a database: as kept.
        let old_some = format!("*\t{}\t0\nshop\t{}\t0", (1u32 << 21) - 1, (1u32 << 22) - 1);
        let some = decode_grants(&old_some).unwrap();
        assert_eq!(some[0].privileges, PrivilegeSet((1 << 21) - 1));
        assert_eq!(some[1].privileges, PrivilegeSet((1 << 22) - 1));
        // ALL then REVOKE SUPER, kept now: SUPER stays revoked.
        let revoked = Grant {
            level: Level::Global,
            privileges: PrivilegeSet(all.0 & !super_.0),
            grant_option: false,
        };
        let read = decode_grants(&encode_grants(std::slice::from_ref(&revoked))).unwrap();
        assert_eq!(read, vec![revoked]);
    }
}
