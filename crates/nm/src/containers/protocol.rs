//! The container-management calls other than `startContainers`:
//! `stopContainers`, `getContainerStatuses` and `signalToContainer`, each
//! limited to the containers of the caller's application.

use hadoop_protos::yarn::{
    ContainerIdProto, GetContainerStatusesRequestProto, GetContainerStatusesResponseProto,
    SignalContainerCommandProto, SignalContainerRequestProto, SignalContainerResponseProto,
    StopContainersRequestProto, StopContainersResponseProto,
};
use spindle_common::ContainerId;
use spindle_ipc::RpcError;
use tracing::info;

use super::manager::ContainerManager;
use super::records::{failure, KillOutcome, KillReason};
use crate::security::{NmTokenCaller, Rejection};
use crate::wire;

impl ContainerManager {
    /// `stopContainers`: kills with [`KillReason::by_app_master`].
    pub fn stop_containers(
        &self,
        caller: &NmTokenCaller,
        req: StopContainersRequestProto,
    ) -> Result<StopContainersResponseProto, RpcError> {
        let mut resp = StopContainersResponseProto::default();
        for p in req.container_id {
            match self.stop_one(caller, &p) {
                Ok(()) => resp.succeeded_requests.push(p),
                Err(r) => resp.failed_requests.push(failure(Some(p), &r)),
            }
        }
        Ok(resp)
    }

    pub(super) fn authorize(
        &self,
        caller: &NmTokenCaller,
        p: &ContainerIdProto,
    ) -> Result<ContainerId, Rejection> {
        let id = wire::container_id_from_proto(p).ok_or_else(|| {
            Rejection::yarn(format!(
                "{} is not a complete container id",
                wire::describe_container_id(p)
            ))
        })?;
        let app = caller.identity.attempt.app;
        if id.app() != app {
            return Err(Rejection::yarn(format!(
                "Unauthorized request: the NMToken of {} cannot act on container {id} of \
                 another application",
                caller.identity.attempt
            )));
        }
        Ok(id)
    }

    pub(super) fn stop_one(
        &self,
        caller: &NmTokenCaller,
        p: &ContainerIdProto,
    ) -> Result<(), Rejection> {
        let id = self.authorize(caller, p)?;
        info!(container = %id, by = %caller.identity.attempt, "stop requested");
        match self.kill(id, KillReason::by_app_master()) {
            KillOutcome::Killing | KillOutcome::AlreadyDone => Ok(()),
            KillOutcome::Unknown if self.lock().recently_stopped.contains_key(&id) => Ok(()),
            KillOutcome::Unknown => Err(Rejection::yarn(format!(
                "Container {id} is not handled by this NodeManager"
            ))),
        }
    }

    /// `getContainerStatuses`.
    pub fn get_container_statuses(
        &self,
        caller: &NmTokenCaller,
        req: GetContainerStatusesRequestProto,
    ) -> Result<GetContainerStatusesResponseProto, RpcError> {
        let mut resp = GetContainerStatusesResponseProto::default();
        for p in req.container_id {
            let result = self.authorize(caller, &p).and_then(|id| {
                let st = self.lock();
                match st.containers.get(&id) {
                    Some(c) => Ok(c.status_proto(false)),
                    None if st.recently_stopped.contains_key(&id) => Err(Rejection::yarn(format!(
                        "Container {id} was recently stopped on node manager."
                    ))),
                    None => Err(Rejection::yarn(format!(
                        "Container {id} is not handled by this NodeManager"
                    ))),
                }
            });
            match result {
                Ok(s) => resp.status.push(s),
                Err(r) => resp.failed_requests.push(failure(Some(p), &r)),
            }
        }
        Ok(resp)
    }

    /// `signalToContainer`: thread dump (SIGQUIT), graceful (SIGTERM) or
    /// forceful (SIGKILL) shutdown of the container's process group.
    pub fn signal_to_container(
        &self,
        caller: &NmTokenCaller,
        req: SignalContainerRequestProto,
    ) -> Result<SignalContainerResponseProto, RpcError> {
        let id = self
            .authorize(caller, &req.container_id)
            .map_err(|r| RpcError::new(r.class_name, r.message))?;
        let command = SignalContainerCommandProto::try_from(req.command).map_err(|_| {
            RpcError::yarn(format!("unknown signal command {} for {id}", req.command))
        })?;
        self.signal(id, command)
            .map_err(|r| RpcError::new(r.class_name, r.message))?;
        Ok(SignalContainerResponseProto {})
    }
}
