//! Schema requests a dictionary that is not the master passes on to the master, and the
//! answers it passes back. A client's address is only known to the data node it is
//! connected to, so the master answers this dictionary, which answers the client under the
//! client's own request id.

use rustc_hash::FxHashMap;

use kista_runtime::Context;
use kista_signal::{BlockAddress, Signal, TypedSignal};

use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::send_with_bytes;

/// Requests one dictionary may have passed on and not yet seen answered; past this a
/// client's request is refused as overload (clients make schema changes one at a time).
pub const RELAYED_REQUESTS_MAX: usize = 1024;

struct Relayed {
    client: BlockAddress,
    request_id: u64,
    master: BlockAddress,
}

#[derive(Default)]
pub(super) struct Relays {
    pending: FxHashMap<u64, Relayed>,
    next_id: u64,
}

/// Runs `$body` on `$signal` decoded as whichever of `$kind`s it is (each has a
/// `request_id`); `None` for any other signal.
macro_rules! with_typed {
    ($signal:expr, |$typed:ident| $body:expr, $($kind:ident),+) => {{
        let number = $signal.number();
        let mut outcome = None;
        $(
            if number == $kind::NUMBER {
                if let Ok(mut $typed) = $kind::from_signal($signal) {
                    outcome = $body;
                }
            }
        )+
        outcome
    }};
}

/// Runs `$body` on `$signal` decoded as whichever client schema request it is: the one
/// list of them.
macro_rules! with_schema_request {
    ($signal:expr, |$typed:ident| $body:expr) => {
        with_typed!(
            $signal,
            |$typed| $body,
            CreateTableRequest,
            CreateIndexRequest,
            DropTableRequest,
            DropIndexRequest,
            AlterTableRequest,
            IndexBuiltRequest,
            ForeignKeyRequest,
            DropForeignKeyRequest,
            ReplaceTableRequest,
            BackupRequest,
            BackupListRequest
        )
    };
}

/// Whether `request` changes the schema (a backup's or an index build's report does not).
pub fn is_schema_change(request: &Signal) -> bool {
    let number = request.number();
    ![
        BackupRequest::NUMBER,
        BackupListRequest::NUMBER,
        IndexBuiltRequest::NUMBER,
    ]
    .contains(&number)
}

/// The client and its request id of a client's schema request.
#[allow(unused_mut)] // `with_typed!` decodes mutably for `pass_on`
pub fn client_of(request: &Signal) -> Option<(BlockAddress, u64)> {
    with_schema_request!(request, |typed| Some((typed.client, typed.request_id)))
}

impl Relays {
    /// Passes a client's schema request on to `master` with this dictionary as its client.
    /// `Err` names the client to refuse when too many requests wait already.
    pub fn pass_on(
        &mut self,
        ctx: &mut Context,
        request: &Signal,
        master: BlockAddress,
    ) -> Result<(), (BlockAddress, u64)> {
        let here = ctx.address();
        let relay_id = self.next_id;
        let full = self.pending.len() >= RELAYED_REQUESTS_MAX;
        let passed = with_schema_request!(request, |typed| {
            let client = (typed.client, typed.request_id);
            typed.request_id = relay_id;
            typed.client = here;
            Some((client, typed.to_signal(master, here)))
        });
        let Some(((client, request_id), forwarded)) = passed else {
            unreachable!("only client schema requests are passed on");
        };
        if full {
            return Err((client, request_id));
        }
        self.next_id += 1;
        self.pending.insert(
            relay_id,
            Relayed {
                client,
                request_id,
                master,
            },
        );
        let body = ctx.section().map(|b| b.to_vec()).unwrap_or_default();
        send_with_bytes(ctx, forwarded, &body);
        Ok(())
    }

    /// Passes an answer from the master back to its client; false when `answer` is not the
    /// answer to a request this dictionary passed on.
    pub fn pass_back(&mut self, ctx: &mut Context, answer: &Signal) -> bool {
        let here = ctx.address();
        let pending = &mut self.pending;
        let back = with_typed!(
            answer,
            |typed| pending.remove(&typed.request_id).map(|relayed| {
                typed.request_id = relayed.request_id;
                typed.to_signal(relayed.client, here)
            }),
            CreateTableConf,
            CreateIndexConf,
            DropTableConf,
            DropIndexConf,
            AlterTableConf,
            BackupConf,
            BackupListConf,
            DictRef
        );
        let Some(back) = back else {
            return false;
        };
        let message = ctx.section().map(|b| b.to_vec()).unwrap_or_default();
        send_with_bytes(ctx, back, &message);
        true
    }

    /// Requests passed on to a master that failed may or may not have been carried out:
    /// their clients learn exactly that.
    pub fn master_failed(&mut self, ctx: &mut Context, failed: NodeSet) {
        let here = ctx.address();
        self.pending.retain(|_, relayed| {
            if !failed.contains(relayed.master.node()) {
                return true;
            }
            let refusal = DictRef {
                request_id: relayed.request_id,
                code: ErrorCode::OutcomeUnknown as u32,
            };
            let message = format!(
                "the master data node {} failed while making the schema change: it may or \
                 may not have been made",
                relayed.master.node().0
            );
            send_with_bytes(
                ctx,
                refusal.to_signal(relayed.client, here),
                message.as_bytes(),
            );
            false
        });
    }
}
