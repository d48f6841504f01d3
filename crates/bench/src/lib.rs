//! `spindle bench rpc`: load a real ResourceManager over Hadoop IPC.
//!
//! [`run`] starts `spindle resourcemanager` as a child process (or targets
//! one already running), then drives it the way a cluster does:
//!
//! - N simulated NodeManagers ([`nm`]), one IPC connection each, register
//!   through ResourceTracker and heartbeat at the interval the RM names
//!   (`yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`) with
//!   jitter, reporting the containers placed on them;
//! - M simulated ApplicationMasters ([`am`]), each an unmanaged-AM
//!   application that registers with the AMRMToken from its report and
//!   calls `allocate` at its share of an aggregate rate, asking for,
//!   holding and releasing containers.
//!
//! - optionally, load on the RM's web server ([`web`]): REST GETs at a
//!   fixed rate, with `idle_apps` extra applications in the RM for them to list.
//!
//! After a warm-up it measures, over a fixed window: completed heartbeats
//! and allocate calls per second with their latency percentiles, containers
//! allocated, and the CPU the RM process used (utime + stime from
//! `/proc/<pid>/stat`, divided by wall time) — and the bench's own CPU,
//! since both usually share one machine.

pub mod am;
pub mod compare;
pub mod histogram;
pub mod nm;
pub mod procfs;
pub mod rm_process;
pub mod web;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use spindle_common::Resource;
use spindle_ipc::{protocols, ProxyConfig, RpcProxy};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

pub use histogram::Histogram;
pub use rm_process::{HadoopSpawnOptions, RmAddresses, RmChild, SpawnOptions};

/// Why a bench run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The options cannot describe a run.
    #[error("invalid options: {0}")]
    Options(String),
    /// The RM could not be started or reached, or the simulated cluster
    /// could not be set up.
    #[error("{0}")]
    Setup(String),
    /// The RM process died during the run.
    #[error("{0}")]
    RmDied(String),
    /// Interrupted (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
}

/// Which ResourceManager to load.
#[derive(Debug, Clone)]
pub enum RmTarget {
    /// Start `spindle resourcemanager` as a child process and stop it at the end.
    Spawn(SpawnOptions),
    /// Start Hadoop's own ResourceManager (through its launcher) and stop it at the end.
    SpawnHadoop(HadoopSpawnOptions),
    /// An RM that is already running; `pid` (when on this machine) lets its
    /// CPU be measured.
    Existing {
        addresses: RmAddresses,
        pid: Option<u32>,
    },
}

/// What to simulate.
#[derive(Debug, Clone)]
pub struct RpcBenchOptions {
    pub target: RmTarget,
    /// Simulated NodeManagers.
    pub nms: usize,
    /// Simulated (unmanaged) ApplicationMasters.
    pub ams: usize,
    /// The measured window.
    pub duration: Duration,
    /// Load before the window opens (after every NM and AM registered).
    pub warmup: Duration,
    /// The NM heartbeat interval: configured in a spawned RM, and used by the
    /// NMs until the RM names its own.
    pub heartbeat_interval: Duration,
    /// Each heartbeat interval is drawn from `interval × (1 ± jitter)`.
    pub jitter: f64,
    /// Target `allocate` calls per second, summed over all AMs.
    pub allocate_rate: f64,
    /// Containers each AM keeps asked for or held.
    pub containers_per_am: usize,
    /// How long an AM holds a container before releasing it.
    pub hold: Duration,
    /// The size of each container asked for.
    pub container: Resource,
    /// What each simulated node offers.
    pub nm_capability: Resource,
    /// The queue the AMs' applications are submitted to.
    pub queue: String,
    /// NodeManager registrations in flight at once during set-up.
    pub register_concurrency: usize,
    /// Longest a single call may take.
    pub call_timeout: Duration,
    /// Longest the set-up (registrations, submissions) may take.
    pub setup_timeout: Duration,
    /// Applications submitted (unmanaged, never registered) before the
    /// window and left in the RM, so that its lists are long.
    pub idle_apps: usize,
    /// REST GETs per second on the RM's web server during warm-up and
    /// window (0: none), over `web_paths` in turn.
    pub web_rate: f64,
    pub web_paths: Vec<String>,
    /// Print each phase (RM start, registrations, warm-up, window, wind-down) to
    /// stderr as it begins, and the registrations' progress.
    pub progress: bool,
}

