//! The ContainerWorker (`spindle worker`, started by the DAG AM in a YARN
//! container).
//!
//! It serves the outputs of the tasks it ran over HTTP ([`crate::http`]),
//! registers with the AM, and runs every task attempt the AM assigns,
//! concurrently (the AM's TaskScheduler fills the worker's resources, one
//! slot per attempt):
//!
//! 1. the outputs of the attempt's upstream tasks are fetched from the
//!    workers holding them into `input/<producer vertex>/<producer task>/`;
//! 2. the command runs under `bash -o pipefail -c` (so a pipeline fails when
//!    any of its stages fails; without bash, `/bin/sh -c` with `pipefail`
//!    switched on when that shell has it, see [`TaskShell`]) in the
//!    attempt's directory, in its own process group, with its task index, input and output locations in
//!    its environment (see [`task_environment`]), stdout and stderr in the
//!    container's log dir;
//! 3. on exit status 0 the output directory becomes the task's output,
//!    served to downstream tasks until the DAG is over; otherwise the
//!    attempt failed, with the exit status and the end of its stderr as the
//!    reason.
//!
//! The AM may kill an attempt (its DAG ended), tell the worker a DAG is
//! over (its outputs are deleted), move it to another ContainerGroup
//! (every output is dropped), or stop it. A worker whose AM connection
//! closes kills its attempts and exits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncSeekExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

use crate::http::{fetch_output, serve_outputs};
use crate::protocol::{
    read_json, write_json, AmToWorker, AttemptRef, Hello, TaskAssignment, WireOutcome, WorkerToAm,
    SECRET_ENV,
};

/// Arguments of the hidden `spindle worker`. The AM fills them in.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// The AM's session address (`host:port`).
    #[arg(long)]
    pub am: String,
    /// This worker's id (the AM's name for it): its container id, from
    /// `CONTAINER_ID` unless given.
    #[arg(long)]
    pub worker_id: Option<String>,
    /// Where attempts run and outputs are kept (the container's work dir
    /// unless given).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Where each attempt's stdout and stderr go (the work dir unless given).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// The host other workers reach this one at (`NM_HOST` unless given).
    #[arg(long)]
    pub advertise_host: Option<String>,
}

/// How long a stopping worker waits for killed attempts to end.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// Lines of stderr quoted in a failure reason.
const STDERR_TAIL_LINES: usize = 5;
const STDERR_TAIL_BYTES: u64 = 2048;

