//! Recovery at start-up (`yarn.nodemanager.recovery.enabled`): the
//! containers a previous run recorded ([`crate::recovery`]) are tracked
//! again before the node registers, so that the registration reports them.
//!
//! As Hadoop's `RecoveredContainerLaunch` does, a container that was
//! launched is reacquired by the pid in its pid file: while that process
//! lives (and carries the container's marker: a recycled pid is never
//! taken, nor signalled) the container is RUNNING again and is watched
//! until it exits; then it completes with the exit code its wrapper wrote
//! to `<pid file>.exitcode`. One that ended while no NodeManager ran
//! completes with that code at once; with neither a process nor an exit
//! code it completes as lost (Hadoop's `ExitCode.LOST`, 154). A container
//! that had not been launched yet is not started again (Hadoop relaunches
//! it from its stored launch context, which is not recorded here): it
//! completes as lost. Stop, kill and signal work on a reacquired container
//! as on any other (its process group while its leader is verified, its
//! cgroup, its marked processes).

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use spindle_common::text::escaped;
use spindle_common::ContainerId;
use tokio::sync::watch;
use tracing::{info, warn};

use super::manager::ContainerManager;
use super::records::{App, Container, ContainerPhase};
use super::run::killed;
use crate::executor::{Reacquired, RecordedExit};
use crate::recovery::{ContainerRecord, Recovered};

/// Hadoop's `Shell.ExitCode.LOST`: a recovered container whose exit code
/// cannot be known.
pub const LOST: i32 = 154;

/// How often a reacquired process is checked (Hadoop's
/// `ContainerExecutor.reacquireContainer` checks every second).
const POLL: Duration = Duration::from_millis(250);

const LEFTOVER_KILL_TIMEOUT: Duration = Duration::from_secs(5);

/// How deep below a work dir, and how many entries in all, the links to a
/// recovered container's resources are looked for (a resource's link name
/// may have directories in it; the container may have written much more).
const LINK_DEPTH: usize = 8;
const LINK_ENTRIES: usize = 20_000;

/// The targets of the symbolic links in the work dir `dir` (links to
/// directories are not followed): the launch script links each resource
/// there to its localized copy, so these name the copies a recovered
/// container uses.
fn resource_links(dir: &Path) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > LINK_ENTRIES {
                warn!(
                    dir = %escaped(&dir.to_string_lossy()),
                    "a recovered container's work dir has too many entries to look through all \
                     of it for its resources"
                );
                return targets;
            }
            match entry.file_type() {
                Ok(t) if t.is_symlink() => {
                    if let Ok(target) = std::fs::read_link(entry.path()) {
                        targets.push(target);
                    }
                }
                Ok(t) if t.is_dir() && depth + 1 < LINK_DEPTH => {
                    pending.push((entry.path(), depth + 1));
                }
                _ => {}
            }
        }
    }
    targets
}

