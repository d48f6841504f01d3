//! The heartbeat side: the statuses a heartbeat or a registration reports,
//! and what a heartbeat answer orders (acknowledged completions, containers
//! and applications to clean up, signals).

use std::time::Instant;

use hadoop_protos::yarn::{
    ContainerIdProto, ContainerStatusProto, ExecutionTypeProto, LogAggregationReportProto,
    LogAggregationStatusProto, NmContainerStatusProto, PriorityProto, SignalContainerCommandProto,
    SignalContainerRequestProto,
};
use spindle_common::text::escaped;
use spindle_common::{ApplicationId, ContainerId};
use tracing::{debug, info, warn};

use super::manager::ContainerManager;
use super::records::{ContainerPhase, KillOutcome, KillReason, State};
use crate::logagg::AggregationStatus;
use crate::wire;

impl ContainerManager {
    /// Statuses for the next heartbeat: every container the ResourceManager
    /// has not acknowledged as complete.
    pub fn heartbeat_statuses(&self) -> Vec<ContainerStatusProto> {
        let mut st = self.lock();
        st.containers
            .values_mut()
            .map(|c| {
                if c.phase == ContainerPhase::Done {
                    c.reported = true;
                }
                c.status_proto(true)
            })
            .collect()
    }

    /// The log aggregation reports the next heartbeat carries
    /// (`log_aggregation_reports_for_apps`): every one not yet answered.
    pub fn log_aggregation_reports(&self) -> Vec<LogAggregationReportProto> {
        self.inner
            .logs
            .pending_reports()
            .into_iter()
            .map(|r| LogAggregationReportProto {
                application_id: Some(wire::app_id_proto(&r.app)),
                log_aggregation_status: Some(match r.status {
                    AggregationStatus::Running => LogAggregationStatusProto::LogRunning,
                    AggregationStatus::Succeeded => LogAggregationStatusProto::LogSucceeded,
                    AggregationStatus::Failed => LogAggregationStatusProto::LogFailed,
                } as i32),
                diagnostics: Some(r.diagnostics),
            })
            .collect()
    }

    /// A heartbeat carrying the `sent` oldest log aggregation reports was
    /// answered: they are not sent again.
    pub fn log_aggregation_reports_sent(&self, sent: usize) {
        self.inner.logs.acknowledge(sent);
    }

    /// After a heartbeat went through: completed containers of applications
    /// this node no longer has are dropped once they have been reported
    /// (the ResourceManager may never acknowledge them).
    pub fn after_heartbeat(&self) {
        let mut st = self.lock();
        let State {
            containers,
            apps,
            recently_stopped,
        } = &mut *st;
        let gone: Vec<ContainerId> = containers
            .iter()
            .filter(|(id, c)| {
                c.phase == ContainerPhase::Done && c.reported && !apps.contains_key(&id.app())
            })
            .map(|(id, _)| *id)
            .collect();
        let now = Instant::now();
        for id in gone {
            containers.remove(&id);
            self.unpersist(&id);
            recently_stopped.insert(id, now);
        }
    }

    /// Statuses for a (re-)registration.
    pub fn registration_statuses(&self) -> Vec<NmContainerStatusProto> {
        let st = self.lock();
        st.containers
            .values()
            .map(|c| {
                let s = c.status_proto(true);
                NmContainerStatusProto {
                    container_id: s.container_id,
                    container_state: s.state,
                    resource: s.capability,
                    priority: Some(PriorityProto {
                        priority: Some(c.grant.priority),
                    }),
                    diagnostics: s.diagnostics,
                    container_exit_status: s.exit_status,
                    creation_time: Some(c.grant.creation_time_ms),
                    node_label_expression: c.grant.node_label_expression.clone(),
                    version: Some(c.grant.version),
                    execution_type: Some(ExecutionTypeProto::Guaranteed as i32),
                    allocation_request_id: Some(c.grant.allocation_request_id),
                    allocation_tags: c.grant.allocation_tags.clone(),
                }
            })
            .collect()
    }

