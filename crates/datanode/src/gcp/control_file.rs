//! The node's control file (NDB's `P0.sysfile`): what its disk holds, read first at every
//! start and rewritten as that changes, in twin files `control/node.0` and `.1`.
//!
//! ```text
//! payload   node life u32, cluster life u32, restorable GCI u64, holds u32 (DiskHolds),
//!           restores from GCI u64, shape: data nodes u64 (a bit per node id),
//!           replicas u32, partitions per node u32, ldm instances u32
//! ```
//!
//! - *node life*: the node's start count, stamped on its REDO records so a log that goes
//!   on across starts tells a record of this start from an older one left behind;
//! - *cluster life*: the cluster's count of starts from disk; a node whose disk is of an
//!   older life than the others' holds a history the cluster left behind;
//! - *restorable GCI*: the latest GCI every member saved while this node was one, which
//!   this node's checkpoints and logs restore;
//! - *holds*: whether they restore it at all ([`DiskHolds`]): not on a node that copied
//!   its data from a peer in a node restart, whose log lacks what was copied, until each
//!   of its `ldm`s wrote a local checkpoint begun after the copy (and a GCI that
//!   checkpoint needs is recorded); nor on one whose files proved unusable at a start
//!   from disk, which says so (`Unrestorable`) until it copied from a peer;
//! - *restores from GCI*: the earliest GCI they restore: such a checkpoint's rows may be
//!   of GCIs up to this one, and the older checkpoints are gone (0 on a node that started
//!   from disk, whose checkpoints serve any GCI a start may choose);
//! - *shape*: what placed the partitions the data belongs to ([`DiskShape`]). Partitions
//!   go to node groups and `ldm` instances by it, so data of another shape would be
//!   restored into the wrong partitions: a start from disk refuses it, and a restarting
//!   node copies every row instead.
//!
//! With both twins unusable, the file says nothing this node can trust: a start from disk
//! reports the disk `Unrestorable` without writing anything (the cluster starts from its
//! peers, or not at all), and a node joining a running cluster copies every row. With
//! one twin refused, the other, a write older, serves; the refused one may have recorded
//! the next life, so the node counts two lives on, never reusing one its log stamped.

use kista_runtime::io::FileReply;
use kista_runtime::Context;
use kista_signal::BlockAddress;

use crate::cluster::NodeSet;
use crate::membership::DISK_UNRESTORABLE;
use crate::protocol::{
    DiskHolds, DiskState, DiskStateSetConf, GcpRecordConf, LdmRestore, RestoreKind, DICT_BLOCK,
    LDM_BLOCK,
};
use crate::twin_file::{
    newest, SealError, TwinFiles, TwinKind, TwinReader, TwinWriter, WriteProgress,
};

/// Format 5: REDO and checkpoint records carry CRC-32C checksums (CRC-32 in format 4,
/// whose files this version would find broken); since format 4 the local checkpoints
/// beside it are partial (chains of files).
pub const CONTROL_FILE: TwinKind = TwinKind {
    magic: *b"KCTL",
    format_version: 5,
    path: "control/node",
    request_tag: 0,
};

const PAYLOAD_BYTES: usize = 48;

/// What decides where a node's partitions live: the data nodes, the replicas (with the
/// nodes, the node groups), the partitions per node (with the nodes, each table's
/// partition count) and this node's `ldm` instances (which of them holds a partition).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskShape {
    pub data_nodes: NodeSet,
    pub replicas: u32,
    pub partitions_per_node: u32,
    pub ldm_instances: u32,
}

impl std::fmt::Display for DiskShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data nodes {:?}, {} replicas, {} partitions per node, {} ldm threads on this node",
            self.data_nodes, self.replicas, self.partitions_per_node, self.ldm_instances
        )
    }
}

/// What the control file says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskImage {
    pub sequence: u64,
    pub node_life: u32,
    pub cluster_life: u32,
    pub restorable_gci: u64,
    pub holds: DiskHolds,
    pub restores_from_gci: u64,
    /// The shape its data was placed by (all zero before the node held any).
    pub shape: DiskShape,
}

/// Why a control file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ControlFileError {
    #[error("{0}")]
    Sealed(#[from] SealError),
    #[error("its content is {0} bytes, not {PAYLOAD_BYTES}")]
    Length(usize),
    #[error("it says the disk holds {0}, which no version of this file means")]
    Holds(u32),
}

