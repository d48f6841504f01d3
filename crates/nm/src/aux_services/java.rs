//! The host of Java auxiliary services: ONE JVM per node, started, watched
//! and stopped by the NodeManager, running our shim
//! (`java/aux-host`, class `spindle.auxhost.AuxHost`), which loads each
//! service class (with its own class loader when it has a `.classpath`,
//! Hadoop's `AuxiliaryServiceWithCustomClassLoader`) and forwards Hadoop's
//! `AuxiliaryService` callbacks to it. The NodeManager never links a JVM:
//! they talk over the JVM's stdin/stdout ([`super::frame`]); its stderr is
//! the JVM's log, copied into the node's log line by line.
//!
//! Where the shim is: `spindle.nodemanager.aux-services.java-host.dir`, else
//! `$SPINDLE_AUX_HOST_DIR`, else `aux-host/` or `../share/spindle/aux-host/`
//! next to the `spindle` binary; `java/aux-host/build.sh <dir>` builds it.
//! Which `java`: `spindle.nodemanager.aux-services.java-host.java`, else
//! `$JAVA_HOME/bin/java`, else `java` on `PATH`; none = the node refuses to
//! start, saying so.
//!
//! Supervision: a JVM that dies is logged with its exit status and started
//! again (its services initialized and started anew, and the applications
//! they were told about initialized again), at most
//! `spindle.nodemanager.aux-services.java-host.max-restarts` times; then its
//! services are given up (events to them fail, logged) while the node keeps
//! serving containers. The JVM also ends by itself when its stdin closes, so
//! a killed node leaves no JVM behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use spindle_common::text::escaped;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::config::{self, AuxConfig, JavaHostSettings, ServiceSpec};
use super::frame::{self, FrameWriter};
use super::{AuxService, ContainerContext, ContainerType, MetaData};
use crate::error::NmError;

/// The shim's main class.
pub const MAIN_CLASS: &str = "spindle.auxhost.AuxHost";
/// How long one service's init or start may take.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one event may take before the JVM is deemed stuck.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the JVM has to stop its services and exit.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The longest stderr line copied whole into the node's log.
const MAX_LOG_LINE: usize = 8 << 10;

struct Conn {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Conn {
    async fn call(&mut self, payload: &[u8], limit: Duration) -> Result<Vec<u8>, String> {
        let exchange = async {
            frame::write_frame(&mut self.stdin, payload).await?;
            frame::read_frame(&mut self.stdout).await
        };
        match tokio::time::timeout(limit, exchange).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(e)) => Err(format!("the Java aux-service host failed: {e}")),
            Err(_) => Err(format!(
                "the Java aux-service host did not answer within {} s",
                limit.as_secs()
            )),
        }
    }
}

struct Launched {
    child: Child,
    conn: Conn,
    metas: Vec<(String, Option<Vec<u8>>)>,
}

/// (service, application) → (user, service data).
type AppInits = BTreeMap<(String, String), (String, Vec<u8>)>;