/// The REST paths the web load requests by default: the application list
/// and the cluster metrics, what monitoring and UIs poll most.
pub const DEFAULT_WEB_PATHS: [&str; 2] = ["/ws/v1/cluster/apps", "/ws/v1/cluster/metrics"];

/// The default aggregate allocate rate: the target's 5,000 AM calls/s.
pub const DEFAULT_ALLOCATE_RATE: f64 = 5000.0;

impl RpcBenchOptions {
    /// Defaults: 1,000 NMs of 8 GiB / 8 vcores heartbeating every second with
    /// 10 % jitter; 10 AMs sharing 5,000 allocate calls/s, each keeping 8
    /// containers of 1 GiB / 1 vcore asked for or held, for 2 s each; 5 s of
    /// warm-up and a 10 s window.
    pub fn new(target: RmTarget) -> RpcBenchOptions {
        RpcBenchOptions {
            target,
            nms: 1000,
            ams: 10,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(5),
            heartbeat_interval: Duration::from_millis(1000),
            jitter: 0.1,
            allocate_rate: DEFAULT_ALLOCATE_RATE,
            containers_per_am: 8,
            hold: Duration::from_secs(2),
            container: Resource::new(1024, 1),
            nm_capability: Resource::new(8192, 8),
            queue: "default".into(),
            register_concurrency: 64,
            call_timeout: Duration::from_secs(30),
            setup_timeout: Duration::from_secs(120),
            idle_apps: 0,
            web_rate: 0.0,
            web_paths: DEFAULT_WEB_PATHS.iter().map(|p| p.to_string()).collect(),
            progress: false,
        }
    }

    fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: String| Err(BenchError::Options(m));
        if self.nms == 0 {
            return bad("--nms must be at least 1: the AMs need nodes to get containers on".into());
        }
        if self.duration.is_zero() {
            return bad("the measured duration must be positive".into());
        }
        if self.heartbeat_interval.is_zero() {
            return bad("the heartbeat interval must be positive".into());
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return bad(format!(
                "the heartbeat jitter must be in [0, 1), not {}",
                self.jitter
            ));
        }
        if self.ams > 0 && !(self.allocate_rate.is_finite() && self.allocate_rate > 0.0) {
            return bad(format!(
                "the allocate rate must be a positive number of calls per second, not {}",
                self.allocate_rate
            ));
        }
        if self.container.memory_mb <= 0 || self.container.vcores <= 0 {
            return bad(format!(
                "the container size must be positive, not {}",
                self.container
            ));
        }
        if !self.container.fits_in(&self.nm_capability) {
            return bad(format!(
                "a container ({}) does not fit on a node ({})",
                self.container, self.nm_capability
            ));
        }
        if !(self.web_rate.is_finite() && self.web_rate >= 0.0) {
            return bad(format!(
                "the web request rate must be a non-negative number per second, not {}",
                self.web_rate
            ));
        }
        if self.web_rate > 0.0 && self.web_paths.is_empty() {
            return bad("web load needs at least one path".into());
        }
        if self.register_concurrency == 0 {
            return bad("the registration concurrency must be at least 1".into());
        }
        Ok(())
    }

    /// Time between one AM's allocate calls.
    fn am_period(&self) -> Duration {
        Duration::from_secs_f64(self.ams.max(1) as f64 / self.allocate_rate)
    }
}

