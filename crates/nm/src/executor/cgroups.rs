//! cgroup v2: a cgroup per container under the configured hierarchy, with
//! `memory.max` and `cpu.weight` when their enforcement is on, killed whole
//! (`cgroup.kill`, else every pid of `cgroup.procs` until it is empty) and
//! removed when the container ends.
//!
//! Hadoop's keys as they apply to v2: the cgroup of a container is
//! `<mount>/<yarn.nodemanager.linux-container-executor.cgroups.hierarchy>/<container id>`;
//! the mount is `...cgroups.v2.mount-path`, else `...cgroups.mount-path` when
//! that is a v2 hierarchy, else the first `cgroup2` mount of
//! `/proc/self/mountinfo`. The hierarchy is created if missing and must be
//! writable by the NodeManager (root, or delegated to its user as Hadoop
//! requires). Nothing is mounted.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::CgroupSettings;

/// A usable cgroup v2 hierarchy for containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupRoot {
    /// Where cgroup2 is mounted.
    pub mount: PathBuf,
    /// The containers' parent cgroup.
    pub dir: PathBuf,
    /// `memory.max` is set on each container.
    pub memory: bool,
    /// `cpu.weight` is set on each container.
    pub cpu: bool,
    /// The kernel has `cgroup.kill` (Linux 5.14+).
    pub kill_file: bool,
}

/// The result of looking for a hierarchy: the root, and what could not be
/// had (e.g. a controller bound to cgroup v1).
pub type Detected = (CgroupRoot, Vec<String>);

impl CgroupRoot {
    /// Finds the cgroup2 mount, creates the hierarchy and enables the
    /// controllers that enforcement needs. `Err` says why cgroups cannot be
    /// used.
    pub fn detect(s: &CgroupSettings) -> Result<Detected, String> {
        let mount = match &s.mount_path {
            Some(p) => p.clone(),
            None => find_cgroup2_mount()
                .ok_or_else(|| "no cgroup2 file system is mounted".to_string())?,
        };
        if !mount.join("cgroup.controllers").is_file() {
            return Err(format!(
                "{} is not a cgroup v2 hierarchy (it has no cgroup.controllers)",
                mount.display()
            ));
        }
        let relative = s.hierarchy.trim_matches('/');
        if relative.is_empty() || relative.split('/').any(|c| c == "..") {
            return Err(format!(
                "the cgroups hierarchy '{}' must name a cgroup below the mount",
                s.hierarchy
            ));
        }
        let dir = mount.join(relative);
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // A probe child shows that the NodeManager may create and remove
        // cgroups there, and whether the kernel has cgroup.kill.
        let probe = dir.join(format!("spindle-probe-{}", std::process::id()));
        match fs::create_dir(&probe) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{} is not writable: {e}", dir.display())),
        }
        let kill_file = probe.join("cgroup.kill").exists();
        let _ = fs::remove_dir(&probe);

        let mut notes = Vec::new();
        let available = fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        let mut enable = |name: &str, wanted: bool| -> bool {
            if !wanted {
                return false;
            }
            if !available.split_whitespace().any(|c| c == name) {
                notes.push(format!(
                    "the {name} controller is not available in the cgroup v2 hierarchy at {} \
                     (bound to cgroup v1?)",
                    mount.display()
                ));
                return false;
            }
            match enable_controller(&mount, &dir, name) {
                Ok(()) => true,
                Err(e) => {
                    notes.push(format!(
                        "cannot enable the {name} controller for {}: {e}",
                        dir.display()
                    ));
                    false
                }
            }
        };
        let memory = enable("memory", s.memory);
        let cpu = enable("cpu", s.cpu);
        Ok((
            CgroupRoot {
                mount,
                dir,
                memory,
                cpu,
                kill_file,
            },
            notes,
        ))
    }

    /// Removes container cgroups under the hierarchy that have been empty
    /// since at least `age` after their creation: left by a NodeManager
    /// that was killed, whose local dirs (and pid files) are gone. A live
    /// container's cgroup has its process moments after it is made, so an
    /// old empty one is nobody's. Returns how many were removed.
    pub(super) fn sweep_empty(&self, age: std::time::Duration) -> usize {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut removed = 0;
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name();
            if !name.to_string_lossy().starts_with("container_") {
                continue;
            }
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|elapsed| elapsed >= age);
            let cg = ContainerCgroup::existing(e.path(), self.kill_file);
            if old && cg.pids().is_empty() && fs::remove_dir(e.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// The cgroup of a container.
    pub fn container_dir(&self, container: &str) -> PathBuf {
        self.dir.join(container)
    }

    /// Creates the cgroup of `container` with its limits. A cgroup of that
    /// name that exists already is not used: it is another node's (the
    /// start-up reaper removed this node's leftovers).
    pub(super) fn create(
        &self,
        container: &str,
        memory_mb: i64,
        vcores: i32,
    ) -> io::Result<ContainerCgroup> {
        let cg = ContainerCgroup {
            path: self.container_dir(container),
            kill_file: self.kill_file,
        };
        fs::create_dir(&cg.path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", cg.path.display())))?;
        for (file, value) in self.limits(memory_mb, vcores) {
            write_value(&cg.path.join(file), &value)?;
        }
        Ok(cg)
    }

    /// The interface files a container's cgroup gets and their values:
    /// `memory.max` (bytes) when memory is enforced and the container has
    /// some, `cpu.weight` when CPU is (Hadoop's
    /// `CGroupsV2CpuResourceHandlerImpl`: 100 per vcore, at most 10000).
    fn limits(&self, memory_mb: i64, vcores: i32) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.memory && memory_mb > 0 {
            out.push(("memory.max", (memory_mb << 20).to_string()));
        }
        if self.cpu {
            let weight = (i64::from(vcores.max(1)) * 100).min(10_000);
            out.push(("cpu.weight", weight.to_string()));
        }
        out
    }
}

