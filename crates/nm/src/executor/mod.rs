//! The container executor: the one place that starts container processes,
//! and the one that finds and kills all of them.
//!
//! Two executors, chosen by `yarn.nodemanager.container-executor.class` as in
//! Hadoop:
//!
//! - **DefaultContainerExecutor** (the default): containers run as the
//!   NodeManager's own user, in directories the NodeManager owns.
//! - **LinuxContainerExecutor**: the NodeManager must run as root (Hadoop's
//!   needs its setuid `container-executor`; start-up fails otherwise) and
//!   each container runs as a user: the application's user when
//!   `yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users`
//!   is false, else `…nonsecure-mode.local-user` (default `nobody`). The
//!   application's user must match `…nonsecure-mode.user-pattern`; the user
//!   run as must exist, must not be root, must have a uid of at least
//!   `yarn.nodemanager.linux-container-executor.min.user.id` (default 1000)
//!   unless listed in `…allowed.system.users`, and must not be in
//!   `…banned.users` (default `yarn,hdfs,mapred,bin`). Those three are
//!   `container-executor.cfg`'s `min.user.id`, `allowed.system.users` and
//!   `banned.users`: Spindle has no setuid helper and reads them from
//!   `yarn-site.xml` under these names instead of from that file. A refused
//!   user fails the container with container-executor's message. The child
//!   sets the user's groups, group and user before `exec`; its directories
//!   are handed to it ([`dirs`]).
//!
//! With either executor, in the child before `exec`: signal dispositions
//! back to their defaults and an empty signal mask ([`child`]), so signals
//! the NodeManager was started with ignored still reach containers.
//!
//! **Containment.** Each container is a process group, and in addition:
//! - with a writable cgroup v2 hierarchy ([`cgroups`]; on unless
//!   `spindle.nodemanager.container-cgroups.enabled` is false), a cgroup of
//!   its own, `memory.max` from its resource when
//!   `yarn.nodemanager.resource.memory.enabled` (and `.enforced`, default
//!   true) is set, `cpu.weight` from its vcores when
//!   `yarn.nodemanager.resource.cpu.enabled` is set; every process in it is
//!   killed with the container (whatever it did: `setsid`, double fork,
//!   cleared environment), then the cgroup is removed;
//! - without, its processes are found by the process group and by the
//!   `CONTAINER_ID` and `LOCAL_DIRS` their environment carries
//!   ([`tracking`]): a process that calls `setsid` is still killed; one that
//!   leaves the group *and* clears its environment escapes.
//!
//! When a container ends (exit or kill), whatever is left of it is killed.
//! A pid file per container lets a NodeManager started on the same local
//! dirs after a SIGKILL kill what its predecessor left running before it
//! serves anything. The NodeManager says at start, in one line, which of
//! these applies.

mod cgroups;
mod child;
mod dirs;
mod tracking;
mod users;

use std::collections::{BTreeMap, HashSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use spindle_common::conf::keys::NM_CONTAINER_EXECUTOR_CLASS;
use spindle_common::text::escaped;
use spindle_common::{Configuration, ContainerId, Resource};
use tracing::{info, warn};

pub use cgroups::{CgroupRoot, ContainerCgroup};
pub use tracking::{exit_code_file, pid_file, Marker, NM_PRIVATE};
pub use users::{RunAs, UserRefusal};

use crate::error::NmError;
use crate::launch::ContainerPaths;
use crate::procfs;

/// The keys this module reads besides `yarn.nodemanager.container-executor.class`.
pub mod keys {
    pub const LIMIT_USERS: &str =
        "yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users";
    pub const LOCAL_USER: &str =
        "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user";
    pub const USER_PATTERN: &str =
        "yarn.nodemanager.linux-container-executor.nonsecure-mode.user-pattern";
    /// `container-executor.cfg`'s `banned.users`.
    pub const BANNED_USERS: &str = "yarn.nodemanager.linux-container-executor.banned.users";
    /// `container-executor.cfg`'s `min.user.id`.
    pub const MIN_USER_ID: &str = "yarn.nodemanager.linux-container-executor.min.user.id";
    /// `container-executor.cfg`'s `allowed.system.users`.
    pub const ALLOWED_SYSTEM_USERS: &str =
        "yarn.nodemanager.linux-container-executor.allowed.system.users";
    pub const CGROUPS_HIERARCHY: &str =
        "yarn.nodemanager.linux-container-executor.cgroups.hierarchy";
    pub const CGROUPS_MOUNT_PATH: &str =
        "yarn.nodemanager.linux-container-executor.cgroups.mount-path";
    pub const CGROUPS_V2_MOUNT_PATH: &str =
        "yarn.nodemanager.linux-container-executor.cgroups.v2.mount-path";
    pub const MEMORY_ENABLED: &str = "yarn.nodemanager.resource.memory.enabled";
    pub const MEMORY_ENFORCED: &str = "yarn.nodemanager.resource.memory.enforced";
    pub const CPU_ENABLED: &str = "yarn.nodemanager.resource.cpu.enabled";
    /// Spindle's: a cgroup per container whenever a writable cgroup v2
    /// hierarchy is found (default true).
    pub const CGROUPS_ENABLED: &str = "spindle.nodemanager.container-cgroups.enabled";
}

/// Hadoop's default `nonsecure-mode.user-pattern` (from `/usr/sbin/adduser`).
pub const DEFAULT_USER_PATTERN: &str = "^[_.A-Za-z0-9][-@_.A-Za-z0-9]{0,255}?[$]?$";
/// container-executor's `DEFAULT_BANNED_USERS`.
pub const DEFAULT_BANNED_USERS: [&str; 4] = ["yarn", "mapred", "hdfs", "bin"];
/// container-executor's `DEFAULT_MIN_USERID`.
pub const DEFAULT_MIN_USER_ID: u32 = 1000;

/// Which executor runs containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorKind {
    /// `DefaultContainerExecutor`: as the NodeManager's user.
    Default,
    /// `LinuxContainerExecutor`: as the (mapped) application user.
    Linux,
}

