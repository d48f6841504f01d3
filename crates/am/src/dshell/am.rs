//! The distributed-shell ApplicationMaster.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spindle_common::conf::{keys, Configuration};
use spindle_common::{ApplicationId, ContainerId, NodeId, Resource};
use tracing::{info, warn};

use crate::amrm::AmRmClient;
use crate::error::AmError;
use crate::launch::{quote_for_launch, LaunchContext, LOG_DIR};
use crate::nm_client::NmClient;
use crate::records::{exit_status, FinalStatus};
use crate::requests::ContainerRequest;

/// Containers listed one by one in the unregistration diagnostics; the rest
/// are summed up (the AM's stdout has them all).
const MAX_LISTED_IN_DIAGNOSTICS: usize = 100;

/// Arguments of `distributed-shell-am`. The client fills them in.
#[derive(Debug, Clone, clap::Args)]
pub struct AmArgs {
    /// Containers to run the command in.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub num_containers: u32,
    /// The shell command (run with `/bin/bash -c`).
    #[arg(long)]
    pub command: String,
    /// Memory of each container, in MB.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(i64).range(1..))]
    pub container_memory: i64,
    /// Virtual cores of each container.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub container_vcores: i32,
    /// Priority of the container requests (lower is served first).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..))]
    pub priority: i32,
    /// The scheduler's address (overrides yarn.resourcemanager.scheduler.address).
    #[arg(long)]
    pub scheduler_address: Option<String>,
    /// This AM container's own log dir (the client passes `<LOG_DIR>`); used
    /// to name the output files of containers on the same node.
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Time between heartbeats, in ms.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    pub heartbeat_ms: u64,
}

/// How one container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerResult {
    pub container: ContainerId,
    pub node: NodeId,
    /// The process exit code, or one of YARN's negative statuses.
    pub exit_status: i32,
    pub diagnostics: String,
    /// Where its stdout is: an absolute path on `node` when the AM could
    /// tell, else a description relative to the node's log dirs.
    pub stdout: String,
}

impl fmt::Display for ContainerResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "container {} on node {}: exit {}, output in {}",
            self.container, self.node, self.exit_status, self.stdout
        )?;
        let diag = self.diagnostics.trim();
        if self.exit_status != exit_status::SUCCESS && !diag.is_empty() {
            let first = diag.lines().next().unwrap_or_default();
            write!(f, " ({first})")?;
        }
        Ok(())
    }
}

/// What the AM did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmOutcome {
    pub final_status: FinalStatus,
    pub containers: Vec<ContainerResult>,
    /// What the AM sent when it unregistered.
    pub diagnostics: String,
}

impl AmOutcome {
    /// The process exit code: 0 when the application succeeded.
    pub fn exit_code(&self) -> u8 {
        if self.final_status == FinalStatus::Succeeded {
            0
        } else {
            1
        }
    }
}

/// The command a task container runs: the user's command in its own bash,
/// with stdout and stderr in the container's log dir.
pub(crate) fn task_command(command: &str) -> String {
    format!(
        "/bin/bash -c {} 1>{LOG_DIR}/stdout 2>{LOG_DIR}/stderr",
        quote_for_launch(command)
    )
}

/// This AM container's node, from the NodeManager's environment.
fn own_node() -> Option<NodeId> {
    let host = std::env::var("NM_HOST").ok().filter(|h| !h.is_empty())?;
    let port = std::env::var("NM_PORT").ok()?.parse().ok()?;
    Some(NodeId::new(host, port))
}