impl DiskImage {
    /// The file's bytes, sealed with the image's sequence number.
    pub fn encode(&self) -> Vec<u8> {
        CONTROL_FILE.seal(self.sequence, 0, |out| {
            out.extend_from_slice(&self.node_life.to_le_bytes());
            out.extend_from_slice(&self.cluster_life.to_le_bytes());
            out.extend_from_slice(&self.restorable_gci.to_le_bytes());
            out.extend_from_slice(&(self.holds as u32).to_le_bytes());
            out.extend_from_slice(&self.restores_from_gci.to_le_bytes());
            out.extend_from_slice(&self.shape.data_nodes.0.to_le_bytes());
            out.extend_from_slice(&self.shape.replicas.to_le_bytes());
            out.extend_from_slice(&self.shape.partitions_per_node.to_le_bytes());
            out.extend_from_slice(&self.shape.ldm_instances.to_le_bytes());
        })
    }

    /// Reads a control file's bytes back, checking everything.
    pub fn decode(bytes: &[u8]) -> Result<Self, ControlFileError> {
        let (sequence, payload) = CONTROL_FILE.unseal(bytes)?;
        let payload: &[u8; PAYLOAD_BYTES] = payload
            .try_into()
            .map_err(|_| ControlFileError::Length(payload.len()))?;
        let word = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().expect("4"));
        let double = |at: usize| u64::from(word(at)) | (u64::from(word(at + 4)) << 32);
        let holds = DiskHolds::of(word(16)).ok_or(ControlFileError::Holds(word(16)))?;
        Ok(Self {
            sequence,
            node_life: word(0),
            cluster_life: word(4),
            restorable_gci: double(8),
            holds,
            restores_from_gci: double(20),
            shape: DiskShape {
                data_nodes: NodeSet(double(28)),
                replicas: word(36),
                partitions_per_node: word(40),
                ldm_instances: word(44),
            },
        })
    }
}

/// What waits for a control file write to be durable.
#[derive(Debug, PartialEq)]
enum Held {
    /// The node's `dict` hears what the disk holds (after the start's write).
    ReportTo(BlockAddress),
    /// A `DiskStateSet` is confirmed to its sender.
    ConfirmTo(BlockAddress),
    /// The master's `gcp` hears that a GCI is recorded as restorable, and whether the
    /// node's disk holds its data.
    Recorded {
        master: BlockAddress,
        gci: u64,
        holds_data: bool,
    },
    /// A restarting node's `ldm`s open their logs, stamped with the life just recorded.
    OpenLogs,
    /// The node stops, its disk recorded as unable to restore its data (why).
    StopUnrestorable(String),
}

/// The `gcp` block's keeping of the control file.
pub(crate) struct NodeControl {
    reader: Option<TwinReader>,
    /// The content as last changed (written, or to be).
    image: DiskImage,
    writer: TwinWriter<Held>,
    /// A node joining a running cluster copies its data. Its disk keeps what it held
    /// (which a start from disk may still need) until the copy is over (`old_data_kept`);
    /// then it holds none until each of its `ldm_instances` checkpointed what it copied.
    joining: bool,
    old_data_kept: bool,
    /// This start's shape; the file says it once the node's data is of it.
    shape: DiskShape,
    /// The `ldm`s whose checkpoint after the copy is written (bit per instance).
    ldms_holding_data: u64,
    /// Once all are: how many GCIs were recorded since, and the latest.
    recorded_since_checkpoints: Option<(u32, u64)>,
    /// The cluster's life a joining node learned from the master.
    learned_life: Option<u32>,
    /// Whether the start's read is over.
    read: bool,
    /// Whether the disk was found unable to restore its data (the node stops).
    unusable: bool,
}

impl NodeControl {
    pub fn new(joining: bool, shape: DiskShape) -> Self {
        assert!(shape.ldm_instances <= 64, "an ldm's bit fits the mask");
        Self {
            reader: None,
            image: DiskImage::default(),
            writer: TwinWriter::new(CONTROL_FILE, 0),
            joining,
            old_data_kept: joining,
            shape,
            ldms_holding_data: 0,
            recorded_since_checkpoints: None,
            learned_life: None,
            read: false,
            unusable: false,
        }
    }

    /// Starts reading the control file (at the node's start).
    pub fn start(&mut self, ctx: &mut Context) -> Result<(), String> {
        if self.reader.is_some() || self.read {
            return Ok(());
        }
        self.reader = Some(TwinReader::start(ctx, CONTROL_FILE)?);
        Ok(())
    }

    /// The node's life, once the start's read is over.
    pub fn is_read(&self) -> bool {
        self.read
    }