    /// Applications with containers on this node.
    pub fn running_applications(&self) -> Vec<ApplicationId> {
        self.lock().apps.keys().copied().collect()
    }

    /// `containers_to_be_removed_from_nm`: the RM has seen these complete.
    pub fn acknowledge_completed(&self, ids: &[ContainerIdProto]) {
        let mut st = self.lock();
        let now = Instant::now();
        for id in ids.iter().filter_map(wire::container_id_from_proto) {
            if st
                .containers
                .get(&id)
                .is_some_and(|c| c.phase == ContainerPhase::Done)
            {
                st.containers.remove(&id);
                self.unpersist(&id);
                st.recently_stopped.insert(id, now);
                debug!(container = %id, "completion acknowledged by the ResourceManager");
            }
        }
        let keep = self.inner.cfg.containers.track_stopped_for;
        st.recently_stopped
            .retain(|_, at| now.duration_since(*at) < keep);
    }

    /// `containers_to_cleanup`: kill with [`KillReason::by_resource_manager`].
    pub fn cleanup_containers(&self, ids: &[ContainerIdProto]) {
        for id in ids.iter().filter_map(wire::container_id_from_proto) {
            if self.kill(id, KillReason::by_resource_manager()) == KillOutcome::Unknown {
                debug!(container = %id, "cleanup requested for a container this node does not have");
            }
        }
    }

    /// `applications_to_cleanup`: kill the applications' containers and
    /// delete their directories (after `delete.debug-delay-sec`) once all
    /// of them are done.
    pub fn cleanup_applications(&self, apps: &[ApplicationId]) {
        for app in apps {
            let ids: Vec<ContainerId> = {
                let mut st = self.lock();
                let Some(a) = st.apps.get_mut(app) else {
                    continue;
                };
                if a.finishing {
                    continue;
                }
                a.finishing = true;
                let ids = a.containers.iter().copied().collect();
                self.persist_app(app, a);
                ids
            };
            info!(app = %app, containers = ids.len(), "application finished; cleaning up");
            for id in ids {
                self.kill(
                    id,
                    KillReason::after_app_completion("Application killed by ResourceManager"),
                );
            }
            self.maybe_finish_app(*app);
        }
    }

    /// RESYNC from a ResourceManager that does not keep containers across
    /// its restarts (Hadoop's `ContainerManagerImpl.cleanupContainersOnNMResync`):
    /// every container not yet complete is killed as if by the
    /// ResourceManager, and this waits (at most `timeout`) until all are
    /// complete. Their records stay, so that the next registration reports
    /// them: complete, or still dying when the wait ran out.
    pub async fn cleanup_on_resync(&self, timeout: std::time::Duration) {
        let ids: Vec<ContainerId> = self
            .lock()
            .containers
            .iter()
            .filter(|(_, c)| c.phase != ContainerPhase::Done)
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return;
        }
        info!(
            containers = ?ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "containers still running on resync with the ResourceManager; waiting for them to be killed"
        );
        for id in &ids {
            self.kill(*id, KillReason::by_resource_manager());
        }
        let alive: Vec<String> = self
            .wait_all_done(&ids, timeout)
            .await
            .iter()
            .map(ToString::to_string)
            .collect();
        if alive.is_empty() {
            info!("all containers are complete after the resync");
        } else {
            warn!(still_alive = ?alive, "done waiting for containers to be killed on resync");
        }
    }

    /// `containers_to_signal` from the ResourceManager.
    pub fn signal_from_rm(&self, requests: &[SignalContainerRequestProto]) {
        for r in requests {
            let Some(id) = wire::container_id_from_proto(&r.container_id) else {
                continue;
            };
            let Ok(command) = SignalContainerCommandProto::try_from(r.command) else {
                warn!(container = %id, command = r.command, "unknown signal command from the ResourceManager");
                continue;
            };
            if let Err(e) = self.signal(id, command) {
                info!(container = %id, "signal from the ResourceManager not delivered: {}", escaped(&e.message));
            }
        }
    }
}