/// cgroup settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupSettings {
    pub enabled: bool,
    /// `…cgroups.hierarchy` (default `/hadoop-yarn`), below the mount.
    pub hierarchy: String,
    /// `…cgroups.v2.mount-path`, else `…cgroups.mount-path`; `None` = find
    /// it in `/proc/self/mountinfo`.
    pub mount_path: Option<PathBuf>,
    /// `memory.max` per container.
    pub memory: bool,
    /// `cpu.weight` per container.
    pub cpu: bool,
}

/// The executor's settings, and what it found at start.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutorConfig {
    pub kind: ExecutorKind,
    /// Kerberos is on (`hadoop.security.authentication=kerberos`): the
    /// LinuxContainerExecutor runs every container as its application's
    /// user and the nonsecure-mode keys do not apply.
    pub secure: bool,
    pub limit_users: bool,
    pub local_user: String,
    pub user_pattern: String,
    pub banned_users: Vec<String>,
    pub min_user_id: u32,
    pub allowed_system_users: Vec<String>,
    pub cgroups: CgroupSettings,
    /// Set by [`prepare`](Self::prepare) at NodeManager start.
    runtime: Option<Runtime>,
}

/// What [`ExecutorConfig::prepare`] found.
#[derive(Debug, Clone, PartialEq)]
struct Runtime {
    nm_gid: u32,
    cgroup: Option<CgroupRoot>,
    local_dirs: Vec<PathBuf>,
    detached: Detached,
    /// With recovery off: the pipe that ties every container to this
    /// process (see [`Lifeline`]).
    lifeline: Option<Lifeline>,
}

/// A pipe whose write end only this NodeManager holds (close-on-exec, so
/// no child inherits it). Each container's wrapper gets the read end and
/// a watchdog that blocks reading it: nothing is ever written, so the read
/// ends only when the write end closes, that is when this process is gone,
/// however it ended (SIGKILL included); the watchdog then kills the
/// container's process group. Used with recovery off, where nobody would
/// ever watch those containers again.
#[derive(Debug, Clone)]
struct Lifeline {
    read: Arc<std::os::fd::OwnedFd>,
    _write: Arc<std::os::fd::OwnedFd>,
}

impl Lifeline {
    fn new() -> std::io::Result<Lifeline> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        Ok(Lifeline {
            read: Arc::new(read),
            _write: Arc::new(write),
        })
    }
}

impl PartialEq for Lifeline {
    fn eq(&self, _: &Lifeline) -> bool {
        true
    }
}

/// Set when the node stops and leaves its containers running (recovery,
/// supervised): a container handle dropped then kills nothing.
#[derive(Debug, Clone, Default)]
struct Detached(Arc<AtomicBool>);

impl Detached {
    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl PartialEq for Detached {
    fn eq(&self, _: &Detached) -> bool {
        true
    }
}

fn optional_bool(conf: &Configuration, key: &str, default: bool) -> Result<bool, NmError> {
    match conf.get_trimmed(key) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok(default),
        Some(_) => Ok(conf.get_bool(key)?),
    }
}