impl ContainerManager {
    /// Tracks the recovered containers and applications again, completes
    /// those whose process is gone and starts watching those whose process
    /// runs. Call before the node registers: the registration reports
    /// them as they are.
    pub(crate) async fn recover(&self, recovered: Recovered) {
        let mut watch_list = Vec::new();
        let apps: Vec<_> = recovered.apps.iter().map(|(id, _)| *id).collect();
        // The caches first: the recovered applications' next containers
        // reuse what was localized for them.
        let live: HashSet<_> = apps
            .iter()
            .copied()
            .chain(recovered.containers.iter().map(|c| c.grant.container.app()))
            .collect();
        let localizer = self.inner.localizer.clone();
        let resources = recovered.resources;
        match tokio::task::spawn_blocking(move || localizer.restore(resources, &live)).await {
            Ok((kept, dropped)) if kept + dropped > 0 => {
                info!(
                    kept,
                    dropped, "recovered the localized resources a previous run recorded"
                )
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "recovering the localized resources failed"),
        }
        {
            let mut st = self.lock();
            for (id, r) in &recovered.apps {
                st.apps.insert(
                    *id,
                    App {
                        user: r.user.clone(),
                        containers: BTreeSet::new(),
                        finishing: r.finishing,
                        acls: r.acls.clone(),
                    },
                );
            }
            for r in recovered.containers {
                let id = r.grant.container;
                let app = st.apps.entry(id.app()).or_insert_with(|| App {
                    user: r.grant.app_submitter.clone(),
                    containers: BTreeSet::new(),
                    finishing: false,
                    acls: Vec::new(),
                });
                app.containers.insert(id);
                self.inner.tokens.record_start(&r.grant);
                let (kill_tx, kill_rx) = watch::channel(false);
                let ContainerRecord {
                    grant,
                    phase,
                    exit_status,
                    diagnostics,
                    paths,
                    service_data,
                } = r;
                if phase != ContainerPhase::Done {
                    // Hadoop's ContainerImpl sends CONTAINER_INIT and
                    // APPLICATION_INIT again for a recovered live container.
                    self.inner.aux.container_started(
                        super::records::aux_context(&grant),
                        &id.app().to_string(),
                        &service_data,
                    );
                }
                info!(container = %id, phase = ?phase, "recovering container");
                st.containers.insert(
                    id,
                    Container {
                        grant,
                        phase,
                        exit_status,
                        diagnostics,
                        pid: None,
                        paths,
                        kill: None,
                        kill_tx,
                        reported: false,
                        memory: None,
                        seen_pids: HashSet::new(),
                        service_data,
                    },
                );
                if phase != ContainerPhase::Done {
                    let work_dir = st
                        .containers
                        .get(&id)
                        .and_then(|c| c.paths.as_ref())
                        .map(|p| p.work_dir.clone());
                    watch_list.push((id, phase, kill_rx, work_dir));
                }
            }
        }
        self.changed();
        for (id, phase, kill_rx, work_dir) in watch_list {
            let cfg = self.inner.cfg.clone();
            let r = tokio::task::spawn_blocking(move || {
                let r = cfg.executor.reacquire(&id);
                // What a running container links to in its work dir: the
                // copies it uses.
                let links = match &work_dir {
                    Some(dir) if r.alive() => resource_links(dir),
                    _ => Vec::new(),
                };
                (r, links)
            })
            .await;
            let Ok((r, links)) = r else {
                self.complete(id, LOST, format!("cannot reacquire container {id}"));
                continue;
            };
            if r.alive() {
                // Its cached copies are held until it ends, as a container
                // started by this run holds them: the cache cleanup cannot
                // remove a resource under it.
                let leases = self.inner.localizer.lease_copies(&links);
                info!(
                    container = %id,
                    pid = ?r.pid(),
                    cached_resources_held = leases.len(),
                    "reacquired a running container"
                );
                self.set_phase(id, ContainerPhase::Running, r.pid(), None);
                let this = self.clone();
                tokio::spawn(async move {
                    this.watch_reacquired(id, ContainerPhase::Running, r, kill_rx)
                        .await;
                    drop(leases);
                });
            } else {
                self.clone().watch_reacquired(id, phase, r, kill_rx).await;
            }
        }
        // An application the ResourceManager had finished, whose containers
        // all ended, is cleaned up now.
        for app in apps {
            self.maybe_finish_app(app);
        }
    }

    /// Waits for a reacquired container's process to end (or kills it on
    /// request) and completes the container with its recorded exit code.
    async fn watch_reacquired(
        self,
        id: ContainerId,
        phase: ContainerPhase,
        r: Reacquired,
        mut kill_rx: watch::Receiver<bool>,
    ) {
        let cfg = self.inner.cfg.clone();
        if r.alive() {
            let mut signalled = false;
            let mut kill_at = None;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(POLL) => {}
                    _ = killed(&mut kill_rx), if !signalled => {
                        signalled = true;
                        r.signal_all(Signal::SIGTERM);
                        kill_at = Some(tokio::time::Instant::now() + cfg.containers.sigkill_delay);
                    }
                }
                if !r.alive() {
                    break;
                }
                if kill_at.is_some_and(|t| tokio::time::Instant::now() >= t) {
                    r.signal_all(Signal::SIGKILL);
                    kill_at = None;
                }
            }
        } else if phase != ContainerPhase::Running {
            info!(container = %id, phase = ?phase, "a recovered container had not been launched");
        }
        let (code, diagnostics) = match r.recorded_exit() {
            RecordedExit::Code(code) => {
                let log_dir = self.report(&id).and_then(|c| c.paths).map(|p| p.log_dir);
                (code, self.exit_diagnostics(&id, code, log_dir).await)
            }
            RecordedExit::Missing if phase == ContainerPhase::Running => (
                LOST,
                format!(
                    "Container {id} was lost: after the NodeManager restarted, neither its \
                     process nor its exit code was found"
                ),
            ),
            RecordedExit::Missing => (
                LOST,
                format!(
                    "Container {id} was lost: the NodeManager restarted before it was launched"
                ),
            ),
            RecordedExit::Unreadable(why) => {
                warn!(container = %id, "{}", escaped(&why));
                (
                    LOST,
                    format!("Container {id} was lost: its exit code cannot be read: {why}"),
                )
            }
        };
        r.finish(LEFTOVER_KILL_TIMEOUT).await;
        self.complete(id, code, diagnostics);
    }
}
