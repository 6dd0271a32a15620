//! A restarted node joining the running cluster: its requests, the president's two-phase
//! join, and the commit every member and the joiner take (see the module above).

use kista_runtime::Context;
use kista_signal::{NodeId, TypedSignal};

use super::{membership_address, JoinRound, Membership};
use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::send_with_bytes;

impl Membership {
    pub(super) fn ask_to_join(&mut self, ctx: &mut Context) {
        ctx.log("restart: asking the running cluster to let this node join");
        let here = self.here();
        let others: Vec<NodeId> = self
            .cluster
            .nodes()
            .iter()
            .map(|n| n.node)
            .filter(|&n| n != here)
            .collect();
        for node in others {
            ctx.send_typed(membership_address(node), &JoinRequest {});
        }
    }

    /// The president starts letting `joiner` in when nothing else is under way; anyone
    /// else ignores the request (the joiner asks every node, so it asks the president too).
    pub(super) fn join_requested(&mut self, ctx: &mut Context, joiner: NodeId) {
        let may_join = self.cluster.node(joiner).is_some() && !self.members.contains(&joiner);
        let idle = self.round.is_none() && self.join.is_none();
        // A joining node has no members, so it is no president either.
        if !may_join || !idle || self.president() != Some(self.here()) {
            return;
        }
        let round = self.next_round;
        self.next_round += 1;
        let members = self.member_set();
        let prepare = JoinPrepare {
            round,
            joining: u32::from(joiner.0),
        };
        for member in members.iter() {
            ctx.send_typed(membership_address(member), &prepare);
        }
        self.join = Some(JoinRound {
            round,
            joining: joiner,
            unconfirmed: members,
            started_ns: ctx.now_ns(),
        });
    }

    pub(super) fn prepare_join(
        &mut self,
        ctx: &mut Context,
        prepare: JoinPrepare,
        president: NodeId,
    ) {
        let Ok(joining) = u8::try_from(prepare.joining) else {
            return;
        };
        ctx.let_in(NodeId(joining));
        self.shut_out.remove(NodeId(joining));
        self.letting_in.insert(NodeId(joining));
        // The joiner starts timing silences when the join commits, which is after this:
        // it cannot suspect this node before the grace has passed from now, as if it had
        // echoed a heartbeat sent now.
        if let Some(echoed_ns) = self.echoed_ns.get_mut(usize::from(joining)) {
            *echoed_ns = ctx.now_ns();
        }
        let conf = JoinPrepareConf {
            round: prepare.round,
        };
        ctx.send_typed(membership_address(president), &conf);
    }

    pub(super) fn join_confirmed(
        &mut self,
        ctx: &mut Context,
        conf: JoinPrepareConf,
        from: NodeId,
    ) {
        let Some(join) = self.join.as_mut().filter(|j| j.round == conf.round) else {
            return;
        };
        join.unconfirmed.remove(from);
        if !join.unconfirmed.is_empty() {
            return;
        }
        let joined = join.joining;
        self.join = None;
        let mut order: Vec<u8> = self.members.iter().map(|m| m.0).collect();
        order.push(joined.0);
        let commit = JoinCommit {
            generation: self.generation + 1,
            joined: u32::from(joined.0),
        };
        let here = self.here();
        for &node in order.iter().filter(|&&node| node != here.0) {
            let signal = commit.to_signal(membership_address(NodeId(node)), ctx.address());
            send_with_bytes(ctx, signal, &order);
        }
        if let Some(arbitrator) = self.settings.arbitrator {
            let grew = MembershipGrew {
                members: NodeSet::of(order.iter().map(|&id| NodeId(id))),
                joined: commit.joined,
            };
            ctx.send_typed(arbitrator, &grew);
        }
        // At once here, so a join request arriving meanwhile finds the node a member.
        self.commit_join(ctx, commit, order.iter().map(|&id| NodeId(id)).collect());
    }

    /// Members and the joiner take the new membership, in the president's `order`.
    pub(super) fn commit_join(
        &mut self,
        ctx: &mut Context,
        commit: JoinCommit,
        order: Vec<NodeId>,
    ) {
        if commit.generation <= self.generation {
            return;
        }
        let known = |node: &NodeId| self.cluster.node(*node).is_some();
        let joined = u8::try_from(commit.joined).map(NodeId);
        // The president built the order from the cluster's own nodes: a membership with
        // strangers in it is no membership this node can act on.
        assert!(
            order.iter().all(known) && joined.is_ok_and(|j| order.contains(&j)),
            "a join commit names nodes outside the cluster: {order:?}, joined {}",
            commit.joined
        );
        if joined == Ok(self.here()) && !self.is_joining() {
            // A join request this node sent before it became a member reached the
            // president after the cluster had removed it again: its replicas missed the
            // writes since, and only a restart copies them afresh.
            let reason = "the cluster removed this node and then let it in again on a join \
                          request it had sent earlier; it must restart to rejoin";
            return self.stop(ctx, reason);
        }
        if self.is_joining() {
            // The cluster removed the nodes outside the membership, perhaps while they were
            // paused: this node shuts them out too, or a node that wakes believing itself
            // a member could lock rows here, or even commit, with this node as its only
            // other replica.
            let members = NodeSet::of(order.iter().copied());
            for outside in self.cluster.node_set().minus(members).iter() {
                ctx.shut_out(outside);
            }
        }
        // Every member counts as heard from now: a joiner too, which in a first start
        // was never heard from (left out after the partial-start timeout), and would
        // otherwise count as silent since this node began and be removed at once.
        let now = ctx.now_ns();
        for &member in &order {
            self.last_heard_ns[usize::from(member.0)] = now;
            self.heard_from.insert(member);
        }
        self.members = order;
        self.generation = commit.generation;
        self.renew_lease();
        ctx.log(&format!(
            "membership generation {}: node {} joined; members {}, president {}",
            commit.generation,
            commit.joined,
            super::node_list(self.member_set()),
            self.members[0].0
        ));
        let joined = NodeJoined {
            generation: commit.generation,
            joined: commit.joined,
            president: u32::from(self.members[0].0),
            members: self.member_set(),
        };
        for receiver in self.local_blocks() {
            ctx.send_typed(receiver, &joined);
        }
    }
}