struct Dirs {
    outputs: PathBuf,
    attempts: PathBuf,
    logs: PathBuf,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Runs the worker until the AM stops it (exit 0) or goes away (exit 1).
pub async fn worker_main(args: &WorkerArgs) -> Result<u8, String> {
    let secret = env_nonempty(SECRET_ENV)
        .ok_or_else(|| format!("{SECRET_ENV} is not set: workers are started by the DAG AM"))?;
    let worker = args
        .worker_id
        .clone()
        .or_else(|| env_nonempty("CONTAINER_ID"))
        .ok_or_else(|| "no worker id: pass --worker-id or run in a YARN container".to_string())?;
    let work = match &args.work_dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| format!("no work dir: {e}"))?,
    };
    let base = work.join("spindle-worker");
    let dirs = Arc::new(Dirs {
        outputs: base.join("outputs"),
        attempts: base.join("attempts"),
        logs: args.log_dir.clone().unwrap_or_else(|| base.join("logs")),
    });
    for d in [&dirs.outputs, &dirs.attempts, &dirs.logs] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let secret = Arc::new(secret);

    let listener = TcpListener::bind("0.0.0.0:0")
        .await
        .map_err(|e| format!("cannot open the output port: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the output port: {e}"))?
        .port();
    let host = args
        .advertise_host
        .clone()
        .or_else(|| env_nonempty("NM_HOST"))
        .unwrap_or_else(|| "127.0.0.1".to_string());
    let http_addr = format!("{host}:{port}");
    tokio::spawn(serve_outputs(
        listener,
        dirs.outputs.clone(),
        secret.clone(),
    ));

    let stream = TcpStream::connect(&args.am)
        .await
        .map_err(|e| format!("cannot reach the DAG AM at {}: {e}", args.am))?;
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    write_json(
        &mut write,
        &Hello::Worker {
            secret: secret.to_string(),
            worker: worker.clone(),
            http_addr: http_addr.clone(),
        },
    )
    .await
    .map_err(|e| format!("cannot register with the DAG AM: {e}"))?;
    info!(%worker, am = %args.am, %http_addr, "worker registered");

    // YARN stops a container with SIGTERM; the attempts run in their own
    // process groups, so they are killed here rather than left behind.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(AttemptRef, WireOutcome)>();
    let mut running: BTreeMap<AttemptRef, oneshot::Sender<()>> = BTreeMap::new();
    let exit = loop {
        tokio::select! {
            msg = read_json::<_, AmToWorker>(&mut reader) => match msg {
                Ok(Some(AmToWorker::Assign(a))) => {
                    let attempt = a.attempt;
                    if running.contains_key(&attempt) {
                        warn!(%attempt, "the AM assigned an attempt twice");
                        continue;
                    }
                    info!(%attempt, vertex = %a.vertex, "attempt starts");
                    let (kill_tx, kill_rx) = oneshot::channel();
                    running.insert(attempt, kill_tx);
                    let (dirs, secret, done) = (dirs.clone(), secret.clone(), done_tx.clone());
                    tokio::spawn(async move {
                        let outcome = run_attempt(&a, &dirs, &secret, kill_rx).await;
                        let _ = done.send((a.attempt, outcome));
                    });
                }
                Ok(Some(AmToWorker::Kill { attempt })) => {
                    if let Some(kill) = running.remove(&attempt) {
                        info!(%attempt, "killing attempt");
                        let _ = kill.send(());
                        // Its end is still reported (as killed).
                        running.insert(attempt, oneshot::channel().0);
                    }
                }
                Ok(Some(AmToWorker::DagDone { dag })) => {
                    remove_dir(&dirs.outputs.join(dag.to_string())).await;
                }
                Ok(Some(AmToWorker::Reinit { group })) => {
                    info!(%group, "worker moves to another ContainerGroup");
                    remove_dir(&dirs.outputs).await;
                    let _ = tokio::fs::create_dir_all(&dirs.outputs).await;
                }
                Ok(Some(AmToWorker::Stop { reason })) => {
                    info!(%reason, "worker stopping");
                    break 0;
                }
                Ok(None) => {
                    warn!("the DAG AM closed the connection");
                    break 1;
                }
                Err(e) => {
                    warn!(error = %e, "the DAG AM connection failed");
                    break 1;
                }
            },
            _ = terminate.recv() => {
                info!("worker terminated by its NodeManager");
                break 1;
            }
            done = done_rx.recv() => {
                let Some((attempt, outcome)) = done else { break 1 };
                running.remove(&attempt);
                info!(%attempt, ?outcome, "attempt ended");
                if let Err(e) = write_json(&mut write, &WorkerToAm::Finished { attempt, outcome }).await {
                    warn!(error = %e, "cannot report to the DAG AM");
                    break 1;
                }
            }
        }
    };
    // Anything still running is killed (dropping the kill switches), and
    // waited for briefly so no process outlives the worker.
    let left = running.len();
    running.clear();
    if left > 0 {
        let wait = async {
            let mut n = left;
            while n > 0 && done_rx.recv().await.is_some() {
                n -= 1;
            }
        };
        let _ = tokio::time::timeout(STOP_GRACE, wait).await;
    }
    Ok(exit)
}

