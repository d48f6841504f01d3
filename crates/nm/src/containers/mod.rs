//! The containers of this node.
//!
//! [`ContainerManager`] owns every container from the accepted start
//! request until the ResourceManager has acknowledged its completion:
//!
//! 1. `startContainers` checks the caller's NMToken and each container
//!    token ([`crate::security`]), validates the launch context and starts
//!    one task per container;
//! 2. the task localizes the resources ([`crate::localizer`]), creates the
//!    work and log dirs, writes `container_tokens` and
//!    `launch_container.sh` ([`crate::launch`]) and runs the script with
//!    bash in a process group of its own;
//! 3. a kill (the application master, the ResourceManager, application
//!    cleanup, a memory limit, node shutdown) sends SIGTERM to the group,
//!    then SIGKILL after `sleep-delay-before-sigkill.ms`; the kill's exit
//!    status wins over the process's;
//! 4. the monitor ([`ContainerManager::run_monitor`]) measures each process
//!    tree from `/proc` and kills containers over their memory limits;
//! 5. heartbeats report running containers and completed ones until the
//!    ResourceManager acknowledges them.
//!
//! All state sits behind one mutex held only for short, non-blocking
//! sections; file and process work runs in the container tasks.
//!
//! The modules, by concern:
//! - [`records`]: what is kept per container and application, and the
//!   status records built from it;
//! - [`manager`]: the [`ContainerManager`] and the state changes every
//!   concern shares (phases, completion, kills, application cleanup);
//! - [`start`]: `startContainers`, with the token and launch-context checks;
//! - [`run`]: one container's task: localize, prepare, run, wait;
//! - [`protocol`]: the other container-management calls (stop, statuses,
//!   signals);
//! - [`heartbeat`]: what heartbeats report and what their answers order;
//! - [`monitor`]: memory monitoring;
//! - [`recover`]: taking back the containers of a previous run
//!   (`yarn.nodemanager.recovery.enabled`).

mod heartbeat;
mod manager;
mod monitor;
mod protocol;
mod records;
mod recover;
mod run;
mod start;

pub use manager::ContainerManager;
pub use records::{
    app_acls, exit_status, AppReport, ContainerPhase, ContainerReport, KillOutcome, KillReason,
    MODIFY_APP, VIEW_APP,
};