/// Counters shared by every simulated NM and AM. Latencies and counts are
/// taken only while the measured window is open.
#[derive(Debug, Default)]
pub struct Stats {
    measuring: AtomicBool,
    pub heartbeats: Histogram,
    pub allocates: Histogram,
    heartbeat_errors: AtomicU64,
    allocate_errors: AtomicU64,
    containers_allocated: AtomicU64,
    containers_released: AtomicU64,
    containers_completed: AtomicU64,
    pub nms_registered: AtomicU64,
    pub ams_registered: AtomicU64,
    pub ams_finished: AtomicU64,
    pub nm_resyncs: AtomicU64,
    task_failures: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Stats {
    fn measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    fn count(&self, counter: &AtomicU64) {
        if self.measuring() {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn heartbeat_done(&self, latency: Duration) {
        if self.measuring() {
            self.heartbeats.record(latency);
        }
    }

    pub fn allocate_done(&self, latency: Duration) {
        if self.measuring() {
            self.allocates.record(latency);
        }
    }

    pub fn heartbeat_failed(&self, error: String) {
        self.count(&self.heartbeat_errors);
        self.note_error(error);
    }

    pub fn allocate_failed(&self, error: String) {
        self.count(&self.allocate_errors);
        self.note_error(error);
    }

    pub fn container_allocated(&self) {
        self.count(&self.containers_allocated);
    }

    pub fn container_released(&self) {
        self.count(&self.containers_released);
    }

    pub fn container_completed(&self) {
        self.count(&self.containers_completed);
    }

    /// Keeps the first error for the report.
    pub fn note_error(&self, error: String) {
        let mut first = self.first_error.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(error);
        }
    }

    fn task_failed(&self, error: String) {
        self.task_failures.fetch_add(1, Ordering::Relaxed);
        self.note_error(error);
    }
}

/// The figures of one run. Latencies are `None` when no call completed.
#[derive(Debug, Clone, Serialize)]
pub struct RpcBenchReport {
    /// The RM loaded, e.g. `Hadoop 3.3.4` or `Spindle 0.1.0` (`None`: an RM
    /// already running, not asked).
    pub rm_version: Option<String>,
    pub nms: usize,
    pub ams: usize,
    pub nms_registered: u64,
    pub ams_registered: u64,
    pub heartbeat_interval_ms: u64,
    pub target_allocates_per_sec: f64,
    /// Set-up time: RM start, NM registrations, AM submissions.
    pub setup_s: f64,
    /// Load before the window opened, after the set-up.
    pub warmup_s: f64,
    /// The measured window.
    pub duration_s: f64,
    pub heartbeats: u64,
    pub heartbeats_per_sec: f64,
    pub heartbeat_ms_p50: Option<f64>,
    pub heartbeat_ms_p99: Option<f64>,
    pub heartbeat_ms_max: Option<f64>,
    pub heartbeat_errors: u64,
    pub allocates: u64,
    pub allocates_per_sec: f64,
    pub allocate_ms_p50: Option<f64>,
    pub allocate_ms_p99: Option<f64>,
    pub allocate_ms_max: Option<f64>,
    pub allocate_errors: u64,
    /// Containers granted to the AMs in the window.
    pub containers_allocated: u64,
    pub containers_allocated_per_sec: f64,
    pub containers_released: u64,
    /// Container completions the AMs heard of in the window.
    pub containers_completed: u64,
    pub nm_resyncs: u64,
    /// NM or AM tasks that ended with an error.
    pub task_failures: u64,
    pub first_error: Option<String>,
    /// CPU cores the RM process used over the window (`None` when its pid
    /// is unknown).
    pub rm_cpu_cores: Option<f64>,
    pub rm_rss_mb: Option<f64>,
    pub rm_pid: Option<u32>,
    /// CPU cores this bench process (the simulated NMs and AMs) used.
    pub bench_cpu_cores: f64,
    /// Processors available on this machine (shared by the RM and the bench).
    pub cpus: usize,
    /// Applications the RM held besides the AMs' (`idle_apps`).
    pub idle_apps: usize,
    /// The web load's figures per path (empty without web load).
    pub web: Vec<web::WebPathReport>,
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.3} ms"))
}

impl RpcBenchReport {
    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report for people.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let rm_cpu = self.rm_cpu_cores.map_or_else(
            || "unknown (no pid)".to_string(),
            |c| format!("{c:.3} cores"),
        );
        s.push_str(&format!(
            "spindle bench rpc{}: {} NMs (heartbeat {} ms), {} unmanaged AMs (target {:.0} allocate/s); \
             {:.1} s window after {:.1} s of set-up and {:.1} s of warm-up\n",
            self.rm_version
                .as_ref()
                .map_or_else(String::new, |v| format!(" against {v}")),
            self.nms,
            self.heartbeat_interval_ms,
            self.ams,
            self.target_allocates_per_sec,
            self.duration_s,
            self.setup_s,
            self.warmup_s
        ));
        s.push_str(&format!(
            "  heartbeats   {:>10.1}/s   p50 {}   p99 {}   max {}   errors {}\n",
            self.heartbeats_per_sec,
            fmt_ms(self.heartbeat_ms_p50),
            fmt_ms(self.heartbeat_ms_p99),
            fmt_ms(self.heartbeat_ms_max),
            self.heartbeat_errors
        ));
        s.push_str(&format!(
            "  allocate     {:>10.1}/s   p50 {}   p99 {}   max {}   errors {}\n",
            self.allocates_per_sec,
            fmt_ms(self.allocate_ms_p50),
            fmt_ms(self.allocate_ms_p99),
            fmt_ms(self.allocate_ms_max),
            self.allocate_errors
        ));
        s.push_str(&format!(
            "  containers   {:>10.1}/s allocated ({} in the window), {} released, {} completions heard\n",
            self.containers_allocated_per_sec,
            self.containers_allocated,
            self.containers_released,
            self.containers_completed
        ));
        s.push_str(&format!(
            "  RM CPU       {rm_cpu}, RSS {}\n",
            self.rm_rss_mb
                .map_or_else(|| "unknown".to_string(), |m| format!("{m:.0} MiB"))
        ));
        s.push_str(&format!(
            "  bench CPU    {:.3} cores (the simulated NMs and AMs share the machine's {} CPUs with the RM)\n",
            self.bench_cpu_cores, self.cpus
        ));
        if self.idle_apps > 0 {
            s.push_str(&format!(
                "  idle apps    {} more applications held by the RM\n",
                self.idle_apps
            ));
        }
        for w in &self.web {
            s.push_str(&format!(
                "  GET {:<28} {:>8.1}/s   p50 {}   p99 {}   max {}   errors {}   {} B/reply\n",
                w.path,
                w.requests_per_sec,
                fmt_ms(w.ms_p50),
                fmt_ms(w.ms_p99),
                fmt_ms(w.ms_max),
                w.errors,
                w.mean_reply_bytes
            ));
        }
        if self.task_failures > 0 || self.nm_resyncs > 0 {
            s.push_str(&format!(
                "  {} task failures, {} NM resyncs\n",
                self.task_failures, self.nm_resyncs
            ));
        }
        if let Some(e) = &self.first_error {
            s.push_str(&format!("  first error: {e}\n"));
        }
        s
    }
}