    /// Every member's log holds `gci`: the file says so, confirmed to `master` once
    /// synced (written again if it did already, as the master may ask twice). Before the
    /// start's read the file is not written (this start restores nothing yet).
    pub fn record(
        &mut self,
        ctx: &mut Context,
        gci: u64,
        master: BlockAddress,
    ) -> Result<(), String> {
        if !self.read || self.old_data_kept {
            // Nothing of this life to restore yet: the file keeps what it said.
            let holds_data = 0;
            ctx.send_typed(master, &GcpRecordConf { gci, holds_data });
            return Ok(());
        }
        self.image.restorable_gci = self.image.restorable_gci.max(gci);
        let restores = self.learned_life.is_some() && self.checkpoints_restore(gci);
        if self.joining && self.image.holds != DiskHolds::Data && restores {
            self.image.holds = DiskHolds::Data;
            self.image.restores_from_gci = gci;
            ctx.log(&format!(
                "this node's disk restores its data again, GCI {gci} and later: a start from \
                 disk may restore from it"
            ));
        }
        let holds_data = self.image.holds == DiskHolds::Data;
        let held = Held::Recorded {
            master,
            gci,
            holds_data,
        };
        self.changed(ctx, Some(held))
    }

    /// The cluster's life, as this node's disk records it.
    pub fn cluster_life(&self) -> u32 {
        self.image.cluster_life
    }

    /// A restarting node joined the cluster of life `cluster_life`: its disk, once it
    /// holds data again, holds data of that life.
    pub fn joined_life(&mut self, cluster_life: u32) {
        if self.joining {
            self.learned_life = Some(cluster_life);
        }
    }

    /// The GCI a restarting node's disk restores its partitions to before the copy: the
    /// latest it recorded, if it holds data of the cluster's life (0: it holds none, and
    /// every row is copied); `None` until the file is read and the node learned that life.
    pub fn own_disk_gci(&self) -> Option<u64> {
        let life = self.learned_life.filter(|_| self.read)?;
        let image = &self.image;
        let usable = image.holds == DiskHolds::Data
            && image.shape == self.shape
            && image.cluster_life == life
            && image.restorable_gci >= image.restores_from_gci;
        Some(if usable { image.restorable_gci } else { 0 })
    }

    /// The node's life, as this start recorded it.
    pub fn node_life(&self) -> u32 {
        self.image.node_life
    }

    /// A restarting node started: it holds every row in memory, copied from its peers. Its
    /// disk gives up what it held (recorded before anything of it is overwritten), then
    /// its `ldm`s start their logs and checkpoints afresh.
    pub fn copy_done(&mut self, ctx: &mut Context) -> Result<(), String> {
        if !self.old_data_kept || !self.read {
            return Ok(());
        }
        self.old_data_kept = false;
        self.image.holds = DiskHolds::Nothing;
        self.image.restores_from_gci = 0;
        self.image.shape = self.shape;
        if let Some(life) = self.learned_life {
            self.image.cluster_life = life;
        }
        self.changed(ctx, Some(Held::OpenLogs))
    }

    /// This node's `ldm` instances (64 at most: checked at the start).
    fn ldm_instances(&self) -> u16 {
        self.shape.ldm_instances as u16
    }

    /// `ldm` instance `instance` of a restarting node wrote its checkpoint after the
    /// copy; once every one did, GCIs recorded from then on count towards the node
    /// holding data.
    pub fn ldm_holds_data(&mut self, instance: u16) {
        if instance >= self.ldm_instances() {
            return;
        }
        self.ldms_holding_data |= 1 << instance;
        let every_ldm = (1u64 << self.ldm_instances()) - 1;
        if self.ldms_holding_data == every_ldm && self.recorded_since_checkpoints.is_none() {
            self.recorded_since_checkpoints = Some((0, 0));
        }
    }

    /// Whether the checkpoints after the copy and the log restore `gci`, being recorded:
    /// the second GCI recorded after they were all written. The checkpoints' rows (copied
    /// rows carry no GCI) are of the GCI open when the last was written or earlier, and a
    /// node's record of GCI n comes while the open GCI is n + 1 at most, so it is at most
    /// the second GCI recorded after (each round records one, and waits for this node).
    fn checkpoints_restore(&mut self, gci: u64) -> bool {
        let Some((count, latest)) = self.recorded_since_checkpoints.as_mut() else {
            return false;
        };
        // The master may ask to record a GCI twice: it counts once.
        if gci > *latest {
            *count += 1;
            *latest = gci;
        }
        *count >= 2
    }

