//! Error codes: stable numbers a client can match on, each with a category saying whether a
//! retry may succeed. Numbers follow NDB's where NDB has the same error, so operators who
//! know NDB recognise them.

/// Whether retrying can help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCategory {
    /// The same request may succeed later (a lock wait timed out, memory was freed).
    Temporary,
    /// The request cannot succeed as it is (no such row, duplicate key, bad schema).
    Permanent,
    /// The transaction may or may not have committed (its coordinator failed mid-commit).
    UnknownOutcome,
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $category:ident;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum ErrorCode {
            $($(#[$doc])* $name = $code,)*
        }

        impl ErrorCode {
            /// Every code, in the registry's order (metrics count aborts per code).
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            pub fn from_u32(code: u32) -> Option<Self> {
                match code {
                    $($code => Some(ErrorCode::$name),)*
                    _ => None,
                }
            }

            pub fn category(self) -> ErrorCategory {
                match self {
                    $(ErrorCode::$name => ErrorCategory::$category,)*
                }
            }
        }
    };
}

error_codes! {
    /// A lock wait exceeded the lock-wait timeout (probably a deadlock); the transaction aborted.
    LockWaitTimeout = 266, Temporary;
    /// The transaction waited for a lock in a cycle of waits (a deadlock) and was chosen to
    /// break it; it aborted. (NDB has no deadlock detection and ends these with 266.)
    Deadlock = 4_261, Temporary;
    /// The transaction was idle longer than the inactivity timeout and was aborted.
    TransactionInactive = 237, Temporary;
    /// DataMemory is full.
    DataMemoryFull = 827, Temporary;
    /// The REDO log is nearly full: writes wait until a local checkpoint frees some of it.
    RedoLogFull = 410, Temporary;
    /// The REDO log is nearly full and the local checkpoint that would free it cannot be
    /// written: the data directory's disk is full. Writes succeed again once space is
    /// freed (reads go on meanwhile).
    DiskFull = 4_262, Temporary;
    /// Too many row locks or operations at once.
    TooManyLocks = 233, Temporary;
    /// Too many scans are open on the coordinator or a partition executor.
    TooManyScans = 488, Temporary;
    /// The node is out of a resource other than memory (sections, signals): retry.
    Overloaded = 1218, Temporary;
    /// No row has the key.
    NotFound = 626, Permanent;
    /// A row with the key exists already (primary or unique).
    Duplicate = 630, Permanent;
    /// A child row's foreign key names a parent row that does not exist (NDB's number).
    NoParentRow = 255, Permanent;
    /// A parent row's key is still referenced by a child row under a RESTRICT or NO ACTION
    /// foreign key (NDB's number).
    RowReferenced = 256, Permanent;
    /// A chain of foreign-key cascades (each a child's delete or change made by its
    /// parent's) grew deeper than `tc::foreign_keys::CASCADE_DEPTH_MAX`.
    CascadeTooDeep = 4_263, Permanent;
    /// The operation carried an old schema version of the table.
    SchemaVersion = 241, Permanent;
    /// No table with this id.
    NoSuchTable = 723, Permanent;
    /// The table definition was refused.
    BadSchema = 4_256, Permanent;
    /// A value, key, filter or request does not fit the table.
    BadRequest = 4_257, Permanent;
    /// The transaction is not in a state that accepts this request.
    BadTransactionState = 4_258, Permanent;
    /// A data node the transaction used failed; the transaction was aborted.
    NodeFailure = 4_010, Temporary;
    /// The node is restarting and takes no transactions yet; from the client, no data node
    /// is connected: the cluster is unavailable for now (NDB: "Cluster temporary
    /// unavailable"), and nothing was sent.
    NodeStarting = 4_035, Temporary;
    /// The node cannot be sure it is still a member (its read lease lapsed), so it serves
    /// no reads from its replicas for now.
    ReadLeaseLapsed = 4_259, Temporary;
    /// The coordinator failed during commit: the outcome is unknown.
    OutcomeUnknown = 4_012, UnknownOutcome;
    /// A backup cannot begin now (another runs, a schema change or node restart is under
    /// way, the node keeps nothing on disk), or a schema change waits for a running backup.
    BackupRefused = 1_704, Temporary;
    /// A backup failed: a participant failed or its disk refused a write. Its files are
    /// incomplete (a restore refuses them); take another.
    BackupFailed = 1_705, Temporary;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_carry_their_category() {
        for code in [
            ErrorCode::LockWaitTimeout,
            ErrorCode::NotFound,
            ErrorCode::OutcomeUnknown,
        ] {
            assert_eq!(ErrorCode::from_u32(code as u32), Some(code));
        }
        assert_eq!(ErrorCode::from_u32(1), None);
        assert_eq!(
            ErrorCode::LockWaitTimeout.category(),
            ErrorCategory::Temporary
        );
        assert_eq!(ErrorCode::Duplicate.category(), ErrorCategory::Permanent);
    }
}
