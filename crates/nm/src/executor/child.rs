//! What a container's process does between `fork` and `exec`: the only
//! unsafe code of the NodeManager.
//!
//! The closure runs in the forked child of a multi-threaded process, so it
//! may only call async-signal-safe functions (signal-safety(7)) and must not
//! allocate: it uses memory prepared before the fork and raw system calls.
//! In order:
//! 1. every signal disposition back to its default and an empty signal
//!    mask, so that signals the NodeManager was started with ignored
//!    (SIGINT and SIGQUIT from a non-interactive shell's `&`) or blocked
//!    reach the container as they would a fresh process;
//! 2. the process moves itself into its container's cgroup (`0` written to
//!    the already opened `cgroup.procs`), so that everything it starts is
//!    in the cgroup from its first instruction;
//! 3. as the LinuxContainerExecutor's container-executor does: the user's
//!    groups (`setgroups`, the list `initgroups` would set, read before the
//!    fork), then `setgid`, then `setuid`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

/// What the child does before `exec`.
#[derive(Debug, Default)]
pub(super) struct ChildSetup {
    /// An open, writable `cgroup.procs` of the container's cgroup.
    pub(super) cgroup_procs: Option<RawFd>,
    /// uid, gid and groups to switch to.
    pub(super) user: Option<(u32, u32, Vec<libc::gid_t>)>,
    /// A close-on-exec descriptor this child keeps across exec, under the
    /// same number.
    pub(super) inherit: Option<RawFd>,
}

impl ChildSetup {
    /// Registers the setup on `cmd`. Any file descriptor in it must stay
    /// open until `spawn` returns.
    pub(super) fn install(self, cmd: &mut tokio::process::Command) {
        // SAFETY: `pre_exec` closures run in the child after `fork`; `apply`
        // calls only async-signal-safe functions (sigemptyset, sigaction,
        // sigprocmask, write, setgroups, setgid, setuid), reads memory
        // captured before the fork without allocating, and reports errors
        // as `io::Error::last_os_error()`, which does not allocate.
        unsafe {
            cmd.pre_exec(move || self.apply());
        }
    }

    fn apply(&self) -> io::Result<()> {
        reset_signals()?;
        if let Some(fd) = self.cgroup_procs {
            join_cgroup(fd)?;
        }
        if let Some((uid, gid, groups)) = &self.user {
            switch_user(*uid, *gid, groups)?;
        }
        if let Some(fd) = self.inherit {
            keep_across_exec(fd)?;
        }
        Ok(())
    }
}

/// Clears `FD_CLOEXEC` on `fd` (in the child only: the descriptor table
/// is the child's own copy).
fn keep_across_exec(fd: RawFd) -> io::Result<()> {
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Default dispositions for every signal, and no signal blocked.
fn reset_signals() -> io::Result<()> {
    // SAFETY: a zeroed `sigaction` is a valid value (no flags, empty mask,
    // handler 0 = SIG_DFL); `sigemptyset` initialises the mask it is given.
    // `sigaction` and `sigprocmask` only read the structures passed by
    // pointer, which live on this stack frame. Signals the kernel refuses to
    // change (SIGKILL, SIGSTOP, the two the C library reserves) fail with
    // EINVAL, which is ignored.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in 1..65 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Moves this process into the cgroup whose `cgroup.procs` is `fd`.
fn join_cgroup(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is open for the whole fork-exec (the parent keeps it until
    // `spawn` returns); the buffer is a static byte string.
    let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    if written != 1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Groups, group, then user, as container-executor's `set_user` and
/// `change_user` do; `setuid` as root changes the real, effective and saved
/// ids, so root cannot be regained.
fn switch_user(uid: u32, gid: u32, groups: &[libc::gid_t]) -> io::Result<()> {
    // SAFETY: `groups` points at `groups.len()` initialised gids allocated
    // before the fork; the other calls take plain integers.
    unsafe {
        if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::setgid(gid) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::setuid(uid) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
