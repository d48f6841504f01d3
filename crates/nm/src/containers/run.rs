//! One container's task: check the user it runs as, localize its
//! resources, create its directories, write `container_tokens` and
//! `launch_container.sh`, start the script through the executor
//! ([`crate::executor`]: its own process group and cgroup, its user, default
//! signal dispositions), and wait for it or for a kill (SIGTERM to every
//! process of the container, then SIGKILL after
//! `sleep-delay-before-sigkill.ms`). Whatever is left of the container when
//! its script ends is killed.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use spindle_common::conf::refuse;
use spindle_common::security::{ContainerTokenIdentifier, Credentials};
use spindle_common::text::escaped;
use spindle_common::ContainerId;
use tokio::sync::watch;
use tracing::{info, warn};

use super::manager::ContainerManager;
use super::records::{exit_status, ContainerPhase, Launch};
use crate::launch::{self, ContainerPaths, NodeEnv, ResourceLink};

/// How long the processes a container left behind may take to die.
const LEFTOVER_KILL_TIMEOUT: Duration = Duration::from_secs(5);

impl ContainerManager {
    pub(super) async fn run_container(
        self,
        grant: ContainerTokenIdentifier,
        launch: Launch,
        mut kill_rx: watch::Receiver<bool>,
    ) {
        let id = grant.container;
        let started = Instant::now();

        // 0. A container runtime this node does not have (Docker, runc):
        //    refused before anything is localized or started, so nothing
        //    of the container runs on the host.
        if let Some(why) = refuse::container_runtime_refusal(
            launch
                .environment
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        ) {
            warn!(container = %id, "container refused: {why}");
            self.complete(id, exit_status::LAUNCH_FAILED, why);
            return;
        }

        // 1. The user it runs as: the LinuxContainerExecutor's checks come
        //    before anything is localized, as in Hadoop.
        let run_as = {
            let cfg = self.inner.cfg.clone();
            let app_user = grant.app_submitter.clone();
            tokio::task::spawn_blocking(move || cfg.executor.user_for(&app_user)).await
        };
        let run_as = match run_as {
            Ok(Ok(user)) => user,
            Ok(Err(refusal)) => {
                warn!(
                    container = %id,
                    user = %escaped(&grant.app_submitter),
                    "container refused: {}",
                    escaped(refusal.reason())
                );
                self.complete(id, exit_status::INVALID, refusal.diagnostics(&id.app()));
                return;
            }
            Err(e) => {
                self.complete(
                    id,
                    exit_status::INVALID,
                    format!("cannot look up the user of container {id}: {e}"),
                );
                return;
            }
        };

        // 2. Localize, all resources at once, private and application ones
        // with the container's delegation tokens.
        let app = id.app();
        let reader = run_as.clone();
        let tokens = match Credentials::from_bytes(&launch.tokens) {
            Ok(c) => Arc::new(c.tokens.into_iter().map(|(_, t)| t).collect::<Vec<_>>()),
            Err(e) => {
                self.complete(
                    id,
                    exit_status::INVALID,
                    format!("cannot read the credentials of container {id}: {e}"),
                );
                return;
            }
        };
        let jobs = launch.resources.iter().cloned().map(|(link, res)| {
            let localizer = self.inner.localizer.clone();
            let user = grant.app_submitter.clone();
            let reader = reader.clone();
            let tokens = tokens.clone();
            async move {
                localizer
                    .localize_with(&res, &user, app, reader, tokens)
                    .await
                    .map(|l| (link, l))
            }
        });
        // The localizations run as tasks of their own: a kill does not wait
        // for them (they finish in the background and stay cached).
        let results = tokio::select! {
            r = futures_join_all(jobs) => r,
            _ = killed(&mut kill_rx) => {
                self.complete(id, exit_status::INVALID, String::new());
                return;
            }
        };
        let mut links = Vec::with_capacity(results.len());
        // Held until the container ends: the cache cleanup leaves its
        // resources alone meanwhile.
        let mut leases = Vec::with_capacity(results.len());
        let mut counters = [0u64; 4];
        for r in results {
            match r {
                Ok((link, l)) => {
                    if l.from_cache {
                        counters[1] += l.bytes;
                        counters[3] += 1;
                    } else {
                        counters[0] += l.bytes;
                        counters[2] += 1;
                    }
                    links.push(ResourceLink {
                        target: l.path,
                        link,
                    });
                    leases.push(l.lease);
                }
                Err(e) => {
                    warn!(container = %id, "localization failed: {}", escaped(&e));
                    self.complete(id, exit_status::INVALID, e);
                    return;
                }
            }
        }
        let localization_counters = format!(
            "{},{},{},{},{}",
            counters[0],
            counters[1],
            counters[2],
            counters[3],
            started.elapsed().as_millis()
        );
        if self.kill_reason(&id).is_some() {
            self.complete(id, exit_status::INVALID, String::new());
            return;
        }

        // 3. Directories, credentials, script.
        let cfg = &self.inner.cfg;
        let work_index = self.inner.next_work_dir.fetch_add(1, Ordering::Relaxed);
        let paths = ContainerPaths::new(
            &cfg.local_dirs,
            &cfg.log_dirs,
            &grant.app_submitter,
            &id,
            work_index,
            0,
        );
        self.set_phase(id, ContainerPhase::Launching, None, Some(paths.clone()));
        let Some(node_id) = self.node_id() else {
            self.complete(
                id,
                exit_status::INVALID,
                "the NodeManager is still starting".into(),
            );
            return;
        };
        let aux_env = self.inner.aux.meta_env();
        let node_env = NodeEnv {
            node_id: &node_id,
            http_port: cfg.http_port,
            user_home_dir: &cfg.containers.user_home_dir,
            whitelist: &cfg.containers.env_whitelist,
            admin_env: &cfg.containers.admin_env,
            nm_env: &cfg.containers.nm_env,
            aux_meta: &aux_env,
        };
        let env = launch::build_env(
            &launch.environment,
            &id,
            &grant.app_submitter,
            &paths,
            &node_env,
            &localization_counters,
        );
        let commands: Vec<String> = launch
            .commands
            .iter()
            .map(|c| launch::expand(c, &paths.log_dir))
            .collect();
        let script = launch::launch_script(&env, &links, &commands, &paths.log_dir);
        let prepared = {
            let cfg = self.inner.cfg.clone();
            let paths = paths.clone();
            let tokens = launch.tokens.clone();
            let user = run_as.clone();
            tokio::task::spawn_blocking(move || {
                cfg.executor
                    .prepare_dirs(&paths, user.as_ref(), &tokens, &script)
            })
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
        };
        if let Err(e) = prepared {
            let msg = format!(
                "cannot prepare the directories of container {id} (work dir {}): {e}",
                paths.work_dir.display()
            );
            warn!(container = %id, "{}", escaped(&msg));
            self.complete(id, exit_status::INVALID, msg);
            return;
        }
        if self.kill_reason(&id).is_some() {
            self.complete(id, exit_status::INVALID, String::new());
            return;
        }

        // 4. Run.
        let mut launched =
            match cfg
                .executor
                .launch(&id, &paths, &env.as_map(), run_as.as_ref(), grant.resource)
            {
                Ok(l) => l,
                Err(msg) => {
                    warn!(container = %id, "{}", escaped(&msg));
                    self.complete(id, exit_status::INVALID, msg);
                    return;
                }
            };
        let pid = launched.pid;
        self.set_phase(id, ContainerPhase::Running, Some(pid), None);
        info!(
            container = %id,
            pid,
            user = %escaped(run_as.as_ref().map_or(cfg.user.as_str(), |u| u.name.as_str())),
            cgroup = %launched.cgroup().map(|c| c.path.display().to_string()).unwrap_or_default(),
            work_dir = %escaped(&paths.work_dir.to_string_lossy()),
            "container launched"
        );

        let status = tokio::select! {
            s = launched.child.wait() => s,
            _ = killed(&mut kill_rx) => {
                launched.signal_all(Signal::SIGTERM);
                match tokio::time::timeout(cfg.containers.sigkill_delay, launched.child.wait()).await {
                    Ok(s) => s,
                    Err(_) => {
                        launched.signal_all(Signal::SIGKILL);
                        launched.child.wait().await
                    }
                }
            }
        };
        // Whatever is left of the container goes with it: its group (the
        // leader is reaped only now, so the group id is still ours), its
        // cgroup, the processes marked as its.
        launched.finish(LEFTOVER_KILL_TIMEOUT).await;
        let code = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                exit_status::from_process(s.code(), s.signal())
            }
            Err(e) => {
                warn!(container = %id, error = %e, "cannot wait for the container process");
                exit_status::INVALID
            }
        };
        let diagnostics = self
            .exit_diagnostics(&id, code, Some(paths.log_dir.clone()))
            .await;
        self.complete(id, code, diagnostics);
        drop(leases);
    }
}