/// A progress line on stderr, when asked for.
fn progress(opts: &RpcBenchOptions, line: std::fmt::Arguments<'_>) {
    if opts.progress {
        eprintln!("bench rpc: {line}");
    }
}

/// Runs the benchmark; see the crate documentation.
pub async fn run(opts: RpcBenchOptions) -> Result<RpcBenchReport, BenchError> {
    opts.validate()?;
    let limit = procfs::raise_nofile_limit().map_err(BenchError::Setup)?;
    // One connection per NM and per AM, the AMs' client connection, slack.
    let needed = (opts.nms + opts.ams + 256) as u64;
    if limit < needed {
        return Err(BenchError::Setup(format!(
            "{} NMs and {} AMs need about {needed} open files, but the limit is {limit}; \
             raise it (ulimit -n) or simulate fewer",
            opts.nms, opts.ams
        )));
    }
    let heartbeat_ms = opts.heartbeat_interval.as_millis() as u64;
    let (mut child, addresses, pid, version) = start_target(&opts, heartbeat_ms).await?;
    let outcome = tokio::select! {
        r = drive(&opts, &addresses, pid, child.as_mut()) => r,
        _ = tokio::signal::ctrl_c() => Err(BenchError::Interrupted),
    };
    if let Some(child) = child {
        child.stop(Duration::from_secs(10)).await;
    }
    outcome.map(|mut r| {
        r.rm_version = version;
        r
    })
}

/// The RM child (when one is started), its addresses, pid and version.
type Started = (Option<RmChild>, RmAddresses, Option<u32>, Option<String>);

/// Starts the RM of `opts.target` (or names the running one).
pub async fn start_target(
    opts: &RpcBenchOptions,
    heartbeat_ms: u64,
) -> Result<Started, BenchError> {
    Ok(match &opts.target {
        RmTarget::Spawn(spawn) => {
            progress(opts, format_args!("starting Spindle's ResourceManager"));
            let (child, addresses) = RmChild::start(spawn, heartbeat_ms).await?;
            let pid = child.pid();
            let version = format!("Spindle {}", env!("CARGO_PKG_VERSION"));
            (Some(child), addresses, Some(pid), Some(version))
        }
        RmTarget::SpawnHadoop(spawn) => {
            progress(opts, format_args!("starting Hadoop's ResourceManager"));
            let (child, addresses, version) = RmChild::start_hadoop(spawn, heartbeat_ms).await?;
            let pid = child.pid();
            (Some(child), addresses, Some(pid), Some(version))
        }
        RmTarget::Existing { addresses, pid } => (None, addresses.clone(), *pid, None),
    })
}

