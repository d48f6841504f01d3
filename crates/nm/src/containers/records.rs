//! What the node keeps per container and per application, and the status
//! records built from it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

use hadoop_protos::yarn::{
    ApplicationAccessTypeProto, ContainerExceptionMapProto, ContainerIdProto,
    ContainerLaunchContextProto, ContainerStateProto, ContainerStatusProto, ContainerSubStateProto,
    ExecutionTypeProto, SerializedExceptionProto,
};
use spindle_common::security::ContainerTokenIdentifier;
use spindle_common::{ApplicationId, ContainerId, Resource};
use tokio::sync::watch;

use crate::launch::ContainerPaths;
use crate::localizer::LocalResource;
use crate::security::Rejection;
use crate::wire;

/// YARN's container exit statuses (`ContainerExitStatus`) and the process
/// codes the node uses.
pub mod exit_status {
    pub use spindle_common::exit_status::*;

    /// 128 + SIGKILL.
    pub const FORCE_KILLED: i32 = 137;
    /// 128 + SIGTERM.
    pub const TERMINATED: i32 = 143;
    /// A launch that failed before the container's process started (Hadoop's
    /// `ContainerLaunch` reports its initial `ret`, -1).
    pub const LAUNCH_FAILED: i32 = -1;

    /// The exit status of a process that ended with `code`, or was killed
    /// by signal `signal` (shell convention: 128 + signal).
    pub fn from_process(code: Option<i32>, signal: Option<i32>) -> i32 {
        match (code, signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => INVALID,
        }
    }
}

/// Where a container is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContainerPhase {
    /// Accepted; resources are being localized.
    Localizing,
    /// Resources are ready; directories and the script are being written.
    Launching,
    /// The process runs.
    Running,
    /// Finished (exited, killed, or failed before running).
    Done,
}

/// Why a container is killed; the exit status reported instead of the
/// process's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillReason {
    pub exit_status: i32,
    pub diagnostics: String,
}

impl KillReason {
    /// `stopContainers` from the application master.
    pub fn by_app_master() -> KillReason {
        KillReason {
            exit_status: exit_status::KILLED_BY_APPMASTER,
            diagnostics: "Container killed by the ApplicationMaster.".into(),
        }
    }

    /// `containers_to_cleanup` in a heartbeat answer.
    pub fn by_resource_manager() -> KillReason {
        KillReason {
            exit_status: exit_status::KILLED_BY_RESOURCEMANAGER,
            diagnostics: "Container Killed by ResourceManager".into(),
        }
    }

    /// `applications_to_cleanup` in a heartbeat answer, or node shutdown.
    pub fn after_app_completion(why: &str) -> KillReason {
        KillReason {
            exit_status: exit_status::KILLED_AFTER_APP_COMPLETION,
            diagnostics: format!("Container killed on application-finish event: {why}"),
        }
    }
}

/// A snapshot of one container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerReport {
    pub id: ContainerId,
    pub user: String,
    pub resource: Resource,
    pub phase: ContainerPhase,
    /// [`exit_status::INVALID`] until the container is done.
    pub exit_status: i32,
    pub diagnostics: String,
    /// Pid of the wrapper that runs the launch script (the process group
    /// id).
    pub pid: Option<i32>,
    pub paths: Option<ContainerPaths>,
    /// Memory of the process tree at the last monitor check (rss, vmem).
    pub memory_bytes: Option<(u64, u64)>,
}

/// A snapshot of one application with containers on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppReport {
    pub id: ApplicationId,
    pub user: String,
    /// The ResourceManager said the application is over; the node waits
    /// for its containers to finish (Hadoop's `FINISHING_CONTAINERS_WAIT`).
    pub finishing: bool,
    /// Its containers the node still tracks.
    pub containers: Vec<ContainerId>,
    /// Its ACLs from its first container's launch context: (access type,
    /// ACL) pairs, `VIEW_APP` / `MODIFY_APP` (see [`app_acls`]).
    pub acls: Vec<(String, String)>,
}

impl AppReport {
    /// The application's ACL for `access` (`VIEW_APP`, `MODIFY_APP`), when
    /// its launch context gave one.
    pub fn acl(&self, access: &str) -> Option<&str> {
        self.acls
            .iter()
            .find(|(a, _)| a == access)
            .map(|(_, acl)| acl.as_str())
    }
}