/// Resolves once a kill is requested. A closed channel means nobody can ask
/// for a kill any more, so it never resolves then.
pub(super) async fn killed(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|k| *k).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Waits for all futures, in order.
async fn futures_join_all<F>(jobs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = jobs.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        match h.await {
            Ok(v) => out.push(v),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    out
}

/// The last `max` bytes of a file, as text.
/// The file is read as the NodeManager (maybe root) in a dir the container
/// may own: a link is not followed, and only a regular file with one link
/// is read (not a hard link to a file the container cannot read).
fn tail(path: &Path, max: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.nlink() != 1 {
        return None;
    }
    let len = meta.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max))).ok()?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

impl ContainerManager {
    /// The diagnostics a container that exited with `code` is reported with,
    /// whether it ran under this NodeManager or a predecessor: a kill's, none
    /// after success, else [`failure_diagnostics`] from `log_dir` (read off
    /// the runtime; just the code when the log dir is not known).
    pub(super) async fn exit_diagnostics(
        &self,
        id: &ContainerId,
        code: i32,
        log_dir: Option<PathBuf>,
    ) -> String {
        if self.kill_reason(id).is_some() {
            return format!("Container killed on request. Exit code is {code}");
        }
        if code == exit_status::SUCCESS {
            return String::new();
        }
        let tail = self.inner.cfg.containers.stderr_tail_bytes;
        let cid = id.to_string();
        tokio::task::spawn_blocking(move || match log_dir {
            Some(d) => failure_diagnostics(&cid, code, &d, tail),
            None => format!("Container exited with a non-zero exit code {code}"),
        })
        .await
        .unwrap_or_default()
    }
}

