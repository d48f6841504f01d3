//! Scheduling passes. A pass runs rounds; each round asks the queue tree
//! for the application to serve next and tries to give it one container,
//! on the heartbeating node or on the best node anywhere (continuous),
//! within queue, user and AM limits and delay scheduling. What can take
//! nothing more is parked for the rest of the pass. Also here: counting
//! delay opportunities on heartbeats that place nothing (packing), and
//! picking a node for a request key.

use spindle_common::{ApplicationAttemptId, NodeId, Resource};

use super::{AppState, Scheduler, MAX_CONTAINER_SEQUENCE};
use crate::asks::RequestKey;
use crate::delay::{self, DelayContext, DelayState};
use crate::error::SchedulerError;
use crate::input::ANY;
use crate::output::{Allocation, Locality};
use crate::policy::SortKey;
use crate::queue_config::SchedulerKind;
use crate::tree::{QueueIdx, QueueTree};

/// What a scheduling pass took out of the serving order, to put back when
/// it ends.
#[derive(Debug, Default)]
struct Parked {
    apps: Vec<ApplicationAttemptId>,
    queues: Vec<QueueIdx>,
}

impl Scheduler {
    /// Offers the node to applications in serving order (each container
    /// re-consulting the order) until it is full, nothing more is wanted
    /// there, or a per-heartbeat cap is reached.
    pub(super) fn schedule_on_node(
        &mut self,
        node_id: &NodeId,
    ) -> Result<Vec<Allocation>, SchedulerError> {
        let max = self
            .config
            .heartbeat
            .max_containers
            .unwrap_or(usize::MAX)
            .min(self.config.limits.max_containers_per_pass);
        self.run_pass(Some(node_id), max)
    }

    /// One scheduling pass, on one node (a heartbeat) or anywhere
    /// (continuous). Each round asks the queue tree for the application to
    /// serve next and gives it at most one container; an application (or
    /// queue) that can take nothing more in this pass is parked, out of the
    /// order, and put back when the pass ends, so every round costs
    /// O(depth × log n).
    pub(super) fn run_pass(
        &mut self,
        node: Option<&NodeId>,
        max: usize,
    ) -> Result<Vec<Allocation>, SchedulerError> {
        if self.now_ms < self.hold_until_ms {
            return Ok(Vec::new());
        }
        let mut parked = Parked::default();
        let result = self.run_rounds(node, max, &mut parked);
        for attempt in parked.apps {
            if let Some(app) = self.apps.get_mut(&attempt) {
                app.parked = false;
            }
            self.refresh_app(attempt);
        }
        for idx in parked.queues {
            if let Some(q) = self.tree.queues.get_mut(idx) {
                q.parked = false;
            }
            self.tree.refresh_path(idx);
        }
        result
    }

