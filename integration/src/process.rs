//! Child processes: long-running daemons whose output goes to log files, and short
//! commands run to completion under a timeout.

use std::fmt;
use std::fs::File;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// How often a waiting loop looks at a child again.
const CHILD_POLL: Duration = Duration::from_millis(20);

/// Sends `signal` (a name such as `KILL` or `TERM`) to the process group `pgid`.
/// Returns false if the `kill` command could not be run or reported an error (for
/// example because the group no longer exists).
fn signal_group(pgid: u32, signal: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{pgid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A daemon started in its own process group, with stdout and stderr captured in files.
/// Dropping it kills the whole group and reaps the child.
#[derive(Debug)]
pub struct DaemonProcess {
    name: String,
    child: Child,
    stdout_path: PathBuf,
    stderr_path: PathBuf,
    exit: Option<ExitStatus>,
}

impl DaemonProcess {
    /// Starts `command` as a new process group leader, sending its output to
    /// `<log_dir>/<name>.stdout` and `<log_dir>/<name>.stderr`.
    pub fn spawn(name: &str, mut command: Command, log_dir: &Path) -> anyhow::Result<Self> {
        let stdout_path = log_dir.join(format!("{name}.stdout"));
        let stderr_path = log_dir.join(format!("{name}.stderr"));
        let stdout = File::create(&stdout_path)
            .with_context(|| format!("creating {}", stdout_path.display()))?;
        let stderr = File::create(&stderr_path)
            .with_context(|| format!("creating {}", stderr_path.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("starting {name}: {command:?}"))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            stdout_path,
            stderr_path,
            exit: None,
        })
    }

    /// The name given at spawn time (also the stem of its log files).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The operating-system process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Path of the file that receives the process's stdout.
    pub fn stdout_path(&self) -> &Path {
        &self.stdout_path
    }

    /// Path of the file that receives the process's stderr.
    pub fn stderr_path(&self) -> &Path {
        &self.stderr_path
    }

    /// The exit status if the process has ended, without blocking.
    pub fn try_exit_status(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        if self.exit.is_none() {
            self.exit = self
                .child
                .try_wait()
                .with_context(|| format!("checking whether {} is still running", self.name))?;
        }
        Ok(self.exit)
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> anyhow::Result<bool> {
        Ok(self.try_exit_status()?.is_none())
    }

    /// Kills the process group with SIGKILL (no chance to clean up, as on a machine
    /// crash) and reaps the child.
    pub fn kill(&mut self) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.try_exit_status()? {
            // The leader is gone; its group may still hold children (containers).
            signal_group(self.pid(), "KILL");
            return Ok(status);
        }
        if !signal_group(self.pid(), "KILL") {
            // Fall back to the leader alone.
            self.child
                .kill()
                .with_context(|| format!("killing {}", self.name))?;
        }
        self.wait()
    }

    /// Sends `signal` (a name such as `INT`) to the process itself, not its group.
    pub fn signal(&mut self, signal: &str) -> anyhow::Result<()> {
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            bail!(
                "could not send SIG{signal} to {} ({})",
                self.name,
                self.pid()
            );
        }
        Ok(())
    }

    /// Asks the process group to stop with SIGTERM, waits up to `grace`, then kills it.
    /// Returns the exit status and whether the process stopped within the grace period.
    pub fn terminate(&mut self, grace: Duration) -> anyhow::Result<(ExitStatus, bool)> {
        if let Some(status) = self.try_exit_status()? {
            return Ok((status, true));
        }
        signal_group(self.pid(), "TERM");
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.try_exit_status()? {
                return Ok((status, true));
            }
            thread::sleep(CHILD_POLL);
        }
        Ok((self.kill()?, false))
    }

    fn wait(&mut self) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.exit {
            return Ok(status);
        }
        let status = self
            .child
            .wait()
            .with_context(|| format!("waiting for {} to exit", self.name))?;
        self.exit = Some(status);
        Ok(status)
    }

    /// Whether the process has printed `needle` so far, on stdout or stderr.
    pub fn printed(&self, needle: &str) -> bool {
        [&self.stdout_path, &self.stderr_path].iter().any(|p| {
            std::fs::read(p).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
        })
    }

    /// The last `max_lines` lines of stdout and of stderr, labelled, for failure reports.
    pub fn log_tail(&self, max_lines: usize) -> String {
        let mut out = String::new();
        for (label, path) in [("stdout", &self.stdout_path), ("stderr", &self.stderr_path)] {
            out.push_str(&format!(
                "----- {} {} ({}) -----\n",
                self.name,
                label,
                path.display()
            ));
            match std::fs::read(path) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    let lines: Vec<&str> = text.lines().collect();
                    let start = lines.len().saturating_sub(max_lines);
                    if start > 0 {
                        out.push_str(&format!("[... {start} earlier lines ...]\n"));
                    }
                    for line in &lines[start..] {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                Err(e) => out.push_str(&format!("[cannot read: {e}]\n")),
            }
        }
        out
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; the group is gone either way or the test
        // run's own process cleanup takes over.
        let _ = self.kill();
    }
}

