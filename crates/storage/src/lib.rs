//! Partition storage: what one `ldm` instance keeps in memory for its partition replicas.
//!
//! - [`memory`]: the node-wide `DataMemory` pool with its hard limit.
//! - [`types`]: column types and the values they hold, with their validation.
//! - [`schema`]: columns and tables.
//! - [`row`]: the row format (a fixed-size part and a variable-size part) and its codec.
//! - [`row_store`]: a partition's rows in `DataMemory` pages, with slot reuse.
//! - [`hash_index`]: encoded keys to rows (primary keys, unique indexes).
//! - [`locks`]: shared and exclusive row locks with wait queues.
//! - [`ordered_index`]: sorted entries for range scans; [`compare`]: the order of values.
//! - [`filter`]: filter programs pushed down to scans.
//! - `prefetch`: asking the CPU to load an index's memory before it is read.
//! - [`partition`]: one partition replica: rows, indexes, committed and pending versions, locks.
//! - [`codec`]: the byte forms of values, schemas and filters that travel in signal sections.
//! - [`redo`]: the REDO log's records, their place in the ring of log files, the scan that
//!   finds where a log ends, and the writer that fills it.
//! - [`checkpoint`]: the local checkpoint file's format (REDO records at a checkpoint's
//!   own LSNs) and its reading.
//!
//! Nothing here knows about signals, threads, files or the network: the datanode blocks own
//! the partitions and the logs' files and call into this crate.

pub mod checkpoint;
pub mod codec;
pub mod compare;
pub mod filter;
pub mod hash_index;
pub mod locks;
pub mod memory;
pub mod ordered_index;
pub mod partition;
mod prefetch;
pub mod redo;
pub mod row;
pub mod row_store;
pub mod schema;
pub mod types;