/// The running JVM and what it hosts.
pub struct JavaHost {
    settings: JavaHostSettings,
    java: PathBuf,
    classpath: String,
    specs: Vec<ServiceSpec>,
    properties: Vec<(String, String)>,
    recovery_root: Option<PathBuf>,
    conn: tokio::sync::Mutex<Option<Conn>>,
    /// (service, application) → (user, data): replayed into a new JVM.
    apps: Mutex<AppInits>,
    pid: Mutex<Option<u32>>,
    /// Set when the services are given up.
    failed: Mutex<Option<String>>,
    stop_tx: watch::Sender<bool>,
    meta: MetaData,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Finds an executable: a path with a `/` as is, else on `PATH`.
fn find_executable(p: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let ok = |c: &Path| {
        std::fs::metadata(c)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if p.components().count() > 1 || p.is_absolute() {
        return ok(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(p))
        .find(|c| ok(c))
}

/// The JVM's class path: the shim, its libraries, the operator's extras.
fn host_classpath(settings: &JavaHostSettings, dir: &Path) -> String {
    let mut cp = vec![
        dir.join("aux-host.jar").to_string_lossy().into_owned(),
        dir.join("lib").join("*").to_string_lossy().into_owned(),
    ];
    cp.extend(settings.extra_classpath.iter().cloned());
    cp.join(":")
}

fn aux_error(specs: &[ServiceSpec], message: String) -> NmError {
    NmError::AuxService {
        name: specs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(","),
        message,
    }
}

impl JavaHost {
    /// Starts the JVM, initializes and starts `specs` in it; returns each
    /// service's meta data.
    pub async fn start(
        cfg: &AuxConfig,
        specs: Vec<ServiceSpec>,
        meta: MetaData,
    ) -> Result<(Arc<JavaHost>, Vec<(String, Option<Vec<u8>>)>), NmError> {
        let settings = cfg.java.clone();
        let first = specs
            .first()
            .map(|s| format!("class {}", s.class))
            .unwrap_or_default();
        let java = find_executable(&settings.java).ok_or_else(|| {
            aux_error(
                &specs,
                format!(
                    "its {first} runs in the Java aux-service host, but java was not found \
                     ('{}'): install Java, or set JAVA_HOME or {}",
                    settings.java.display(),
                    config::JAVA_HOST_JAVA
                ),
            )
        })?;
        let dir = settings
            .dir
            .clone()
            .filter(|d| d.join("aux-host.jar").is_file())
            .ok_or_else(|| {
                aux_error(
                    &specs,
                    format!(
                        "its {first} runs in the Java aux-service host, but the host is not \
                         built{}: build it with java/aux-host/build.sh <dir> and name <dir> in {} \
                         or ${}",
                        settings
                            .dir
                            .as_ref()
                            .map(|d| format!(" ({} has no aux-host.jar)", d.display()))
                            .unwrap_or_default(),
                        config::JAVA_HOST_DIR,
                        config::JAVA_HOST_DIR_ENV
                    ),
                )
            })?;
        let classpath = host_classpath(&settings, &dir);
        let (stop_tx, _) = watch::channel(false);
        let host = Arc::new(JavaHost {
            settings,
            java,
            classpath,
            specs,
            properties: cfg.properties.clone(),
            recovery_root: cfg.recovery_root.clone(),
            conn: tokio::sync::Mutex::new(None),
            apps: Mutex::new(BTreeMap::new()),
            pid: Mutex::new(None),
            failed: Mutex::new(None),
            stop_tx,
            meta,
            supervisor: Mutex::new(None),
        });
        let launched = host.launch().await.map_err(|m| aux_error(&host.specs, m))?;
        let metas = launched.metas.clone();
        *host.conn.lock().await = Some(launched.conn);
        let task = tokio::spawn(supervise(host.clone(), launched.child));
        *host.supervisor.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        Ok((host, metas))
    }

    /// The JVM's pid, while one runs.
    pub fn pid(&self) -> Option<u32> {
        *self.pid.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a JVM and its services.
    async fn launch(&self) -> Result<Launched, String> {
        let mut cmd = Command::new(&self.java);
        cmd.args(&self.settings.opts)
            .arg("-cp")
            .arg(&self.classpath)
            .arg(MAIN_CLASS)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start the Java aux-service host ({}): {e}",
                self.java.display()
            )
        })?;
        let pid = child.id();
        info!(pid = ?pid, java = %self.java.display(), "Java aux-service host started");
        if let Some(err) = child.stderr.take() {
            tokio::spawn(copy_log(err, pid.unwrap_or(0)));
        }
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the Java aux-service host has no pipes".into());
        };
        let mut conn = Conn {
            stdin,
            stdout: BufReader::new(stdout),
        };
        match self.init_and_start(&mut conn).await {
            Ok(metas) => {
                *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = pid;
                Ok(Launched { child, conn, metas })
            }
            Err(m) => {
                // End of input ends the host; one that does not end is
                // killed. How a JVM that died by itself ended is told.
                drop(conn);
                let status = match tokio::time::timeout(Duration::from_secs(3), child.wait()).await
                {
                    Ok(Ok(s)) if !s.success() => format!(" (the JVM ended: {s})"),
                    Ok(_) => String::new(),
                    Err(_) => {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                        String::new()
                    }
                };
                Err(format!("{m}{status}"))
            }
        }
    }

