//! `startContainers`: the caller's NMToken and each container token are
//! checked, the launch context validated, and one task per container
//! started ([`super::run`]).

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::Ordering;

use hadoop_protos::yarn::{
    ContainerLaunchContextProto, StartContainerRequestProto, StartContainersRequestProto,
    StartContainersResponseProto, StringBytesMapProto,
};
use spindle_common::text::escaped;
use spindle_common::time::wall_ms;
use spindle_common::ContainerId;
use spindle_ipc::{class, RpcError};
use tokio::sync::watch;
use tracing::{info, warn};

use super::manager::ContainerManager;
use super::records::{app_acls, exit_status, failure, App, Container, ContainerPhase, Launch};
use crate::launch;
use crate::localizer::LocalResource;
use crate::security::{NmTokenCaller, Rejection, NM_NOT_YET_READY_CLASS};
use crate::wire;

/// A user name that can be a directory name.
fn check_user(user: &str) -> Result<(), Rejection> {
    if user.is_empty() {
        return Err(Rejection::yarn(
            "the container token names no application submitter",
        ));
    }
    if user == "." || user == ".." || user.contains('/') || user.contains('\0') {
        return Err(Rejection::yarn(format!(
            "the application submitter '{user}' cannot be used as a directory name"
        )));
    }
    Ok(())
}

fn check_launch_context(clc: &ContainerLaunchContextProto) -> Result<Launch, Rejection> {
    let service_data: Vec<(String, Vec<u8>)> = clc
        .service_data
        .iter()
        .map(|e| {
            (
                e.key.clone().unwrap_or_default(),
                e.value.clone().unwrap_or_default(),
            )
        })
        .collect();
    let mut resources = Vec::with_capacity(clc.local_resources.len());
    for entry in &clc.local_resources {
        let link = entry.key.clone().unwrap_or_default();
        launch::validate_link_name(&link).map_err(Rejection::yarn)?;
        let value = entry.value.as_ref().ok_or_else(|| {
            Rejection::yarn(format!("the local resource '{link}' has no description"))
        })?;
        let res = LocalResource::from_proto(value).map_err(Rejection::yarn)?;
        resources.push((link, res));
    }
    let environment = clc
        .environment
        .iter()
        .filter_map(|e| Some((e.key.clone()?, e.value.clone().unwrap_or_default())))
        .collect::<Vec<_>>();
    for (k, _) in &environment {
        let valid = !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(Rejection::yarn(format!(
                "the environment variable name '{k}' cannot be exported by a shell"
            )));
        }
    }
    if clc.command.is_empty() {
        return Err(Rejection::yarn("the launch context has no command"));
    }
    Ok(Launch {
        resources,
        environment,
        commands: clc.command.clone(),
        tokens: clc
            .tokens
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| launch::EMPTY_CREDENTIALS.to_vec()),
        service_data,
    })
}

