//! Containers: committing one allocation (node, application, queue and
//! cluster usage, the request table and delay state), and finishing a
//! live container for whatever reason, reporting it once.

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

use super::{ContainerState, Scheduler, MAX_CONTAINER_SEQUENCE};
use crate::asks::RequestKey;
use crate::delay;
use crate::error::SchedulerError;
use crate::input::ContainerExit;
use crate::output::{
    exit_status, Allocation, CompletedContainer, CompletionCause, Decisions, Locality,
};

impl Scheduler {
    pub(super) fn container_completed(
        &mut self,
        container: ContainerId,
        exit: ContainerExit,
    ) -> Decisions {
        let (cause, status, diagnostics) = match exit {
            ContainerExit::Finished {
                exit_status,
                diagnostics,
            } => (CompletionCause::Exited, exit_status, diagnostics),
            ContainerExit::Expired => (
                CompletionCause::Expired,
                exit_status::ABORTED,
                "the container was allocated but not launched in time".to_string(),
            ),
            ContainerExit::KilledByResourceManager { diagnostics } => (
                CompletionCause::KilledByResourceManager,
                exit_status::KILLED_BY_RESOURCEMANAGER,
                diagnostics,
            ),
        };
        let mut decisions = Decisions::default();
        if let Some(done) = self.finish_container(container, cause, status, diagnostics) {
            decisions.completed.push(done);
        }
        decisions
    }

    /// Releases a live container's resources and reports it; `None` if the
    /// container is not live.
    pub(super) fn finish_container(
        &mut self,
        id: ContainerId,
        cause: CompletionCause,
        exit_status: i32,
        diagnostics: String,
    ) -> Option<CompletedContainer> {
        let c = self.containers.remove(&id)?;
        if let Some(node) = self.nodes.get_mut(&c.node) {
            node.used -= c.resource;
            node.containers.remove(&id);
            if node.over_capacity && node.used.fits_in(&node.capability) {
                node.over_capacity = false;
            }
        }
        self.reindex_node(&c.node);
        self.used -= c.resource;
        let attempt = id.attempt;
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.used -= c.resource;
            app.containers.remove(&id);
            let am = app.am_container == Some(id);
            if am {
                app.am_container = None;
            }
            let (leaf, user) = (app.leaf, app.user.clone());
            self.tree.charge(leaf, &user, c.resource, false, am);
            self.refresh_app(attempt);
        }
        Some(CompletedContainer {
            container: id,
            node: c.node,
            resource: c.resource,
            exit_status,
            cause,
            diagnostics,
        })
    }

    /// Takes back a container a re-registering node still runs for a
    /// recovered attempt (see [`crate::Input::ContainerRecovered`]).
    pub(super) fn recover_container(
        &mut self,
        container: ContainerId,
        node_id: NodeId,
        resource: Resource,
        priority: i32,
        am: bool,
    ) -> Result<Decisions, SchedulerError> {
        let attempt = container.attempt;
        let invalid = |reason: String| SchedulerError::InvalidApp { attempt, reason };
        if self.containers.contains_key(&container) {
            return Err(invalid(format!("container {container} is already live")));
        }
        if container.epoch() > self.config.epoch {
            return Err(invalid(format!(
                "container {container} is from epoch {}, after this RM's {}",
                container.epoch(),
                self.config.epoch
            )));
        }
        if resource.any_negative() || resource.is_zero() {
            return Err(invalid(format!(
                "container {container} has size {resource}"
            )));
        }
        let Some(node) = self.nodes.get_mut(&node_id) else {
            return Err(SchedulerError::UnknownNode(node_id));
        };
        let Some(app) = self.apps.get_mut(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };
        let am = am && !app.unmanaged_am && app.am_container.is_none();
        if am {
            app.am_container = Some(container);
            app.am_pending = false;
        }
        if container.epoch() == self.config.epoch && container.sequence() >= app.next_sequence {
            app.next_sequence = container.sequence() + 1;
        }
        app.used += resource;
        app.containers.insert(container);
        let (leaf, user) = (app.leaf, app.user.clone());
        node.used += resource;
        node.containers.insert(container);
        if !node.used.fits_in(&node.capability) {
            node.over_capacity = true;
        }
        self.tree.charge(leaf, &user, resource, true, am);
        self.used += resource;
        self.containers.insert(
            container,
            ContainerState {
                node: node_id.clone(),
                resource,
                priority,
                allocation_request_id: -1,
                locality: Locality::OffSwitch,
                allocated_at_ms: self.now_ms,
            },
        );
        self.reindex_node(&node_id);
        self.refresh_app(attempt);
        Ok(Decisions::default())
    }

    /// Commits one container of `key` for `attempt` on `node`.
    pub(super) fn allocate(
        &mut self,
        attempt: ApplicationAttemptId,
        key: RequestKey,
        node_id: NodeId,
        locality: Locality,
    ) -> Result<Allocation, SchedulerError> {
        let now_ms = self.now_ms;
        let epoch = self.config.epoch;
        let resource = key.capability();
        let Some(node) = self.nodes.get_mut(&node_id) else {
            return Err(SchedulerError::Internal(format!(
                "allocation on unknown node {node_id}"
            )));
        };
        let Some(app) = self.apps.get_mut(&attempt) else {
            return Err(SchedulerError::Internal(format!(
                "allocation for unknown attempt {attempt}"
            )));
        };
        if !resource.fits_in(&node.available()) {
            return Err(SchedulerError::Internal(format!(
                "{resource} does not fit on {node_id} ({} free)",
                node.available()
            )));
        }
        if app.next_sequence > MAX_CONTAINER_SEQUENCE {
            return Err(SchedulerError::Internal(format!(
                "{attempt} ran out of container sequence numbers"
            )));
        }
        app.asks
            .consume(&key, locality, &node_id.host, &node.rack)
            .map_err(SchedulerError::Internal)?;
        if app.asks.any_count(&key) == 0 {
            app.delay.remove(&key);
        } else if let Some(state) = app.delay.get_mut(&key) {
            delay::allocated(&self.config.locality, state, locality);
        }
        let container = ContainerId::with_epoch(attempt, epoch, app.next_sequence);
        let am = app.am_pending;
        if am {
            app.am_container = Some(container);
            app.am_pending = false;
        }
        app.next_sequence += 1;
        app.used += resource;
        app.containers.insert(container);
        let (leaf, user) = (app.leaf, app.user.clone());
        node.used += resource;
        node.containers.insert(container);
        self.tree.charge(leaf, &user, resource, true, am);
        self.used += resource;
        self.containers.insert(
            container,
            ContainerState {
                node: node_id.clone(),
                resource,
                priority: key.priority,
                allocation_request_id: key.allocation_request_id,
                locality,
                allocated_at_ms: now_ms,
            },
        );
        self.reindex_node(&node_id);
        self.refresh_app(attempt);
        Ok(Allocation {
            container,
            node: node_id,
            resource,
            priority: key.priority,
            allocation_request_id: key.allocation_request_id,
            locality,
            allocated_at_ms: now_ms,
        })
    }
}
