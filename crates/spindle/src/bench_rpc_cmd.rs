//! `spindle bench rpc`: simulated NMs and AMs against a real ResourceManager.

use std::time::Duration;

use std::path::PathBuf;

use spindle_bench::compare::{self, Contender};
use spindle_bench::{HadoopSpawnOptions, RmAddresses, RmTarget, RpcBenchOptions, SpawnOptions};
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
    /// Run the same load first against Hadoop's own ResourceManager (started
    /// with --hadoop-rm-cmd), then against Spindle's, and print one table.
    #[arg(
        long = "side-by-side",
        requires = "hadoop_rm_cmd",
        conflicts_with = "rm"
    )]
    side_by_side: bool,
    /// Raise the load step by step (--steps, --growth: NMs and allocate rate
    /// multiplied each step) until heartbeat or allocate p99 passes 10 ms or
    /// calls completed per second grow by less than 5 %; report the knee.
    /// With --side-by-side, for both RMs.
    #[arg(long, conflicts_with = "rm")]
    saturate: bool,
    /// Saturation steps at most.
    #[arg(long, default_value_t = 6)]
    steps: usize,
    /// Load factor from one saturation step to the next.
    #[arg(long, default_value_t = 2.0)]
    growth: f64,
    /// Hadoop's RM launcher, run as `bash CMD resourcemanager --conf DIR` (the
    /// repository's integration/bin/hadoop-yarn). The RM gets the capacity
    /// scheduler, the same capacity-scheduler.xml and heartbeat interval as
    /// Spindle's, and the --rm-conf settings too.
    #[arg(long = "hadoop-rm-cmd", value_name = "PATH")]
    hadoop_rm_cmd: Option<PathBuf>,
    /// JVM options for Hadoop's RM (HADOOP_YARN_OPTS of the launcher; later
    /// flags win over the launcher's own).
    #[arg(
        long = "hadoop-rm-opts",
        default_value = "-Xmx4g -XX:TieredStopAtLevel=4 -XX:-UseSerialGC -XX:+UseParallelGC"
    )]
    hadoop_rm_opts: String,
    /// The capacity-scheduler.xml both started RMs run with (default: none, the
    /// RM's built-in single default queue).
    #[arg(long = "capacity-scheduler", value_name = "FILE")]
    capacity_scheduler: Option<PathBuf>,
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

fn rm_conf(args: &RpcBenchArgs) -> Result<Vec<(String, String)>, String> {
    let mut conf = Vec::new();
    for kv in &args.rm_conf {
        let (k, v) = kv
            .split_once('=')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| format!("--rm-conf takes KEY=VALUE, not '{kv}'"))?;
        conf.push((k.trim().to_string(), v.to_string()));
    }
    Ok(conf)
}

struct Plan {
    opts: RpcBenchOptions,
    json: bool,
    side_by_side: bool,
    saturate: bool,
    steps: usize,
    growth: f64,
    hadoop: Option<HadoopSpawnOptions>,
    spindle: SpawnOptions,
}

