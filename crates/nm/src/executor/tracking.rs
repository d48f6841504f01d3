//! Finding a container's processes when they are not (only) in its process
//! group: the environment the NodeManager gave them, and pid files that
//! outlive the NodeManager.
//!
//! Every container process starts with `CONTAINER_ID` and `LOCAL_DIRS` set
//! by this node (Hadoop's launch contract); a process of *this* node's
//! container has its id in the first and one of this node's local dirs in
//! the second, so two NodeManagers on one machine never take each other's
//! processes. `setsid` keeps the environment: such a process is found and
//! killed. A process that also clears or rewrites its environment is found
//! only through the container's cgroup.
//!
//! Each launched container has a pid file, Hadoop's
//! `<local-dir>/nmPrivate/<app>/<container>/<container>.pid`, written before
//! the process starts (empty) and after (its pid), removed once everything
//! of the container is gone. A NodeManager killed with SIGKILL leaves them
//! behind; the next one started on the same local dirs kills what is left of
//! those containers before it serves anything.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use spindle_common::text::escaped;
use spindle_common::ContainerId;
use tracing::{info, warn};

use super::cgroups::{CgroupRoot, ContainerCgroup};
use crate::procfs;

const PROC: &str = "/proc";
/// The NodeManager's private dir under each local dir, as Hadoop names it.
pub const NM_PRIVATE: &str = "nmPrivate";

/// What marks the processes of one container of this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    container: String,
    /// This node's local dirs, each ending with `/`.
    local_dirs: Vec<String>,
}

impl Marker {
    pub fn new(container: &str, local_dirs: &[PathBuf]) -> Marker {
        Marker {
            container: container.to_string(),
            local_dirs: local_dirs
                .iter()
                .map(|d| format!("{}/", d.to_string_lossy().trim_end_matches('/')))
                .collect(),
        }
    }

    /// Whether an environment block belongs to this container.
    pub fn matches(&self, environ: &[u8]) -> bool {
        if procfs::env_value(environ, "CONTAINER_ID") != Some(self.container.as_bytes()) {
            return false;
        }
        let Some(dirs) = procfs::env_value(environ, "LOCAL_DIRS") else {
            return false;
        };
        dirs.split(|b| *b == b',').any(|d| {
            self.local_dirs
                .iter()
                .any(|mine| d.starts_with(mine.as_bytes()))
        })
    }

    /// The live processes that carry this marker, except this process.
    pub fn pids(&self) -> Vec<i32> {
        let me = std::process::id() as i32;
        procfs::pids(Path::new(PROC))
            .into_iter()
            .filter(|p| *p != me)
            .filter(|p| procfs::environ(Path::new(PROC), *p).is_some_and(|env| self.matches(&env)))
            .collect()
    }

    /// Sends `signal` to every marked process; returns how many there were.
    pub fn signal(&self, signal: Signal) -> usize {
        let pids = self.pids();
        for p in &pids {
            let _ = kill(Pid::from_raw(*p), signal);
        }
        pids.len()
    }

    /// SIGKILL for marked processes until none is left (a process may fork
    /// while it is being killed), at most `deadline`. Returns how many were
    /// killed.
    pub fn kill_all(&self, deadline: Duration) -> usize {
        let until = Instant::now() + deadline;
        let mut killed = 0;
        loop {
            let n = self.signal(Signal::SIGKILL);
            killed += n;
            if n == 0 || Instant::now() >= until {
                return killed;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Hadoop's pid file of a container under `local_dir`.
pub fn pid_file(local_dir: &Path, container: &ContainerId) -> PathBuf {
    let id = container.to_string();
    local_dir
        .join(NM_PRIVATE)
        .join(container.app().to_string())
        .join(&id)
        .join(format!("{id}.pid"))
}

/// Writes the pid file (empty before the process exists), owner-only.
pub fn write_pid_file(path: &Path, pid: Option<i32>) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let tmp = path.with_extension("pid.tmp");
    {
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        if let Some(pid) = pid {
            write!(f, "{pid}")?;
        }
    }
    fs::rename(&tmp, path)
}

/// Where the container's wrapper writes its exit code: Hadoop's
/// `<pid file>.exitcode` (`ContainerLaunch.getExitCodeFile`).
pub fn exit_code_file(pid_file: &Path) -> PathBuf {
    let mut s = pid_file.as_os_str().to_os_string();
    s.push(".exitcode");
    PathBuf::from(s)
}

/// For a container that runs as another user (who cannot create files in
/// root's `nmPrivate`): an empty exit code file the user may write, and the
/// dirs down to it searchable (not readable) by others. Only pid files
/// (root's, 0600) and these files live there.
pub fn exit_code_file_for(pid_file: &Path, uid: u32, gid: u32) -> io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = exit_code_file(pid_file);
    let _ = fs::remove_file(&file);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&file)?;
    nix::unistd::chown(
        &file,
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(gid)),
    )
    .map_err(io::Error::from)?;
    // <local-dir>/nmPrivate/<app>/<container>
    for dir in pid_file.ancestors().skip(1).take(3) {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o711))?;
    }
    Ok(())
}