/// Runs the load of `opts` (its `target` ignored) against an RM already
/// started: `child` (when given) is watched for an early exit.
pub async fn run_against(
    opts: &RpcBenchOptions,
    addresses: &RmAddresses,
    pid: Option<u32>,
    child: Option<&mut RmChild>,
) -> Result<RpcBenchReport, BenchError> {
    opts.validate()?;
    let limit = procfs::raise_nofile_limit().map_err(BenchError::Setup)?;
    let needed = (opts.nms + opts.ams + 256) as u64;
    if limit < needed {
        return Err(BenchError::Setup(format!(
            "{} NMs and {} AMs need about {needed} open files, but the limit is {limit}",
            opts.nms, opts.ams
        )));
    }
    tokio::select! {
        r = drive(opts, addresses, pid, child) => r,
        _ = tokio::signal::ctrl_c() => Err(BenchError::Interrupted),
    }
}

/// Fails when the spawned RM has exited.
fn check_rm(child: &mut Option<&mut RmChild>) -> Result<(), BenchError> {
    match child {
        Some(c) => c.check_alive().map_err(BenchError::RmDied),
        None => Ok(()),
    }
}

/// Sleeps `d`, checking every half second that the RM still runs.
async fn watchful_sleep(d: Duration, child: &mut Option<&mut RmChild>) -> Result<(), BenchError> {
    let end = Instant::now() + d;
    loop {
        check_rm(child)?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(500))).await;
    }
}

/// Collects finished tasks of `set` without waiting; the first failure is an
/// error when `fatal`, otherwise only counted.
fn reap(
    set: &mut JoinSet<Result<(), String>>,
    stats: &Stats,
    fatal: bool,
) -> Result<(), BenchError> {
    while let Some(done) = set.try_join_next() {
        let failure = match done {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(e) => format!("a simulated task panicked or was cancelled: {e}"),
        };
        if fatal {
            return Err(BenchError::Setup(failure));
        }
        stats.task_failed(failure);
    }
    Ok(())
}

