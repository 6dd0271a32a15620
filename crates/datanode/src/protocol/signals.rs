//! The signals of the data node protocol. Each is a struct of words; `typed_signal!` writes
//! its `TypedSignal` impl, and [`Word`] says how each field type becomes payload words.

use kista_signal::{
    BlockAddress, PayloadError, PayloadReader, PayloadWriter, SignalNumber, TypedSignal,
};

use super::REPLICAS_MAX;
use crate::cluster::NodeSet;

/// A field type that travels as a fixed number of payload words. A signal's fields are laid
/// out back to back, so reading one checks the payload's length once, not per field.
pub trait Word: Sized {
    /// Payload words the field takes.
    const WORDS: usize;
    /// Writes the field into `words`, which are exactly [`Word::WORDS`] long.
    fn put(&self, words: &mut [u32]);
    /// Reads the field from `words`, exactly [`Word::WORDS`] long; `payload` names the
    /// signal in errors.
    fn get(words: &[u32], payload: &PayloadReader<'_>) -> Result<Self, PayloadError>;
}

impl Word for u32 {
    const WORDS: usize = 1;
    #[inline]
    fn put(&self, words: &mut [u32]) {
        words[0] = *self;
    }
    #[inline]
    fn get(words: &[u32], _: &PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(words[0])
    }
}

impl Word for u64 {
    const WORDS: usize = 2;
    #[inline]
    fn put(&self, words: &mut [u32]) {
        words[0] = *self as u32;
        words[1] = (*self >> 32) as u32;
    }
    #[inline]
    fn get(words: &[u32], _: &PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(u64::from(words[1]) << 32 | u64::from(words[0]))
    }
}

impl Word for BlockAddress {
    const WORDS: usize = 1;
    #[inline]
    fn put(&self, words: &mut [u32]) {
        words[0] = self.to_word();
    }
    #[inline]
    fn get(words: &[u32], _: &PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(BlockAddress::from_word(words[0]))
    }
}

/// Enums that travel as one word.
macro_rules! word_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $value,)*
        }

        impl Word for $name {
            const WORDS: usize = 1;
            #[inline]
            fn put(&self, words: &mut [u32]) {
                words[0] = *self as u32;
            }
            #[inline]
            fn get(words: &[u32], payload: &PayloadReader<'_>) -> Result<Self, PayloadError> {
                match words[0] {
                    $($value => Ok($name::$variant),)*
                    other => Err(payload.bad_value(stringify!($name), other)),
                }
            }
        }
    };
}