/// One container's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerCgroup {
    pub path: PathBuf,
    kill_file: bool,
}

impl ContainerCgroup {
    /// An existing cgroup (e.g. one left by a previous run).
    pub(super) fn existing(path: PathBuf, kill_file: bool) -> ContainerCgroup {
        ContainerCgroup { path, kill_file }
    }

    /// `cgroup.procs`, opened for the child to write itself into.
    pub(super) fn open_procs(&self) -> io::Result<fs::File> {
        fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.procs"))
    }

    /// The processes in the cgroup now.
    pub fn pids(&self) -> Vec<i32> {
        fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Sends `signal` to every process in the cgroup.
    pub(super) fn signal(&self, signal: Signal) {
        for pid in self.pids() {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }

    /// SIGKILL for every process in the cgroup, including those forked
    /// while it runs (`cgroup.kill`); without `cgroup.kill`, each pid read.
    pub(super) fn kill_all(&self) {
        if self.kill_file && write_value(&self.path.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        self.signal(Signal::SIGKILL);
    }

    /// The `cgroup.kill` file, where the kernel has one.
    pub(super) fn kill_path(&self) -> Option<PathBuf> {
        self.kill_file.then(|| self.path.join("cgroup.kill"))
    }

    /// Removes the cgroup if it has no processes left.
    pub(super) fn try_remove(&self) -> io::Result<bool> {
        if !self.pids().is_empty() {
            return Ok(false);
        }
        match fs::remove_dir(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
            // Exiting processes leave a moment after cgroup.procs is empty.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn write_value(path: &Path, value: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

/// Enables `controller` in `cgroup.subtree_control` from the mount down to
/// `dir`, so that `dir`'s children have it.
fn enable_controller(mount: &Path, dir: &Path, controller: &str) -> io::Result<()> {
    let relative = dir.strip_prefix(mount).unwrap_or(Path::new(""));
    let mut at = mount.to_path_buf();
    let mut chain = vec![at.clone()];
    for c in relative.components() {
        at.push(c);
        chain.push(at.clone());
    }
    for cg in chain {
        let enabled = fs::read_to_string(cg.join("cgroup.subtree_control")).unwrap_or_default();
        if enabled.split_whitespace().any(|c| c == controller) {
            continue;
        }
        write_value(
            &cg.join("cgroup.subtree_control"),
            &format!("+{controller}"),
        )?;
    }
    Ok(())
}

/// The mount point of the first cgroup2 file system in
/// `/proc/self/mountinfo`, preferring `/sys/fs/cgroup`.
pub(super) fn find_cgroup2_mount() -> Option<PathBuf> {
    let text = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mounts = cgroup2_mounts(&text);
    mounts
        .iter()
        .find(|m| m.as_path() == Path::new("/sys/fs/cgroup"))
        .or_else(|| mounts.first())
        .cloned()
}

/// The mount points of cgroup2 file systems in a mountinfo text.
fn cgroup2_mounts(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fstype = right.split_whitespace().next()?;
            if fstype != "cgroup2" {
                return None;
            }
            let mount_point = left.split_whitespace().nth(4)?;
            Some(PathBuf::from(unescape_mount(mount_point)))
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape_mount(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|_| bytes[i] == b'\\')
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        match octal {
            Some(v) => {
                out.push(v);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(memory: bool, cpu: bool) -> CgroupRoot {
        CgroupRoot {
            mount: PathBuf::from("/sys/fs/cgroup"),
            dir: PathBuf::from("/sys/fs/cgroup/hadoop-yarn"),
            memory,
            cpu,
            kill_file: true,
        }
    }

    /// What a container's cgroup is given, by what is enforced: memory in
    /// bytes, CPU as Hadoop's weight (100 per vcore, capped at 10000).
    #[test]
    fn container_limits_follow_what_is_enforced() {
        assert!(root(false, false).limits(2048, 2).is_empty());
        assert_eq!(
            root(true, false).limits(2048, 2),
            vec![("memory.max", (2048u64 << 20).to_string())]
        );
        assert_eq!(
            root(false, true).limits(2048, 3),
            vec![("cpu.weight", "300".to_string())]
        );
        assert_eq!(
            root(true, true).limits(1, 0),
            vec![
                ("memory.max", "1048576".to_string()),
                ("cpu.weight", "100".to_string())
            ]
        );
        assert_eq!(
            root(false, true).limits(1024, 500),
            vec![("cpu.weight", "10000".to_string())]
        );
        // A container without memory gets no memory.max (not 0, which
        // would kill it at once).
        assert!(root(true, false).limits(0, 1).is_empty());
    }

    #[test]
    fn mountinfo_cgroup2_mounts() {
        let text = "\
35 24 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 24 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
37 24 0:32 / /mnt/cg\\040two rw,relatime shared:9 - cgroup2 none rw
";
        assert_eq!(
            cgroup2_mounts(text),
            vec![
                PathBuf::from("/sys/fs/cgroup/unified"),
                PathBuf::from("/mnt/cg two")
            ]
        );
        assert_eq!(unescape_mount("a\\134b"), "a\\b");
        assert_eq!(unescape_mount("end\\"), "end\\");
    }
}