/// `ApplicationAccessType.VIEW_APP`.
pub const VIEW_APP: &str = "VIEW_APP";
/// `ApplicationAccessType.MODIFY_APP`.
pub const MODIFY_APP: &str = "MODIFY_APP";

/// The application ACLs of a launch context (`application_ACLs`) as
/// (access type, ACL) pairs in Hadoop's names, as its `ApplicationImpl`
/// keeps them: an entry without a type is `VIEW_APP` (the proto's
/// default), one without an ACL is `" "` (nobody); a later entry of a type
/// replaces an earlier one; an unknown type is skipped.
pub fn app_acls(clc: &ContainerLaunchContextProto) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for entry in &clc.application_ac_ls {
        let access = match entry.access_type {
            None => VIEW_APP,
            Some(t) if t == ApplicationAccessTypeProto::AppaccessViewApp as i32 => VIEW_APP,
            Some(t) if t == ApplicationAccessTypeProto::AppaccessModifyApp as i32 => MODIFY_APP,
            Some(_) => continue,
        };
        let acl = entry.acl.clone().unwrap_or_else(|| " ".to_string());
        match out.iter_mut().find(|(a, _)| a == access) {
            Some(slot) => slot.1 = acl,
            None => out.push((access.to_string(), acl)),
        }
    }
    out
}

/// Result of [`ContainerManager::kill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillOutcome {
    /// The kill is under way (or was already).
    Killing,
    /// The container had already completed.
    AlreadyDone,
    /// No such container on this node.
    Unknown,
}

pub(super) struct Container {
    pub(super) grant: ContainerTokenIdentifier,
    pub(super) phase: ContainerPhase,
    pub(super) exit_status: i32,
    pub(super) diagnostics: String,
    pub(super) pid: Option<i32>,
    pub(super) paths: Option<ContainerPaths>,
    pub(super) kill: Option<KillReason>,
    pub(super) kill_tx: watch::Sender<bool>,
    /// Completed and sent in a heartbeat at least once.
    pub(super) reported: bool,
    pub(super) memory: Option<(u64, u64)>,
    /// Pids seen at the last monitor check.
    pub(super) seen_pids: HashSet<i32>,
    /// The launch context's service data (kept in the recovery record).
    pub(super) service_data: Vec<(String, Vec<u8>)>,
}

impl Container {
    pub(super) fn report(&self) -> ContainerReport {
        ContainerReport {
            id: self.grant.container,
            user: self.grant.app_submitter.clone(),
            resource: self.grant.resource,
            phase: self.phase,
            exit_status: self.exit_status,
            diagnostics: self.diagnostics.clone(),
            pid: self.pid,
            paths: self.paths.clone(),
            memory_bytes: self.memory,
        }
    }

    pub(super) fn status_proto(&self, for_rm: bool) -> ContainerStatusProto {
        let (state, sub) = match self.phase {
            // Hadoop's ResourceManager takes any state other than RUNNING
            // (or SCHEDULED, which this protocol version lacks) as
            // "completed", so the RM hears RUNNING from acceptance on.
            ContainerPhase::Localizing | ContainerPhase::Launching if !for_rm => (
                ContainerStateProto::CNew,
                ContainerSubStateProto::CssScheduled,
            ),
            ContainerPhase::Localizing | ContainerPhase::Launching => (
                ContainerStateProto::CRunning,
                ContainerSubStateProto::CssScheduled,
            ),
            ContainerPhase::Running => (
                ContainerStateProto::CRunning,
                ContainerSubStateProto::CssRunning,
            ),
            ContainerPhase::Done => (
                ContainerStateProto::CComplete,
                ContainerSubStateProto::CssDone,
            ),
        };
        ContainerStatusProto {
            container_id: Some(wire::container_id_proto(&self.grant.container)),
            state: Some(state as i32),
            diagnostics: Some(self.diagnostics.clone()),
            exit_status: Some(self.exit_status),
            capability: Some(wire::resource_proto(self.grant.resource)),
            execution_type: Some(ExecutionTypeProto::Guaranteed as i32),
            container_attributes: Vec::new(),
            container_sub_state: Some(sub as i32),
        }
    }
}