impl ExecutorConfig {
    /// Reads and checks the executor's keys (no I/O).
    pub fn from_conf(conf: &Configuration) -> Result<ExecutorConfig, NmError> {
        let class = conf
            .get_trimmed(NM_CONTAINER_EXECUTOR_CLASS)
            .unwrap_or_default();
        let kind = if class.is_empty() || class.ends_with("DefaultContainerExecutor") {
            ExecutorKind::Default
        } else if class.ends_with("LinuxContainerExecutor") {
            ExecutorKind::Linux
        } else {
            return Err(conf
                .invalid_value(
                    NM_CONTAINER_EXECUTOR_CLASS,
                    "Spindle runs containers with \
                     org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor or \
                     org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
                )
                .into());
        };
        let user_pattern = conf
            .get(keys::USER_PATTERN)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_USER_PATTERN.to_string());
        if let Err(e) = regex::Regex::new(&user_pattern) {
            return Err(conf
                .invalid_value(keys::USER_PATTERN, &format!("is not a valid pattern: {e}"))
                .into());
        }
        let local_user = conf
            .get_trimmed(keys::LOCAL_USER)
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "nobody".to_string());
        let banned_users = match conf.get(keys::BANNED_USERS) {
            Some(_) => conf.get_strings(keys::BANNED_USERS),
            None => DEFAULT_BANNED_USERS.iter().map(|s| s.to_string()).collect(),
        };
        let min_user_id = match conf.get_trimmed(keys::MIN_USER_ID) {
            None => DEFAULT_MIN_USER_ID,
            Some(_) => {
                let n = conf.get_i64(keys::MIN_USER_ID)?;
                u32::try_from(n).map_err(|_| {
                    conf.invalid_value(keys::MIN_USER_ID, "must be a uid (0 to 4294967295)")
                })?
            }
        };
        let mount_path = conf
            .get_trimmed(keys::CGROUPS_V2_MOUNT_PATH)
            .filter(|p| !p.is_empty())
            .or_else(|| {
                conf.get_trimmed(keys::CGROUPS_MOUNT_PATH)
                    .filter(|p| !p.is_empty())
            })
            .map(PathBuf::from);
        let hierarchy = conf
            .get_trimmed(keys::CGROUPS_HIERARCHY)
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "/hadoop-yarn".to_string());
        if hierarchy.contains(',') {
            return Err(conf
                .invalid_value(keys::CGROUPS_HIERARCHY, "cannot contain commas")
                .into());
        }
        Ok(ExecutorConfig {
            kind,
            secure: spindle_ipc::kerberos::enabled(conf).map_err(|m| {
                conf.invalid_value(
                    spindle_common::conf::keys::HADOOP_SECURITY_AUTHENTICATION,
                    &m,
                )
            })?,
            limit_users: optional_bool(conf, keys::LIMIT_USERS, true)?,
            local_user,
            user_pattern,
            banned_users,
            min_user_id,
            allowed_system_users: conf.get_strings(keys::ALLOWED_SYSTEM_USERS),
            cgroups: CgroupSettings {
                enabled: optional_bool(conf, keys::CGROUPS_ENABLED, true)?,
                hierarchy,
                mount_path,
                memory: optional_bool(conf, keys::MEMORY_ENABLED, false)?
                    && optional_bool(conf, keys::MEMORY_ENFORCED, true)?,
                cpu: optional_bool(conf, keys::CPU_ENABLED, false)?,
            },
            runtime: None,
        })
    }

    /// Whether containers run as their (mapped) users.
    pub fn switches_users(&self) -> bool {
        self.kind == ExecutorKind::Linux
    }

    /// The cgroup hierarchy containers run in, once prepared.
    pub fn cgroup_root(&self) -> Option<&CgroupRoot> {
        self.runtime.as_ref().and_then(|r| r.cgroup.as_ref())
    }

    /// The start's step that prepares the executor ([`prepare`](Self::prepare))
    /// on a blocking thread, before anything is served; answers it prepared.
    pub async fn prepare_at_start(
        mut self,
        local_dirs: Vec<PathBuf>,
        log_dirs: Vec<PathBuf>,
        keep: HashSet<String>,
        tie_to_node: bool,
    ) -> Result<ExecutorConfig, NmError> {
        tokio::task::spawn_blocking(move || {
            self.prepare(&local_dirs, &log_dirs, &keep, tie_to_node)
                .map(|()| self)
        })
        .await
        .map_err(|e| NmError::Internal(format!("the container executor's start-up failed: {e}")))?
    }

    /// Start-up: refuses the LinuxContainerExecutor without root, finds the
    /// cgroup hierarchy, logs in one line what is contained and what is
    /// not, and kills what a previous NodeManager on these local dirs left
    /// running. Blocking.
    /// The containers in `keep` (recovered ones) are left alone.
    /// `tie_to_node`: containers die with this process (recovery off).
    pub fn prepare(
        &mut self,
        local_dirs: &[PathBuf],
        log_dirs: &[PathBuf],
        keep: &HashSet<String>,
        tie_to_node: bool,
    ) -> Result<(), NmError> {
        let euid = nix::unistd::geteuid();
        if self.kind == ExecutorKind::Linux && !euid.is_root() {
            return Err(NmError::Config {
                key: NM_CONTAINER_EXECUTOR_CLASS.to_string(),
                message: format!(
                    "the LinuxContainerExecutor runs containers as other users and needs the \
                     NodeManager to run as root (Hadoop's needs its setuid container-executor); \
                     this NodeManager runs as uid {euid} ({}). Start it as root, or use \
                     org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
                    spindle_common::current_user()
                ),
            });
        }
        let (cgroup, why_not) = if self.cgroups.enabled {
            match CgroupRoot::detect(&self.cgroups) {
                Ok((root, notes)) => {
                    for n in notes {
                        warn!("{n}");
                    }
                    (Some(root), String::new())
                }
                Err(why) => (None, why),
            }
        } else {
            (None, format!("{} is false", keys::CGROUPS_ENABLED))
        };
        let who = match self.kind {
            ExecutorKind::Default => format!(
                "DefaultContainerExecutor: containers run as this NodeManager's user ({})",
                spindle_common::current_user()
            ),
            ExecutorKind::Linux if self.secure => {
                "LinuxContainerExecutor in secure mode (Kerberos): containers run as their \
                 application's user"
                    .to_string()
            }
            ExecutorKind::Linux if self.limit_users => format!(
                "LinuxContainerExecutor: containers run as {} ({} is true)",
                self.local_user,
                keys::LIMIT_USERS
            ),
            ExecutorKind::Linux => {
                "LinuxContainerExecutor: containers run as their application's user".to_string()
            }
        };
        match &cgroup {
            Some(root) => info!(
                "{who}; each in a cgroup v2 of its own under {} (memory.max {}, cpu.weight {}): \
                 every process of a container is killed with it",
                root.dir.display(),
                if root.memory { "set" } else { "not set" },
                if root.cpu { "set" } else { "not set" },
            ),
            None => info!(
                "{who}; cgroups v2 not used ({why_not}): container processes are tracked by \
                 process group and by the CONTAINER_ID in their environment; a process that \
                 leaves its group and clears its environment escapes the NodeManager's kill"
            ),
        }
        if self.kind == ExecutorKind::Linux {
            for d in local_dirs.iter().chain(log_dirs) {
                open_to_containers(d);
            }
        }
        let reaped = tracking::reap_orphans(local_dirs, cgroup.as_ref(), keep);
        if let Some(root) = &cgroup {
            let swept = root.sweep_empty(Duration::from_secs(60));
            if swept > 0 {
                info!(
                    cgroups = swept,
                    "removed empty container cgroups left by NodeManagers that were killed"
                );
            }
        }
        if !reaped.is_empty() {
            info!(
                containers = reaped.len(),
                "cleaned up the containers a previous run of this NodeManager left"
            );
        }
        let lifeline = if tie_to_node {
            Some(Lifeline::new().map_err(|e| {
                NmError::Internal(format!("cannot create the containers' lifeline pipe: {e}"))
            })?)
        } else {
            None
        };
        self.runtime = Some(Runtime {
            nm_gid: nix::unistd::getegid().as_raw(),
            cgroup,
            local_dirs: local_dirs.to_vec(),
            detached: Detached::default(),
            lifeline,
        });
        Ok(())
    }

    /// From now on, a container handle that is dropped (the node is going
    /// away) leaves its container running: the node stops under a
    /// supervisor with recovery on, and the next start takes them back.
    pub fn detach_containers(&self) {
        if let Some(r) = &self.runtime {
            r.detached.0.store(true, Ordering::SeqCst);
        }
    }

    fn detached(&self) -> Detached {
        self.runtime
            .as_ref()
            .map(|r| r.detached.clone())
            .unwrap_or_default()
    }

    /// The user `app_user`'s containers run as: `None` with the
    /// DefaultContainerExecutor. Blocking (user database).
    pub fn user_for(&self, app_user: &str) -> Result<Option<RunAs>, UserRefusal> {
        match self.kind {
            ExecutorKind::Default => Ok(None),
            ExecutorKind::Linux => self.run_as(app_user).map(Some),
        }
    }

    /// Creates the container's directories and writes its credentials and
    /// script, owned as the executor wants them. Blocking.
    pub fn prepare_dirs(
        &self,
        paths: &ContainerPaths,
        user: Option<&RunAs>,
        tokens: &[u8],
        script: &str,
    ) -> std::io::Result<()> {
        match user {
            None => dirs::prepare_as_nm(paths, tokens, script),
            Some(u) => {
                let nm_gid = self.runtime.as_ref().map_or(0, |r| r.nm_gid);
                dirs::prepare_as_user(paths, u, nm_gid, tokens, script)
            }
        }
    }

    /// Starts the container's launch script with bash: its own process
    /// group, its cgroup, its user, default signal dispositions, its pid
    /// file.
    pub fn launch(
        &self,
        id: &ContainerId,
        paths: &ContainerPaths,
        env: &BTreeMap<String, String>,
        user: Option<&RunAs>,
        resource: Resource,
    ) -> Result<Launched, String> {
        let local_dirs = self
            .runtime
            .as_ref()
            .map(|r| r.local_dirs.clone())
            .unwrap_or_default();
        let cid = id.to_string();
        let marker = Marker::new(&cid, &local_dirs);
        let pid_file = local_dirs.first().map(|l| pid_file(l, id));
        if let Some(f) = &pid_file {
            if let Err(e) = tracking::write_pid_file(f, None) {
                warn!(container = %id, file = %f.display(), error = %e, "cannot write the pid file");
            }
            if let Some(u) = user {
                if let Err(e) = tracking::exit_code_file_for(f, u.uid, u.gid) {
                    warn!(container = %id, file = %f.display(), error = %e, "cannot prepare the exit code file for the container's user");
                }
            }
        }
        let cgroup = self.cgroup_root().and_then(|root| {
            match root.create(&cid, resource.memory_mb, resource.vcores) {
                Ok(cg) => Some(cg),
                Err(e) => {
                    warn!(container = %id, error = %e, "cannot create the container's cgroup; it runs without one");
                    None
                }
            }
        });
        let procs = match cgroup.as_ref().map(ContainerCgroup::open_procs) {
            Some(Ok(f)) => Some(f),
            Some(Err(e)) => {
                let _ = cgroup.as_ref().map(ContainerCgroup::try_remove);
                let msg = format!("cannot open the cgroup of container {id}: {e}");
                if let Some(f) = &pid_file {
                    tracking::remove_pid_file(f);
                }
                return Err(msg);
            }
            None => None,
        };

        // Hadoop's `default_container_executor.sh`: the script runs under
        // a bash that writes its exit code to `<pid file>.exitcode` (temp
        // file, then rename), so that a NodeManager started after this one
        // died learns how the container ended. The wrapper is the group
        // leader; the signals the node sends the group (SIGTERM, SIGQUIT
        // for a thread dump, ...) reach the container, and the wrapper
        // outlives them to record the script's status. Its traps are reset
        // to the defaults in the script.
        //
        // With recovery off, the wrapper also starts the lifeline's
        // watchdog (`$3`: the read end's descriptor number, inherited only
        // by this child; the script itself does not get it).
        let exit_file = pid_file
            .as_ref()
            .map(|f| tracking::exit_code_file(f).to_string_lossy().into_owned())
            .unwrap_or_default();
        let lifeline = self
            .runtime
            .as_ref()
            .and_then(|r| r.lifeline.as_ref())
            .map(|l| l.read.as_raw_fd());
        let mut cmd = tokio::process::Command::new("/bin/bash");
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("spindle-container-wrapper")
            .arg(paths.script())
            .arg(exit_file)
            .arg(lifeline.map(|fd| fd.to_string()).unwrap_or_default())
            .arg(
                cgroup
                    .as_ref()
                    .and_then(ContainerCgroup::kill_path)
                    .filter(|_| lifeline.is_some())
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            )
            .current_dir(&paths.work_dir)
            .env_clear()
            .envs(env)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0);
        child::ChildSetup {
            cgroup_procs: procs.as_ref().map(|f| f.as_raw_fd()),
            user: user.map(|u| (u.uid, u.gid, u.groups.clone())),
            inherit: lifeline,
        }
        .install(&mut cmd);
        let spawned = cmd.spawn();
        drop(procs);
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                if let Some(cg) = &cgroup {
                    let _ = cg.try_remove();
                }
                if let Some(f) = &pid_file {
                    tracking::remove_pid_file(f);
                }
                let who = user.map(|u| format!(" as {}", u.name)).unwrap_or_default();
                return Err(format!(
                    "cannot run the launch script of container {id} with /bin/bash{who}: {e}"
                ));
            }
        };
        let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
            return Err("the container process vanished at once".into());
        };
        if let Some(f) = &pid_file {
            let _ = tracking::write_pid_file(f, Some(pid));
        }
        Ok(Launched {
            child,
            pid,
            cgroup,
            marker,
            pid_file,
            finished: false,
            detached: self.detached(),
        })
    }
}