    async fn init_and_start(
        &self,
        conn: &mut Conn,
    ) -> Result<Vec<(String, Option<Vec<u8>>)>, String> {
        let hello = FrameWriter::new(frame::OP_HELLO)
            .pairs(&self.properties)
            .finish()
            .map_err(|e| e.to_string())?;
        expect_ok(&conn.call(&hello, START_TIMEOUT).await?, "the host's start")?;
        for s in &self.specs {
            let recovery = match &self.recovery_root {
                Some(root) => {
                    let p = root.join(&s.name);
                    std::fs::create_dir_all(&p).map_err(|e| {
                        format!(
                            "cannot create the recovery dir {} of {}: {e}",
                            p.display(),
                            s.name
                        )
                    })?;
                    p.to_string_lossy().into_owned()
                }
                None => String::new(),
            };
            let init = FrameWriter::new(frame::OP_INIT)
                .str(&s.name)
                .str(&s.class)
                .str(s.classpath.as_deref().unwrap_or(""))
                .str(s.system_classes.as_deref().unwrap_or(""))
                .str(&recovery)
                .pairs(&s.properties)
                .finish()
                .map_err(|e| e.to_string())?;
            expect_ok(
                &conn.call(&init, START_TIMEOUT).await?,
                &format!("Failed to initialize {}", s.name),
            )?;
            info!(service = %s.name, class = %s.class, "Initialized auxiliary service");
        }
        let mut metas = Vec::new();
        for s in &self.specs {
            let start = FrameWriter::new(frame::OP_START)
                .str(&s.name)
                .finish()
                .map_err(|e| e.to_string())?;
            let reply = conn.call(&start, START_TIMEOUT).await?;
            let meta = match frame::parse_reply(&reply).map_err(|e| e.to_string())? {
                Ok(mut r) => {
                    let m = r.opt_bytes().map_err(|e| e.to_string())?;
                    r.end().map_err(|e| e.to_string())?;
                    m
                }
                Err(m) => return Err(format!("Failed to start {}: {m}", s.name)),
            };
            info!(service = %s.name, meta_bytes = ?meta.as_ref().map(Vec::len), "auxiliary service started (Java host)");
            metas.push((s.name.clone(), meta));
        }
        Ok(metas)
    }

    /// One call to the running JVM.
    async fn call(&self, payload: Result<Vec<u8>, frame::FrameError>) -> Result<(), String> {
        let payload = payload.map_err(|e| e.to_string())?;
        let mut guard = self.conn.lock().await;
        let Some(conn) = guard.as_mut() else {
            let failed = self
                .failed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            return Err(failed.unwrap_or_else(|| {
                "the Java aux-service host is not running (being restarted)".into()
            }));
        };
        let outcome = match conn.call(&payload, CALL_TIMEOUT).await {
            // A reply that is not a well-formed frame is as fatal as a
            // broken pipe: the stream can no longer be trusted.
            Ok(reply) => match frame::parse_reply(&reply) {
                Ok(Ok(r)) => r
                    .end()
                    .map_err(|e| format!("the Java aux-service host sent {e}")),
                Ok(Err(m)) => return Err(format!("the service: {m}")),
                Err(e) => Err(format!("the Java aux-service host sent {e}")),
            },
            Err(m) => Err(m),
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(m) => {
                // The stream is out of step: this JVM is done; the
                // supervisor sees it end and starts another.
                *guard = None;
                let pid = self
                    .pid()
                    .and_then(|p| i32::try_from(p).ok())
                    .filter(|p| *p > 0);
                if let Some(pid) = pid {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                Err(m)
            }
        }
    }

    async fn replay_apps(&self) {
        let apps: Vec<_> = self
            .apps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|((s, a), (u, d))| (s.clone(), a.clone(), u.clone(), d.clone()))
            .collect();
        for (service, app, user, data) in apps {
            let req = FrameWriter::new(frame::OP_APP_INIT)
                .str(&service)
                .str(&user)
                .str(&app)
                .bytes(&data)
                .finish();
            if let Err(m) = self.call(req).await {
                warn!(service = %service, app = %app, "cannot initialize the application again in the restarted Java host: {}", escaped(&m));
            }
        }
    }

    /// Stops the services (`serviceStop`) and the JVM.
    pub async fn stop(&self) {
        for s in &self.specs {
            let req = FrameWriter::new(frame::OP_STOP).str(&s.name).finish();
            if self.conn.lock().await.is_none() {
                break;
            }
            if let Err(m) = self.call(req).await {
                warn!(service = %s.name, "stopping the auxiliary service failed: {}", escaped(&m));
            }
        }
        // EOF on its stdin ends the JVM; the supervisor kills it after the
        // grace period.
        *self.conn.lock().await = None;
        let _ = self.stop_tx.send(true);
        let task = self
            .supervisor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }
}

fn expect_ok(reply: &[u8], what: &str) -> Result<(), String> {
    match frame::parse_reply(reply).map_err(|e| e.to_string())? {
        Ok(r) => r.end().map_err(|e| e.to_string()),
        Err(m) => Err(format!("{what}: {m}")),
    }
}