impl App {
    pub(super) fn report(&self, id: ApplicationId) -> AppReport {
        AppReport {
            id,
            user: self.user.clone(),
            finishing: self.finishing,
            containers: self.containers.iter().copied().collect(),
            acls: self.acls.clone(),
        }
    }
}

pub(super) struct App {
    pub(super) user: String,
    pub(super) containers: BTreeSet<ContainerId>,
    /// The ResourceManager said the application is over.
    pub(super) finishing: bool,
    /// From its first container's launch context ([`app_acls`]).
    pub(super) acls: Vec<(String, String)>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) containers: BTreeMap<ContainerId, Container>,
    pub(super) apps: BTreeMap<ApplicationId, App>,
    /// Acknowledged completions, remembered for a while.
    pub(super) recently_stopped: BTreeMap<ContainerId, Instant>,
}

/// A checked launch context, ready for the container task.
pub(super) struct Launch {
    pub(super) resources: Vec<(String, LocalResource)>,
    pub(super) environment: Vec<(String, String)>,
    pub(super) commands: Vec<String>,
    pub(super) tokens: Vec<u8>,
    /// `service_data`: (auxiliary service, data), for `initializeApplication`.
    pub(super) service_data: Vec<(String, Vec<u8>)>,
}

pub(super) fn serialized(r: &Rejection) -> SerializedExceptionProto {
    SerializedExceptionProto {
        message: Some(r.message.clone()),
        trace: Some(format!("{}: {}", r.class_name, r.message)),
        class_name: Some(r.class_name.clone()),
        cause: None,
    }
}

pub(super) fn failure(id: Option<ContainerIdProto>, r: &Rejection) -> ContainerExceptionMapProto {
    ContainerExceptionMapProto {
        container_id: id,
        exception: Some(serialized(r)),
    }
}

/// What `initializeContainer`/`stopContainer` are told of a container.
pub(super) fn aux_context(
    grant: &ContainerTokenIdentifier,
) -> crate::aux_services::ContainerContext {
    use crate::aux_services::{ContainerContext, ContainerType};
    ContainerContext {
        user: grant.app_submitter.clone(),
        container_id: grant.container.to_string(),
        memory_mb: grant.resource.memory_mb,
        vcores: grant.resource.vcores,
        container_type: match grant.container_type {
            Some(hadoop_protos::yarn::ContainerTypeProto::ApplicationMaster) => {
                ContainerType::ApplicationMaster
            }
            _ => ContainerType::Task,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_mapping() {
        assert_eq!(exit_status::from_process(Some(0), None), 0);
        assert_eq!(exit_status::from_process(Some(3), None), 3);
        assert_eq!(
            exit_status::from_process(None, Some(15)),
            exit_status::TERMINATED
        );
        assert_eq!(
            exit_status::from_process(None, Some(9)),
            exit_status::FORCE_KILLED
        );
        assert_eq!(exit_status::from_process(None, None), exit_status::INVALID);
        assert_eq!(KillReason::by_app_master().exit_status, -105);
        assert_eq!(KillReason::by_resource_manager().exit_status, -106);
        assert_eq!(KillReason::after_app_completion("x").exit_status, -107);
    }

    #[test]
    fn app_acls_take_hadoop_s_names_and_defaults() {
        use hadoop_protos::yarn::ApplicationAclMapProto;
        let entry = |t: Option<i32>, acl: Option<&str>| ApplicationAclMapProto {
            access_type: t,
            acl: acl.map(str::to_string),
        };
        let clc = ContainerLaunchContextProto {
            application_ac_ls: vec![
                entry(Some(2), Some("ops admins")),
                entry(Some(1), Some("bob")),
                entry(Some(7), Some("x")),
                entry(Some(1), Some("bob,carol")),
                entry(Some(2), None),
            ],
            ..Default::default()
        };
        let acls = app_acls(&clc);
        assert_eq!(
            acls,
            vec![
                ("MODIFY_APP".to_string(), " ".to_string()),
                ("VIEW_APP".to_string(), "bob,carol".to_string()),
            ]
        );
        let untyped = ContainerLaunchContextProto {
            application_ac_ls: vec![entry(None, Some("dave"))],
            ..Default::default()
        };
        assert_eq!(
            app_acls(&untyped),
            vec![("VIEW_APP".to_string(), "dave".to_string())]
        );
        assert!(app_acls(&ContainerLaunchContextProto::default()).is_empty());
    }
}
