//! A restarting node's restore from its own disk before its copy (NDB's local recovery in
//! a node restart), run by the node's `gcp` for the master's `dict`.
//!
//! The master asks once the definitions are in place ([`OwnDiskRestore`]). If the
//! control file says the disk holds data of the cluster's life (learned when the node
//! joined, [`GcpJoinState`]), every `ldm` loads its partitions as of the latest GCI the
//! node recorded ([`RestoreKind::BeforeCopy`]); the answer ([`OwnDiskRestored`]) names
//! the GCI every partition is as of, from which the copy goes on. An `ldm` whose disk
//! proves unusable answers with GCI 0 (its partitions empty): the node then answers 0,
//! and every partition is copied whole.

use kista_runtime::Context;
use kista_signal::BlockAddress;

use super::control_file::NodeControl;
use crate::protocol::*;

/// The master's request, while it runs.
pub(super) struct OwnDisk {
    restart: u32,
    master: BlockAddress,
    /// The `ldm`s' answers, once they were asked (`None`: the node's life is not
    /// learned yet).
    loading: Option<Loading>,
}

struct Loading {
    awaited: u16,
    gci: u64,
    rows: u64,
    records: u64,
}

impl OwnDisk {
    pub fn asked(restart: u32, master: BlockAddress) -> Self {
        Self {
            restart,
            master,
            loading: None,
        }
    }

    /// Asks the `ldm`s to load, once the node knows the cluster's life; whether the
    /// answer went already (nothing to load).
    pub fn go_on(
        &mut self,
        ctx: &mut Context,
        control: Option<&NodeControl>,
        ldm_instances: u16,
    ) -> bool {
        if self.loading.is_some() {
            return false;
        }
        let (gci, life) = match control {
            None => (0, 0),
            Some(control) => match control.own_disk_gci() {
                None => return false,
                Some(gci) => (gci, control.node_life()),
            },
        };
        self.loading = Some(Loading {
            awaited: ldm_instances,
            gci,
            rows: 0,
            records: 0,
        });
        if gci == 0 || ldm_instances == 0 {
            self.answer(ctx);
            return true;
        }
        let order = LdmRestore {
            gci,
            node_life: life,
            restores: RestoreKind::BeforeCopy as u32,
        };
        let node = ctx.address().node();
        for instance in 0..ldm_instances {
            ctx.send_typed(BlockAddress::new(node, LDM_BLOCK, instance), &order);
        }
        false
    }

    /// An `ldm` loaded its partitions; whether the answer went (every `ldm` did).
    pub fn ldm_loaded(&mut self, ctx: &mut Context, conf: LdmRestoreConf) -> bool {
        let Some(loading) = self.loading.as_mut().filter(|l| l.awaited > 0) else {
            return false;
        };
        loading.awaited -= 1;
        loading.gci = loading.gci.min(conf.gci);
        loading.rows += conf.rows;
        loading.records += conf.records;
        if loading.awaited > 0 {
            return false;
        }
        self.answer(ctx);
        true
    }

    fn answer(&self, ctx: &mut Context) {
        let Some(loading) = &self.loading else {
            return;
        };
        if loading.gci > 0 {
            ctx.log(&format!(
                "restored this node's own disk to GCI {} ({} checkpointed rows, {} REDO \
                 records): only what changed since is copied",
                loading.gci, loading.rows, loading.records
            ));
        }
        let restored = OwnDiskRestored {
            restart: self.restart,
            gci: loading.gci,
            rows: loading.rows,
            records: loading.records,
        };
        ctx.send_typed(self.master, &restored);
    }
}