    /// The node is of `cluster_life` now and restores `gci`: confirmed to `from` once the
    /// file says so.
    pub fn set(
        &mut self,
        ctx: &mut Context,
        cluster_life: u32,
        gci: u64,
        from: BlockAddress,
    ) -> Result<(), String> {
        self.image.cluster_life = cluster_life;
        self.image.restorable_gci = gci;
        self.image.holds = DiskHolds::Data;
        self.image.restores_from_gci = 0;
        self.image.shape = self.shape;
        self.changed(ctx, Some(Held::ConfirmTo(from)))
    }

    /// At a start from disk, what this node's disk holds proved unable to restore the GCI
    /// ordered (`why`, from an `ldm`): the file says so before the node stops, so the next
    /// start copies from a peer instead of failing the same way again.
    pub fn disk_unusable(&mut self, ctx: &mut Context, why: &str) -> Result<(), String> {
        if self.unusable {
            return Ok(());
        }
        self.unusable = true;
        ctx.warn(&format!("this node's disk cannot restore its data: {why}"));
        if !self.read {
            // Nothing of this start was written: the file already says what it did.
            ctx.stop_node(&unrestorable_reason(why));
            return Ok(());
        }
        self.image.holds = DiskHolds::Unrestorable;
        self.changed(ctx, Some(Held::StopUnrestorable(why.to_string())))
    }

    fn changed(&mut self, ctx: &mut Context, held: Option<Held>) -> Result<(), String> {
        if self.writer.changed(held) {
            self.write(ctx)?;
        }
        Ok(())
    }

    fn write(&mut self, ctx: &mut Context) -> Result<(), String> {
        self.image.sequence = self.writer.next_sequence();
        self.writer.start(ctx, self.image.encode())
    }

    /// The file system's answer to a read or write of the control file.
    pub fn replied(&mut self, ctx: &mut Context, reply: FileReply) -> Result<(), String> {
        if TwinReader::answers(&CONTROL_FILE, &reply) {
            let reader = self.reader.as_mut().expect("replies come to a reader");
            if let Some(files) = reader.replied(ctx, reply)? {
                self.reader = None;
                return self.files_read(ctx, &files);
            }
            return Ok(());
        }
        match self.writer.replied(ctx, reply)? {
            WriteProgress::Going => {}
            WriteProgress::Durable { held, again } => {
                for held in held {
                    self.release(ctx, held);
                }
                if again {
                    self.write(ctx)?;
                }
            }
        }
        Ok(())
    }

    /// A write that `held` waited for is durable.
    fn release(&self, ctx: &mut Context, held: Held) {
        match held {
            Held::ReportTo(dict) => ctx.send_typed(dict, &self.disk_state()),
            Held::ConfirmTo(dict) => ctx.send_typed(dict, &DiskStateSetConf {}),
            Held::Recorded {
                master,
                gci,
                holds_data,
            } => {
                let holds_data = u32::from(holds_data);
                ctx.send_typed(master, &GcpRecordConf { gci, holds_data });
            }
            Held::OpenLogs => self.open_logs(ctx),
            Held::StopUnrestorable(why) => ctx.stop_node(&unrestorable_reason(&why)),
        }
    }

    /// The start's read is over: this start is the node's next life, recorded before
    /// anything of it is logged; then the node's `dict` hears what the disk holds.
    fn files_read(&mut self, ctx: &mut Context, files: &TwinFiles) -> Result<(), String> {
        let (found, refusals) = newest(&CONTROL_FILE, files, DiskImage::decode, |i| i.sequence);
        for refusal in &refusals {
            ctx.warn(&format!("control file refused: {refusal}"));
        }
        let image = match found {
            Some(image) => image,
            None if !files.any_present() => DiskImage::default(),
            None if self.joining => {
                ctx.warn(
                    "no control file of this data node can be used: what its disk holds is \
                     not restored, and every row is copied from a peer",
                );
                DiskImage {
                    holds: DiskHolds::Unrestorable,
                    ..DiskImage::default()
                }
            }
            None => {
                self.unusable_at_start(ctx);
                return Ok(());
            }
        };
        self.check_shape(ctx, &image)?;
        self.image = image;
        // A refused twin may have been the newer one, recording a life this one does not
        // know: the new life goes past it.
        self.image.node_life += if refusals.is_empty() { 1 } else { 2 };
        if image.holds != DiskHolds::Data {
            self.image.shape = self.shape;
        }
        self.writer = TwinWriter::new(CONTROL_FILE, image.sequence);
        self.read = true;
        // A joining node's disk keeps what it held until its copy is over.
        let held = (!self.joining).then_some(Held::ReportTo(dict_of(ctx)));
        self.changed(ctx, held)
    }