macro_rules! typed_signal {
    // Fields `added` after the signal was first sent are words at its end that a reader
    // takes as 0 when a sender from an earlier build leaves them out (so clients and
    // nodes of two builds understand each other during a rolling upgrade; an earlier
    // reader ignores them).
    ($(#[$doc:meta])* $name:ident = $number:literal { $($(#[$fdoc:meta])* $field:ident: $ty:ty,)* }
        $(added { $($(#[$adoc:meta])* $added:ident: u32,)+ })?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
            $($($(#[$adoc])* pub $added: u32,)+)?
        }

        impl $name {
            /// Payload words of the fields every build sends.
            const FIRST_WORDS: usize = 0 $(+ <$ty as Word>::WORDS)*;
            /// Payload words the signal takes.
            pub const WORDS: usize = Self::FIRST_WORDS $($(+ { let _ = stringify!($added); 1 })+)?;
        }

        const _: () = assert!($name::WORDS <= kista_signal::PAYLOAD_WORDS_MAX);

        impl TypedSignal for $name {
            const NUMBER: SignalNumber = SignalNumber($number);

            #[inline]
            #[allow(unused_assignments, unused_mut, unused_variables)]
            fn write(&self, payload: &mut PayloadWriter<'_>) {
                let words = payload.next_words::<{ $name::WORDS }>();
                let mut at = 0;
                $(
                    Word::put(&self.$field, &mut words[at..at + <$ty as Word>::WORDS]);
                    at += <$ty as Word>::WORDS;
                )*
                $($(
                    words[at] = self.$added;
                    at += 1;
                )+)?
            }

            #[inline]
            #[allow(unused_assignments, unused_mut, unused_variables)]
            fn read(payload: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
                let words = payload.next_words::<{ $name::FIRST_WORDS }>()?;
                let mut at = 0;
                Ok(Self {
                    $($field: {
                        let field = <$ty as Word>::get(&words[at..at + <$ty as Word>::WORDS], payload)?;
                        at += <$ty as Word>::WORDS;
                        field
                    },)*
                    $($($added: payload.u32().unwrap_or(0),)+)?
                })
            }
        }
    };
}

word_enum! {
    OperationKind {
        Read = 1,
        Insert = 2,
        Update = 3,
        /// Insert or replace (upsert).
        Write = 4,
        Delete = 5,
    }
}

word_enum! {
    /// How a read locks: committed reads take no lock.
    LockKind {
        Committed = 0,
        Shared = 1,
        Exclusive = 2,
    }
}

word_enum! {
    /// What the client asks once this operation has run.
    ExecuteMode {
        /// More operations of the batch follow.
        More = 0,
        /// Run the batch and keep the transaction open.
        NoCommit = 1,
        /// Run the batch and commit.
        Commit = 2,
        /// Roll the transaction back (the operation carrying this is not run).
        Rollback = 3,
        /// Run the batch and commit, acknowledged only once the commit's GCI is on disk
        /// on every replica (a durable commit; see `tc/durable.rs`).
        CommitDurable = 4,
    }
}

impl ExecuteMode {
    /// Whether the batch ends with a commit.
    pub fn commits(self) -> bool {
        matches!(self, ExecuteMode::Commit | ExecuteMode::CommitDurable)
    }
}

word_enum! {
    TransactionOutcome {
        /// The batch ran; the transaction stays open.
        Open = 0,
        Committed = 1,
        Aborted = 2,
    }
}

/// The replicas of a partition in prepare order (primary first), and how far along the
/// chain a signal is. The last `starting` replicas belong to a node restarting into the
/// cluster: they take every write (so they miss none while their partition is copied to
/// them) but are never read from, and a write of a row they lack yet does nothing there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaChain {
    pub count: u32,
    pub position: u32,
    /// Trailing replicas that are still starting (always fewer than `count`).
    pub starting: u32,
    pub replicas: [BlockAddress; REPLICAS_MAX],
}

impl ReplicaChain {
    /// The chain of `replicas`, primary first, positioned at the primary.
    pub fn of(replicas: &[BlockAddress]) -> Self {
        assert!(
            !replicas.is_empty() && replicas.len() <= REPLICAS_MAX,
            "a chain has 1 to {REPLICAS_MAX} replicas"
        );
        let mut chain = [BlockAddress::default(); REPLICAS_MAX];
        chain[..replicas.len()].copy_from_slice(replicas);
        Self {
            count: replicas.len() as u32,
            position: 0,
            starting: 0,
            replicas: chain,
        }
    }

    /// The chain of `started` replicas (primary first) followed by `starting` ones.
    pub fn with_starting(started: &[BlockAddress], starting: &[BlockAddress]) -> Self {
        assert!(!started.is_empty(), "a chain has a started replica");
        let mut all = [BlockAddress::default(); REPLICAS_MAX];
        all[..started.len()].copy_from_slice(started);
        all[started.len()..started.len() + starting.len()].copy_from_slice(starting);
        Self {
            starting: starting.len() as u32,
            ..Self::of(&all[..started.len() + starting.len()])
        }
    }

    /// The replicas that serve reads and may be primary.
    pub fn started(&self) -> &[BlockAddress] {
        &self.replicas[..(self.count - self.starting) as usize]
    }

    /// Whether the replica at the chain's position is a starting one.
    pub fn at_starting_replica(&self) -> bool {
        self.position >= self.count - self.starting
    }

    pub fn current(&self) -> BlockAddress {
        self.replicas[self.position as usize]
    }

    pub fn last(&self) -> BlockAddress {
        self.replicas[self.count as usize - 1]
    }

    /// The chain one step towards the last replica, if there is one.
    pub fn next(&self) -> Option<Self> {
        (self.position + 1 < self.count).then(|| Self {
            position: self.position + 1,
            ..*self
        })
    }

    /// The chain one step back towards the primary, if there is one.
    pub fn previous(&self) -> Option<Self> {
        (self.position > 0).then(|| Self {
            position: self.position - 1,
            ..*self
        })
    }

    /// The chain without replicas on `lost` nodes, positioned at its (new) primary; the
    /// chain unchanged when no replica would be left (the cluster stops then).
    pub fn without_nodes(&self, lost: NodeSet) -> Self {
        let kept = |replicas: &[BlockAddress]| {
            let mut kept = [BlockAddress::default(); REPLICAS_MAX];
            let mut count = 0;
            for &replica in replicas.iter().filter(|r| !lost.contains(r.node())) {
                kept[count] = replica;
                count += 1;
            }
            (kept, count)
        };
        let started_count = (self.count - self.starting) as usize;
        let (started, started_kept) = kept(&self.replicas[..started_count]);
        let (starting, starting_kept) = kept(&self.replicas[started_count..self.count as usize]);
        if started_kept == 0 {
            return *self;
        }
        Self::with_starting(&started[..started_kept], &starting[..starting_kept])
    }

    /// The chain positioned at its last replica (where commit starts).
    pub fn at_last(&self) -> Self {
        Self {
            position: self.count - 1,
            ..*self
        }
    }
}

impl Word for ReplicaChain {
    const WORDS: usize = 2 + REPLICAS_MAX;
    #[inline]
    fn put(&self, words: &mut [u32]) {
        words[0] = self.count | self.starting << 16;
        words[1] = self.position;
        for (word, replica) in words[2..].iter_mut().zip(&self.replicas) {
            *word = replica.to_word();
        }
    }
    #[inline]
    fn get(words: &[u32], payload: &PayloadReader<'_>) -> Result<Self, PayloadError> {
        let (count, starting, position) = (words[0] & 0xffff, words[0] >> 16, words[1]);
        if count == 0 || count as usize > REPLICAS_MAX {
            return Err(payload.bad_value("replica count", count));
        }
        if starting >= count {
            return Err(payload.bad_value("starting replicas", starting));
        }
        if position >= count {
            return Err(payload.bad_value("chain position", position));
        }
        let mut replicas = [BlockAddress::default(); REPLICAS_MAX];
        for (replica, &word) in replicas.iter_mut().zip(&words[2..]) {
            *replica = BlockAddress::from_word(word);
        }
        Ok(Self {
            count,
            position,
            starting,
            replicas,
        })
    }
}

/// Index id meaning "by primary key".
pub const PRIMARY_KEY: u32 = u32::MAX;

// ----- schema changes: client <-> dict <-> ldm, tc -----

typed_signal! {
    /// Section: a `TableDefinitionBody` (its indexes are created with the table).
    CreateTableRequest = 100 { request_id: u64, client: BlockAddress, }
}
typed_signal! {
    /// `partitions`: how many the table has, so that a client computes the same partition
    /// map as the nodes and sends each transaction to its first key's primary replica.
    CreateTableConf = 101 { request_id: u64, table_id: u32, schema_version: u32, partitions: u32, }
}
typed_signal! {
    /// Section: an encoded `IndexSchema`.
    CreateIndexRequest = 102 { request_id: u64, client: BlockAddress, table_id: u32, }
}
typed_signal! {
    CreateIndexConf = 103 { request_id: u64, index_id: u32, schema_version: u32, }
}
typed_signal! {
    DropTableRequest = 104 { request_id: u64, client: BlockAddress, table_id: u32, }
}
typed_signal! {
    DropTableConf = 105 { request_id: u64, }
}
typed_signal! {
    /// A schema request failed. Section: the message.
    DictRef = 106 { request_id: u64, code: u32, }
}
typed_signal! {
    /// Finds a client table by name (case-insensitive). Any dictionary answers from its own
    /// copy of the definitions. Section: the name, UTF-8.
    TableLookupRequest = 109 { request_id: u64, client: BlockAddress, }
}
typed_signal! {
    /// Section: the table's `TableDefinitionBody`.
    TableLookupConf = 110 { request_id: u64, table_id: u32, schema_version: u32, partitions: u32, }
}
typed_signal! {
    /// Lists client tables with ids above `after_table_id`, in id order, as many as fit one
    /// answer ([`TABLE_LIST_BYTES_MAX`]).
    TableListRequest = 111 { request_id: u64, client: BlockAddress, after_table_id: u32, }
}
typed_signal! {
    /// `more`: 1 if tables after the last listed remain. Section: per table its id (u32)
    /// and name (length-prefixed bytes).
    TableListConf = 112 { request_id: u64, count: u32, more: u32, }
}

typed_signal! {
    /// Drops secondary index `index_id` of a table (a unique index's index table with it).
    DropIndexRequest = 113 { request_id: u64, client: BlockAddress, table_id: u32, index_id: u32, }
}
typed_signal! {
    DropIndexConf = 114 { request_id: u64, schema_version: u32, }
}
typed_signal! {
    /// Changes a table in place (`TableSchema::in_place_change_from`: its name, columns'
    /// names and defaults, columns added at the end, its extra metadata), if the table is
    /// still at `schema_version` (else error 241: someone changed it meanwhile). The
    /// table's version moves on. Operations made for an earlier version still apply, and
    /// their clients hear of the change (`TableChanged`), unless `refuses_older` is 1 (a
    /// change every client must see before its next operation, such as a trigger's).
    /// With `drains` 1 the answer waits until the transactions open at the change have
    /// ended (a copying ALTER's mirror: no write made without it can commit afterwards).
    /// Section: the new `TableSchema`.
    AlterTableRequest = 115 {
        request_id: u64,
        client: BlockAddress,
        table_id: u32,
        schema_version: u32,
        refuses_older: u32,
    } added {
        drains: u32,
    }
}
typed_signal! {
    AlterTableConf = 116 { request_id: u64, schema_version: u32, }
}
typed_signal! {
    /// Adds a foreign key to child table `table_id`, if it is still at `schema_version`
    /// (else 241). Section: the `ForeignKey` (its child table and number are the
    /// dictionary's to fill in). Both tables' versions move on; the answer
    /// (`AlterTableConf`, the child's version) comes once every coordinator enforces it and
    /// the transactions open before have ended: rows written before are the client's to
    /// check.
    ForeignKeyRequest = 119 { request_id: u64, client: BlockAddress, table_id: u32, schema_version: u32, }
}
typed_signal! {
    /// Drops foreign key `number` of child table `table_id`. Answer: `AlterTableConf`.
    DropForeignKeyRequest = 129 { request_id: u64, client: BlockAddress, table_id: u32, number: u32, }
}
typed_signal! {
    /// Puts table `replacement_id` in the place of `table_id` (a copying ALTER TABLE's
    /// switch, `dict/replace.rs`), if both are still at the versions given (else 241): the
    /// replacement takes the name, the replaced table is renamed `<name>/#replaced` and
    /// refuses operations made for its earlier versions. Neither may have foreign keys.
    /// Answer: `AlterTableConf` (the replacement's version), once the transactions open
    /// at the switch have ended.
    ReplaceTableRequest = 146 { request_id: u64, client: BlockAddress, table_id: u32, schema_version: u32, replacement_id: u32, replacement_version: u32, }
}

/// Bytes of names one [`TableListConf`] carries at most.
pub const TABLE_LIST_BYTES_MAX: usize = 64 * 1024;

typed_signal! {
    /// The master's dictionary publishes a table's current definition to every `ldm` and
    /// `tc` instance and every other dictionary of the cluster. `index_of`: for an index
    /// table, the table whose unique index it holds (0 for a table of its own). Section: a
    /// `TableDefinitionBody` (none when `dropped`).
    /// `oldest_version`: the earliest version whose operations still apply (the table
    /// changed only in place since).
    TableDefinition = 107 { request_id: u64, table_id: u32, schema_version: u32, oldest_version: u32, partitions: u32, dropped: u32, index_of: u32, }
}
typed_signal! {
    /// Unique index `index_id` of a table holds an entry for every row: clients may read
    /// through it from the table's new version on. The client that asked for the index
    /// filled it (the dictionary answered `CreateIndexConf` once every transaction begun
    /// before the index existed had ended, so every later write keeps its entries). Answer:
    /// `AlterTableConf`.
    IndexBuiltRequest = 118 { request_id: u64, client: BlockAddress, table_id: u32, index_id: u32, }
}
typed_signal! {
    /// The dictionary asks a coordinator to answer once every transaction open now has
    /// ended (a unique index being built: none of them keeps its entries).
    DrainTransactions = 127 { request_id: u64, }
}
typed_signal! {
    TransactionsDrained = 128 { request_id: u64, }
}
typed_signal! {
    /// A coordinator tells a client that sent an operation for an earlier version of a
    /// table, changed in place since, that it is at `schema_version` now: the client opens
    /// it again when it next starts a statement.
    TableChanged = 117 { table_id: u32, schema_version: u32, }
}
typed_signal! {
    /// `code` 0: applied. Otherwise an `ErrorCode` (e.g. memory to build an index).
    TableDefinitionConf = 108 { request_id: u64, table_id: u32, code: u32, }
}

// ----- transactions: client <-> tc <-> ldm -----

typed_signal! {
    /// One operation of a client's transaction. Section: a `KeyBody`, or with
    /// [`KeyRequest::BATCH`] a `KeyBatchBody` of whole-row writes to one partition (their
    /// op indexes in it; `op_index` is the first's).
    KeyRequest = 120 {
        client: BlockAddress,
        client_tx: u64,
        op_index: u32,
        table_id: u32,
        schema_version: u32,
        kind: OperationKind,
        lock: LockKind,
        execute: ExecuteMode,
        /// A unique index to find the row by, or [`PRIMARY_KEY`].
        index_id: u32,
    } added {
        /// [`KeyRequest::NO_FOREIGN_KEY_CHECKS`], [`KeyRequest::MOVES_KEY`],
        /// [`KeyRequest::BATCH`].
        flags: u32,
    }
}

impl KeyRequest {
    /// The write's foreign keys go unchecked and take no action (SQL's
    /// `foreign_key_checks = 0`, for loads).
    pub const NO_FOREIGN_KEY_CHECKS: u32 = 1;
    /// This delete is half of an update that changes the row's primary key (the insert of
    /// the new key follows): foreign keys referencing the row apply their ON UPDATE rule.
    pub const MOVES_KEY: u32 = 2;
    /// The section is a `KeyBatchBody`: inserts or upserts (`kind`) by primary key, all to
    /// one partition of a table without unique indexes or foreign keys.
    pub const BATCH: u32 = 4;

    pub fn is_batch(&self) -> bool {
        self.flags & Self::BATCH != 0
    }
}
typed_signal! {
    /// Ends a batch that has no operations: commits or rolls back what the transaction did
    /// in earlier batches. Answered with `ExecuteConf`.
    EndBatch = 123 { client: BlockAddress, client_tx: u64, execute: ExecuteMode, }
}
typed_signal! {
    /// A batch ended (or the transaction did). Reads answer with `ReadResult`s from the data
    /// managers; `reads` says how many the client must collect. `gci`: the global
    /// checkpoint a committed transaction that changed rows belongs to (else 0). Section:
    /// the message, when `code` is not 0.
    ExecuteConf = 121 {
        client_tx: u64,
        outcome: TransactionOutcome,
        reads: u32,
        code: u32,
        failed_op: u32,
        gci: u64,
    }
}
typed_signal! {
    /// A read's row, straight from the data manager to the client. Section: a `RowBody`
    /// when `found`.
    ReadResult = 122 { client_tx: u64, op_index: u32, found: u32, }
}
typed_signal! {
    /// A transaction of one committed read, answered whole by the coordinator that ran it:
    /// the row and the commit in one signal, as a `ReadResult` (when `found`) and an
    /// `ExecuteConf` (committed, `reads` = `found`) would say. Section: a `RowBody` when
    /// `found`.
    ReadCommitted = 124 { client_tx: u64, op_index: u32, found: u32, }
}
typed_signal! {
    /// A client's heartbeat to a coordinator: is this node still serving? Answered with a
    /// `ClientPong` of the same `sequence`. A client that hears nothing for several
    /// heartbeats stops using the node (a stopped process keeps its sockets open).
    ClientPing = 125 { client: BlockAddress, sequence: u64, }
}
typed_signal! {
    /// `started` 0 while the node is restarting, or has not held its read lease yet (a
    /// cluster's first start): it answers, but serves no transactions yet.
    ClientPong = 126 { sequence: u64, started: u32, }
}
typed_signal! {
    /// Runs an operation on a replica, the row found by its primary key. A read's row goes
    /// to `client` (the coordinator itself for a unique read's index entry). Section: the
    /// `KeyBody`.
    Prepare = 130 {
        tc: BlockAddress,
        transaction: u64,
        op_ref: u32,
        table_id: u32,
        schema_version: u32,
        partition: u32,
        kind: OperationKind,
        lock: LockKind,
        client: BlockAddress,
        client_tx: u64,
        op_index: u32,
        chain: ReplicaChain,
    } added {
        /// Not 0: the section is a `KeyBatchBody` of this many whole-row writes, run in
        /// order as one operation (`op_index` is the first's).
        batch_operations: u32,
    }
}
typed_signal! {
    /// The last replica ran the operation. `read_rows`: rows sent to the client.
    PrepareConf = 131 { transaction: u64, op_ref: u32, read_rows: u32, }
}
typed_signal! {
    /// The operation failed. Section: the message.
    PrepareRef = 132 { transaction: u64, op_ref: u32, code: u32, } added {
        /// The client's op index of the operation that failed (of a batch's, the one).
        op_index: u32,
    }
}
typed_signal! {
    /// Commits the transaction's changes to one partition, travelling from the last replica
    /// back to the primary. `gci`: the global checkpoint the transaction belongs to, which
    /// stamps its REDO records.
    Commit = 133 { tc: BlockAddress, transaction: u64, table_id: u32, partition: u32, chain: ReplicaChain, gci: u64, }
}
typed_signal! {
    CommitConf = 134 { transaction: u64, table_id: u32, partition: u32, }
}
typed_signal! {
    /// The transaction is over: the data manager forgets it.
    Complete = 135 { tc: BlockAddress, transaction: u64, }
}
typed_signal! {
    CompleteConf = 136 { transaction: u64, }
}
typed_signal! {
    /// Rolls back everything the transaction did on this data manager, parked operations
    /// included.
    Abort = 137 { tc: BlockAddress, transaction: u64, }
}
typed_signal! {
    AbortConf = 138 { transaction: u64, }
}
typed_signal! {
    /// An `Abort` passed along a partition's chain from its primary, which the last
    /// replica confirms. For a transaction with operations still under way: a prepare
    /// travels the same links first (signals between two blocks keep their order), so the
    /// abort overtakes none and no replica is left holding what a late prepare locked.
    AbortAlong = 139 { tc: BlockAddress, transaction: u64, chain: ReplicaChain, }
}

// ----- timers (a block to itself) -----

typed_signal! {
    /// A parked operation waited its limit for a lock or for REDO log space. `wait_id`
    /// tells a stale timer from a live one.
    WaitExpired = 140 { transaction: u64, wait_id: u32, }
}
typed_signal! {
    /// The coordinator's periodic look for idle transactions.
    CoordinatorTick = 141 {}
}
typed_signal! {
    /// From a data node's transport to each of its coordinators: the connection of client
    /// node `client_node` closed. Its open transactions are aborted and its scans closed
    /// as soon as they wait for it (NDB's API failure handling), freeing their locks
    /// without waiting out the inactivity timeout. Sent before the client's node id can be
    /// given to another connection, so it never reaches the next one's transactions.
    ClientLost = 148 { client_node: u32, }
}

// ----- deadlock detection: ldm -> tc -> ldm (see `ldm/deadlock.rs`) -----

typed_signal! {
    /// A parked operation's look for a deadlock it is part of (ldm to itself): when it
    /// parks, then every detection interval while it waits.
    DeadlockCheck = 142 { transaction: u64, wait_id: u32, }
}
typed_signal! {
    /// A probe following the wait-for graph: `initiator`, whose wait `wait_id` started it
    /// (`probe_id` at `origin`), waits, through `hops` transactions, for `target`. `victim`
    /// is the highest-ranked transaction on the path so far, waiting at `victim_at` (its
    /// wait `victim_wait`). Sent by a data manager to `target`'s coordinator, which passes
    /// it to the data managers of the partitions `target` uses while it has operations
    /// running.
    DeadlockProbe = 143 {
        initiator: u64,
        target: u64,
        origin: BlockAddress,
        wait_id: u32,
        probe_id: u32,
        hops: u32,
        victim: u64,
        victim_at: BlockAddress,
        victim_wait: u32,
    }
}
typed_signal! {
    /// A probe came back to its initiator: the cycle's victim's wait `wait_id` ends with
    /// error 4261 (sent to the data manager where it waits).
    DeadlockFound = 144 { transaction: u64, wait_id: u32, }
}

// ----- scans: client <-> tc <-> ldm or query -----

typed_signal! {
    /// Opens a committed-read scan over every partition of a table. Section: a `ScanBody`.
    /// Rows arrive as `ScanRows` from the partitions, in rounds of at most `batch_rows` per
    /// partition; a `ScanConf` ends each round. `ordered`: the client merges the partitions'
    /// rows in index order, so each partition must deliver up to `limit` rows itself.
    ScanRequest = 150 {
        client: BlockAddress,
        client_scan: u64,
        table_id: u32,
        schema_version: u32,
        /// Rows wanted in all (`u64::MAX`: no limit).
        limit: u64,
        batch_rows: u32,
        ordered: u32,
    }
}
typed_signal! {
    /// A round of a scan ended: `rows` were sent in it, in `batches` `ScanRows` signals (the
    /// client has the round once it holds them all). `done`: the scan is over (exhausted, its
    /// limit reached, closed or failed). Section: the message, when `code` is not 0.
    ScanConf = 151 { client_scan: u64, rows: u32, batches: u32, done: u32, code: u32, }
}
typed_signal! {
    /// Asks for the next round of a scan, or closes it (`close` = 1).
    ScanNext = 152 { client: BlockAddress, client_scan: u64, close: u32, }
}
typed_signal! {
    /// Scans one partition for a coordinator and sends the first batch. Section: the
    /// `ScanBody`.
    ScanFragment = 153 {
        tc: BlockAddress,
        scan_id: u64,
        table_id: u32,
        schema_version: u32,
        partition: u32,
        rows_max: u32,
        client: BlockAddress,
        client_scan: u64,
    }
}
typed_signal! {
    /// The next batch of a partition scan, or its end (`close` = 1, not answered).
    ScanFragmentNext = 154 { tc: BlockAddress, scan_id: u64, partition: u32, rows_max: u32, close: u32, }
}
typed_signal! {
    /// A partition sent a batch of `rows`; `done`: it has no more.
    ScanFragmentConf = 155 { scan_id: u64, partition: u32, rows: u32, done: u32, }
}
typed_signal! {
    /// A partition scan failed and is gone. Section: the message.
    ScanFragmentRef = 156 { scan_id: u64, partition: u32, code: u32, }
}
typed_signal! {
    /// Scanned rows, straight from the partition to the client: one per batch, even an empty
    /// one, so a client merging ordered partitions knows each partition's state. `done`: the
    /// partition has no more. Section: a `RowsBody`.
    ScanRows = 157 { client_scan: u64, partition: u32, rows: u32, done: u32, }
}

// ----- load (the node's monitor -> tc) -----

typed_signal! {
    /// Load levels of the node's executors for read routing. Section: `entries` pairs of
    /// words (executor address, level 1..5).
    LoadReport = 160 { entries: u32, }
}

// ----- membership: membership <-> membership, membership -> arbitrator, local blocks -----

impl Word for NodeSet {
    const WORDS: usize = 2;
    #[inline]
    fn put(&self, words: &mut [u32]) {
        self.0.put(words);
    }
    #[inline]
    fn get(words: &[u32], payload: &PayloadReader<'_>) -> Result<Self, PayloadError> {
        u64::get(words, payload).map(NodeSet)
    }
}

typed_signal! {
    /// "I am alive", sent to every other member each heartbeat interval. `sent_ns` is the
    /// sender's clock when it sent it, echoed back at once ([`HeartbeatEcho`]) for the
    /// sender's read lease.
    Heartbeat = 170 { generation: u32, sent_ns: u64, }
}
typed_signal! {
    /// A member's answer to a [`Heartbeat`]: it heard the heartbeat sent at `sent_ns` (on
    /// the heartbeat sender's clock) and had not begun removing its sender then.
    HeartbeatEcho = 198 { sent_ns: u64, }
}
typed_signal! {
    /// The membership's own timer: send heartbeats, look for silent members and for
    /// rounds that take too long.
    MembershipTick = 171 {}
}
typed_signal! {
    /// To the president: these members missed their heartbeats (or closed their
    /// connections). Repeated every tick until they are gone from the membership. From a
    /// start from disk's master `dict` to its own membership, with a section: these nodes
    /// are stale and stop for the reason it gives (the membership sends them
    /// `ClusterStop`, which crosses the fence), then are removed.
    NodeSuspected = 172 { suspects: NodeSet, }
}
typed_signal! {
    /// From the president to every survivor: shut the `failed` nodes out, then confirm.
    /// `round` numbers the president's attempts, so a late answer to an earlier one is
    /// told apart.
    FailPrepare = 173 { round: u32, failed: NodeSet, }
}
typed_signal! {
    FailPrepareConf = 174 { round: u32, }
}
typed_signal! {
    /// From the president once every survivor shut the failed nodes out (and, when the
    /// survivors hold no node group whole, the arbitrator agreed): the membership of
    /// `generation` is `members`. Whole, not as a change: a survivor that missed an earlier
    /// generation's commit (it was slow) takes the membership as it is.
    FailCommit = 175 { generation: u32, members: NodeSet, }
}
typed_signal! {
    /// From the membership to the node's `dict`, `tc` and `ldm` instances: the `failed`
    /// nodes are out of the cluster; `president` runs the takeover of their transactions.
    NodeFailed = 176 { generation: u32, failed: NodeSet, president: u32, }
}
typed_signal! {
    /// From a president whose survivors are no majority of the last membership: may
    /// `survivors` go on? The arbitrator says yes to one side only.
    ArbitrationRequest = 177 { round: u32, survivors: NodeSet, }
}
typed_signal! {
    /// `granted` 1: the survivors go on; 0: they must stop (another side won).
    ArbitrationConf = 178 { round: u32, granted: u32, }
}
typed_signal! {
    /// From the president to every survivor: the cluster cannot go on; stop. Section: why.
    ClusterStop = 179 {}
}

// ----- takeover of failed coordinators' transactions: tc (president) <-> ldm -----

typed_signal! {
    /// From the president's first `tc` to every live `ldm`: report every transaction
    /// whose coordinator is on one of `coordinators` (failed nodes), and refuse further
    /// operations from them.
    TakeoverQuery = 180 { takeover: u32, coordinators: NodeSet, }
}
typed_signal! {
    /// An `ldm`'s answer, possibly in several parts (`last` 1 on the final one). Section:
    /// `entries` × (transaction u64, table u32, partition u32, committed u32,
    /// gci u64), little-endian.
    TakeoverReport = 181 { takeover: u32, entries: u32, last: u32, }
}

// ----- a restarted node joining the cluster: membership (joiner, president, members) -----

typed_signal! {
    /// From a restarted node's membership to every other data node's: let me in. Crosses
    /// the fence (membership to membership); only the president acts on it.
    JoinRequest = 182 {}
}
typed_signal! {
    /// From the president to every member: `joining` is about to join; let it in.
    JoinPrepare = 183 { round: u32, joining: u32, }
}
typed_signal! {
    JoinPrepareConf = 184 { round: u32, }
}
typed_signal! {
    /// From the president to every member and the joiner: the membership of `generation`
    /// includes `joined`, as its most junior member. Section: every member's node id in
    /// order of seniority, one byte each.
    JoinCommit = 185 { generation: u32, joined: u32, }
}
typed_signal! {
    /// From the master's `dict` to the arbitrator when a start from disk decided, before
    /// any node stops: the cluster begins its life `cluster_life` with `participants`,
    /// and `stopping` (the nodes whose disks cannot take part) stop. A split of an earlier
    /// life is over: the participants are the side that goes on. Confirmed by
    /// `ClusterLifeBegunConf`.
    ClusterLifeBegins = 237 { cluster_life: u32, participants: NodeSet, stopping: NodeSet, }
}
typed_signal! {
    /// The arbitrator heard `ClusterLifeBegins` of `cluster_life`: the master goes on
    /// with the start (stopping the nodes that do not take part, itself perhaps).
    ClusterLifeBegunConf = 238 { cluster_life: u32, }
}
typed_signal! {
    /// From the president to the arbitrator: `joined` joined, and `members` (with it) are
    /// the membership now, so `joined` belongs to the side that won the last split.
    MembershipGrew = 186 { members: NodeSet, joined: u32, }
}
typed_signal! {
    /// From the president to the arbitrator: the cluster removed `removed` (the management
    /// server shows them failed while their processes, shut out, still hold connections).
    MembershipShrank = 197 { members: NodeSet, removed: NodeSet, }
}

// ----- node restart: membership -> local blocks; master dict <-> tc, ldm -----

typed_signal! {
    /// From the membership to the node's `dict`, `tc` and `ldm` instances, on every member
    /// and on the joiner: `joined` is a member from `generation` on; `members` is the whole
    /// membership now. The joiner is not started yet: the master's dictionary restarts it.
    NodeJoined = 187 { generation: u32, joined: u32, president: u32, members: NodeSet, }
}
typed_signal! {
    /// From the master's dictionary to every member's `tc`: put `node`'s replicas at the
    /// end of their chains as starting replicas, then answer once every transaction begun
    /// with the old chains has ended (so no write can reach a partition around its copy).
    AddStartingReplica = 188 { restart: u32, node: u32, }
}
typed_signal! {
    StartingReplicaAdded = 189 { restart: u32, }
}
typed_signal! {
    /// From the master's dictionary to the `ldm` holding the replica just before a
    /// starting one in a partition's chain: copy to `target`, the starting replica, every
    /// row written and key deleted after `from_gci` (the GCI the target restored from its
    /// own disk), or, with `from_gci` 0 or deletes not known that far back here, every row
    /// (the target drops what it holds first); one batch at a time, each row under an
    /// exclusive lock while it is read.
    CopyPartition = 190 {
        restart: u32,
        table_id: u32,
        partition: u32,
        target: BlockAddress,
        from_gci: u64,
    }
}
typed_signal! {
    /// A batch of copied rows (whole, with the GCI that wrote them) and deleted keys.
    /// Section: a `CopyBatchBody`. `whole` (0 or 1) on the first batch of a copy of
    /// every row: the target first drops the rows it holds that no transaction uses, and
    /// knows deletes from `deletes_known_from` on. Answered with `CopyRowsConf` once
    /// applied, which lets the next batch go.
    CopyRows = 191 { table_id: u32, partition: u32, whole: u32, deletes_known_from: u64, }
}
typed_signal! {
    CopyRowsConf = 192 { table_id: u32, partition: u32, }
}
typed_signal! {
    /// From a copying `ldm` to the master's dictionary: the partition's rows all went
    /// (`rows` rows and `deleted` deleted keys; `whole` 1 if every row went).
    PartitionCopied = 193 {
        restart: u32,
        table_id: u32,
        partition: u32,
        rows: u64,
        deleted: u64,
        whole: u32,
    }
}
typed_signal! {
    /// From the master's dictionary to every member's `dict`, `tc` and `ldm` (the
    /// restarted node's too) and the restarted node's membership: `node` holds all its data
    /// and serves. A node's membership sends it to the arbitrator for itself once it also
    /// holds its read lease (in a first start, once the cluster has formed).
    NodeStarted = 194 { node: u32, }
}
typed_signal! {
    /// From every data node's membership to the arbitrator each heartbeat interval: its
    /// data memory, for the management server's `report memory`.
    MemoryUsage = 196 { used_bytes: u64, limit_bytes: u64, } added {
        /// MiB free on the data directory's file system, and its size (0: not measured,
        /// or no data directory), as the node's process measured them.
        disk_free_mib: u32,
        disk_size_mib: u32,
    }
}
typed_signal! {
    /// From the last started replica to a starting one, just before it passes it a
    /// write: the unique-key changes the write made (a starting replica may lack the row,
    /// so it cannot compute them; it reports these). Section: an `IndexUpkeepBody`.
    StartingUpkeep = 195 { transaction: u64, op_ref: u32, }
}

// ----- global checkpoints: the master's gcp <-> every member's tc, ldm and gcp -----

typed_signal! {
    /// From the master's `gcp` to every member's `tc`: hold the commits decided from now on
    /// (until `GcpCommit` of `gci` arrives), then confirm.
    GcpPrepare = 210 { gci: u64, }
}
typed_signal! {
    GcpPrepareConf = 211 { gci: u64, }
}
typed_signal! {
    /// From the master's `gcp` to every member's `tc`: stamp commits with `gci` from now on
    /// and start the held ones; confirm once every transaction stamped below `gci` has
    /// committed on every replica.
    GcpCommit = 212 { gci: u64, }
}
typed_signal! {
    /// A coordinator's confirmation of `GcpCommit` of `gci`, given while it knew the
    /// membership of `generation` (the master counts it only if that is the latest failure's
    /// generation or later: a coordinator taking over failed nodes' transactions must have
    /// begun to).
    GcpCommitConf = 213 { gci: u64, generation: u32, }
}
typed_signal! {
    /// From the master's `gcp` to every member's `ldm`: every change of `gci` and below is
    /// in your REDO log; mark it (`GciDone`), make the log durable through the mark, then
    /// confirm. Every member saved `restorable` already (the latest GCI the master knows
    /// a system restart can restore), so local checkpoints of it and below are usable.
    GcpSave = 214 { gci: u64, restorable: u64, }
}
typed_signal! {
    GcpSaveConf = 215 { gci: u64, }
}
typed_signal! {
    /// From the master's `gcp` to every member's `gcp`: every member's log holds `gci`
    /// whole, so a system restart can restore the cluster to it.
    GcpSaved = 216 { gci: u64, }
}
typed_signal! {
    /// From a new master's `gcp` to every member's `tc`: which GCI do you stamp commits
    /// with? (The old master may have failed in the middle of a round.)
    GcpStateQuery = 217 {}
}
typed_signal! {
    /// A coordinator's answer: the GCI it stamps commits with (0: it does not know yet).
    GcpState = 218 { gci: u64, }
}
typed_signal! {
    /// The `gcp` block's timer: the master starts a round each interval.
    GcpTick = 219 {}
}
typed_signal! {
    /// An `ldm` builds the next slice of the ordered indexes a definition added (sent to
    /// itself: `ldm/index_build.rs`).
    IndexBuildSlice = 145 { id: u64, }
}
typed_signal! {
    /// An `ldm` frees the next slice of a dropped table's rows (sent to itself:
    /// `ldm/reclaim.rs`).
    ReclaimSlice = 147 {}
}
typed_signal! {
    /// An `ldm`'s local checkpoint `id` goes on (sent to itself, delayed to keep the
    /// checkpoint's disk writes to their speed).
    LocalCheckpointStep = 220 { id: u64, }
}

// ----- a start from disk (system restart): gcp, dict, ldm, the master's dict -----

typed_signal! {
    /// From a node's `gcp` to its `dict` at the start, once the node's control file was
    /// read and rewritten for this life: what the node's disk holds. `holds_data` (a
    /// [`DiskHolds`]): whether its checkpoints and logs restore the cluster of
    /// `cluster_life` to `restorable_gci`, or to any GCI from `restores_from_gci` on.
    DiskState = 221 {
        node_life: u32,
        cluster_life: u32,
        restorable_gci: u64,
        holds_data: u32,
        restores_from_gci: u64,
    }
}
/// What a node's disk holds, by its control file (`DiskState`'s and `StartReport`'s
/// `holds_data` word).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DiskHolds {
    /// Nothing to restore: a new node, or one whose copy from a peer is not checkpointed
    /// yet.
    #[default]
    Nothing = 0,
    /// Data its checkpoints and logs restore.
    Data = 1,
    /// Data it cannot restore: its control file, or a log or checkpoint a restore needed,
    /// proved damaged or unreadable. Unlike `Nothing`, a start from disk never takes such
    /// a node for a new one: it copies from a peer that holds the data, and with no such
    /// peer the start stops, saying so, rather than begin an empty cluster.
    Unrestorable = 2,
}

impl DiskHolds {
    pub fn of(word: u32) -> Option<Self> {
        [Self::Nothing, Self::Data, Self::Unrestorable]
            .into_iter()
            .find(|holds| *holds as u32 == word)
    }
}

typed_signal! {
    /// From every member's `dict` to the master's at a start: the node's `DiskState`, and
    /// the next table id its schema file holds (0: no schema file).
    StartReport = 222 {
        node: u32,
        node_life: u32,
        cluster_life: u32,
        restorable_gci: u64,
        holds_data: u32,
        restores_from_gci: u64,
        next_table_id: u32,
    } added {
        /// [`SCHEMA_REFUSED`]: a schema file of this node was refused (damaged,
        /// unreadable); [`SCHEMA_MISSING`]: it has none while its disk holds data. Either
        /// way its dictionary may lack the latest changes.
        schema_suspect: u32,
    }
}
/// `StartReport::schema_suspect`: a twin of the node's schema file was refused.
pub const SCHEMA_REFUSED: u32 = 1;
/// `StartReport::schema_suspect`: the node has no schema file while its disk holds data
/// (a cluster that never had a table, or one whose files were lost).
pub const SCHEMA_MISSING: u32 = 2;
typed_signal! {
    /// From the master's `dict` to every member's that takes part in the start: the
    /// cluster starts as `cluster_life`, restored to `gci` by `participants` (0 and no
    /// restore in an initial start). Each records it in its control file, then confirms
    /// (`StartOrderConf`).
    StartOrder = 223 { cluster_life: u32, gci: u64, participants: NodeSet, } added {
        /// The participant whose dictionary the cluster takes (0: the master's): it keeps
        /// its schema file's tables for [`DictionaryWanted`].
        dictionary_from: u32,
    }
}
typed_signal! {
    StartOrderConf = 224 {}
}
typed_signal! {
    /// From a node's `dict` to its `gcp`: record in the control file that the node is of
    /// `cluster_life`, restoring `gci`; confirm once synced (`DiskStateSetConf`).
    DiskStateSet = 225 { cluster_life: u32, gci: u64, }
}
typed_signal! {
    DiskStateSetConf = 226 {}
}
typed_signal! {
    /// From the master's `dict` to every participant's `ldm`, once the definitions are in
    /// place: restore your partitions to `gci` from your newest usable local checkpoint
    /// and REDO log, or start with empty ones and a fresh log (`restores`, a
    /// `RestoreKind`); stamp your log's records with `node_life` from now on. Confirmed
    /// by `LdmRestoreConf` once restored and checkpointed. Also from a restarting node's
    /// `gcp` to its `ldm`s: load your partitions as of `gci` before the copy
    /// (`RestoreKind::BeforeCopy`, nothing written), and later start afresh.
    LdmRestore = 227 { gci: u64, node_life: u32, restores: u32, }
}
/// What an `LdmRestore` asks (its `restores` word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreKind {
    /// Empty partitions, checkpoint files emptied, a fresh log.
    Fresh = 0,
    /// A start from disk: restore, then go on with the log and checkpoint the result.
    SystemStart = 1,
    /// A node restart from the node's own disk: load the partitions and write nothing
    /// (the copy and a fresh start of the log and checkpoints follow); a disk that cannot
    /// be used leaves them empty.
    BeforeCopy = 2,
}

impl RestoreKind {
    pub fn of(word: u32) -> Option<Self> {
        [Self::Fresh, Self::SystemStart, Self::BeforeCopy]
            .into_iter()
            .find(|kind| *kind as u32 == word)
    }
}

typed_signal! {
    /// An `ldm`'s restore is done: `rows` rows from its checkpoint, `records` REDO
    /// records replayed; its partitions are as of `gci` (0: empty, a restore before a
    /// copy that found the disk unusable).
    LdmRestoreConf = 228 { rows: u64, records: u64, gci: u64, }
}
typed_signal! {
    /// A `dict`'s timer while its node reports for a start from disk: a report sent before
    /// the connection to the master was up is lost, so it goes again each tick.
    StartTick = 230 {}
}
typed_signal! {
    /// From the master's `dict` to every participant's `dict`, `gcp`, `tc` and
    /// membership: every partition is restored to `gci`; the cluster serves, `members`
    /// started, and the next GCI is `gci` + 1.
    SystemStarted = 229 { gci: u64, members: NodeSet, }
}

// ----- a clean shutdown: the management server -> every gcp; the master's gcp <-> every gcp -----
typed_signal! {
    /// From the management server to every data node's `gcp`: shut the cluster down
    /// without losing an acknowledged commit. The master closes the GCI that commits are
    /// stamped with, has every member record it as restorable (`GcpRecord`, the round's
    /// last step), then stops every node. A node whose cluster does not serve yet stops at
    /// once.
    ClusterShutdown = 231 {}
}
typed_signal! {
    /// From the master's `gcp` to every member's, the last step of a round: every member's
    /// log holds `gci`; confirm (`GcpRecordConf`) once your control file says a start from
    /// disk restores it.
    GcpRecord = 232 { gci: u64, }
}
typed_signal! {
    /// `holds_data` (0 or 1): the node's disk restores its data (one that restarted into
    /// the cluster does once it checkpointed what it copied): a GCI is restorable only
    /// once such a member of every node group recorded it.
    GcpRecordConf = 233 { gci: u64, holds_data: u32, }
}
typed_signal! {
    /// From a `tc` to its node's `gcp`, which passes it on to the master's: a durable
    /// commit of `gci` waits for it to be saved; close it without waiting for the interval.
    GcpHurry = 234 { gci: u64, }
}
typed_signal! {
    /// From the master's `gcp` to the `gcp` and the `tc`s of a node that just joined the
    /// membership: the GCI coordinators stamp now (its coordinators stamp no earlier one,
    /// whatever a round's request meant for the node's earlier life said), and the latest
    /// restorable one (should it become master before a round reached it, it goes on from
    /// there, never from an earlier GCI), and the cluster's life, which its disk holds
    /// data of once it checkpointed its copy.
    GcpJoinState = 236 { current_gci: u64, restorable_gci: u64, cluster_life: u32, }
}

// ----- a node restart's disk: ldm -> its node's gcp -----
typed_signal! {
    /// From each `ldm` of a node that restarted into a running cluster to its node's
    /// `gcp`: the first local checkpoint this `ldm` began once the node started (every
    /// partition copied from a peer) is written, so its checkpoint and log restore its
    /// partitions again. Once every `ldm` said so (and a GCI later than the checkpoints'
    /// rows is recorded), the control file says the node holds data (a start from disk
    /// may restore from it).
    LdmHoldsData = 235 {}
}

// ----- a node restart from the node's own disk: the master's dict <-> the restarting gcp -----
typed_signal! {
    /// From the master's `dict` to a restarting node's `gcp`, once the definitions are in
    /// place: load your partitions from your own disk, if it holds data of the cluster's
    /// life, to the latest GCI it recorded; the copy then brings only what changed since.
    OwnDiskRestore = 239 { restart: u32, }
}
typed_signal! {
    /// The answer: every partition of the node is as of `gci` (0: empty; its disk held
    /// nothing usable, and every row is copied), from `rows` checkpointed rows and
    /// `records` REDO records.
    OwnDiskRestored = 240 { restart: u32, gci: u64, rows: u64, records: u64, }
}

typed_signal! {
    /// The node's monitor (outside the blocks) tells the `info` block how its threads were
    /// loaded over the last second. Section: a `ThreadLoadsBody` of `threads` rows.
    ThreadLoadsReport = 241 { threads: u32, }
}
typed_signal! {
    /// A client asks a node's `info` block for one of its tables (`InfoTable`). Answer:
    /// `InfoConf`.
    InfoRequest = 242 { request_id: u64, client: BlockAddress, table: u32, }
}
typed_signal! {
    /// The rows of the table asked for (section: for `Threads`, a `ThreadLoadsBody`), or
    /// `code` (`BadRequest` for a table the node does not know) and no section.
    InfoConf = 243 { request_id: u64, table: u32, code: u32, }
}
typed_signal! {
    /// The `info` block asks a block of its own node for its rows of a gathered table
    /// (`InfoTable::Partitions` of each `ldm`, `InfoTable::Transactions` of each `tc`).
    /// Answer: `InfoListConf`.
    InfoListRequest = 244 { gather: u32, table: u32, }
}
typed_signal! {
    /// A block's rows of a gathered table. Section: the table's fixed-size rows (at most
    /// `INFO_ROWS_PER_BLOCK_MAX`); `truncated` when it has more.
    InfoListConf = 245 { gather: u32, truncated: u32, }
}

// ----- online backup (`dict/backup.rs`, `ldm/backup.rs`) -----
typed_signal! {
    /// From the management server (its backup block) to any node's `dict`, passed on to the
    /// master's: take a backup. Answer: `BackupConf` once it is complete, or `DictRef`.
    BackupRequest = 246 { request_id: u64, client: BlockAddress, }
}
typed_signal! {
    /// Backup `backup_id` is complete: every participant's files restore the cluster as
    /// it was at the end of GCI `stop_gci`; `rows` rows, `bytes` bytes in all.
    BackupConf = 247 { request_id: u64, backup_id: u32, stop_gci: u64, rows: u64, bytes: u64, }
}
typed_signal! {
    /// From the management server to any node's `dict` (passed on to the master's): which
    /// backups are complete. Answer: `BackupListConf`.
    BackupListRequest = 248 { request_id: u64, client: BlockAddress, }
}
typed_signal! {
    /// The complete backups the master's catalog holds. Section: `backups` entries
    /// (`BackupEntry`), oldest first.
    BackupListConf = 249 { request_id: u64, backups: u32, }
}
typed_signal! {
    /// From the master's `dict` to every live one: the highest backup id your catalog
    /// holds? (`attempt` matches the answer.) Answer: `BackupIdConf`.
    BackupIdQuery = 250 { attempt: u32, }
}
typed_signal! {
    BackupIdConf = 251 { attempt: u32, highest: u32, }
}
typed_signal! {
    /// From the master's `dict` to each participant's: backup `backup_id` begins on
    /// `participants` (the started nodes). Each writes its schema file, then has its
    /// `ldm`s begin (`BackupScan`), and confirms with `BackupScanned`.
    BackupBegin = 252 { backup_id: u32, participants: NodeSet, }
}
typed_signal! {
    /// From a participant's `dict` to its `ldm`s: log every change your partitions commit
    /// from now on, and write the rows of the partitions whose first participant replica
    /// you hold, of the tables in the section (u32 table ids; each table has `partitions`
    /// partitions). Answer to `master`: `BackupScanned`.
    BackupScan = 253 { backup_id: u32, participants: NodeSet, master: BlockAddress, partitions: u32, }
}
typed_signal! {
    /// A participant's `ldm` wrote its rows (or its `dict`, its schema file): `rows` rows
    /// in `bytes` bytes, none written in a GCI after `highest_gci`.
    BackupScanned = 254 { backup_id: u32, highest_gci: u64, rows: u64, bytes: u64, }
}
typed_signal! {
    /// From the master's `dict` to every participant's `ldm`: the backup restores GCI
    /// `stop_gci`; close your log once that GCI is saved here. Answer: `BackupStopped`.
    BackupStop = 255 { backup_id: u32, stop_gci: u64, }
}
typed_signal! {
    /// A participant's `ldm` closed its log: `records` changes in `bytes` bytes.
    BackupStopped = 256 { backup_id: u32, records: u64, bytes: u64, }
}
typed_signal! {
    /// From the master's `dict`: backup `backup_id` is over. To the `ldm`s of a failed
    /// one (`completed` 0): stop and close the files. To every live `dict` of a complete
    /// one: record it in the catalog (section: its `BackupEntry`).
    BackupEnded = 257 { backup_id: u32, completed: u32, }
}
typed_signal! {
    /// A participant's `ldm` (or `dict`) cannot go on with backup `backup_id` (its disk
    /// refused a file, its log buffer overflowed). Section: the reason.
    BackupFailedRef = 258 { backup_id: u32, }
}
typed_signal! {
    /// An `ldm` to itself: the next step of backup `backup_id`'s scan.
    BackupStep = 259 { backup_id: u32, }
}

typed_signal! {
    /// From the master's `dict` at a start from disk whose own schema file is suspect, to
    /// the participant's `dict` named `dictionary_from` in the order: send me your
    /// tables (as `TableDefinition`s), then say so (`DictionaryHandedOver`).
    DictionaryWanted = 260 {}
}
typed_signal! {
    /// The answer to `DictionaryWanted`, once the master's `dict` applied every table.
    DictionaryHandedOver = 261 { tables: u32, }
}

typed_signal! {
    /// A `dict`'s timer while the disk refuses its schema file for want of space: the
    /// write is tried again (the schema change it holds waits meanwhile).
    SchemaWriteRetry = 263 {}
}

typed_signal! {
    /// From an `ldm` to its node's `gcp` at a start from disk: what its disk holds cannot
    /// restore the GCI ordered (a REDO or checkpoint file damaged, missing or unreadable;
    /// why in the section). The control file says so, then the node stops and starts
    /// again, copying its data from a peer.
    LdmDiskUnusable = 262 {}
}

typed_signal! {
    /// From a member's `dict` to the master's: the disk has no room for `node`'s schema
    /// file (`waits` 1: its write is tried again meanwhile) or has room again (0). The
    /// master refuses schema changes while any member's file waits.
    SchemaFileRoom = 264 { node: u32, waits: u32, }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_signal::{BlockId, NodeId, Signal};

    #[test]
    fn an_added_field_reads_as_zero_from_a_sender_of_an_earlier_build() {
        let address = BlockAddress::new(NodeId(1), BlockId(11), 0);
        let request = KeyRequest {
            client: address,
            client_tx: 7,
            op_index: 3,
            table_id: 9,
            schema_version: 2,
            kind: OperationKind::Delete,
            lock: LockKind::Exclusive,
            execute: ExecuteMode::Commit,
            index_id: PRIMARY_KEY,
            flags: KeyRequest::MOVES_KEY,
        };
        let signal = request.to_signal(address, address);
        assert_eq!(KeyRequest::from_signal(&signal).unwrap(), request);
        // The same request as a client without `flags` sends it: one word fewer.
        let words = &signal.words()[..KeyRequest::WORDS - 1];
        let earlier = Signal::with_words(KeyRequest::NUMBER, address, address, words);
        let read = KeyRequest::from_signal(&earlier).unwrap();
        assert_eq!(
            read,
            KeyRequest {
                flags: 0,
                ..request
            }
        );
        let cut = Signal::with_words(KeyRequest::NUMBER, address, address, &words[..3]);
        assert!(
            KeyRequest::from_signal(&cut).is_err(),
            "the first fields stay required"
        );
    }
}