async fn remove_dir(path: &Path) {
    match tokio::fs::remove_dir_all(path).await {
        Ok(()) => debug!(path = %path.display(), "removed"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => warn!(path = %path.display(), error = %e, "cannot remove"),
    }
}

/// The environment of a task's command (besides the worker's own, minus
/// the session secret).
pub fn task_environment(
    a: &TaskAssignment,
    input_dir: &Path,
    output_dir: &Path,
) -> Vec<(String, String)> {
    let urls: Vec<&str> = a.inputs.iter().map(|i| i.url.as_str()).collect();
    vec![
        ("SPINDLE_DAG_ID".into(), a.attempt.dag.to_string()),
        ("SPINDLE_DAG_NAME".into(), a.dag_name.clone()),
        ("SPINDLE_VERTEX".into(), a.vertex.clone()),
        ("SPINDLE_TASK_INDEX".into(), a.attempt.task.to_string()),
        ("SPINDLE_ATTEMPT".into(), a.attempt.attempt.to_string()),
        ("SPINDLE_ATTEMPT_ID".into(), a.attempt.to_string()),
        ("SPINDLE_VERTEX_TASKS".into(), a.vertex_tasks.to_string()),
        ("SPINDLE_NUM_PARTITIONS".into(), a.partitions.to_string()),
        ("SPINDLE_INPUTS".into(), urls.join(" ")),
        ("SPINDLE_INPUT_DIR".into(), input_dir.display().to_string()),
        (
            "SPINDLE_OUTPUT_DIR".into(),
            output_dir.display().to_string(),
        ),
        ("SPINDLE_TASK_MEMORY_MB".into(), a.memory_mb.to_string()),
        ("SPINDLE_TASK_VCORES".into(), a.vcores.to_string()),
    ]
}

async fn run_attempt(
    a: &TaskAssignment,
    dirs: &Dirs,
    secret: &str,
    mut kill: oneshot::Receiver<()>,
) -> WireOutcome {
    let name = a.attempt.to_string();
    let dir = dirs.attempts.join(&name);
    let outcome = tokio::select! {
        o = run_in(a, &dir, dirs, secret) => o,
        _ = &mut kill => WireOutcome::Killed { reason: "killed by the DAG AM".into() },
    };
    // A kill dropped the future above, and with it the child (killed on
    // drop, see `run_in`).
    remove_dir(&dir).await;
    outcome
}

async fn run_in(a: &TaskAssignment, dir: &Path, dirs: &Dirs, secret: &str) -> WireOutcome {
    let failed = |reason: String| WireOutcome::Failed { reason };
    remove_dir(dir).await;
    let input = dir.join("input");
    let output = dir.join("output");
    for d in [&input, &output] {
        if let Err(e) = tokio::fs::create_dir_all(d).await {
            return failed(format!("cannot create {}: {e}", d.display()));
        }
    }
    for i in &a.inputs {
        let dest = input.join(&i.vertex).join(i.task.to_string());
        if let Err(e) = fetch_output(&i.url, &dest, secret).await {
            return WireOutcome::InputLost {
                reason: format!(
                    "fetching the output of task {} of vertex '{}' failed: {e}",
                    i.task, i.vertex
                ),
            };
        }
    }
    let name = a.attempt.to_string();
    let stdout_path = dirs.logs.join(format!("{name}.stdout"));
    let stderr_path = dirs.logs.join(format!("{name}.stderr"));
    let open = |p: &Path| {
        std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    };
    let (stdout, stderr) = match (open(&stdout_path), open(&stderr_path)) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => return failed(e),
    };
    let shell = TaskShell::find();
    let mut cmd = tokio::process::Command::new(shell.program());
    cmd.args(shell.args(&a.command))
        .current_dir(dir)
        .env_remove(SECRET_ENV)
        .env_remove("BASH_ENV")
        .envs(task_environment(a, &input, &output))
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start {}: {e}", shell.program().display())),
    };
    let mut guard = GroupGuard(child.id());
    let status = child.wait().await;
    // Reaped: the group id may be reused from now on, so it is not
    // signalled after a normal end.
    guard.0 = None;
    let status = match status {
        Ok(s) => s,
        Err(e) => return failed(format!("waiting for the command failed: {e}")),
    };
    if !status.success() {
        let how = match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "ended abnormally".to_string(),
        };
        let tail = stderr_tail(&stderr_path).await;
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr: {tail}")
        };
        return failed(format!("the command {how}{tail}"));
    }
    let target = dirs
        .outputs
        .join(a.attempt.dag.to_string())
        .join(a.attempt.vertex.to_string())
        .join(a.attempt.task.to_string());
    remove_dir(&target).await;
    if let Some(parent) = target.parent() {
        if let Err(e) = tokio::fs::create_dir_all(parent).await {
            return failed(format!("cannot create {}: {e}", parent.display()));
        }
    }
    if let Err(e) = tokio::fs::rename(&output, &target).await {
        return failed(format!(
            "cannot keep the output {} as {}: {e}",
            output.display(),
            target.display()
        ));
    }
    WireOutcome::Succeeded
}