    /// A start from disk found no control file it can use: nothing tells what the disk
    /// restores. The node's `dict` hears that it holds data it cannot restore, and
    /// nothing is written (the damaged files stay for whoever looks into them): the
    /// cluster starts from the peers, this node copying from one later, or not at all.
    fn unusable_at_start(&mut self, ctx: &mut Context) {
        ctx.warn(
            "no control file of this data node can be used: what its disk holds is not \
             restored; the start goes on from its peers if they hold the data (this node \
             then copies from one), and stops otherwise",
        );
        self.unusable = true;
        let state = DiskState {
            node_life: 0,
            cluster_life: 0,
            restorable_gci: 0,
            holds_data: DiskHolds::Unrestorable as u32,
            restores_from_gci: 0,
        };
        ctx.send_typed(dict_of(ctx), &state);
    }

    /// Data placed for another shape is refused by a start from disk (it would be restored
    /// into the wrong partitions); a joining node copies every row instead.
    fn check_shape(&self, ctx: &mut Context, image: &DiskImage) -> Result<(), String> {
        if image.holds != DiskHolds::Data || image.shape == self.shape {
            return Ok(());
        }
        if !self.joining {
            return Err(format!(
                "this data directory holds data placed for {}, but the configuration now \
                 gives {}: its partitions would be restored in the wrong places. Start \
                 with the earlier configuration (changing the data nodes, replicas or \
                 partitions needs an online reorganisation, not yet possible), or empty \
                 this node's directory to have it copy its data from a peer",
                image.shape, self.shape
            ));
        }
        ctx.log(&format!(
            "this node's disk holds data placed for {}, not {}: every row is copied",
            image.shape, self.shape
        ));
        Ok(())
    }

    /// A restarting node's `ldm`s start with empty partitions, checkpoint files and logs,
    /// their records stamped with this life (later than any left on the disk).
    fn open_logs(&self, ctx: &mut Context) {
        let node = ctx.address().node();
        let fresh = LdmRestore {
            gci: 0,
            node_life: self.image.node_life,
            restores: RestoreKind::Fresh as u32,
        };
        for instance in 0..self.ldm_instances() {
            ctx.send_typed(BlockAddress::new(node, LDM_BLOCK, instance), &fresh);
        }
    }

    fn disk_state(&self) -> DiskState {
        DiskState {
            node_life: self.image.node_life,
            cluster_life: self.image.cluster_life,
            restorable_gci: self.image.restorable_gci,
            holds_data: self.image.holds as u32,
            restores_from_gci: self.image.restores_from_gci,
        }
    }
}

/// The node's `dict`.
fn dict_of(ctx: &Context) -> BlockAddress {
    BlockAddress::new(ctx.address().node(), DICT_BLOCK, 0)
}

/// Why a node whose disk cannot restore its data stops: its process starts it again at
/// once, and that start copies from a peer (`why`: what proved unusable).
fn unrestorable_reason(why: &str) -> String {
    format!(
        "{DISK_UNRESTORABLE}: {why}. The control file says so: started again, the node \
         copies its data from a peer, or the cluster's start stops if none holds it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_file_reads_back_as_written() {
        let image = DiskImage {
            sequence: 12,
            node_life: 3,
            cluster_life: 2,
            restorable_gci: (7 << 32) | 9,
            holds: DiskHolds::Unrestorable,
            restores_from_gci: (5 << 32) | 1,
            shape: DiskShape {
                data_nodes: NodeSet(0b110 | 1 << 63),
                replicas: 2,
                partitions_per_node: 8,
                ldm_instances: 4,
            },
        };
        assert_eq!(DiskImage::decode(&image.encode()), Ok(image));
    }

    #[test]
    fn a_damaged_or_misshapen_control_file_is_refused() {
        let bytes = DiskImage::default().encode();
        let mut damaged = bytes.clone();
        damaged[20] ^= 4;
        let checksum = Err(ControlFileError::Sealed(SealError::Checksum));
        assert_eq!(DiskImage::decode(&damaged), checksum);
        let short = CONTROL_FILE.seal(1, 8, |out| out.extend_from_slice(&[0; 8]));
        assert_eq!(DiskImage::decode(&short), Err(ControlFileError::Length(8)));
    }
}