/// Removes a pid file, its exit code file and its container dir (and the
/// app dir once empty).
pub fn remove_pid_file(path: &Path) {
    let _ = fs::remove_file(path);
    let code = exit_code_file(path);
    let _ = fs::remove_file(&code);
    let _ = fs::remove_file(code.with_extension("exitcode.tmp"));
    if let Some(container_dir) = path.parent() {
        let _ = fs::remove_dir(container_dir);
        if let Some(app_dir) = container_dir.parent() {
            let _ = fs::remove_dir(app_dir);
        }
    }
}

/// The pid files left under this node's local dirs: (container id, file).
fn leftover_pid_files(local_dirs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for l in local_dirs {
        let Ok(apps) = fs::read_dir(l.join(NM_PRIVATE)) else {
            continue;
        };
        for app in apps.filter_map(|e| e.ok()) {
            let Ok(containers) = fs::read_dir(app.path()) else {
                continue;
            };
            for c in containers.filter_map(|e| e.ok()) {
                let id = c.file_name().to_string_lossy().into_owned();
                let file = c.path().join(format!("{id}.pid"));
                if id.starts_with("container_") && file.is_file() {
                    out.push((id, file));
                }
            }
        }
    }
    out
}

/// Kills what is left of the containers of a previous run of a NodeManager
/// on these local dirs (their pid files are still there), and cleans up
/// their cgroups and pid files, except those in `keep` (recovered
/// containers, taken back instead). Returns the containers reaped.
pub fn reap_orphans(
    local_dirs: &[PathBuf],
    cgroups: Option<&CgroupRoot>,
    keep: &HashSet<String>,
) -> Vec<String> {
    let mut reaped = Vec::new();
    for (id, file) in leftover_pid_files(local_dirs) {
        if keep.contains(&id) {
            continue;
        }
        let marker = Marker::new(&id, local_dirs);
        let mut killed = 0;
        if let Some(root) = cgroups {
            let dir = root.container_dir(&id);
            if dir.is_dir() {
                let cg = ContainerCgroup::existing(dir, root.kill_file);
                let pids = cg.pids();
                // Only a cgroup whose processes are all this node's (or that
                // is empty) is killed whole; a namesake of another node is
                // left alone.
                let ours = pids.iter().all(|p| {
                    procfs::environ(Path::new(PROC), *p).is_none_or(|env| marker.matches(&env))
                });
                if ours {
                    killed += pids.len();
                    let until = Instant::now() + Duration::from_secs(5);
                    loop {
                        cg.kill_all();
                        if cg.try_remove().unwrap_or(false) || Instant::now() >= until {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
        killed += marker.kill_all(Duration::from_secs(5));
        let pid = fs::read_to_string(&file).unwrap_or_default();
        if killed > 0 {
            warn!(
                container = %escaped(&id),
                pid = %escaped(pid.trim()),
                processes = killed,
                "killed what was left of a container of a previous run of this NodeManager"
            );
        } else {
            info!(container = %escaped(&id), "a container of a previous run had already ended");
        }
        remove_pid_file(&file);
        reaped.push(id);
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_needs_the_id_and_one_of_this_nodes_dirs() {
        let m = Marker::new(
            "container_1_0001_01_000002",
            &[
                PathBuf::from("/data/1/yarn/"),
                PathBuf::from("/data/2/yarn"),
            ],
        );
        let env = |id: &str, dirs: &str| format!("A=1\0CONTAINER_ID={id}\0LOCAL_DIRS={dirs}\0");
        let mine = "/data/2/yarn/usercache/u/appcache/application_1_0001";
        assert!(m.matches(env("container_1_0001_01_000002", mine).as_bytes()));
        assert!(m.matches(
            env(
                "container_1_0001_01_000002",
                &format!("/elsewhere/x,{mine}")
            )
            .as_bytes()
        ));
        // Another container, another node's dirs, a prefix that is not a dir.
        assert!(!m.matches(env("container_1_0001_01_000003", mine).as_bytes()));
        assert!(!m.matches(env("container_1_0001_01_000002", "/data/3/yarn/x").as_bytes()));
        assert!(!m.matches(env("container_1_0001_01_000002", "/data/1/yarnx/u").as_bytes()));
        assert!(!m.matches(b"CONTAINER_ID=container_1_0001_01_000002\0"));
        assert_eq!(procfs::env_value(b"A=1\0AB=2\0", "AB"), Some(&b"2"[..]));
        assert_eq!(procfs::env_value(b"A=1\0AB=2\0", "B"), None);
    }

    #[test]
    fn pid_files_follow_hadoops_layout_and_are_found_again() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let id: ContainerId = "container_1795326004599_0007_01_000003"
            .parse()
            .expect("id");
        let f = pid_file(tmp.path(), &id);
        assert_eq!(
            f,
            tmp.path().join(
                "nmPrivate/application_1795326004599_0007/container_1795326004599_0007_01_000003/\
                 container_1795326004599_0007_01_000003.pid"
            )
        );
        write_pid_file(&f, None).expect("write");
        write_pid_file(&f, Some(4242)).expect("rewrite");
        assert_eq!(fs::read_to_string(&f).expect("read"), "4242");
        assert_eq!(
            leftover_pid_files(&[tmp.path().to_path_buf()]),
            vec![(id.to_string(), f.clone())]
        );
        remove_pid_file(&f);
        assert!(leftover_pid_files(&[tmp.path().to_path_buf()]).is_empty());
        assert!(!tmp
            .path()
            .join("nmPrivate/application_1795326004599_0007")
            .exists());
    }
}