impl ContainerManager {
    /// `startContainers`. Each request succeeds or fails on its own; the
    /// whole call fails only when the node cannot start anything (not
    /// registered yet, shutting down). Must run inside a tokio runtime.
    pub fn start_containers(
        &self,
        caller: &NmTokenCaller,
        req: StartContainersRequestProto,
    ) -> Result<StartContainersResponseProto, RpcError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(RpcError::yarn(
                "Container start failed as the NodeManager is in the process of shutting down",
            ));
        }
        let Some(rm_identifier) = self.inner.session.borrow().rm_identifier else {
            return Err(RpcError::new(
                NM_NOT_YET_READY_CLASS,
                "Rejecting new containers as NodeManager has not yet connected with \
                 ResourceManager",
            ));
        };
        let mut resp = StartContainersResponseProto {
            // Every running service's meta data, as Hadoop's
            // ContainerManagerImpl returns getAuxServiceMetaData().
            services_meta_data: self
                .inner
                .aux
                .meta_data()
                .iter()
                .map(|(k, v)| StringBytesMapProto {
                    key: Some(k.clone()),
                    value: Some(v.clone()),
                })
                .collect(),
            ..Default::default()
        };
        for request in req.start_container_request {
            let token_id = request
                .container_token
                .as_ref()
                .and_then(|t| {
                    <hadoop_protos::yarn::ContainerTokenIdentifierProto as prost::Message>::decode(
                        t.identifier.as_slice(),
                    )
                    .ok()
                })
                .and_then(|i| i.container_id);
            match self.start_one(caller, request, rm_identifier) {
                Ok(id) => resp.succeeded_requests.push(wire::container_id_proto(&id)),
                Err(r) => {
                    warn!(container = ?token_id.as_ref().map(wire::describe_container_id), rejection = %escaped(&r.to_string()), "container start refused");
                    resp.failed_requests.push(failure(token_id, &r));
                }
            }
        }
        Ok(resp)
    }

    pub(super) fn start_one(
        &self,
        caller: &NmTokenCaller,
        request: StartContainerRequestProto,
        rm_identifier: i64,
    ) -> Result<ContainerId, Rejection> {
        let token = request.container_token.ok_or_else(|| {
            Rejection::invalid_token("the start request carries no container token")
        })?;
        let grant = self
            .inner
            .tokens
            .verify(caller, &token, rm_identifier, wall_ms())?;
        let id = grant.container;
        check_user(&grant.app_submitter)?;
        let clc = request.container_launch_context.ok_or_else(|| {
            Rejection::yarn(format!("the start request of {id} has no launch context"))
        })?;
        let launch = check_launch_context(&clc)?;
        self.inner
            .aux
            .check_service_data(launch.service_data.iter().map(|(k, _)| k.as_str()))
            .map_err(|m| Rejection::new(class::INVALID_AUX_SERVICE, m))?;
        // Kept from the application's first container, as Hadoop's
        // `ApplicationImpl` does.
        let acls = app_acls(&clc);

        let (kill_tx, kill_rx) = watch::channel(false);
        {
            let mut st = self.lock();
            // Checked under the lock: `shutdown` sets the flag before it
            // snapshots the containers, so none slips past it.
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                return Err(Rejection::yarn(
                    "Container start failed as the NodeManager is in the process of shutting down",
                ));
            }
            if st.containers.contains_key(&id) {
                return Err(Rejection::yarn(format!(
                    "Container {id} already is running on this node"
                )));
            }
            if let Some(app) = st.apps.get(&id.app()) {
                if app.finishing {
                    return Err(Rejection::yarn(format!(
                        "Application {} is finishing on this node; container {id} is not started",
                        id.app()
                    )));
                }
                if app.user != grant.app_submitter {
                    return Err(Rejection::yarn(format!(
                        "Container {id} is submitted by {} but application {} runs as {} on \
                         this node",
                        grant.app_submitter,
                        id.app(),
                        app.user
                    )));
                }
            }
            if !self.inner.tokens.record_start(&grant) {
                return Err(Rejection::yarn(format!(
                    "Unauthorized request to start container.\nAttempt to relaunch the same \
                     container with id {id}."
                )));
            }
            let app = st.apps.entry(id.app()).or_insert_with(|| App {
                user: grant.app_submitter.clone(),
                containers: BTreeSet::new(),
                finishing: false,
                acls,
            });
            if app.containers.is_empty() {
                self.persist_app(&id.app(), app);
            }
            app.containers.insert(id);
            let c = st.containers.entry(id).or_insert(Container {
                grant: grant.clone(),
                phase: ContainerPhase::Localizing,
                exit_status: exit_status::INVALID,
                diagnostics: String::new(),
                pid: None,
                paths: None,
                kill: None,
                kill_tx,
                reported: false,
                memory: None,
                seen_pids: HashSet::new(),
                service_data: launch.service_data.clone(),
            });
            // Recorded before the start is answered.
            self.persist(c);
        }
        info!(container = %id, user = %escaped(&grant.app_submitter), resource = %grant.resource, "starting container");
        // Hadoop's CONTAINER_INIT, then APPLICATION_INIT per service data
        // entry (ContainerImpl's RequestResourcesTransition).
        self.inner.aux.container_started(
            super::records::aux_context(&grant),
            &id.app().to_string(),
            &launch.service_data,
        );
        self.changed();
        let this = self.clone();
        tokio::spawn(async move { this.run_container(grant, launch, kill_rx).await });
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_contexts_are_checked() {
        use hadoop_protos::yarn::{
            StringBytesMapProto, StringLocalResourceMapProto, StringStringMapProto,
        };
        let base = ContainerLaunchContextProto {
            command: vec!["true".into()],
            ..Default::default()
        };
        let l = check_launch_context(&base).expect("minimal");
        assert_eq!(l.tokens, launch::EMPTY_CREDENTIALS);

        let mut shuffle = base.clone();
        shuffle.service_data.push(StringBytesMapProto {
            key: Some("spark_shuffle".into()),
            value: Some(vec![]),
        });
        let l = check_launch_context(&shuffle).expect("service data is kept");
        assert_eq!(l.service_data, vec![("spark_shuffle".to_string(), vec![])]);
        // Unknown services are refused with Hadoop's message.
        let none = crate::aux_services::AuxServices::none();
        let m = none
            .check_service_data(l.service_data.iter().map(|(k, _)| k.as_str()))
            .expect_err("unknown service");
        assert_eq!(m, "The auxService:spark_shuffle does not exist");

        let mut bad_env = base.clone();
        bad_env.environment.push(StringStringMapProto {
            key: Some("A-B".into()),
            value: Some("x".into()),
        });
        assert!(check_launch_context(&bad_env).is_err());

        let with_resource = |scheme: &str| {
            let mut c = base.clone();
            c.local_resources.push(StringLocalResourceMapProto {
                key: Some("x.jar".into()),
                value: Some(hadoop_protos::yarn::LocalResourceProto {
                    resource: Some(hadoop_protos::yarn::UrlProto {
                        scheme: Some(scheme.into()),
                        host: Some("nn".into()),
                        port: Some(8020),
                        file: Some("/x.jar".into()),
                        user_info: None,
                    }),
                    ..Default::default()
                }),
            });
            c
        };
        assert!(check_launch_context(&with_resource("hdfs")).is_ok());
        let r = check_launch_context(&with_resource("s3a"))
            .err()
            .expect("s3a");
        assert!(
            r.message.contains("scheme s3a is not supported"),
            "{}",
            r.message
        );

        let no_command = ContainerLaunchContextProto::default();
        assert!(check_launch_context(&no_command).is_err());
        assert!(check_user("alice").is_ok());
        assert!(check_user("../x").is_err());
        assert!(check_user("").is_err());
    }
}