impl ExecutorConfig {
    /// Takes back a container a previous run of this NodeManager launched:
    /// its pid file, its cgroup if it has one, its marker. Blocking.
    pub fn reacquire(&self, id: &ContainerId) -> Reacquired {
        let local_dirs = self
            .runtime
            .as_ref()
            .map(|r| r.local_dirs.clone())
            .unwrap_or_default();
        let cid = id.to_string();
        let marker = Marker::new(&cid, &local_dirs);
        let pid_file = local_dirs.first().map(|l| pid_file(l, id));
        let pid = pid_file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| t.trim().parse::<i32>().ok())
            .filter(|p| *p > 0);
        let cgroup = self.cgroup_root().and_then(|root| {
            let dir = root.container_dir(&cid);
            if !dir.is_dir() {
                return None;
            }
            let cg = ContainerCgroup::existing(dir, root.kill_file);
            // A namesake of another node (its processes are not marked as
            // this node's) is not taken.
            let ours = cg.pids().iter().all(|p| {
                procfs::environ(Path::new("/proc"), *p).is_none_or(|env| marker.matches(&env))
            });
            ours.then_some(cg)
        });
        Reacquired {
            id: cid,
            pid,
            cgroup,
            marker,
            pid_file,
            finished: false,
            detached: self.detached(),
        }
    }
}

