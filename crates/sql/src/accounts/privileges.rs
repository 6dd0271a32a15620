//! Privileges, MySQL's: one registry of their names and the levels they apply at, a
//! grant (privileges at a level, perhaps with GRANT OPTION), and what an account's grants
//! allow.

use crate::error::{SqlError, SqlResult};

/// A set of privileges, one bit each ([`PRIVILEGES`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrivilegeSet(pub u32);

/// Where a privilege may be granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// Tables, and the databases and the server above them.
    Table,
    /// Databases and the server.
    Database,
    /// The server only.
    Global,
}

/// Every privilege Kista knows, by its SQL name (the order SHOW GRANTS lists them in).
const PRIVILEGES: &[(&str, Reach)] = &[
    ("SELECT", Reach::Table),
    ("INSERT", Reach::Table),
    ("UPDATE", Reach::Table),
    ("DELETE", Reach::Table),
    ("CREATE", Reach::Table),
    ("DROP", Reach::Table),
    ("RELOAD", Reach::Global),
    ("PROCESS", Reach::Global),
    ("REFERENCES", Reach::Table),
    ("INDEX", Reach::Table),
    ("ALTER", Reach::Table),
    ("SHOW DATABASES", Reach::Global),
    ("CREATE TEMPORARY TABLES", Reach::Database),
    ("LOCK TABLES", Reach::Database),
    ("EXECUTE", Reach::Database),
    ("CREATE VIEW", Reach::Table),
    ("SHOW VIEW", Reach::Table),
    ("CREATE ROUTINE", Reach::Database),
    ("ALTER ROUTINE", Reach::Database),
    ("CREATE USER", Reach::Global),
    ("EVENT", Reach::Database),
    ("TRIGGER", Reach::Table),
    // Added after the rest: a grant is kept as these positions' bits.
    ("SUPER", Reach::Global),
    ("CONNECTION_ADMIN", Reach::Global),
    ("SYSTEM_VARIABLES_ADMIN", Reach::Global),
];

/// The position of the first privilege added after grants were first kept (SUPER): a
/// global grant kept before then holding every privilege below it was ALL PRIVILEGES.
const FIRST_ADDED_PRIVILEGE: usize = 22;

impl PrivilegeSet {
    pub const NONE: Self = Self(0);

    /// A global grant kept by a front end that knew no privilege from SUPER on
    /// ([`FIRST_ADDED_PRIVILEGE`]) as it reads now: one holding all it knew was ALL
    /// PRIVILEGES, and is again (as MySQL's upgrade gives the privileges it adds to the
    /// accounts holding all the others). Any other grant reads as it was kept.
    pub fn kept_before_added_privileges(self, level: &Level) -> Self {
        let all = Self::all_at(level);
        let known_then = Self(all.0 & ((1 << FIRST_ADDED_PRIVILEGE) - 1));
        match level {
            Level::Global if self.contains(known_then) => all,
            _ => self,
        }
    }

    /// The privilege called `name` (case-insensitive); error 1064-like 1149 for another.
    pub fn named(name: &str) -> SqlResult<Self> {
        let position = (PRIVILEGES.iter()).position(|(known, _)| known.eq_ignore_ascii_case(name));
        position.map(|p| Self(1 << p)).ok_or_else(|| {
            SqlError::new(
                1149,
                "42000",
                format!("Illegal GRANT/REVOKE command: unknown privilege {name}"),
            )
        })
    }

    /// ALL [PRIVILEGES] at a level: every privilege that applies there.
    pub fn all_at(level: &Level) -> Self {
        let reaches = |reach: Reach| match level {
            Level::Global => true,
            Level::Database(_) => reach != Reach::Global,
            Level::Table(..) => reach == Reach::Table,
        };
        let bits = (PRIVILEGES.iter().enumerate())
            .filter(|(_, (_, reach))| reaches(*reach))
            .fold(0, |bits, (position, _)| bits | 1 << position);
        Self(bits)
    }

    /// Error 1144 (MySQL's) when a privilege cannot be granted at `level`.
    pub fn check_level(self, level: &Level) -> SqlResult<()> {
        if self.0 & !Self::all_at(level).0 != 0 {
            return Err(SqlError::new(
                1144,
                "42000",
                "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used",
            ));
        }
        Ok(())
    }

    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Each privilege of the set, alone.
    pub fn each(self) -> impl Iterator<Item = Self> {
        (0..PRIVILEGES.len())
            .map(|position| Self(1 << position))
            .filter(move |one| self.contains(*one))
    }