/// What a command run to completion printed, and how it ended.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// The command line, for messages.
    pub command: String,
    /// The exit code; `None` when the process was ended by a signal (or the timeout).
    pub status: Option<i32>,
    /// The signal that ended the process, if any.
    pub signal: Option<i32>,
    /// True when the command ran past its timeout and was killed.
    pub timed_out: bool,
    /// Everything written to stdout (lossily decoded as UTF-8).
    pub stdout: String,
    /// Everything written to stderr (lossily decoded as UTF-8).
    pub stderr: String,
}

impl CliOutput {
    /// True when the command exited by itself with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0) && !self.timed_out
    }

    /// Panics with the full output unless the command succeeded.
    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert!(self.success(), "command failed:\n{self}");
        self
    }

    /// Panics with the full output unless the command exited by itself with a
    /// non-zero status (a timeout or a signal is not the failure a test asks for).
    #[track_caller]
    pub fn assert_exit_failure(&self) -> &Self {
        assert!(
            !self.timed_out && matches!(self.status, Some(code) if code != 0),
            "expected the command to exit with a non-zero status:\n{self}"
        );
        self
    }

    /// Panics with the full output unless stdout contains `needle`.
    #[track_caller]
    pub fn assert_stdout_contains(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "expected stdout to contain {needle:?}:\n{self}"
        );
        self
    }
}

impl fmt::Display for CliOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "$ {}", self.command)?;
        match (self.timed_out, self.status, self.signal) {
            (true, _, _) => writeln!(f, "(timed out and killed)")?,
            (false, Some(code), _) => writeln!(f, "(exit status {code})")?,
            (false, None, Some(sig)) => writeln!(f, "(killed by signal {sig})")?,
            (false, None, None) => writeln!(f, "(ended without a status)")?,
        }
        writeln!(f, "----- stdout -----")?;
        f.write_str(&self.stdout)?;
        if !self.stdout.ends_with('\n') {
            writeln!(f)?;
        }
        writeln!(f, "----- stderr -----")?;
        f.write_str(&self.stderr)?;
        if !self.stderr.ends_with('\n') {
            writeln!(f)?;
        }
        writeln!(f, "------------------")
    }
}

/// Runs `command` to completion, capturing its output; kills its whole process group
/// if it runs longer than `timeout`.
pub fn run_with_timeout(command: Command, timeout: Duration) -> anyhow::Result<CliOutput> {
    run_with_input(command, timeout, None)
}

/// [`run_with_timeout`], with `input` written to the command's standard input
/// (then closed); `None`: no input at all.
pub fn run_with_input(
    mut command: Command,
    timeout: Duration,
    input: Option<&[u8]>,
) -> anyhow::Result<CliOutput> {
    let description = describe(&command);
    command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {description}"))?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let input = input.to_vec();
        // A writer of its own: a child that does not read cannot block us.
        thread::spawn(move || {
            use std::io::Write as _;
            let _ = stdin.write_all(&input);
        });
    }
    let stdout_reader = spawn_reader(child.stdout.take());
    let stderr_reader = spawn_reader(child.stderr.take());

    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .with_context(|| format!("waiting for {description}"))?
        {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            if !signal_group(child.id(), "KILL") {
                let _ = child.kill();
            }
            break child
                .wait()
                .with_context(|| format!("reaping {description} after its timeout"))?;
        }
        thread::sleep(CHILD_POLL);
    };
    // The group may hold children that still keep the pipes open; end them too.
    signal_group(child.id(), "KILL");
    let stdout = join_reader(stdout_reader);
    let stderr = join_reader(stderr_reader);
    Ok(CliOutput {
        command: description,
        status: status.code(),
        signal: status.signal(),
        timed_out,
        stdout,
        stderr,
    })
}