/// The wrapper around a container's launch script (`$1`) that records its
/// exit code in `$2`: a temp file renamed over it, or, where the wrapper
/// may not create files (it runs as the container's user in root's
/// `nmPrivate`), written into the empty file the node made for it.
///
/// With `$3` (the lifeline's read end, see [`Lifeline`]), a watchdog
/// subshell blocks reading it; when the read ends (end of file: the
/// NodeManager is gone) it kills the container's cgroup through `$4` (its
/// `cgroup.kill`, where it may write it) and the process group. The
/// signals the group gets (trapped again: a subshell does not inherit the
/// wrapper's traps) only interrupt the read; SIGUSR2 from the wrapper, once the script ended,
/// ends the watchdog. The script runs without the descriptor.
const WRAPPER: &str = "trap : INT QUIT TERM; wd=; \
                       if [ -n \"$3\" ]; then \
                       ( trap : INT QUIT TERM; trap 'exit 0' USR2; \
                         while :; do read -r -u \"$3\" _; \
                         rc=$?; [ \"$rc\" -eq 0 ] || [ \"$rc\" -gt 128 ] || \
                         { [ -z \"$4\" ] || echo 1 > \"$4\"; kill -KILL 0; } 2>/dev/null; done ) & \
                       wd=$!; eval \"exec $3<&-\"; fi; \
                       /bin/bash \"$1\"; rc=$?; \
                       if [ -n \"$wd\" ]; then kill -USR2 \"$wd\" 2>/dev/null; fi; \
                       if [ -n \"$2\" ]; then \
                       { echo \"$rc\" > \"$2.tmp\" && /bin/mv -f \"$2.tmp\" \"$2\"; } 2>/dev/null \
                       || echo \"$rc\" > \"$2\"; fi; exit \"$rc\"";