/// The shell a task command runs under. Bash with `-o pipefail` when it is
/// installed, so `tr ... < missing | awk ...` fails as its first stage
/// does; otherwise `/bin/sh`, which switches `pipefail` on first when it
/// has it (busybox ash, dash from 0.5.13) and otherwise reports a
/// pipeline's status as its last stage's, as POSIX has it (Debian's older
/// dash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskShell {
    Bash(PathBuf),
    Posix(PathBuf),
}

/// Switches `pipefail` on in a POSIX shell that has it; the test runs in a
/// subshell, because `set` with an unknown option ends a non-interactive
/// shell.
const PIPEFAIL_IF_SUPPORTED: &str = "(set -o pipefail) 2>/dev/null && set -o pipefail\n";

impl TaskShell {
    /// Bash from the `PATH` (else `/bin/bash`), or `/bin/sh`; looked up once.
    pub fn find() -> TaskShell {
        static SHELL: std::sync::OnceLock<TaskShell> = std::sync::OnceLock::new();
        SHELL
            .get_or_init(|| {
                let path = std::env::var_os("PATH").unwrap_or_default();
                std::env::split_paths(&path)
                    .chain([PathBuf::from("/bin")])
                    .map(|dir| dir.join("bash"))
                    .find(|bash| bash.is_file())
                    .map_or_else(|| TaskShell::Posix("/bin/sh".into()), TaskShell::Bash)
            })
            .clone()
    }

    pub fn program(&self) -> &Path {
        match self {
            TaskShell::Bash(p) | TaskShell::Posix(p) => p,
        }
    }

    /// The arguments that run `command`.
    pub fn args(&self, command: &str) -> Vec<String> {
        match self {
            TaskShell::Bash(_) => vec!["-o".into(), "pipefail".into(), "-c".into(), command.into()],
            TaskShell::Posix(_) => vec!["-c".into(), format!("{PIPEFAIL_IF_SUPPORTED}{command}")],
        }
    }
}

