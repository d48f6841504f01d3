//! `spindle bench rpc`: simulated NMs and AMs against a real ResourceManager.

use std::time::Duration;

use spindle_bench::{RmAddresses, RmTarget, RpcBenchOptions, SpawnOptions};
use spindle_common::Resource;

/// Arguments of `spindle bench rpc`.
///
/// Starts `spindle resourcemanager` (this binary) with a generated
/// configuration on 127.0.0.1, registers N simulated NodeManagers that
/// heartbeat over Hadoop IPC and M unmanaged ApplicationMasters that call
/// allocate, then reports heartbeats/s, allocate latency and the RM's CPU.
/// The simulated cluster runs in this process, on the same machine: its
/// own CPU use is reported too.
#[derive(clap::Args)]
pub struct RpcBenchArgs {
    /// Simulated NodeManagers (one IPC connection each).
    #[arg(long, default_value_t = 1000)]
    nms: usize,
    /// Simulated unmanaged ApplicationMasters.
    #[arg(long, default_value_t = 10)]
    ams: usize,
    /// Length of the measured window, in seconds.
    #[arg(long = "duration-s", default_value_t = 10.0)]
    duration_s: f64,
    /// Load before the window opens, in seconds (after every NM and AM registered).
    #[arg(long = "warmup-s", default_value_t = 5.0)]
    warmup_s: f64,
    /// NodeManager heartbeat interval
    /// (yarn.resourcemanager.nodemanagers.heartbeat-interval-ms of the RM started).
    #[arg(long = "heartbeat-interval-ms", default_value_t = 1000)]
    heartbeat_interval_ms: u64,
    /// Heartbeat jitter: each interval is drawn from interval × (1 ± jitter).
    #[arg(long, default_value_t = 0.1)]
    jitter: f64,
    /// Target allocate calls per second, summed over all AMs.
    #[arg(long = "allocate-rate", default_value_t = spindle_bench::DEFAULT_ALLOCATE_RATE)]
    allocate_rate: f64,
    /// Containers each AM keeps asked for or held.
    #[arg(long = "containers-per-am", default_value_t = 8)]
    containers_per_am: usize,
    /// How long an AM holds a container before releasing it, in milliseconds.
    #[arg(long = "hold-ms", default_value_t = 2000)]
    hold_ms: u64,
    /// Memory of each container, in MiB.
    #[arg(long = "container-mb", default_value_t = 1024)]
    container_mb: i64,
    /// Memory each simulated node offers, in MiB.
    #[arg(long = "nm-memory-mb", default_value_t = 8192)]
    nm_memory_mb: i64,
    /// Virtual cores each simulated node offers.
    #[arg(long = "nm-vcores", default_value_t = 8)]
    nm_vcores: i32,
    /// Queue the AMs' applications go to.
    #[arg(long, default_value = "default")]
    queue: String,
    /// An extra yarn-site.xml setting for the RM started, KEY=VALUE (repeatable),
    /// e.g. yarn.resourcemanager.scheduler.class=…FairScheduler.
    #[arg(long = "rm-conf", value_name = "KEY=VALUE")]
    rm_conf: Vec<String>,
    /// Log filter of the RM started (its SPINDLE_LOG).
    #[arg(long = "rm-log", default_value = "warn")]
    rm_log: String,
    /// Load an RM that is already running on HOST (Hadoop's default ports
    /// 8032, 8030, 8031) instead of starting one.
    #[arg(long, value_name = "HOST")]
    rm: Option<String>,
    /// With --rm: the RM's process id on this machine, to measure its CPU.
    #[arg(long = "rm-pid", requires = "rm")]
    rm_pid: Option<u32>,
    /// Applications submitted before the window and left in the RM (unmanaged,
    /// never registered), so that the web load lists many.
    #[arg(long = "idle-apps", default_value_t = 0)]
    idle_apps: usize,
    /// REST GETs per second on the RM's web server during warm-up and window
    /// (0: no web load), over the --web-path values in turn.
    #[arg(long = "web-rate", default_value_t = 0.0)]
    web_rate: f64,
    /// A path the web load requests (repeatable; default /ws/v1/cluster/apps
    /// and /ws/v1/cluster/metrics).
    #[arg(long = "web-path", value_name = "PATH")]
    web_path: Vec<String>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

fn seconds(name: &str, v: f64) -> Result<Duration, String> {
    if v.is_finite() && v >= 0.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!(
            "{name} must be a non-negative number of seconds, not {v}"
        ))
    }
}

fn options(args: RpcBenchArgs) -> Result<(RpcBenchOptions, bool), String> {
    let target = match args.rm {
        Some(host) => RmTarget::Existing {
            addresses: RmAddresses::hadoop_defaults(&host),
            pid: args.rm_pid,
        },
        None => {
            let mut conf = Vec::new();
            for kv in &args.rm_conf {
                let (k, v) = kv
                    .split_once('=')
                    .filter(|(k, _)| !k.trim().is_empty())
                    .ok_or_else(|| format!("--rm-conf takes KEY=VALUE, not '{kv}'"))?;
                conf.push((k.trim().to_string(), v.to_string()));
            }
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find the spindle binary to start the RM: {e}"))?;
            RmTarget::Spawn(SpawnOptions {
                exe,
                conf,
                log_filter: args.rm_log,
                startup_timeout: Duration::from_secs(60),
            })
        }
    };
    let mut opts = RpcBenchOptions::new(target);
    opts.nms = args.nms;
    opts.ams = args.ams;
    opts.duration = seconds("--duration-s", args.duration_s)?;
    opts.warmup = seconds("--warmup-s", args.warmup_s)?;
    opts.heartbeat_interval = Duration::from_millis(args.heartbeat_interval_ms);
    opts.jitter = args.jitter;
    opts.allocate_rate = args.allocate_rate;
    opts.containers_per_am = args.containers_per_am;
    opts.hold = Duration::from_millis(args.hold_ms);
    opts.container = Resource::new(args.container_mb, 1);
    opts.nm_capability = Resource::new(args.nm_memory_mb, args.nm_vcores);
    opts.queue = args.queue;
    opts.idle_apps = args.idle_apps;
    opts.web_rate = args.web_rate;
    if !args.web_path.is_empty() {
        opts.web_paths = args.web_path;
    }
    opts.progress = true;
    Ok((opts, args.json))
}

pub async fn run(args: RpcBenchArgs) -> Result<u8, String> {
    let (opts, json) = options(args)?;
    let report = spindle_bench::run(opts).await.map_err(|e| e.to_string())?;
    if json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    Ok(0)
}