/// Lets container users through a node dir the NodeManager made (they
/// need to traverse it), and warns when an ancestor keeps them out.
fn open_to_containers(dir: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if let Ok(meta) = std::fs::metadata(dir) {
        if meta.uid() == 0 && meta.mode() & 0o005 != 0o005 {
            let mode = (meta.mode() & 0o7777) | 0o755;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
        }
    }
    for ancestor in dir.ancestors().skip(1) {
        if let Ok(meta) = std::fs::metadata(ancestor) {
            if meta.mode() & 0o001 == 0 {
                warn!(
                    dir = %dir.display(),
                    ancestor = %ancestor.display(),
                    mode = format!("{:o}", meta.mode() & 0o7777),
                    "container users cannot reach a NodeManager dir: an ancestor is not \
                     searchable by others"
                );
                return;
            }
        }
    }
}

/// A started container process and everything needed to kill all of it.
pub struct Launched {
    pub child: tokio::process::Child,
    /// The pid of the wrapper that runs the launch script, also the
    /// container's process group id.
    pub pid: i32,
    cgroup: Option<ContainerCgroup>,
    marker: Marker,
    pid_file: Option<PathBuf>,
    finished: bool,
    detached: Detached,
}

impl Launched {
    /// The container's cgroup, if it has one.
    pub fn cgroup(&self) -> Option<&ContainerCgroup> {
        self.cgroup.as_ref()
    }