async fn drive(
    opts: &RpcBenchOptions,
    addresses: &RmAddresses,
    pid: Option<u32>,
    mut child: Option<&mut RmChild>,
) -> Result<RpcBenchReport, BenchError> {
    let setup_started = Instant::now();
    let stats = Arc::new(Stats::default());
    let cluster = Arc::new(nm::Cluster::new(opts.nms, opts.nm_capability));
    let (stop_tx, stop_rx) = watch::channel(false);
    let setup_deadline = setup_started + opts.setup_timeout;
    let past_deadline = |what: &str, done: u64, of: usize| {
        BenchError::Setup(format!(
            "set-up took longer than {} s: {done} of {of} {what} registered",
            opts.setup_timeout.as_secs()
        ))
    };

    // NodeManagers first: the AMs need nodes.
    let nm_settings = nm::NmSettings {
        tracker: addresses.tracker.clone(),
        heartbeat_interval: opts.heartbeat_interval,
        jitter: opts.jitter,
        call_timeout: opts.call_timeout,
    };
    progress(
        opts,
        format_args!("registering {} simulated NodeManagers", opts.nms),
    );
    let register_limit = Arc::new(Semaphore::new(opts.register_concurrency));
    let mut nm_tasks = JoinSet::new();
    for i in 0..opts.nms {
        nm_tasks.spawn(nm::run_node(
            i,
            cluster.clone(),
            nm_settings.clone(),
            stats.clone(),
            register_limit.clone(),
            stop_rx.clone(),
        ));
    }
    let mut reported = Instant::now();
    loop {
        reap(&mut nm_tasks, &stats, true)?;
        check_rm(&mut child)?;
        let registered = stats.nms_registered.load(Ordering::Relaxed);
        if registered >= opts.nms as u64 {
            break;
        }
        if reported.elapsed() >= Duration::from_secs(2) {
            reported = Instant::now();
            progress(
                opts,
                format_args!("{registered} of {} NodeManagers registered", opts.nms),
            );
        }
        if Instant::now() >= setup_deadline {
            return Err(past_deadline("NodeManagers", registered, opts.nms));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Then the ApplicationMasters: submit, read the token, register.
    let am_settings = am::AmSettings {
        scheduler: addresses.scheduler.clone(),
        queue: opts.queue.clone(),
        period: opts.am_period(),
        containers: opts.containers_per_am,
        container: opts.container,
        hold: opts.hold,
        call_timeout: opts.call_timeout,
        setup_timeout: opts.setup_timeout,
    };
    let mut am_tasks = JoinSet::new();
    if opts.ams > 0 {
        progress(
            opts,
            format_args!(
                "submitting and registering {} unmanaged ApplicationMasters",
                opts.ams
            ),
        );
        let mut config = ProxyConfig::new(
            addresses.client.clone(),
            spindle_common::current_user(),
            protocols::APPLICATION_CLIENT,
        );
        config.call_timeout = opts.call_timeout;
        let client = RpcProxy::new(config);
        client.connect().await.map_err(|e| {
            BenchError::Setup(format!(
                "cannot reach the ResourceManager's client port: {e}"
            ))
        })?;
        let am_limit = Arc::new(Semaphore::new(16));
        let mut setups = JoinSet::new();
        for i in 0..opts.ams {
            let (client, settings, limit) = (client.clone(), am_settings.clone(), am_limit.clone());
            setups.spawn(async move {
                let _permit = limit
                    .acquire()
                    .await
                    .map_err(|_| "the bench is stopping".to_string())?;
                let (attempt, token) = am::submit_unmanaged(&client, i, &settings).await?;
                am::register(attempt, token, &settings).await
            });
        }
        while let Some(done) = setups.join_next().await {
            let am = match done {
                Ok(Ok(am)) => am,
                Ok(Err(e)) => return Err(BenchError::Setup(e)),
                Err(e) => return Err(BenchError::Setup(format!("an AM set-up task failed: {e}"))),
            };
            stats.ams_registered.fetch_add(1, Ordering::Relaxed);
            am_tasks.spawn(am::run_am(
                am,
                cluster.clone(),
                am_settings.clone(),
                stats.clone(),
                stop_rx.clone(),
            ));
            if Instant::now() >= setup_deadline {
                let done = stats.ams_registered.load(Ordering::Relaxed);
                return Err(past_deadline("ApplicationMasters", done, opts.ams));
            }
        }
    }
    if opts.idle_apps > 0 {
        progress(
            opts,
            format_args!("submitting {} idle applications", opts.idle_apps),
        );
        submit_idle(opts, addresses, &am_settings, setup_deadline).await?;
    }
    let web_stats = Arc::new(web::WebStats::new(&opts.web_paths));
    let mut web_task = JoinSet::new();
    if opts.web_rate > 0.0 {
        let addr = addresses.web.clone().ok_or_else(|| {
            BenchError::Setup("web load asked for, but the RM's web address is unknown".into())
        })?;
        web_task.spawn(web::run(
            web::WebLoad {
                addr,
                paths: opts.web_paths.clone(),
                rate: opts.web_rate,
                call_timeout: opts.call_timeout,
            },
            stats.clone(),
            web_stats.clone(),
            stop_rx.clone(),
        ));
    }
    let setup = setup_started.elapsed();

    progress(
        opts,
        format_args!(
            "set-up done in {:.1} s; warming up for {:.1} s",
            setup.as_secs_f64(),
            opts.warmup.as_secs_f64()
        ),
    );
    watchful_sleep(opts.warmup, &mut child).await?;
    reap(&mut nm_tasks, &stats, false)?;
    reap(&mut am_tasks, &stats, false)?;

    // The measured window.
    let rm_cpu_before = match pid {
        Some(p) => Some(procfs::cpu_times(Some(p)).map_err(BenchError::Setup)?),
        None => None,
    };
    let own_before = procfs::cpu_times(None).map_err(BenchError::Setup)?;
    progress(
        opts,
        format_args!("measuring for {:.1} s", opts.duration.as_secs_f64()),
    );
    let opened = Instant::now();
    stats.measuring.store(true, Ordering::SeqCst);
    watchful_sleep(opts.duration, &mut child).await?;
    stats.measuring.store(false, Ordering::SeqCst);
    let window = opened.elapsed();
    let rm_cpu_after = match pid {
        Some(p) => Some(procfs::cpu_times(Some(p)).map_err(BenchError::Setup)?),
        None => None,
    };
    let own_after = procfs::cpu_times(None).map_err(BenchError::Setup)?;
    let rm_rss_mb = pid.and_then(|p| procfs::rss_mb(Some(p)).ok());

    // Wind down: AMs unregister, NMs leave.
    progress(
        opts,
        format_args!("winding down: the AMs unregister, the NMs leave"),
    );
    let _ = stop_tx.send(true);
    let wind_down = opts.call_timeout + Duration::from_secs(5);
    for set in [&mut am_tasks, &mut nm_tasks, &mut web_task] {
        let all = async {
            while let Some(done) = set.join_next().await {
                match done {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => stats.task_failed(e),
                    Err(e) => stats.task_failed(format!("a simulated task failed: {e}")),
                }
            }
        };
        if tokio::time::timeout(wind_down, all).await.is_err() {
            stats.note_error(format!(
                "some simulated tasks did not stop within {} s",
                wind_down.as_secs()
            ));
            set.abort_all();
        }
    }

    let secs = window.as_secs_f64();
    let per_sec = |n: u64| n as f64 / secs;
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let heartbeats = stats.heartbeats.count();
    let allocates = stats.allocates.count();
    let containers_allocated = load(&stats.containers_allocated);
    let rm_cpu_cores = match (rm_cpu_before, rm_cpu_after) {
        (Some(b), Some(a)) => Some(a.total().saturating_sub(b.total()).as_secs_f64() / secs),
        _ => None,
    };
    let first_error = stats
        .first_error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    Ok(RpcBenchReport {
        rm_version: None,
        nms: opts.nms,
        ams: opts.ams,
        nms_registered: load(&stats.nms_registered),
        ams_registered: load(&stats.ams_registered),
        heartbeat_interval_ms: opts.heartbeat_interval.as_millis() as u64,
        target_allocates_per_sec: if opts.ams > 0 {
            opts.allocate_rate
        } else {
            0.0
        },
        setup_s: setup.as_secs_f64(),
        warmup_s: opts.warmup.as_secs_f64(),
        duration_s: secs,
        heartbeats,
        heartbeats_per_sec: per_sec(heartbeats),
        heartbeat_ms_p50: stats.heartbeats.quantile_ms(0.50),
        heartbeat_ms_p99: stats.heartbeats.quantile_ms(0.99),
        heartbeat_ms_max: stats.heartbeats.max_ms(),
        heartbeat_errors: load(&stats.heartbeat_errors),
        allocates,
        allocates_per_sec: per_sec(allocates),
        allocate_ms_p50: stats.allocates.quantile_ms(0.50),
        allocate_ms_p99: stats.allocates.quantile_ms(0.99),
        allocate_ms_max: stats.allocates.max_ms(),
        allocate_errors: load(&stats.allocate_errors),
        containers_allocated,
        containers_allocated_per_sec: per_sec(containers_allocated),
        containers_released: load(&stats.containers_released),
        containers_completed: load(&stats.containers_completed),
        nm_resyncs: load(&stats.nm_resyncs),
        task_failures: load(&stats.task_failures),
        first_error,
        rm_cpu_cores,
        rm_rss_mb,
        rm_pid: pid,
        bench_cpu_cores: own_after
            .total()
            .saturating_sub(own_before.total())
            .as_secs_f64()
            / secs,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        idle_apps: opts.idle_apps,
        web: if opts.web_rate > 0.0 {
            web_stats.report(secs)
        } else {
            Vec::new()
        },
    })
}

/// Submits `idle_apps` unmanaged applications that never register, 32 at
/// a time.
async fn submit_idle(
    opts: &RpcBenchOptions,
    addresses: &RmAddresses,
    settings: &am::AmSettings,
    deadline: Instant,
) -> Result<(), BenchError> {
    let mut config = ProxyConfig::new(
        addresses.client.clone(),
        spindle_common::current_user(),
        protocols::APPLICATION_CLIENT,
    );
    config.call_timeout = opts.call_timeout;
    let client = RpcProxy::new(config);
    let limit = Arc::new(Semaphore::new(32));
    let mut submissions = JoinSet::new();
    for i in 0..opts.idle_apps {
        let (client, settings, limit) = (client.clone(), settings.clone(), limit.clone());
        submissions.spawn(async move {
            let _permit = limit
                .acquire()
                .await
                .map_err(|_| "the bench is stopping".to_string())?;
            am::submit(&client, format!("spindle-bench-idle-{i}"), &settings).await
        });
        // Keep the set from holding every finished task's result.
        while let Some(done) = submissions.try_join_next() {
            idle_submitted(done)?;
        }
        if Instant::now() >= deadline {
            return Err(BenchError::Setup(format!(
                "set-up took longer than {} s while submitting idle applications",
                opts.setup_timeout.as_secs()
            )));
        }
    }
    while let Some(done) = submissions.join_next().await {
        idle_submitted(done)?;
    }
    Ok(())
}

fn idle_submitted(
    done: Result<Result<spindle_common::ApplicationId, String>, tokio::task::JoinError>,
) -> Result<(), BenchError> {
    match done {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(BenchError::Setup(format!(
            "submitting an idle application: {e}"
        ))),
        Err(e) => Err(BenchError::Setup(format!("an idle submission failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> RpcBenchOptions {
        RpcBenchOptions::new(RmTarget::Existing {
            addresses: RmAddresses::hadoop_defaults("127.0.0.1"),
            pid: None,
        })
    }

    #[test]
    fn options_are_checked_with_the_reason() {
        assert!(opts().validate().is_ok());
        let cases: Vec<(RpcBenchOptions, &str)> = vec![
            (RpcBenchOptions { nms: 0, ..opts() }, "--nms"),
            (
                RpcBenchOptions {
                    allocate_rate: 0.0,
                    ..opts()
                },
                "allocate rate",
            ),
            (
                RpcBenchOptions {
                    jitter: 1.5,
                    ..opts()
                },
                "jitter",
            ),
            (
                RpcBenchOptions {
                    container: Resource::new(16384, 1),
                    ..opts()
                },
                "does not fit",
            ),
            (
                RpcBenchOptions {
                    duration: Duration::ZERO,
                    ..opts()
                },
                "duration",
            ),
        ];
        for (o, needle) in cases {
            let err = o
                .validate()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{needle}: {err}");
        }
        // Without AMs the rate does not matter.
        assert!(RpcBenchOptions {
            ams: 0,
            allocate_rate: 0.0,
            ..opts()
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn each_am_gets_its_share_of_the_rate() {
        let o = RpcBenchOptions {
            ams: 50,
            allocate_rate: 5000.0,
            ..opts()
        };
        assert_eq!(o.am_period(), Duration::from_millis(10));
    }

    #[test]
    fn counters_move_only_inside_the_window() {
        let s = Stats::default();
        s.heartbeat_done(Duration::from_millis(1));
        s.container_allocated();
        s.allocate_failed("early".into());
        assert_eq!(s.heartbeats.count(), 0);
        assert_eq!(s.containers_allocated.load(Ordering::Relaxed), 0);
        assert_eq!(s.allocate_errors.load(Ordering::Relaxed), 0);
        s.measuring.store(true, Ordering::SeqCst);
        s.heartbeat_done(Duration::from_millis(1));
        s.container_allocated();
        s.allocate_failed("late".into());
        assert_eq!(s.heartbeats.count(), 1);
        assert_eq!(s.containers_allocated.load(Ordering::Relaxed), 1);
        assert_eq!(s.allocate_errors.load(Ordering::Relaxed), 1);
        // The first error is kept, even from outside the window.
        assert_eq!(
            s.first_error.lock().map(|e| e.clone()).ok().flatten(),
            Some("early".to_string())
        );
    }

    #[test]
    fn the_json_report_has_the_documented_keys() {
        let report = RpcBenchReport {
            rm_version: Some("Spindle 0.1.0".into()),
            nms: 2,
            ams: 1,
            nms_registered: 2,
            ams_registered: 1,
            heartbeat_interval_ms: 1000,
            target_allocates_per_sec: 10.0,
            setup_s: 0.5,
            warmup_s: 2.0,
            duration_s: 1.0,
            heartbeats: 2,
            heartbeats_per_sec: 2.0,
            heartbeat_ms_p50: Some(0.2),
            heartbeat_ms_p99: Some(0.3),
            heartbeat_ms_max: Some(0.3),
            heartbeat_errors: 0,
            allocates: 10,
            allocates_per_sec: 10.0,
            allocate_ms_p50: Some(0.4),
            allocate_ms_p99: None,
            allocate_ms_max: None,
            allocate_errors: 0,
            containers_allocated: 3,
            containers_allocated_per_sec: 3.0,
            containers_released: 1,
            containers_completed: 1,
            nm_resyncs: 0,
            task_failures: 0,
            first_error: None,
            rm_cpu_cores: Some(0.05),
            rm_rss_mb: Some(30.0),
            rm_pid: Some(1),
            bench_cpu_cores: 0.01,
            cpus: 2,
            idle_apps: 0,
            web: Vec::new(),
        };
        let v: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
        for key in [
            "heartbeats_per_sec",
            "allocate_ms_p50",
            "allocate_ms_p99",
            "rm_cpu_cores",
            "bench_cpu_cores",
            "containers_allocated",
        ] {
            assert!(v.get(key).is_some(), "{key} missing");
        }
        assert_eq!(v["allocate_ms_p99"], serde_json::Value::Null);
        assert_eq!(v["heartbeats_per_sec"], 2.0);
        let text = report.to_text();
        assert!(text.contains("0.050 cores"), "{text}");
        assert!(
            text.contains("1.0 s window after 0.5 s of set-up and 2.0 s of warm-up"),
            "{text}"
        );
        assert_eq!(v["warmup_s"], 2.0);
    }
}
