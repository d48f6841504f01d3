//! The client side of `spindle dag`: starting and stopping a session,
//! submitting DAGs, asking for their status, killing them.
//!
//! A session is a YARN application of type [`APP_TYPE`]; its AM registers
//! the host and port of its session server, which clients read from the
//! application report. `--session APPID` names one; without it the most
//! recently started RUNNING session of the current user is used.
//!
//! The session secret is made by `spindle dag session start`, handed to
//! the AM in its environment and kept in a file readable only by the user
//! (`$SPINDLE_DAG_SESSION_DIR`, else `~/.spindle/dag-sessions`,
//! `<application id>.secret`). Clients read it from there, or from
//! `SPINDLE_DAG_SECRET`.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spindle_am::launch::{LOG_DIR, PASSED_ENV};
use spindle_am::{
    quote_for_launch, AppReport, AppState, ApplicationSubmission, LaunchContext, YarnClient,
};
use spindle_common::conf::{keys, Configuration};
use spindle_common::{current_user, ApplicationId, Resource};
use tokio::io::BufReader;
use tokio::net::TcpStream;

use crate::am::parse_settings;
use crate::dagfile::DagFile;
use crate::protocol::{
    read_json, write_json, ClientRequest, ClientResponse, DagStatusReport, Hello, StatusReport,
    SECRET_ENV,
};
use crate::session::SessionConfig;
use crate::{AM_SUBCOMMAND, APP_TYPE};

/// Where session secrets are kept (overrides `~/.spindle/dag-sessions`).
pub const SESSION_DIR_ENV: &str = "SPINDLE_DAG_SESSION_DIR";

/// `spindle dag session start`.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionStartArgs {
    /// The YARN queue of the session's application.
    #[arg(long, default_value = "default")]
    pub queue: String,
    /// The application name.
    #[arg(long, default_value = "spindle-dag-session")]
    pub name: String,
    /// A DAG AM setting (MR3 key names, e.g. mr3.dag.queue.scheme=capacity); repeatable.
    #[arg(long = "dag-conf", value_name = "KEY=VALUE")]
    pub dag_conf: Vec<String>,
    /// Memory of the AM's container, in MB.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(i64).range(1..))]
    pub am_memory: i64,
    /// Virtual cores of the AM's container.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub am_vcores: i32,
    /// How long to wait for the session to be running, in seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub wait_secs: u64,
    /// The executable the AM runs (this one unless set); an absolute path
    /// valid on the NodeManagers.
    #[arg(long, hide = true)]
    pub am_executable: Option<PathBuf>,
}

/// Which session a command talks to.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionSelector {
    /// The session's application id (default: the newest RUNNING session of
    /// this user).
    #[arg(long, value_name = "APPID")]
    pub session: Option<String>,
}

/// `spindle dag submit`.
#[derive(Debug, Clone, clap::Args)]
pub struct SubmitArgs {
    /// The DAG file (YAML or JSON).
    pub dag_file: PathBuf,
    #[command(flatten)]
    pub session: SessionSelector,
    /// The capacity queue of the DAG (mr3.dag.queue.name), overriding the file's.
    #[arg(long, value_name = "QUEUE")]
    pub dag_queue: Option<String>,
    /// Wait for the DAG to end; exit 0 only if it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
}

/// `spindle dag status`.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// One DAG (`dag_3` or `3`); all of them if absent.
    pub dag: Option<String>,
    #[command(flatten)]
    pub session: SessionSelector,
    /// Print the AM's JSON report.
    #[arg(long)]
    pub json: bool,
}

/// `spindle dag kill`.
#[derive(Debug, Clone, clap::Args)]
pub struct KillArgs {
    /// The DAG (`dag_3` or `3`).
    pub dag: String,
    #[command(flatten)]
    pub session: SessionSelector,
}

/// `spindle dag session stop`.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionStopArgs {
    #[command(flatten)]
    pub session: SessionSelector,
    /// How long to wait for the application to finish, in seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub wait_secs: u64,
}

fn session_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os(SESSION_DIR_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("neither {SESSION_DIR_ENV} nor HOME is set"))?;
    Ok(PathBuf::from(home).join(".spindle").join("dag-sessions"))
}

fn secret_path(app: &ApplicationId) -> Result<PathBuf, String> {
    Ok(session_dir()?.join(format!("{app}.secret")))
}