    /// Sends `signal` to every process of the container: its group, and its
    /// cgroup's processes or, without one, the processes marked as its.
    pub fn signal_all(&self, signal: Signal) {
        let _ = killpg(Pid::from_raw(self.pid), signal);
        match &self.cgroup {
            Some(cg) => cg.signal(signal),
            None => {
                self.marker.signal(signal);
            }
        }
    }

    /// After the launch script has ended (and been reaped): kills whatever
    /// is left of the container, waits until it is gone (at most
    /// `timeout`), removes its cgroup and its pid file.
    pub async fn finish(mut self, timeout: Duration) {
        self.finished = true;
        let id = self.marker_id();
        kill_rest(
            Some(self.pid),
            self.cgroup.take(),
            self.marker.clone(),
            &id,
            timeout,
        )
        .await;
        if let Some(f) = self.pid_file.take() {
            tracking::remove_pid_file(&f);
        }
    }

    fn marker_id(&self) -> String {
        self.pid_file
            .as_ref()
            .and_then(|f| f.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Kills whatever is left of a container whose main process has ended:
/// its process group (`group`, only when it is known to still be the
/// container's), its cgroup (removed) or the processes marked as its; waits
/// at most `timeout`.
async fn kill_rest(
    group: Option<i32>,
    cgroup: Option<ContainerCgroup>,
    marker: Marker,
    id: &str,
    timeout: Duration,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    if let Some(g) = group {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
    let mut left = 0;
    match cgroup {
        Some(cg) => loop {
            cg.kill_all();
            match cg.try_remove() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    warn!(cgroup = %cg.path.display(), error = %e, "cannot remove a container's cgroup");
                    break;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                left = cg.pids().len();
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        },
        None => {
            let killed = tokio::task::spawn_blocking(move || marker.kill_all(timeout))
                .await
                .unwrap_or(0);
            if killed > 0 {
                info!(
                    container = %escaped(id),
                    processes = killed,
                    "killed processes the container left outside its process group"
                );
            }
        }
    }
    if left > 0 {
        warn!(
            container = %escaped(id),
            processes = left,
            "processes of the container are still alive after the kill"
        );
    }
}

/// A container a previous run of this NodeManager started (it was killed
/// with SIGKILL), taken back by the next one with recovery on.
pub struct Reacquired {
    id: String,
    /// The wrapper's pid (the process group id) from the pid file.
    pid: Option<i32>,
    cgroup: Option<ContainerCgroup>,
    marker: Marker,
    pid_file: Option<PathBuf>,
    finished: bool,
    detached: Detached,
}

/// How a reacquired container ended, from its exit code file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedExit {
    Code(i32),
    /// No exit code file: the container was killed with its wrapper, or
    /// never started.
    Missing,
    /// The file does not hold a number.
    Unreadable(String),
}

impl Reacquired {
    /// The pid from the pid file, if any.
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// Whether the wrapper still runs: the pid from the pid file is a live
    /// process that carries this container's marker (a recycled pid, or a
    /// zombie, does not).
    pub fn alive(&self) -> bool {
        self.pid.is_some_and(|p| {
            procfs::environ(Path::new("/proc"), p).is_some_and(|env| self.marker.matches(&env))
        })
    }

    /// Sends `signal` to every process of the container: its group while
    /// the group leader is verified to be the container's, and its cgroup's
    /// processes or, without one, the processes marked as its.
    pub fn signal_all(&self, signal: Signal) {
        if self.alive() {
            if let Some(p) = self.pid {
                let _ = killpg(Pid::from_raw(p), signal);
            }
        }
        match &self.cgroup {
            Some(cg) => cg.signal(signal),
            None => {
                self.marker.signal(signal);
            }
        }
    }

    /// The exit code the wrapper recorded.
    pub fn recorded_exit(&self) -> RecordedExit {
        let Some(f) = &self.pid_file else {
            return RecordedExit::Missing;
        };
        let file = tracking::exit_code_file(f);
        match std::fs::read_to_string(&file) {
            // The file made for a container's user, not written yet.
            Ok(text) if text.trim().is_empty() => RecordedExit::Missing,
            Ok(text) => match text.trim().parse() {
                Ok(code) => RecordedExit::Code(code),
                Err(_) => RecordedExit::Unreadable(format!(
                    "{} holds '{}', not an exit code",
                    file.display(),
                    escaped(text.trim())
                )),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => RecordedExit::Missing,
            Err(e) => RecordedExit::Unreadable(format!("cannot read {}: {e}", file.display())),
        }
    }

    /// Once the wrapper is gone: kills what is left of the container, at
    /// most `timeout`, removes its cgroup, pid file and exit code file.
    pub async fn finish(mut self, timeout: Duration) {
        self.finished = true;
        let group = self.pid.filter(|_| self.alive());
        kill_rest(
            group,
            self.cgroup.take(),
            self.marker.clone(),
            &self.id,
            timeout,
        )
        .await;
        if let Some(f) = self.pid_file.take() {
            tracking::remove_pid_file(&f);
        }
    }
}

impl Drop for Reacquired {
    /// Dropped before [`finish`](Reacquired::finish) (the runtime is going
    /// away): kill everything of the container now, as for a launched one.
    fn drop(&mut self) {
        if self.finished || self.detached.is_set() {
            return;
        }
        self.signal_all(Signal::SIGKILL);
        if let Some(cg) = &self.cgroup {
            for _ in 0..10 {
                cg.kill_all();
                if cg.try_remove().unwrap_or(true) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        } else {
            self.marker.kill_all(Duration::from_secs(1));
        }
    }
}

impl Drop for Launched {
    /// A container task dropped before [`finish`](Launched::finish) (the
    /// runtime is going away): kill everything of the container now.
    fn drop(&mut self) {
        if self.finished || self.detached.is_set() {
            return;
        }
        let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
        match &self.cgroup {
            Some(cg) => {
                // Killed processes leave the cgroup a moment later; the
                // pid file stays for the next start if this is not enough.
                for _ in 0..10 {
                    cg.kill_all();
                    if cg.try_remove().unwrap_or(true) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            None => {
                self.marker.kill_all(Duration::from_secs(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn defaults_are_hadoops() {
        let e = ExecutorConfig::from_conf(&conf(&[])).expect("valid");
        assert_eq!(e.kind, ExecutorKind::Default);
        assert!(e.limit_users);
        assert_eq!(e.local_user, "nobody");
        assert_eq!(e.user_pattern, DEFAULT_USER_PATTERN);
        assert_eq!(e.banned_users, ["yarn", "mapred", "hdfs", "bin"]);
        assert_eq!(e.min_user_id, 1000);
        assert!(e.allowed_system_users.is_empty());
        assert_eq!(
            e.cgroups,
            CgroupSettings {
                enabled: true,
                hierarchy: "/hadoop-yarn".into(),
                mount_path: None,
                memory: false,
                cpu: false,
            }
        );
    }

    #[test]
    fn keys_are_read_and_checked() {
        let e = ExecutorConfig::from_conf(&conf(&[
            (
                NM_CONTAINER_EXECUTOR_CLASS,
                "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
            ),
            (keys::LIMIT_USERS, "false"),
            (keys::BANNED_USERS, "alice, bob"),
            (keys::MIN_USER_ID, "500"),
            (keys::MEMORY_ENABLED, "true"),
            (keys::CPU_ENABLED, "true"),
            (keys::CGROUPS_HIERARCHY, "/spindle"),
            (keys::CGROUPS_V2_MOUNT_PATH, "/sys/fs/cgroup/unified"),
        ]))
        .expect("valid");
        assert_eq!(e.kind, ExecutorKind::Linux);
        assert!(!e.limit_users);
        assert_eq!(e.banned_users, ["alice", "bob"]);
        assert_eq!(e.min_user_id, 500);
        assert!(e.cgroups.memory && e.cgroups.cpu);
        assert_eq!(e.cgroups.hierarchy, "/spindle");
        assert_eq!(
            e.cgroups.mount_path,
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let not_enforced = ExecutorConfig::from_conf(&conf(&[
            (keys::MEMORY_ENABLED, "true"),
            (keys::MEMORY_ENFORCED, "false"),
        ]))
        .expect("valid");
        assert!(!not_enforced.cgroups.memory);

        for (key, value) in [
            (NM_CONTAINER_EXECUTOR_CLASS, "org.example.DockerExecutor"),
            (keys::USER_PATTERN, "(unclosed"),
            (keys::MIN_USER_ID, "-1"),
            (keys::LIMIT_USERS, "maybe"),
            (keys::CGROUPS_HIERARCHY, "/a,b"),
        ] {
            let err = ExecutorConfig::from_conf(&conf(&[(key, value)]))
                .expect_err(value)
                .to_string();
            assert!(err.contains(key), "{err}");
        }
    }
}