/// Diagnostics of a container that exited non-zero: the exit code and the
/// ends of `prelaunch.err` and of the error files in the log dir.
pub(super) fn failure_diagnostics(
    container: &str,
    code: i32,
    log_dir: &Path,
    tail_bytes: u64,
) -> String {
    let mut d = format!(
        "Exception from container-launch.\nContainer id: {container}\nExit code: {code}\n\
         Container exited with a non-zero exit code {code}. Error file: {}.\n",
        launch::PRELAUNCH_ERR
    );
    let mut files: Vec<PathBuf> = vec![log_dir.join(launch::PRELAUNCH_ERR)];
    if let Ok(entries) = std::fs::read_dir(log_dir) {
        let mut others: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.to_ascii_lowercase().contains("stderr"))
            })
            .collect();
        others.sort();
        files.extend(others);
    }
    for f in files {
        if let Some(t) = tail(&f, tail_bytes) {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            d.push_str(&format!("Last {tail_bytes} bytes of {name} :\n{t}\n"));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_diagnostics_carry_the_error_tails() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("prelaunch.err"), "").expect("write");
        std::fs::write(tmp.path().join("stderr"), "x".repeat(100) + "boom\n").expect("write");
        let d = failure_diagnostics("container_1_0001_01_000002", 3, tmp.path(), 10);
        assert!(d.contains("Exit code: 3"), "{d}");
        assert!(d.contains("Last 10 bytes of stderr :\nxxxxx"), "{d}");
        assert!(d.contains("boom"), "{d}");
        assert!(!d.contains(&"x".repeat(11)), "{d}");
    }
}