    /// The names, in SHOW GRANTS order (`ALL PRIVILEGES` when every one of the level's).
    pub fn names(self, level: &Level) -> String {
        if self == Self::all_at(level) {
            return "ALL PRIVILEGES".into();
        }
        (PRIVILEGES.iter().enumerate())
            .filter(|(position, _)| self.0 & 1 << position != 0)
            .map(|(_, (name, _))| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::ops::BitOr for PrivilegeSet {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// The privileges a statement needs, by name.
pub mod needed {
    use super::PrivilegeSet;

    pub const SELECT: PrivilegeSet = PrivilegeSet(1 << 0);
    pub const INSERT: PrivilegeSet = PrivilegeSet(1 << 1);
    pub const UPDATE: PrivilegeSet = PrivilegeSet(1 << 2);
    pub const DELETE: PrivilegeSet = PrivilegeSet(1 << 3);
    pub const CREATE: PrivilegeSet = PrivilegeSet(1 << 4);
    pub const DROP: PrivilegeSet = PrivilegeSet(1 << 5);
    pub const PROCESS: PrivilegeSet = PrivilegeSet(1 << 7);
    pub const REFERENCES: PrivilegeSet = PrivilegeSet(1 << 8);
    pub const INDEX: PrivilegeSet = PrivilegeSet(1 << 9);
    pub const ALTER: PrivilegeSet = PrivilegeSet(1 << 10);
    pub const SHOW_DATABASES: PrivilegeSet = PrivilegeSet(1 << 11);
    pub const CREATE_VIEW: PrivilegeSet = PrivilegeSet(1 << 15);
    pub const CREATE_USER: PrivilegeSet = PrivilegeSet(1 << 19);
    pub const TRIGGER: PrivilegeSet = PrivilegeSet(1 << 21);
    pub const SUPER: PrivilegeSet = PrivilegeSet(1 << 22);
    pub const CONNECTION_ADMIN: PrivilegeSet = PrivilegeSet(1 << 23);
    pub const SYSTEM_VARIABLES_ADMIN: PrivilegeSet = PrivilegeSet(1 << 24);
}

/// What a grant reaches: the server, a database, or a table of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Level {
    Global,
    Database(String),
    Table(String, String),
}

impl Level {
    /// As GRANT and SHOW GRANTS write it: `*.*`, `` `db`.* ``, `` `db`.`t` ``.
    pub fn sql(&self) -> String {
        match self {
            Level::Global => "*.*".into(),
            Level::Database(database) => format!("`{database}`.*"),
            Level::Table(database, table) => format!("`{database}`.`{table}`"),
        }
    }
}

/// Privileges granted at one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub level: Level,
    pub privileges: PrivilegeSet,
    pub grant_option: bool,
}

/// What a session's account may do: its grants, or everything (`root`, the accounts of
/// `kista sql --user`).
#[derive(Clone, Debug, Default)]
pub struct Privileges {
    /// `None`: every privilege, with GRANT OPTION.
    grants: Option<Vec<Grant>>,
}

impl Privileges {
    pub fn all() -> Self {
        Self { grants: None }
    }

    pub fn granted(grants: Vec<Grant>) -> Self {
        Self {
            grants: Some(grants),
        }
    }

    /// Whether nothing needs checking (the fast path of every statement).
    pub fn is_all(&self) -> bool {
        self.grants.is_none()
    }

    /// Whether `privileges` are held on table `table` of `database` (`None`: on the
    /// database as a whole), at any level reaching it.
    pub fn allow(&self, privileges: PrivilegeSet, database: &str, table: Option<&str>) -> bool {
        let Some(grants) = &self.grants else {
            return true;
        };
        let mut held = PrivilegeSet::NONE;
        for grant in grants {
            let reaches = match &grant.level {
                Level::Global => true,
                Level::Database(granted) => granted.eq_ignore_ascii_case(database),
                Level::Table(granted, granted_table) => {
                    granted.eq_ignore_ascii_case(database)
                        && table.is_some_and(|table| granted_table.eq_ignore_ascii_case(table))
                }
            };
            if reaches {
                held = held | grant.privileges;
            }
        }
        held.contains(privileges)
    }

    /// Whether any privilege reaches into `database` (USE needs one).
    pub fn any_in(&self, database: &str) -> bool {
        let Some(grants) = &self.grants else {
            return true;
        };
        // A server-wide privilege of a database's kind reaches every database (PROCESS
        // or CREATE USER alone opens none).
        let of_databases = PrivilegeSet::all_at(&Level::Database(String::new())).0;
        grants.iter().any(|grant| match &grant.level {
            Level::Global => grant.privileges.0 & of_databases != 0,
            Level::Database(granted) | Level::Table(granted, _) => {
                granted.eq_ignore_ascii_case(database)
            }
        })
    }

    /// Whether any privilege reaches table `table` of `database` (to see it at all: SHOW
    /// CREATE TABLE, DESCRIBE, its rows in `information_schema`).
    pub fn any_on_table(&self, database: &str, table: &str) -> bool {
        let Some(grants) = &self.grants else {
            return true;
        };
        let of_tables = PrivilegeSet::all_at(&Level::Table(String::new(), String::new())).0;
        grants.iter().any(|grant| match &grant.level {
            Level::Global => grant.privileges.0 & of_tables != 0,
            Level::Database(granted) => {
                grant.privileges.0 & of_tables != 0 && granted.eq_ignore_ascii_case(database)
            }
            Level::Table(granted, granted_table) => {
                granted.eq_ignore_ascii_case(database) && granted_table.eq_ignore_ascii_case(table)
            }
        })
    }

    /// Whether any privilege of `privileges` is held on the server (`*.*`).
    pub fn global_any(&self, privileges: PrivilegeSet) -> bool {
        self.global().0 & privileges.0 != 0
    }

    /// Whether the account may grant `privileges` at `level`: it holds them there with
    /// GRANT OPTION.
    pub fn may_grant(&self, privileges: PrivilegeSet, level: &Level) -> bool {
        let Some(grants) = &self.grants else {
            return true;
        };
        let (database, table) = match level {
            Level::Global => ("", None),
            Level::Database(database) => (database.as_str(), None),
            Level::Table(database, table) => (database.as_str(), Some(table.as_str())),
        };
        let optioned: Vec<Grant> = grants.iter().filter(|g| g.grant_option).cloned().collect();
        let with_option = Privileges::granted(optioned);
        match level {
            Level::Global => with_option.global().contains(privileges),
            _ => with_option.allow(privileges, database, table),
        }
    }

    /// The privileges granted on `*.*`.
    pub fn global(&self) -> PrivilegeSet {
        match &self.grants {
            None => PrivilegeSet::all_at(&Level::Global),
            Some(grants) => grants
                .iter()
                .filter(|grant| grant.level == Level::Global)
                .fold(PrivilegeSet::NONE, |held, grant| held | grant.privileges),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(level: Level, names: &[&str]) -> Grant {
        let privileges = (names.iter())
            .map(|name| PrivilegeSet::named(name).unwrap())
            .fold(PrivilegeSet::NONE, |all, one| all | one);
        Grant {
            level,
            privileges,
            grant_option: false,
        }
    }

    #[test]
    fn a_grant_reaches_its_level_and_what_is_below_it() {
        let shop = Level::Database("shop".into());
        let orders = Level::Table("shop".into(), "orders".into());
        let privileges = Privileges::granted(vec![
            grant(shop, &["SELECT", "INSERT"]),
            grant(orders, &["UPDATE"]),
        ]);
        assert!(privileges.allow(needed::SELECT, "shop", Some("items")));
        assert!(
            privileges.allow(needed::SELECT, "SHOP", None),
            "names ignore case"
        );
        assert!(privileges.allow(needed::UPDATE, "shop", Some("orders")));
        assert!(!privileges.allow(needed::UPDATE, "shop", Some("items")));
        assert!(!privileges.allow(needed::SELECT, "other", Some("items")));
        assert!(privileges.any_in("shop") && !privileges.any_in("other"));
        assert!(Privileges::all().allow(needed::DROP, "any", None));
    }

    #[test]
    fn the_needed_constants_are_the_registrys_privileges() {
        let constants = [
            (needed::SELECT, "SELECT"),
            (needed::INSERT, "INSERT"),
            (needed::UPDATE, "UPDATE"),
            (needed::DELETE, "DELETE"),
            (needed::CREATE, "CREATE"),
            (needed::DROP, "DROP"),
            (needed::PROCESS, "PROCESS"),
            (needed::REFERENCES, "REFERENCES"),
            (needed::INDEX, "INDEX"),
            (needed::ALTER, "ALTER"),
            (needed::SHOW_DATABASES, "SHOW DATABASES"),
            (needed::CREATE_VIEW, "CREATE VIEW"),
            (needed::CREATE_USER, "CREATE USER"),
            (needed::TRIGGER, "TRIGGER"),
            (needed::SUPER, "SUPER"),
            (needed::CONNECTION_ADMIN, "CONNECTION_ADMIN"),
            (needed::SYSTEM_VARIABLES_ADMIN, "SYSTEM_VARIABLES_ADMIN"),
        ];
        for (constant, name) in constants {
            assert_eq!(constant, PrivilegeSet::named(name).unwrap(), "{name}");
        }
    }

    #[test]
    fn all_privileges_is_what_the_level_allows_and_shows_as_such() {
        let table = Level::Table("d".into(), "t".into());
        let all = PrivilegeSet::all_at(&table);
        assert!(all.contains(needed::SELECT) && !all.contains(needed::CREATE_USER));
        assert_eq!(all.names(&table), "ALL PRIVILEGES");
        assert_eq!(
            (needed::SELECT | needed::INSERT).names(&table),
            "SELECT, INSERT"
        );
        assert_eq!(
            needed::CREATE_USER.check_level(&table).unwrap_err().code,
            1144
        );
        assert_eq!(PrivilegeSet::named("FLY").unwrap_err().code, 1149);
    }
}