    fn run_rounds(
        &mut self,
        node: Option<&NodeId>,
        max: usize,
        parked: &mut Parked,
    ) -> Result<Vec<Allocation>, SchedulerError> {
        let minimum = self.config.minimum_allocation;
        let max_off_switch = match node {
            Some(_) => self.config.heartbeat.max_off_switch.unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let mut out = Vec::new();
        let mut off_switch = 0;
        while out.len() < max {
            if let Some(id) = node {
                let Some(n) = self.nodes.get(id) else {
                    break;
                };
                if !n.takes_containers() || !minimum.fits_in(&n.available()) {
                    break;
                }
            }
            let Some((leaf, attempt)) = self.tree.first_candidate() else {
                break;
            };
            match self.serve_one(attempt, leaf, node)? {
                Some(allocation) => {
                    if allocation.locality == Locality::OffSwitch {
                        off_switch += 1;
                    }
                    out.push(allocation);
                    if off_switch >= max_off_switch {
                        break;
                    }
                }
                None => {
                    if let Some(blocked) = self.tree.over_maximum(leaf, minimum) {
                        // Nothing fits under this queue's maximum any more.
                        self.tree.queues[blocked].parked = true;
                        self.tree.refresh_path(blocked);
                        parked.queues.push(blocked);
                    }
                    if let Some(app) = self.apps.get_mut(&attempt) {
                        app.parked = true;
                    }
                    self.refresh_app(attempt);
                    parked.apps.push(attempt);
                }
            }
        }
        Ok(out)
    }

    /// Tries to give `attempt` one container: its request keys in priority
    /// order, each checked against queue, user and AM limits and delay
    /// scheduling, placed on `node` (a heartbeat) or the best node
    /// (continuous). On a heartbeat every key that fits the node and may go
    /// there at some locality counts a scheduling opportunity before the
    /// decision (see the `delay` module).
    fn serve_one(
        &mut self,
        attempt: ApplicationAttemptId,
        leaf: QueueIdx,
        node: Option<&NodeId>,
    ) -> Result<Option<Allocation>, SchedulerError> {
        let Some(app) = self.apps.get(&attempt) else {
            return Ok(None);
        };
        if app.next_sequence > MAX_CONTAINER_SEQUENCE {
            return Ok(None);
        }
        let here = match node {
            Some(id) => {
                let Some(n) = self.nodes.get(id) else {
                    return Ok(None);
                };
                if app.blacklists(&id.host, &n.rack) {
                    return Ok(None);
                }
                Some((id, n))
            }
            None => None,
        };
        let rule = self.config.locality;
        let nodes = self.nodes.len();
        let mut counted: Vec<(RequestKey, DelayState)> = Vec::new();
        let mut choice = None;
        for key in app.asks.active_keys() {
            let ask = key.capability();
            let am = app.am_pending;
            if !limits_allow(
                &self.tree,
                self.config.minimum_allocation,
                &app.user,
                am,
                leaf,
                ask,
            ) {
                continue;
            }
            let ctx = DelayContext {
                nodes,
                outstanding: app.asks.any_count(&key),
                locations: app.asks.rows_for(&key),
            };
            let mut state = app.delay.get(&key).copied().unwrap_or_default();
            match here {
                Some((id, n)) => {
                    if !ask.fits_in(&n.available()) {
                        continue;
                    }
                    let Some(locality) = app.asks.locality_on(&key, &id.host, &n.rack) else {
                        continue;
                    };
                    if ctx.waits(&rule) {
                        delay::offered(&rule, &mut state, nodes);
                        counted.push((key, state));
                    }
                    if locality > delay::allowed(&rule, &state, ctx) {
                        continue;
                    }
                    choice = Some((key, id.clone(), locality));
                    break;
                }
                None => {
                    let allowed = delay::allowed(&rule, &state, ctx);
                    if let Some((id, locality)) = self.pick_node(attempt, &key, allowed) {
                        choice = Some((key, id, locality));
                        break;
                    }
                }
            }
        }
        if !counted.is_empty() {
            if let Some(app) = self.apps.get_mut(&attempt) {
                for (key, state) in counted {
                    app.delay.insert(key, state);
                }
            }
        }
        match choice {
            Some((key, id, locality)) => Ok(Some(self.allocate(attempt, key, id, locality)?)),
            None => Ok(None),
        }
    }

    /// A heartbeat under a policy that places nothing on heartbeats
    /// ([`NodeSelection::places_on_heartbeats`]): counts a scheduling
    /// opportunity for every waiting key the node is offered to (the key
    /// fits there, its limits allow one more container and its rows allow
    /// the node at some locality), as a placing heartbeat would, so delay
    /// scheduling relaxes at the same pace; the continuous passes place.
    /// Only attempts with located rows have such keys, so a cluster whose
    /// requests name only `*` pays nothing here.
    pub(super) fn count_opportunities(&mut self, id: &NodeId) {
        let rule = self.config.locality;
        let minimum = self.config.minimum_allocation;
        let nodes = self.nodes.len();
        let Scheduler {
            nodes: all_nodes,
            located_apps,
            apps,
            tree,
            ..
        } = self;
        let Some(node) = all_nodes.get(id) else {
            return;
        };
        let available = node.available();
        if !minimum.fits_in(&available) {
            return;
        }
        for attempt in located_apps.iter() {
            let Some(app) = apps.get_mut(attempt) else {
                continue;
            };
            if app.blacklists(&id.host, &node.rack) {
                continue;
            }
            let am = app.am_pending;
            let AppState {
                asks,
                delay: states,
                user,
                leaf,
                ..
            } = app;
            for key in asks.active_keys() {
                let ask = key.capability();
                let ctx = DelayContext {
                    nodes,
                    outstanding: asks.any_count(&key),
                    locations: asks.rows_for(&key),
                };
                if !ctx.waits(&rule)
                    || !ask.fits_in(&available)
                    || !asks.may_place_on(&key, &id.host, &node.rack)
                    || !limits_allow(tree, minimum, user, am, *leaf, ask)
                {
                    continue;
                }
                delay::offered(&rule, states.entry(key).or_default(), nodes);
            }
        }
    }

    /// Where the next container of `key` for `attempt` should go: the best
    /// node-local node, else (if `allowed` permits) the best rack-local
    /// node, else (likewise) the first off-switch node, in selection order.
    fn pick_node(
        &self,
        attempt: ApplicationAttemptId,
        key: &RequestKey,
        allowed: Locality,
    ) -> Option<(NodeId, Locality)> {
        let app = self.apps.get(&attempt)?;
        if app.next_sequence > MAX_CONTAINER_SEQUENCE {
            return None;
        }
        let capability = key.capability();
        let usable = |id: &NodeId| -> Option<(SortKey, Locality)> {
            let node = self.nodes.get(id)?;
            let index_key = node.index_key?;
            if app.blacklists(&id.host, &node.rack) || !capability.fits_in(&node.available()) {
                return None;
            }
            let locality = app.asks.locality_on(key, &id.host, &node.rack)?;
            Some((index_key, locality))
        };

        // Each phase examines at most `max_candidates_per_pick` rows or
        // nodes; what it does not reach waits for a later pass or for a
        // heartbeat of the node (which checks its own locality directly).
        let per_phase = self.config.limits.max_candidates_per_pick;

        // Node-local: the hosts the application named.
        let mut budget = per_phase;
        let mut best: Option<(SortKey, &NodeId, Locality)> = None;
        'rows: for (name, _) in app.asks.located_rows(key) {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let Some(ids) = self.hosts.get(name) else {
                continue;
            };
            for id in ids {
                if budget == 0 {
                    break 'rows;
                }
                budget -= 1;
                if let Some((k, locality)) = usable(id) {
                    if best.is_none_or(|(bk, bid, _)| (k, id) < (bk, bid)) {
                        best = Some((k, id, locality));
                    }
                }
            }
        }
        if let Some((_, id, locality)) = best {
            return Some((id.clone(), locality));
        }