fn options(args: RpcBenchArgs) -> Result<Plan, String> {
    let conf = rm_conf(&args)?;
    let capacity_scheduler_xml = match &args.capacity_scheduler {
        Some(p) => Some(
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the spindle binary to start the RM: {e}"))?;
    let spindle = SpawnOptions {
        exe,
        conf: conf.clone(),
        log_filter: args.rm_log.clone(),
        startup_timeout: Duration::from_secs(60),
        capacity_scheduler_xml: capacity_scheduler_xml.clone(),
    };
    let hadoop = args
        .hadoop_rm_cmd
        .clone()
        .map(|launcher| HadoopSpawnOptions {
            launcher,
            conf,
            capacity_scheduler_xml,
            jvm_opts: args.hadoop_rm_opts.clone(),
            startup_timeout: Duration::from_secs(180),
        });
    if args.saturate && (args.steps == 0 || !(args.growth.is_finite() && args.growth > 1.0)) {
        return Err(format!(
            "--saturate needs --steps ≥ 1 and --growth > 1, not {} and {}",
            args.steps, args.growth
        ));
    }
    let target = match args.rm.clone() {
        Some(host) => RmTarget::Existing {
            addresses: RmAddresses::hadoop_defaults(&host),
            pid: args.rm_pid,
        },
        None => match (&hadoop, args.side_by_side) {
            // Without --side-by-side, --hadoop-rm-cmd loads Hadoop's RM alone.
            (Some(h), false) => RmTarget::SpawnHadoop(h.clone()),
            _ => RmTarget::Spawn(spindle.clone()),
        },
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
    Ok(Plan {
        opts,
        json: args.json,
        side_by_side: args.side_by_side,
        saturate: args.saturate,
        steps: args.steps,
        growth: args.growth,
        hadoop,
        spindle,
    })
}

fn contenders(plan: &Plan) -> Vec<Contender> {
    let mut out = Vec::new();
    if plan.side_by_side {
        if let Some(h) = &plan.hadoop {
            out.push(Contender {
                label: "Hadoop RM".into(),
                target: RmTarget::SpawnHadoop(h.clone()),
            });
        }
        out.push(Contender {
            label: "Spindle RM".into(),
            target: RmTarget::Spawn(plan.spindle.clone()),
        });
    } else {
        let label = match &plan.opts.target {
            RmTarget::SpawnHadoop(_) => "Hadoop RM",
            RmTarget::Spawn(_) => "Spindle RM",
            RmTarget::Existing { .. } => "RM",
        };
        out.push(Contender {
            label: label.into(),
            target: plan.opts.target.clone(),
        });
    }
    out
}

pub async fn run(args: RpcBenchArgs) -> Result<u8, String> {
    let plan = options(args)?;
    if plan.saturate {
        let loads = compare::saturation_loads(&plan.opts, plan.steps, plan.growth);
        let mut failed = false;
        for c in contenders(&plan) {
            eprintln!("bench rpc: --- saturation, {} ---", c.label);
            match compare::saturate(&c.target, &loads).await {
                Ok((version, steps)) => {
                    if plan.json {
                        let knee = compare::find_knee(
                            &steps,
                            compare::KNEE_P99_MS,
                            compare::KNEE_MIN_GAIN,
                        );
                        let v = serde_json::json!({
                            "rm": c.label, "rm_version": version, "steps": steps, "knee": knee,
                        });
                        println!("{v}");
                    } else {
                        println!(
                            "{}",
                            compare::saturation_table(&c.label, version.as_deref(), &steps)
                        );
                    }
                }
                Err(e) => {
                    failed = true;
                    println!("{}: the saturation run failed: {e}\n", c.label);
                }
            }
        }
        return Ok(u8::from(failed));
    }
    if plan.side_by_side {
        let runs = compare::side_by_side(&plan.opts, &contenders(&plan)).await;
        let runs: Vec<_> = runs
            .into_iter()
            .map(|(l, r)| (l, r.map_err(|e| e.to_string())))
            .collect();
        if plan.json {
            let v: Vec<_> = runs
                .iter()
                .map(|(l, r)| match r {
                    Ok(r) => serde_json::json!({"rm": l, "report": r}),
                    Err(e) => serde_json::json!({"rm": l, "error": e}),
                })
                .collect();
            println!("{}", serde_json::Value::Array(v));
        } else {
            for (_, r) in runs.iter() {
                if let Ok(r) = r {
                    print!("{}", r.to_text());
                }
            }
            println!();
            print!("{}", compare::comparison_table(&runs));
        }
        return Ok(u8::from(runs.iter().any(|(_, r)| r.is_err())));
    }
    let report = spindle_bench::run(plan.opts)
        .await
        .map_err(|e| e.to_string())?;
    if plan.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    Ok(0)
}