fn spawn_reader<R: std::io::Read + Send + 'static>(
    pipe: Option<R>,
) -> Option<thread::JoinHandle<Vec<u8>>> {
    pipe.map(|mut pipe| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            // A read error ends the capture; whatever arrived before it is kept.
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    })
}

fn join_reader(handle: Option<thread::JoinHandle<Vec<u8>>>) -> String {
    match handle.map(thread::JoinHandle::join) {
        Some(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        Some(Err(_)) => String::from("[output reader thread panicked]"),
        None => String::new(),
    }
}

/// A shell-like rendering of a command line, for messages.
pub fn describe(command: &Command) -> String {
    let mut parts = vec![command.get_program().to_string_lossy().into_owned()];
    parts.extend(command.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
            format!("'{}'", a.replace('\'', "'\\''"))
        } else {
            a.into_owned()
        }
    }));
    parts.join(" ")
}

/// Fails unless `path` is an existing file.
pub fn require_file(path: &Path, what: &str, hint: &str) -> anyhow::Result<()> {
    if !path.is_file() {
        bail!("{what} not found at {}: {hint}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_status() -> anyhow::Result<()> {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = run_with_timeout(cmd, Duration::from_secs(30))?;
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.status, Some(3));
        assert!(!out.success());
        assert!(!out.timed_out);
        Ok(())
    }

    #[test]
    fn kills_commands_that_overrun_their_timeout() -> anyhow::Result<()> {
        let mut cmd = Command::new("sh");
        // The background child keeps stdout open: the timeout must end it too.
        cmd.args(["-c", "sleep 30 & echo started; sleep 30"]);
        let started = Instant::now();
        let out = run_with_timeout(cmd, Duration::from_millis(500))?;
        assert!(out.timed_out, "{out}");
        assert_eq!(out.stdout, "started\n");
        assert!(started.elapsed() < Duration::from_secs(20));
        Ok(())
    }

    #[test]
    fn daemon_is_killed_with_its_group() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo hello; sleep 60"]);
        let mut daemon = DaemonProcess::spawn("sleeper", cmd, dir.path())?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(daemon.stdout_path())?.contains("hello") {
            assert!(
                Instant::now() < deadline,
                "the daemon never wrote its greeting"
            );
            thread::sleep(CHILD_POLL);
        }
        assert!(daemon.is_running()?);
        let status = daemon.kill()?;
        assert_eq!(status.signal(), Some(9));
        assert!(!daemon.is_running()?);
        assert!(daemon.log_tail(10).contains("hello"));
        Ok(())
    }

    #[test]
    fn describe_quotes_arguments_with_spaces() {
        let mut cmd = Command::new("yarn");
        cmd.args(["application", "-list", "a b", "it's"]);
        assert_eq!(describe(&cmd), "yarn application -list 'a b' 'it'\\''s'");
    }
}

/// The process of a server the harness kills, stops and starts again (ZooKeeper, HDFS):
/// at most one at a time; the server's files outlive it.
#[derive(Debug, Default)]
pub struct ServerProcess(Option<DaemonProcess>);

impl ServerProcess {
    /// The process just started (the one before must be gone).
    pub fn set(&mut self, process: DaemonProcess) {
        self.0 = Some(process);
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|p| p.is_running().unwrap_or(false))
    }

    /// Kills the process with SIGKILL (as a crash).
    pub fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut p) = self.0.take() {
            p.kill()?;
        }
        Ok(())
    }

    /// Stops the process with SIGTERM, SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) -> anyhow::Result<()> {
        if let Some(mut p) = self.0.take() {
            p.terminate(grace)?;
        }
        Ok(())
    }

    /// The last lines of its output, for failure reports.
    pub fn log_tail(&self, max_lines: usize) -> String {
        self.0
            .as_ref()
            .map(|p| p.log_tail(max_lines))
            .unwrap_or_default()
    }
}