fn own_host() -> String {
    std::env::var("NM_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string())
}

/// Where a container's stdout is. A container on the AM's own node has its
/// log dir next to the AM's (`<log-dir>/<app>/<container>`); elsewhere only
/// the layout under that node's log dirs is known.
fn stdout_location(
    app: ApplicationId,
    container: ContainerId,
    node: &NodeId,
    own: Option<&NodeId>,
    own_log_dir: Option<&Path>,
) -> String {
    let root = own_log_dir.and_then(|d| d.parent()).and_then(Path::parent);
    match root {
        Some(root) if own == Some(node) => root
            .join(app.to_string())
            .join(container.to_string())
            .join("stdout")
            .display()
            .to_string(),
        _ => format!("{app}/{container}/stdout under the log dirs of {node}"),
    }
}

/// Statuses after which the container is asked for again rather than
/// counted: YARN took it away (released, lost node, failed disks, preemption).
fn is_lost(exit: i32) -> bool {
    matches!(
        exit,
        exit_status::ABORTED | exit_status::DISKS_FAILED | exit_status::PREEMPTED
    )
}

/// Runs the distributed-shell ApplicationMaster in this container (see the
/// module documentation of [`crate::dshell`]). Errors before registration and
/// protocol failures are returned; a container that fails is part of the
/// outcome, which the AM reports to the ResourceManager before returning.
pub async fn am_main(args: &AmArgs, conf: &Configuration) -> Result<AmOutcome, AmError> {
    let mut conf = conf.clone();
    if let Some(addr) = &args.scheduler_address {
        conf.set(keys::RM_SCHEDULER_ADDRESS, addr.clone());
    }
    let mut rm = AmRmClient::from_env(&conf)?;
    let attempt = rm.attempt();
    let app = attempt.app;
    info!(%attempt, containers = args.num_containers, command = %args.command, "distributed shell ApplicationMaster starting");
    let registration = rm.register(&own_host(), -1, "").await?;

    let capability = Resource::new(args.container_memory, args.container_vcores);
    if !capability.fits_in(&registration.max_capability) {
        let diagnostics = format!(
            "the containers asked for ({capability}) exceed the cluster's maximum allocation ({})",
            registration.max_capability
        );
        rm.finish(FinalStatus::Failed, &diagnostics, "").await?;
        return Ok(AmOutcome {
            final_status: FinalStatus::Failed,
            containers: Vec::new(),
            diagnostics,
        });
    }

    let wanted = args.num_containers as usize;
    let request = ContainerRequest::new(args.priority, capability);
    for _ in 0..wanted {
        rm.add_request(&request)?;
    }
    let nm = NmClient::new(attempt, rm.nm_token_cache());
    let launch = LaunchContext::command(task_command(&args.command));
    let own = own_node();
    let heartbeat = Duration::from_millis(args.heartbeat_ms);

    let mut running: BTreeMap<ContainerId, NodeId> = BTreeMap::new();
    let mut results: BTreeMap<ContainerId, ContainerResult> = BTreeMap::new();
    // Containers YARN takes away are asked for again, at most this often.
    let mut retries_left = wanted;
    let result_of =
        |container: ContainerId, node: NodeId, exit: i32, diagnostics: String| ContainerResult {
            container,
            stdout: stdout_location(app, container, &node, own.as_ref(), args.log_dir.as_deref()),
            node,
            exit_status: exit,
            diagnostics,
        };

    while results.len() < wanted {
        let progress = results.len() as f32 / wanted as f32;
        let alloc = rm.allocate(progress).await?;
        for container in alloc.allocated {
            if rm.container_granted(&container).is_none() {
                info!(container = %container.id, "releasing a container nothing asked for");
                rm.release(container.id);
                continue;
            }
            match nm.start_container(&container, &launch).await {
                Ok(_) => {
                    info!(container = %container.id, node = %container.node, "container started");
                    running.insert(container.id, container.node.clone());
                }
                Err(e) => {
                    warn!(container = %container.id, node = %container.node, error = %e, "container did not start");
                    rm.release(container.id);
                    let r = result_of(
                        container.id,
                        container.node.clone(),
                        exit_status::INVALID,
                        format!("the container could not be started: {e}"),
                    );
                    results.insert(container.id, r);
                }
            }
        }
        for status in alloc.completed {
            let Some(node) = running.remove(&status.id) else {
                continue;
            };
            if is_lost(status.exit_status) && retries_left > 0 {
                retries_left -= 1;
                warn!(container = %status.id, exit = status.exit_status, "container lost; asking for another");
                rm.add_request(&request)?;
                continue;
            }
            info!(container = %status.id, exit = status.exit_status, "container completed");
            results.insert(
                status.id,
                result_of(status.id, node, status.exit_status, status.diagnostics),
            );
        }
        if results.len() < wanted {
            tokio::time::sleep(heartbeat).await;
        }
    }

    let containers: Vec<ContainerResult> = results.into_values().collect();
    let succeeded = containers
        .iter()
        .filter(|c| c.exit_status == exit_status::SUCCESS)
        .count();
    let final_status = if succeeded == wanted {
        FinalStatus::Succeeded
    } else {
        FinalStatus::Failed
    };
    let mut lines: Vec<String> = containers
        .iter()
        .take(MAX_LISTED_IN_DIAGNOSTICS)
        .map(ContainerResult::to_string)
        .collect();
    if containers.len() > MAX_LISTED_IN_DIAGNOSTICS {
        lines.push(format!(
            "... and {} more containers (see the ApplicationMaster's stdout)",
            containers.len() - MAX_LISTED_IN_DIAGNOSTICS
        ));
    }
    lines.push(format!(
        "{succeeded} of {wanted} containers exited with status 0"
    ));
    let diagnostics = lines.join("\n");
    for c in &containers {
        println!("{c}");
    }
    rm.finish(final_status, &diagnostics, "").await?;
    Ok(AmOutcome {
        final_status,
        containers,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ApplicationAttemptId;

    #[test]
    fn task_commands_keep_the_user_command_intact() {
        assert_eq!(
            task_command("echo \"hi $USER\""),
            r#"/bin/bash -c 'echo \"hi \$USER\"' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"#
        );
    }

    #[test]
    fn output_locations_are_exact_on_the_ams_node() {
        let app = ApplicationId::new(1_700_000_000_000, 3);
        let attempt = ApplicationAttemptId::new(app, 1);
        let c = ContainerId::new(attempt, 2);
        let here = NodeId::new("127.0.0.1", 4000);
        let there = NodeId::new("127.0.0.2", 4000);
        let own_log = Path::new(
            "/nm/logs/application_1700000000000_0003/container_1700000000000_0003_01_000001",
        );
        assert_eq!(
            stdout_location(app, c, &here, Some(&here), Some(own_log)),
            "/nm/logs/application_1700000000000_0003/container_1700000000000_0003_01_000002/stdout"
        );
        assert_eq!(
            stdout_location(app, c, &there, Some(&here), Some(own_log)),
            "application_1700000000000_0003/container_1700000000000_0003_01_000002/stdout under the log dirs of 127.0.0.2:4000"
        );
        assert!(stdout_location(app, c, &here, Some(&here), None).contains("under the log dirs"));
    }

    #[test]
    fn results_read_like_the_client_prints_them() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(5, 1), 1);
        let r = ContainerResult {
            container: ContainerId::new(attempt, 2),
            node: NodeId::new("n1", 1),
            exit_status: 3,
            diagnostics: "Exception from container-launch.\nmore".into(),
            stdout: "/x/stdout".into(),
        };
        assert_eq!(
            r.to_string(),
            "container container_5_0001_01_000002 on node n1:1: exit 3, output in /x/stdout (Exception from container-launch.)"
        );
        assert!(is_lost(exit_status::ABORTED));
        assert!(!is_lost(1));
    }
}