/// Watches the JVM; starts another when it dies, until the stop or the
/// restart limit.
async fn supervise(host: Arc<JavaHost>, mut child: Child) {
    let mut stop_rx = host.stop_tx.subscribe();
    let mut restarts = 0u32;
    loop {
        let status = tokio::select! {
            s = child.wait() => s,
            _ = async { let _ = stop_rx.wait_for(|s| *s).await; } => {
                if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_err() {
                    warn!("the Java aux-service host did not exit; killing it");
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
                info!("Java aux-service host stopped");
                *host.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
                return;
            }
        };
        let stopping = *stop_rx.borrow();
        if stopping {
            *host.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
            return;
        }
        *host.conn.lock().await = None;
        *host.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let status = status
            .map(|s| s.to_string())
            .unwrap_or_else(|e| format!("cannot wait for it: {e}"));
        loop {
            if restarts >= host.settings.max_restarts {
                let msg = format!(
                    "the Java aux-service host died ({status}) and was restarted {restarts} \
                     times; its services ({}) are given up",
                    host.specs
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                );
                error!("{msg}");
                *host.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(msg);
                return;
            }
            if restarts > 0 {
                // A JVM that keeps dying is not started in a tight loop.
                let pause = Duration::from_secs(u64::from(restarts.min(10)));
                if tokio::time::timeout(pause, stop_rx.wait_for(|s| *s))
                    .await
                    .is_ok()
                {
                    return;
                }
            }
            restarts += 1;
            error!(
                "the Java aux-service host died ({status}); starting it again ({restarts} of {})",
                host.settings.max_restarts
            );
            match host.launch().await {
                Ok(l) => {
                    for (name, m) in &l.metas {
                        host.meta.set(name, m.clone());
                    }
                    *host.conn.lock().await = Some(l.conn);
                    child = l.child;
                    host.replay_apps().await;
                    break;
                }
                Err(m) => {
                    error!(
                        "the Java aux-service host could not be started again: {}",
                        escaped(&m)
                    );
                }
            }
            let stopping = *stop_rx.borrow();
            if stopping {
                return;
            }
        }
    }
}

/// Copies the JVM's stderr into the node's log, a line at a time (long
/// lines cut).
async fn copy_log(err: tokio::process::ChildStderr, pid: u32) {
    let mut r = BufReader::new(err);
    let mut line = Vec::new();
    loop {
        line.clear();
        // `read_until` keeps reading a line that never ends; take it in
        // bounded pieces.
        let mut piece = tokio::io::AsyncReadExt::take(&mut r, MAX_LOG_LINE as u64);
        match piece.read_until(b'\n', &mut line).await {
            Ok(0) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                info!(target: "aux_host", pid, "{}", escaped(text.trim_end()));
            }
            Err(_) => return,
        }
    }
}

/// One service of the Java host.
pub struct JavaService {
    host: Arc<JavaHost>,
    name: String,
}

impl JavaService {
    pub fn new(host: Arc<JavaHost>, name: &str) -> JavaService {
        JavaService {
            host,
            name: name.to_string(),
        }
    }

    fn container(&self, op: u8, c: &ContainerContext) -> Result<Vec<u8>, frame::FrameError> {
        FrameWriter::new(op)
            .str(&self.name)
            .str(&c.user)
            .str(&c.container_id)
            .i64(c.memory_mb)
            .u32(u32::try_from(c.vcores.max(0)).unwrap_or(0))
            .u8(match c.container_type {
                ContainerType::ApplicationMaster => 0,
                ContainerType::Task => 1,
            })
            .finish()
    }
}

impl AuxService for JavaService {
    fn initialize_application<'a>(
        &'a self,
        user: &'a str,
        app_id: &'a str,
        data: &'a [u8],
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.host
                .apps
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(
                    (self.name.clone(), app_id.to_string()),
                    (user.to_string(), data.to_vec()),
                );
            let req = FrameWriter::new(frame::OP_APP_INIT)
                .str(&self.name)
                .str(user)
                .str(app_id)
                .bytes(data)
                .finish();
            self.host.call(req).await
        })
    }

    fn stop_application<'a>(&'a self, app_id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.host
                .apps
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&(self.name.clone(), app_id.to_string()));
            let req = FrameWriter::new(frame::OP_APP_STOP)
                .str(&self.name)
                .str(app_id)
                .finish();
            self.host.call(req).await
        })
    }

    fn initialize_container<'a>(
        &'a self,
        ctx: &'a ContainerContext,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.host
                .call(self.container(frame::OP_CONTAINER_INIT, ctx))
                .await
        })
    }

    fn stop_container<'a>(
        &'a self,
        ctx: &'a ContainerContext,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.host
                .call(self.container(frame::OP_CONTAINER_STOP, ctx))
                .await
        })
    }
}