        if allowed == Locality::NodeLocal {
            return None;
        }

        // Rack-local: the first suitable node of each rack that allows it.
        let mut budget = per_phase;
        for (name, row) in app.asks.located_rows(key) {
            if !row.relax_locality {
                continue;
            }
            let Some(set) = self.rack_index.get(name) else {
                continue;
            };
            for (k, id) in set {
                if budget == 0 || self.selection.nothing_fits_after(k, &capability) {
                    break;
                }
                budget -= 1;
                if let Some((k, locality)) = usable(id) {
                    if best.is_none_or(|(bk, bid, _)| (k, id) < (bk, bid)) {
                        best = Some((k, id, locality));
                    }
                    break;
                }
            }
        }
        if let Some((_, id, locality)) = best {
            return Some((id.clone(), locality));
        }

        // Off-switch.
        if allowed != Locality::OffSwitch
            || !app.asks.get(key, ANY).is_some_and(|r| r.relax_locality)
        {
            return None;
        }
        let mut budget = per_phase;
        for (k, id) in &self.index {
            if budget == 0 || self.selection.nothing_fits_after(k, &capability) {
                break;
            }
            budget -= 1;
            if let Some((_, locality)) = usable(id) {
                return Some((id.clone(), locality));
            }
        }
        None
    }
}

/// Whether queue, user and AM limits let an application of `user` in
/// `leaf` take one more container of `ask` (`am`: it would be the
/// application's AM container).
fn limits_allow(
    tree: &QueueTree,
    minimum: Resource,
    user: &str,
    am: bool,
    leaf: QueueIdx,
    ask: Resource,
) -> bool {
    if tree.over_maximum(leaf, ask).is_some() {
        return false;
    }
    if tree.kind() == SchedulerKind::Capacity {
        let user_used = tree.queues[leaf]
            .users
            .get(user)
            .map_or(Resource::ZERO, |u| u.used);
        // As Hadoop's `LeafQueue.canAssignToUser`: a user is refused only
        // when their usage is already above their limit (which includes the
        // `user-limit-factor` cap), so a user at or under it may take one
        // more container of any size.
        if tree.greater(user_used, tree.user_limit(leaf, minimum)) {
            return false;
        }
    }
    !am || tree.am_fits(leaf, user, ask, minimum)
}