fn save_secret(app: &ApplicationId, secret: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = secret_path(app)?;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(secret.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn load_secret(app: &ApplicationId) -> Result<String, String> {
    if let Some(s) = std::env::var(SECRET_ENV)
        .ok()
        .filter(|s| !s.trim().is_empty())
    {
        return Ok(s.trim().to_string());
    }
    let path = secret_path(app)?;
    std::fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(|e| {
            format!(
                "cannot read the secret of session {app} at {}: {e} (set {SECRET_ENV} to use a session started elsewhere)",
                path.display()
            )
        })
}

fn client_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{}@{host}:{}", current_user(), std::process::id())
}

fn scheduler_address(conf: &Configuration) -> Result<String, String> {
    let (host, port) = conf
        .get_socket_addr(keys::RM_SCHEDULER_ADDRESS)
        .map_err(|e| e.to_string())?;
    Ok(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// The AM's launch command.
pub fn am_command(exe: &str, scheduler: &str, dag_conf: &[String]) -> String {
    let mut words: Vec<String> = vec![
        exe.to_string(),
        "dag".to_string(),
        AM_SUBCOMMAND.to_string(),
        "--scheduler-address".to_string(),
        scheduler.to_string(),
    ];
    for s in dag_conf {
        words.push("--dag-conf".to_string());
        words.push(s.clone());
    }
    let quoted: Vec<String> = words.iter().map(|w| quote_for_launch(w)).collect();
    format!(
        "{} 1>{LOG_DIR}/AppMaster.stdout 2>{LOG_DIR}/AppMaster.stderr",
        quoted.join(" ")
    )
}

/// `spindle dag session start`: submits the AM, waits until it serves, and
/// prints the application id.
pub async fn session_start(args: &SessionStartArgs, conf: &Configuration) -> Result<u8, String> {
    // Refuse bad settings here rather than in a failed AM.
    SessionConfig::from_map(&parse_settings(&args.dag_conf)?)?;
    let exe = match &args.am_executable {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?,
    };
    if !exe.is_absolute() {
        return Err(format!(
            "the AM executable {} is not absolute",
            exe.display()
        ));
    }
    let exe = exe
        .to_str()
        .ok_or_else(|| format!("the AM executable {} is not UTF-8", exe.display()))?
        .to_string();
    let scheduler = scheduler_address(conf)?;
    let yarn = YarnClient::connect(conf).await.map_err(|e| e.to_string())?;
    let (app, max) = yarn.create_application().await.map_err(|e| e.to_string())?;
    let am_resource = Resource::new(args.am_memory, args.am_vcores);
    if !am_resource.fits_in(&max) {
        return Err(format!(
            "the AM's {am_resource} exceeds the cluster's maximum allocation {max}"
        ));
    }
    let secret = crate::protocol::new_secret();
    let secret_file = save_secret(&app, &secret)?;
    let am = LaunchContext::command(am_command(&exe, &scheduler, &args.dag_conf))
        .env(SECRET_ENV, secret)
        .pass_env(&PASSED_ENV);
    let mut submission = ApplicationSubmission::new(args.name.clone(), am_resource, am);
    submission.queue = args.queue.clone();
    submission.app_type = APP_TYPE.to_string();
    submission.max_attempts = Some(1);
    eprintln!("Submitting DAG session {app} to queue {}", args.queue);
    let submitted = yarn.submit(app, &submission).await;
    if let Err(e) = submitted {
        let _ = std::fs::remove_file(&secret_file);
        return Err(e.to_string());
    }
    let deadline = Instant::now() + Duration::from_secs(args.wait_secs);
    loop {
        let report = yarn.report(app).await.map_err(|e| e.to_string())?;
        if report.state.is_final() {
            let _ = std::fs::remove_file(&secret_file);
            return Err(format!(
                "session {app} ended before it served: {} {}: {}",
                report.state,
                report.final_status,
                report.diagnostics.trim()
            ));
        }
        if report.state == AppState::Running && report.rpc_port > 0 {
            eprintln!(
                "DAG session {app} is running at {}:{}",
                report.host, report.rpc_port
            );
            println!("{app}");
            return Ok(0);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "session {app} is {} after {} s; it may still start (see `yarn application -status {app}`)",
                report.state, args.wait_secs
            ));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A found session.
struct Found {
    app: ApplicationId,
    addr: String,
    yarn: YarnClient,
}

fn serving(report: &AppReport) -> bool {
    report.state == AppState::Running && report.rpc_port > 0 && !report.host.is_empty()
}

async fn find_session(conf: &Configuration, selector: &SessionSelector) -> Result<Found, String> {
    let yarn = YarnClient::connect(conf).await.map_err(|e| e.to_string())?;
    let report = match &selector.session {
        Some(id) => {
            let app: ApplicationId = id
                .trim()
                .parse()
                .map_err(|e| format!("'{id}' is not an application id: {e}"))?;
            let report = yarn.report(app).await.map_err(|e| e.to_string())?;
            if report.app_type != APP_TYPE {
                return Err(format!(
                    "{app} is a {} application, not a DAG session ({APP_TYPE})",
                    report.app_type
                ));
            }
            if !serving(&report) {
                return Err(format!("session {app} is {} and not serving", report.state));
            }
            report
        }
        None => {
            let user = yarn.user().to_string();
            yarn.list(&[AppState::Running])
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|r| r.app_type == APP_TYPE && r.user == user && serving(r))
                .max_by_key(|r| (r.start_time_ms, r.id.to_string()))
                .ok_or_else(|| {
                    format!(
                        "no running DAG session of user {user}: start one with `spindle dag session start`"
                    )
                })?
        }
    };
    let addr = if report.host.contains(':') {
        format!("[{}]:{}", report.host, report.rpc_port)
    } else {
        format!("{}:{}", report.host, report.rpc_port)
    };
    Ok(Found {
        app: report.id,
        addr,
        yarn,
    })
}

/// One request to a session.
async fn ask(found: &Found, request: &ClientRequest) -> Result<ClientResponse, String> {
    let secret = load_secret(&found.app)?;
    let stream = TcpStream::connect(&found.addr)
        .await
        .map_err(|e| format!("cannot reach session {} at {}: {e}", found.app, found.addr))?;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let io = |e: std::io::Error| format!("session {} at {}: {e}", found.app, found.addr);
    write_json(
        &mut write,
        &Hello::Client {
            secret,
            client: client_name(),
        },
    )
    .await
    .map_err(io)?;
    write_json(&mut write, request).await.map_err(io)?;
    match read_json::<_, ClientResponse>(&mut reader)
        .await
        .map_err(io)?
    {
        Some(ClientResponse::Error { message }) => Err(message),
        Some(r) => Ok(r),
        None => Err(format!(
            "session {} closed the connection without answering",
            found.app
        )),
    }
}

/// Parses `dag_3` or `3`.
pub fn parse_dag_id(text: &str) -> Result<u64, String> {
    let t = text.trim();
    t.strip_prefix("dag_")
        .unwrap_or(t)
        .parse()
        .map_err(|_| format!("'{text}' is not a DAG id (dag_N)"))
}

async fn dag_status(found: &Found, dag: u64) -> Result<DagStatusReport, String> {
    match ask(found, &ClientRequest::Status { dag: Some(dag) }).await? {
        ClientResponse::Status(report) => report
            .dags
            .into_iter()
            .find(|d| d.id == dag)
            .ok_or_else(|| format!("the session does not report dag_{dag}")),
        other => Err(format!("unexpected answer {other:?}")),
    }
}

/// `spindle dag submit`.
pub async fn submit(args: &SubmitArgs, conf: &Configuration) -> Result<u8, String> {
    let dag = DagFile::read(&args.dag_file)?;
    let found = find_session(conf, &args.session).await?;
    let request = ClientRequest::Submit {
        dag,
        queue: args.dag_queue.clone(),
    };
    let id = match ask(&found, &request).await? {
        ClientResponse::Submitted { dag } => dag,
        other => return Err(format!("unexpected answer {other:?}")),
    };
    println!("Submitted dag_{id} to session {}", found.app);
    if !args.wait {
        return Ok(0);
    }
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    loop {
        let d = dag_status(&found, id).await?;
        if d.is_final() {
            print_dag(&d);
            return Ok(if d.state == "SUCCEEDED" { 0 } else { 1 });
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "dag_{id} is still running after {} s",
                args.timeout_secs
            ));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn print_dag(d: &DagStatusReport) {
    let mut line = format!(
        "DAG dag_{} {} {} (client {}, group {}, queue {}): {}/{} tasks",
        d.id, d.state, d.name, d.client, d.group, d.queue, d.succeeded_tasks, d.total_tasks
    );
    if !d.is_final() {
        line.push_str(&format!(
            ", {} running, {} pending",
            d.running_attempts, d.pending_tasks
        ));
    }
    line.push_str(&format!(", {:.1} s", d.elapsed_ms as f64 / 1000.0));
    if let Some(r) = &d.reason {
        line.push_str(&format!(": {r}"));
    }
    println!("{line}");
}

fn print_status(report: &StatusReport) {
    println!("Session {}", report.application);
    for g in &report.groups {
        let mut line = format!(
            "Group {}: {} workers of <{}MB, {} vcores>, {} requested",
            g.name, g.workers, g.worker_memory_mb, g.worker_vcores, g.requested_workers
        );
        if let Some(state) = &g.autoscale_state {
            line.push_str(&format!(", autoscaling {state}"));
            if let Some(bp) = g.usage_bp {
                line.push_str(&format!(" at {}.{:02}% usage", bp / 100, bp % 100));
            }
        }
        println!("{line}");
        println!("  {}", g.status_line);
    }
    for w in &report.workers {
        println!(
            "Worker {} on {} [{}]: {} of {} MB used, {} attempts{}",
            w.worker,
            w.host,
            w.group.as_deref().unwrap_or("reserve"),
            w.used_mb,
            w.capacity_mb,
            w.running_attempts,
            if w.draining { ", draining" } else { "" }
        );
    }
    for d in &report.dags {
        print_dag(d);
    }
    let c = &report.counters;
    println!(
        "Counters: containers requested {} (initial {}, scale-out {}), requests cancelled {}, workers started {}, stopped {}, lost {}, recycled {}, released by scale-in {}; scale-outs {}, scale-ins {}; attempts {} ({} failed, {} lost input)",
        c.containers_requested,
        c.initial_requested,
        c.scale_out_requested,
        c.requests_cancelled,
        c.workers_started,
        c.workers_stopped,
        c.workers_lost,
        c.workers_recycled,
        c.scale_in_released,
        c.scale_outs,
        c.scale_ins,
        c.attempts_started,
        c.attempts_failed,
        c.inputs_lost
    );
}

/// `spindle dag status`.
pub async fn status(args: &StatusArgs, conf: &Configuration) -> Result<u8, String> {
    let dag = args.dag.as_deref().map(parse_dag_id).transpose()?;
    let found = find_session(conf, &args.session).await?;
    match ask(&found, &ClientRequest::Status { dag }).await? {
        ClientResponse::Status(report) => {
            if args.json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                println!("{text}");
            } else if dag.is_some() {
                for d in &report.dags {
                    print_dag(d);
                }
            } else {
                print_status(&report);
            }
            Ok(0)
        }
        other => Err(format!("unexpected answer {other:?}")),
    }
}

/// `spindle dag kill`.
pub async fn kill(args: &KillArgs, conf: &Configuration) -> Result<u8, String> {
    let dag = parse_dag_id(&args.dag)?;
    let found = find_session(conf, &args.session).await?;
    match ask(&found, &ClientRequest::Kill { dag }).await? {
        ClientResponse::Killed { dag } => {
            println!("Killed dag_{dag}");
            Ok(0)
        }
        other => Err(format!("unexpected answer {other:?}")),
    }
}

/// `spindle dag session stop`.
pub async fn session_stop(args: &SessionStopArgs, conf: &Configuration) -> Result<u8, String> {
    let found = find_session(conf, &args.session).await?;
    match ask(&found, &ClientRequest::Stop).await? {
        ClientResponse::Stopping => {}
        other => return Err(format!("unexpected answer {other:?}")),
    }
    let deadline = Instant::now() + Duration::from_secs(args.wait_secs);
    loop {
        let report = found
            .yarn
            .report(found.app)
            .await
            .map_err(|e| e.to_string())?;
        if report.state.is_final() {
            if let Ok(p) = secret_path(&found.app) {
                let _ = std::fs::remove_file(p);
            }
            println!(
                "Session {} ended: {} {}",
                found.app, report.state, report.final_status
            );
            return Ok(0);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "session {} is still {} after {} s",
                found.app, report.state, args.wait_secs
            ));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dag_ids_parse_both_ways() {
        assert_eq!(parse_dag_id("dag_12"), Ok(12));
        assert_eq!(parse_dag_id(" 7 "), Ok(7));
        assert!(parse_dag_id("dag_x").is_err());
    }

    #[test]
    fn the_am_command_quotes_every_setting() {
        let cmd = am_command(
            "/opt/spindle",
            "127.0.0.1:8030",
            &["mr3.dag.queue.capacity.specs=high=80,default=20".into()],
        );
        assert!(cmd.starts_with("'/opt/spindle' 'dag' 'am' '--scheduler-address' '127.0.0.1:8030' '--dag-conf' 'mr3.dag.queue.capacity.specs=high=80,default=20'"), "{cmd}");
        assert!(cmd.ends_with("2><LOG_DIR>/AppMaster.stderr"));
    }

    #[test]
    fn secrets_are_private_files() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        // Only this test sets the variable in this process.
        std::env::set_var(SESSION_DIR_ENV, tmp.path().join("s"));
        let app = ApplicationId::new(5, 9);
        let path = save_secret(&app, "abc").expect("saved");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load_secret(&app).expect("loads"), "abc");
    }
}