/// Kills the attempt's whole process group when dropped while the command
/// runs (a kill or the worker stopping drops the attempt's future
/// mid-wait).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The last lines of a stderr file, joined with ` | `.
async fn stderr_tail(path: &Path) -> String {
    let Ok(mut f) = tokio::fs::File::open(path).await else {
        return String::new();
    };
    let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(STDERR_TAIL_BYTES);
    if f.seek(std::io::SeekFrom::Start(start)).await.is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).await.is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(STDERR_TAIL_LINES);
    lines[from..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TaskInput;

    fn assignment(command: &str) -> TaskAssignment {
        TaskAssignment {
            attempt: AttemptRef {
                dag: 3,
                vertex: 1,
                task: 2,
                attempt: 1,
            },
            dag_name: "d".into(),
            vertex: "reduce".into(),
            vertex_tasks: 4,
            partitions: 0,
            command: command.into(),
            inputs: Vec::new(),
            memory_mb: 256,
            vcores: 1,
        }
    }

    fn dirs(root: &Path) -> Dirs {
        let d = Dirs {
            outputs: root.join("outputs"),
            attempts: root.join("attempts"),
            logs: root.join("logs"),
        };
        for p in [&d.outputs, &d.attempts, &d.logs] {
            std::fs::create_dir_all(p).expect("mkdir");
        }
        d
    }

    #[tokio::test]
    async fn a_successful_attempt_keeps_its_output() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = dirs(tmp.path());
        let a = assignment(
            "echo \"$SPINDLE_VERTEX $SPINDLE_TASK_INDEX $SPINDLE_VERTEX_TASKS ${SPINDLE_DAG_SECRET:-nosecret}\" > $SPINDLE_OUTPUT_DIR/out",
        );
        let (_kill, rx) = oneshot::channel();
        let outcome = run_attempt(&a, &d, "s", rx).await;
        assert_eq!(outcome, WireOutcome::Succeeded);
        let out = std::fs::read_to_string(d.outputs.join("3/1/2/out")).expect("output kept");
        assert_eq!(out, "reduce 2 4 nosecret\n");
        assert!(
            !d.attempts.join(a.attempt.to_string()).exists(),
            "the attempt dir is cleaned up"
        );
    }

    #[tokio::test]
    async fn a_failing_attempt_says_why() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = dirs(tmp.path());
        let a = assignment("echo first >&2; echo 'no such input' >&2; exit 3");
        let (_kill, rx) = oneshot::channel();
        match run_attempt(&a, &d, "s", rx).await {
            WireOutcome::Failed { reason } => {
                assert_eq!(
                    reason,
                    "the command exited with status 3; stderr: first | no such input"
                );
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        assert!(!d.outputs.join("3/1/2").exists());
    }

    /// Polls `probe` every 20 ms until it holds, for at most 20 s.
    async fn eventually(mut probe: impl FnMut() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while tokio::time::Instant::now() < deadline {
            if probe() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        probe()
    }

    /// Whether process `pid` has ended (gone, or a zombie nobody reaped).
    fn ended(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    #[tokio::test]
    async fn a_killed_attempt_stops_its_processes() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = dirs(tmp.path());
        let child = tmp.path().join("child");
        // The background sleep is in the attempt's process group, not the
        // shell's direct wait: only a kill of the whole group ends it.
        let a = assignment(&format!(
            "sleep 300 & echo $! > {}.tmp; mv {0}.tmp {0}; wait",
            child.display()
        ));
        let (kill, rx) = oneshot::channel();
        let run = tokio::spawn(async move { run_attempt(&a, &d, "s", rx).await });
        assert!(
            eventually(|| child.exists()).await,
            "the command never started"
        );
        let pid = std::fs::read_to_string(&child).expect("child pid");
        let pid = pid.trim();
        assert!(!ended(pid), "the background sleep runs before the kill");
        let _ = kill.send(());
        let outcome = tokio::time::timeout(Duration::from_secs(20), run)
            .await
            .expect("ends after the kill")
            .expect("joins");
        assert!(matches!(outcome, WireOutcome::Killed { .. }), "{outcome:?}");
        assert!(
            eventually(|| ended(pid)).await,
            "the whole process group was killed: process {pid} still runs"
        );
    }

    #[tokio::test]
    async fn a_failing_stage_of_a_pipeline_fails_the_attempt() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = dirs(tmp.path());
        let a = assignment(
            "tr -s ' ' '\\n' < /nonexistent/input.txt | awk 'NF' > $SPINDLE_OUTPUT_DIR/out",
        );
        let (_kill, rx) = oneshot::channel();
        match run_attempt(&a, &d, "s", rx).await {
            WireOutcome::Failed { reason } => {
                assert!(
                    reason.starts_with("the command exited with status 1; stderr: ")
                        && reason.contains("/nonexistent/input.txt"),
                    "{reason}"
                );
            }
            other => panic!("a pipeline whose first stage fails must fail, got {other:?}"),
        }
    }

    /// The fallback without bash: the command runs, `pipefail` is on when
    /// the shell has it, and a shell without it gives the last stage's
    /// status (so the first assertion holds for every `/bin/sh`).
    #[tokio::test]
    async fn the_posix_fallback_runs_commands_and_uses_pipefail_when_it_can() {
        let shell = TaskShell::Posix("/bin/sh".into());
        let run = |command: &str| {
            std::process::Command::new(shell.program())
                .args(shell.args(command))
                .output()
                .expect("/bin/sh runs")
        };
        let out = run("echo one; exit 7");
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "one\n");
        let supported = std::process::Command::new("/bin/sh")
            .args(["-c", "set -o pipefail"])
            .status()
            .is_ok_and(|s| s.success());
        let pipeline = run("false | true").status.code();
        assert_eq!(pipeline, Some(if supported { 1 } else { 0 }));
    }

    #[tokio::test]
    async fn a_missing_input_is_reported_as_lost_input() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = dirs(tmp.path());
        let mut a = assignment("true");
        a.inputs.push(TaskInput {
            vertex: "map".into(),
            task: 0,
            url: "unavailable://3/0/0".into(),
        });
        let (_kill, rx) = oneshot::channel();
        match run_attempt(&a, &d, "s", rx).await {
            WireOutcome::InputLost { reason } => {
                assert!(reason.contains("task 0 of vertex 'map'"), "{reason}")
            }
            other => panic!("expected lost input, got {other:?}"),
        }
    }
}
