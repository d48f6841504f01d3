//! The workload as the engine runs it: concrete nodes and concrete job
//! instances (arrival times, tasks, sizes and places drawn from the seed),
//! plus the scheduler configuration. Built from a [`WorkloadSpec`] or
//! from SLS inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use spindle_common::Resource;
use spindle_scheduler::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, NodeSelectionKind, PackingConfig, QueueConfig,
    QueueShare, QueueTreeConfig, ResourceCalculatorKind, SchedulerConfig, SchedulerKind,
};

use crate::error::SimError;
use crate::rng::Rng;
use crate::sls;
use crate::spec::{
    ArrivalSpec, ClusterSpec, JobKindSpec, JobSpec, LocalityDelaySpec, LocalitySpec, PlacementSpec,
    QueueSpec, SchedulerKindSpec, SchedulerSpec, TaskGroupSpec, WorkloadSpec,
};

/// Port every simulated NodeManager registers with.
pub const NM_PORT: i32 = 8041;

const DEFAULT_AM: Resource = Resource::new(1024, 1);

/// How node heartbeats are simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeartbeatMode {
    /// Each node heartbeats on its own (jittered) clock; each heartbeat
    /// reports the node's finished containers and schedules on it.
    #[default]
    PerNode,
    /// One event per interval reports every finished container, then a
    /// continuous scheduling pass places containers. Much cheaper on
    /// large clusters; placement is then the policy's alone.
    Rounds,
}

impl HeartbeatMode {
    pub fn name(self) -> &'static str {
        match self {
            HeartbeatMode::PerNode => "per_node",
            HeartbeatMode::Rounds => "rounds",
        }
    }

    pub fn parse(s: &str) -> Result<HeartbeatMode, String> {
        match s.trim() {
            "per_node" | "per-node" => Ok(HeartbeatMode::PerNode),
            "rounds" => Ok(HeartbeatMode::Rounds),
            other => Err(format!(
                "unknown heartbeat mode '{other}'; known: per_node, rounds"
            )),
        }
    }
}

/// One node the cluster starts with (or that SLS inputs name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDef {
    pub host: String,
    pub rack: String,
    pub capability: Resource,
    pub pool: usize,
}

/// A family of identical nodes; the elastic pool grows by minting more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    pub capability: Resource,
    pub racks: usize,
}

impl Pool {
    /// The `index`-th node of the pool (0-based).
    pub fn node(&self, pool_idx: usize, index: usize) -> NodeDef {
        let rack = index % self.racks.max(1);
        NodeDef {
            host: format!("{}-{:05}", self.name, index + 1),
            rack: format!("/{}-rack-{:02}", self.name, rack + 1),
            capability: self.capability,
            pool: pool_idx,
        }
    }
}

/// The autoscaler's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticModel {
    pub pool: usize,
    pub min_nodes: usize,
    pub max_nodes: usize,
    pub provisioning_delay_ms: u64,
    pub scale_up_wait_ms: u64,
    pub scale_down_idle_ms: u64,
    pub check_interval_ms: u64,
    pub max_scale_up_step: Option<usize>,
    pub keep_nodes_with_app_state: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterModel {
    pub pools: Vec<Pool>,
    /// The nodes present at time 0.
    pub nodes: Vec<NodeDef>,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_jitter_ms: u64,
    pub heartbeat_mode: HeartbeatMode,
    pub am_heartbeat_interval_ms: u64,
    pub launch_delay_ms: u64,
    pub continuous_scheduling_interval_ms: u64,
    pub max_am_attempts: u32,
    pub elastic: Option<ElasticModel>,
}

/// Where a task would like to run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum TaskLocality {
    Any,
    Rack(String),
    Host { host: String, rack: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskPlan {
    pub priority: i32,
    pub resource: Resource,
    /// `None`: runs until the application ends (service containers).
    pub duration_ms: Option<u64>,
    pub locality: TaskLocality,
    /// Asked for this long after the AM starts (SLS `dag` jobs).
    pub request_delay_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppKind {
    /// Ends when every task of every phase is done.
    Batch,
    /// Runs for `lifetime_ms` from its AM's start; a task that ends before
    /// that (lost, or finished) is asked for again.
    Service { lifetime_ms: u64 },
}

/// One application to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    pub name: String,
    pub arrival_ms: u64,
    pub queue: String,
    pub user: String,
    pub priority: i32,
    pub am_resource: Resource,
    pub unmanaged_am: bool,
    pub kind: AppKind,
    /// Phase `i + 1` is asked for once phase `i` is done.
    pub phases: Vec<Vec<TaskPlan>>,
}

impl JobPlan {
    pub fn tasks(&self) -> usize {
        self.phases.iter().map(Vec::len).sum()
    }
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    /// File (or description) the workload came from, for messages.
    pub origin: String,
    pub seed: Option<u64>,
    pub horizon_ms: u64,
    pub max_time_ms: Option<u64>,
    pub sample_interval_ms: u64,
    /// The packing seed is set per run.
    pub scheduler: SchedulerConfig,
    pub cluster: ClusterModel,
    /// By arrival time, then declaration order.
    pub jobs: Vec<JobPlan>,
}

/// Where the workload comes from.
#[derive(Debug, Clone)]
pub enum WorkloadSource {
    /// A workload file ([`WorkloadSpec`]).
    File(PathBuf),
    /// An SLS trace, with an optional SLS node file; everything else at
    /// its defaults (capacity scheduler, one queue per queue name).
    SlsTrace {
        trace: PathBuf,
        nodes: Option<PathBuf>,
    },
    /// An SLS synthetic-load file.
    SlsSynth(PathBuf),
    /// A workload already parsed; relative SLS paths resolve against
    /// `base_dir`.
    Spec {
        spec: Box<WorkloadSpec>,
        origin: String,
        base_dir: PathBuf,
    },
}

impl WorkloadSource {
    /// Reads and builds the workload, drawing random parts from `seed`.
    pub fn load(&self, seed: u64) -> Result<Workload, SimError> {
        match self {
            WorkloadSource::File(path) => {
                let spec = WorkloadSpec::load(path)?;
                let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "workload".into());
                build(&spec, &path.display().to_string(), &name, &base, seed)
            }
            WorkloadSource::SlsTrace { trace, nodes } => {
                let spec = WorkloadSpec {
                    sls: Some(crate::spec::SlsSpec {
                        trace: trace.display().to_string(),
                        nodes: nodes.as_ref().map(|n| n.display().to_string()),
                    }),
                    ..WorkloadSpec::default()
                };
                let name = trace
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "sls".into());
                build(
                    &spec,
                    &trace.display().to_string(),
                    &name,
                    Path::new(""),
                    seed,
                )
            }
            WorkloadSource::SlsSynth(path) => {
                let spec = WorkloadSpec {
                    sls_synth: Some(path.display().to_string()),
                    ..WorkloadSpec::default()
                };
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "synth".into());
                build(
                    &spec,
                    &path.display().to_string(),
                    &name,
                    Path::new(""),
                    seed,
                )
            }
            WorkloadSource::Spec {
                spec,
                origin,
                base_dir,
            } => build(spec, origin, origin, base_dir, seed),
        }
    }
}

fn ms(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1000.0).round() as u64
    } else {
        0
    }
}

fn positive_seconds(
    v: Option<f64>,
    default_s: f64,
    key: &str,
    origin: &str,
) -> Result<u64, SimError> {
    let s = v.unwrap_or(default_s);
    if !s.is_finite() || s < 0.0 {
        return Err(SimError::workload(
            origin,
            format!("{key} = {s}: must be a non-negative number of seconds"),
        ));
    }
    Ok(ms(s))
}

/// Jobs and nodes from whichever job source the spec names.
struct Sources {
    jobs: Vec<JobPlan>,
    /// Nodes named by SLS inputs (empty for `jobs`).
    sls_nodes: Vec<NodeDef>,
    /// Queue names the jobs use, in first-use order.
    queue_names: Vec<String>,
    from_sls: bool,
}

fn build(
    spec: &WorkloadSpec,
    origin: &str,
    default_name: &str,
    base_dir: &Path,
    seed: u64,
) -> Result<Workload, SimError> {
    let sources = [
        !spec.jobs.is_empty(),
        spec.sls.is_some(),
        spec.sls_synth.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if sources != 1 {
        return Err(SimError::workload(
            origin,
            "give exactly one of `jobs`, `sls` and `sls_synth`",
        ));
    }
    let resolve = |p: &str| -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base_dir.join(p)
        }
    };

    // The cluster without nodes first: SLS inputs bring their own nodes.
    let mut cluster = cluster_settings(&spec.cluster, origin)?;
    let src = if let Some(sls) = &spec.sls {
        let nodes_path = sls.nodes.as_deref().map(resolve);
        let loaded = sls::load_trace(&resolve(&sls.trace), nodes_path.as_deref())?;
        Sources {
            jobs: loaded.jobs,
            sls_nodes: loaded.nodes,
            queue_names: loaded.queue_names,
            from_sls: true,
        }
    } else if let Some(synth) = &spec.sls_synth {
        let loaded = sls::load_synth(&resolve(synth), seed)?;
        Sources {
            jobs: loaded.jobs,
            sls_nodes: loaded.nodes,
            queue_names: loaded.queue_names,
            from_sls: true,
        }
    } else {
        Sources {
            jobs: Vec::new(),
            sls_nodes: Vec::new(),
            queue_names: Vec::new(),
            from_sls: false,
        }
    };

    // Nodes: pools, or the SLS nodes (pools may still be listed for an
    // elastic pool to grow; SLS nodes then join pool 0 of their own).
    if src.from_sls && spec.cluster.pools.is_empty() {
        let mut caps: BTreeSet<(i64, i32)> = BTreeSet::new();
        for n in &src.sls_nodes {
            caps.insert((n.capability.memory_mb, n.capability.vcores));
        }
        let cap = src
            .sls_nodes
            .first()
            .map(|n| n.capability)
            .unwrap_or(sls::SLS_NODE_DEFAULT);
        cluster.pools = vec![Pool {
            name: "sls".into(),
            capability: cap,
            racks: 1,
        }];
        cluster.nodes = src.sls_nodes.clone();
        for n in &mut cluster.nodes {
            n.pool = 0;
        }
        if spec.cluster.elastic.is_some() && caps.len() > 1 {
            return Err(SimError::workload(
                origin,
                "an elastic cluster over SLS nodes of different sizes needs an explicit pool",
            ));
        }
    } else {
        if spec.cluster.pools.is_empty() {
            return Err(SimError::workload(
                origin,
                "cluster.pools is empty: describe at least one pool of nodes",
            ));
        }
        for (i, p) in spec.cluster.pools.iter().enumerate() {
            let name = p.name.clone().unwrap_or_else(|| {
                if i == 0 {
                    "node".into()
                } else {
                    format!("node{}", i + 1)
                }
            });
            if name.is_empty() || name.contains(['/', ':', ' ']) {
                return Err(SimError::workload(
                    origin,
                    format!("cluster.pools[{i}].name '{name}' must be non-empty without '/', ':' or spaces"),
                ));
            }
            if p.memory_mb <= 0 || p.vcores <= 0 {
                return Err(SimError::workload(
                    origin,
                    format!("cluster.pools[{i}] ({name}): memory_mb and vcores must be positive"),
                ));
            }
            if cluster.pools.iter().any(|q| q.name == name) {
                return Err(SimError::workload(
                    origin,
                    format!("cluster.pools[{i}]: pool name '{name}' is used twice"),
                ));
            }
            cluster.pools.push(Pool {
                name,
                capability: Resource::new(p.memory_mb, p.vcores),
                racks: p.racks.unwrap_or(1).max(1),
            });
        }
        for (i, p) in spec.cluster.pools.iter().enumerate() {
            for k in 0..p.count {
                cluster.nodes.push(cluster.pools[i].node(i, k));
            }
        }
        if src.from_sls {
            // SLS nodes join as well, in a pool of their own.
            let idx = cluster.pools.len();
            let cap = src
                .sls_nodes
                .first()
                .map(|n| n.capability)
                .unwrap_or(sls::SLS_NODE_DEFAULT);
            cluster.pools.push(Pool {
                name: "sls".into(),
                capability: cap,
                racks: 1,
            });
            for n in &src.sls_nodes {
                let mut n = n.clone();
                n.pool = idx;
                cluster.nodes.push(n);
            }
        }
    }
    if let Some(e) = &spec.cluster.elastic {
        let pool = match &e.pool {
            None => 0,
            Some(name) => cluster
                .pools
                .iter()
                .position(|p| &p.name == name)
                .ok_or_else(|| {
                    SimError::workload(
                        origin,
                        format!("cluster.elastic.pool '{name}' is not a pool name"),
                    )
                })?,
        };
        let initial = cluster.nodes.iter().filter(|n| n.pool == pool).count();
        if e.min_nodes > e.max_nodes {
            return Err(SimError::workload(
                origin,
                format!(
                    "cluster.elastic: min_nodes {} is above max_nodes {}",
                    e.min_nodes, e.max_nodes
                ),
            ));
        }
        if initial > e.max_nodes {
            return Err(SimError::workload(
                origin,
                format!(
                    "cluster.elastic: the pool starts with {initial} nodes, above max_nodes {}",
                    e.max_nodes
                ),
            ));
        }
        cluster.elastic = Some(ElasticModel {
            pool,
            min_nodes: e.min_nodes,
            max_nodes: e.max_nodes,
            provisioning_delay_ms: positive_seconds(
                e.provisioning_delay_s,
                120.0,
                "cluster.elastic.provisioning_delay_s",
                origin,
            )?,
            scale_up_wait_ms: positive_seconds(
                e.scale_up_wait_s,
                180.0,
                "cluster.elastic.scale_up_wait_s",
                origin,
            )?,
            scale_down_idle_ms: positive_seconds(
                e.scale_down_idle_s,
                300.0,
                "cluster.elastic.scale_down_idle_s",
                origin,
            )?,
            check_interval_ms: positive_seconds(
                e.check_interval_s,
                10.0,
                "cluster.elastic.check_interval_s",
                origin,
            )?
            .max(1),
            max_scale_up_step: e.max_scale_up_step,
            keep_nodes_with_app_state: e.keep_nodes_with_app_state,
        });
    }
    if cluster.nodes.is_empty() && cluster.elastic.as_ref().is_none_or(|e| e.min_nodes == 0) {
        return Err(SimError::workload(
            origin,
            "the cluster has no nodes (and no elastic minimum to start from)",
        ));
    }
    let mut seen_hosts = BTreeSet::new();
    for n in &cluster.nodes {
        if !seen_hosts.insert(n.host.clone()) {
            return Err(SimError::workload(
                origin,
                format!("host {} appears twice in the cluster", n.host),
            ));
        }
    }

    // Jobs from the spec need the nodes (for locality draws).
    let mut jobs = src.jobs;
    let mut queue_names = src.queue_names;
    if !spec.jobs.is_empty() {
        jobs = build_jobs(&spec.jobs, &cluster.nodes, seed, origin)?;
        for j in &jobs {
            if !queue_names.contains(&j.queue) {
                queue_names.push(j.queue.clone());
            }
        }
    }
    jobs.sort_by_key(|j| j.arrival_ms);

    let largest = cluster
        .pools
        .iter()
        .map(|p| p.capability)
        .chain(cluster.nodes.iter().map(|n| n.capability))
        .fold(Resource::ZERO, Resource::component_max);
    let scheduler = scheduler_config(
        &spec.scheduler,
        origin,
        &queue_names,
        src.from_sls.then_some(largest),
    )?;
    // FIFO has one queue; like Hadoop's FifoScheduler it takes every
    // application whatever queue it names.
    if scheduler.queues.kind == SchedulerKind::Fifo {
        for j in &mut jobs {
            j.queue = "default".into();
        }
    }
    validate_jobs(&jobs, &scheduler, &cluster, origin)?;

    let horizon_ms = ms(spec.horizon_s.unwrap_or(0.0));
    let max_time_ms = spec.max_time_s.map(ms);
    let sample_interval_ms =
        positive_seconds(spec.sample_interval_s, 60.0, "sample_interval_s", origin)?.max(1);
    Ok(Workload {
        name: spec
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        origin: origin.to_string(),
        seed: spec.seed,
        horizon_ms,
        max_time_ms,
        sample_interval_ms,
        scheduler,
        cluster,
        jobs,
    })
}

fn cluster_settings(c: &ClusterSpec, origin: &str) -> Result<ClusterModel, SimError> {
    let heartbeat_interval_ms = c.heartbeat_interval_ms.unwrap_or(1000);
    if heartbeat_interval_ms == 0 {
        return Err(SimError::workload(
            origin,
            "cluster.heartbeat_interval_ms must be at least 1",
        ));
    }
    let heartbeat_jitter_ms = c.heartbeat_jitter_ms.unwrap_or(heartbeat_interval_ms / 10);
    if heartbeat_jitter_ms >= heartbeat_interval_ms {
        return Err(SimError::workload(
            origin,
            format!(
                "cluster.heartbeat_jitter_ms {heartbeat_jitter_ms} must be below the interval {heartbeat_interval_ms}"
            ),
        ));
    }
    let am_heartbeat_interval_ms = c.am_heartbeat_interval_ms.unwrap_or(1000);
    if am_heartbeat_interval_ms == 0 {
        return Err(SimError::workload(
            origin,
            "cluster.am_heartbeat_interval_ms must be at least 1",
        ));
    }
    let heartbeat_mode = match &c.heartbeat_mode {
        None => HeartbeatMode::PerNode,
        Some(s) => HeartbeatMode::parse(s)
            .map_err(|e| SimError::workload(origin, format!("cluster.heartbeat_mode: {e}")))?,
    };
    let max_am_attempts = c.max_am_attempts.unwrap_or(2);
    if max_am_attempts == 0 {
        return Err(SimError::workload(
            origin,
            "cluster.max_am_attempts must be at least 1",
        ));
    }
    Ok(ClusterModel {
        pools: Vec::new(),
        nodes: Vec::new(),
        heartbeat_interval_ms,
        heartbeat_jitter_ms,
        heartbeat_mode,
        am_heartbeat_interval_ms,
        launch_delay_ms: c.launch_delay_ms.unwrap_or(500),
        continuous_scheduling_interval_ms: c.continuous_scheduling_interval_ms.unwrap_or(1000),
        max_am_attempts,
        elastic: None,
    })
}

/// The scheduler configuration. `sls_largest` is set for SLS inputs: the
/// maximum allocation then defaults to the largest node, and a missing
/// queue tree is made of the trace's queue names.
fn scheduler_config(
    s: &SchedulerSpec,
    origin: &str,
    queue_names: &[String],
    sls_largest: Option<Resource>,
) -> Result<SchedulerConfig, SimError> {
    let kind = match s.kind {
        Some(k) => k,
        None if sls_largest.is_some() => SchedulerKindSpec::Capacity,
        None => SchedulerKindSpec::Fifo,
    };
    let mut queues = match kind {
        SchedulerKindSpec::Fifo => {
            if !s.queues.is_empty() {
                return Err(SimError::workload(
                    origin,
                    "scheduler.queues: the fifo scheduler has a single queue; use capacity or fair for a tree",
                ));
            }
            QueueTreeConfig::fifo()
        }
        SchedulerKindSpec::Capacity | SchedulerKindSpec::Fair => {
            let k = if kind == SchedulerKindSpec::Capacity {
                SchedulerKind::Capacity
            } else {
                SchedulerKind::Fair
            };
            let specs = if s.queues.is_empty() {
                equal_queues(k, queue_names)
            } else {
                s.queues.clone()
            };
            queue_tree(k, &specs, origin)?
        }
    };
    if s.create_queues {
        if queues.kind != SchedulerKind::Fair {
            return Err(SimError::workload(
                origin,
                "scheduler.create_queues works with the fair scheduler only",
            ));
        }
        queues.dynamic_leaf = Some(QueueConfig::leaf(
            "dynamic",
            QueueShare::Fair {
                weight: 1.0,
                min: None,
                max: None,
            },
        ));
    }
    if let Some(rc) = &s.resource_calculator {
        queues.resource_calculator = match rc.as_str() {
            "memory" => ResourceCalculatorKind::Memory,
            "dominant" => ResourceCalculatorKind::Dominant,
            other => {
                return Err(SimError::workload(
                    origin,
                    format!("scheduler.resource_calculator '{other}': known: memory, dominant"),
                ))
            }
        };
    }
    let node_selection = match s.placement.unwrap_or_default() {
        PlacementSpec::Spread => NodeSelectionKind::Spread,
        PlacementSpec::Packing => NodeSelectionKind::Packing,
    };
    let packing = PackingConfig {
        high_memory_threshold: s
            .packing_high_memory_threshold
            .unwrap_or(PackingConfig::DEFAULT_HIGH_MEMORY_THRESHOLD),
        min_nodes: s
            .packing_min_nodes
            .unwrap_or(PackingConfig::DEFAULT_MIN_NODES),
        seed: 0,
    };
    let default_max = sls_largest.unwrap_or(Resource::new(8192, 4));
    let locality = match &s.locality_delay {
        None | Some(LocalityDelaySpec::Off) => LocalityDelay::Off,
        Some(LocalityDelaySpec::Capacity {
            node_locality_delay,
            rack_locality_additional_delay,
        }) => LocalityDelay::Capacity {
            node_locality_delay: *node_locality_delay,
            rack_locality_additional_delay: *rack_locality_additional_delay,
        },
        Some(LocalityDelaySpec::Fair {
            node_threshold,
            rack_threshold,
        }) => LocalityDelay::Fair {
            node_threshold: *node_threshold,
            rack_threshold: *rack_threshold,
        },
    };
    let mut config = SchedulerConfig {
        queues,
        locality,
        heartbeat: HeartbeatAssignment {
            max_containers: s.max_containers_per_heartbeat,
            max_off_switch: None,
        },
        node_selection,
        packing,
        minimum_allocation: Resource::new(
            s.minimum_allocation_mb.unwrap_or(1024),
            s.minimum_allocation_vcores.unwrap_or(1),
        ),
        maximum_allocation: Resource::new(
            s.maximum_allocation_mb.unwrap_or(default_max.memory_mb),
            s.maximum_allocation_vcores.unwrap_or(default_max.vcores),
        ),
        ..SchedulerConfig::default()
    };
    if let Some(n) = s.max_containers_per_pass {
        config.limits.max_containers_per_pass = n;
    }
    config.validate().map_err(|source| SimError::Config {
        origin: origin.to_string(),
        source,
    })?;
    Ok(config)
}

/// One leaf per name under root, equal shares (SLS inputs without a tree).
fn equal_queues(kind: SchedulerKind, names: &[String]) -> Vec<QueueSpec> {
    let mut names: Vec<String> = names
        .iter()
        .map(|n| n.strip_prefix("root.").unwrap_or(n).to_string())
        .collect();
    names.dedup();
    if names.is_empty() {
        names.push("default".into());
    }
    let n = names.len();
    let base = (10_000 / n) as f64 / 100.0;
    names
        .into_iter()
        .enumerate()
        .map(|(i, path)| {
            let capacity = if i + 1 == n {
                100.0 - base * (n - 1) as f64
            } else {
                base
            };
            QueueSpec {
                path,
                capacity: (kind == SchedulerKind::Capacity).then_some(capacity),
                max: None,
                weight: None,
                user_limit_factor: (kind == SchedulerKind::Capacity).then_some(-1.0),
                max_running_apps: None,
                max_am_share: None,
                ordering: None,
            }
        })
        .collect()
}

/// Builds the core's queue tree from the compact list.
pub fn queue_tree(
    kind: SchedulerKind,
    specs: &[QueueSpec],
    origin: &str,
) -> Result<QueueTreeConfig, SimError> {
    let err = |m: String| SimError::workload(origin, format!("scheduler.queues: {m}"));
    // Full paths in first-mention order, parents before children.
    let mut order: Vec<String> = Vec::new();
    let mut by_path: BTreeMap<String, &QueueSpec> = BTreeMap::new();
    for q in specs {
        let path = if q.path == "root" || q.path.starts_with("root.") {
            q.path.clone()
        } else {
            format!("root.{}", q.path)
        };
        if path == "root" {
            return Err(err("the root queue is implied; list its descendants".into()));
        }
        if path.split('.').any(str::is_empty) {
            return Err(err(format!("'{}' has an empty path component", q.path)));
        }
        if by_path.insert(path.clone(), q).is_some() {
            return Err(err(format!("{path} is listed twice")));
        }
        let parts: Vec<&str> = path.split('.').collect();
        for i in 2..=parts.len() {
            let p = parts[..i].join(".");
            if !order.contains(&p) {
                order.push(p);
            }
        }
    }
    fn node(
        path: &str,
        order: &[String],
        by_path: &BTreeMap<String, &QueueSpec>,
        kind: SchedulerKind,
        err: &dyn Fn(String) -> SimError,
    ) -> Result<QueueConfig, SimError> {
        let name = path.rsplit('.').next().unwrap_or(path).to_string();
        let children: Vec<QueueConfig> = order
            .iter()
            .filter(|p| p.rsplit_once('.').map(|(parent, _)| parent) == Some(path))
            .map(|p| node(p, order, by_path, kind, err))
            .collect::<Result<_, _>>()?;
        let spec = by_path.get(path).copied();
        let capacity_kind = kind == SchedulerKind::Capacity;
        if let Some(s) = spec {
            if capacity_kind && s.weight.is_some() {
                return Err(err(format!(
                    "{path}: weight belongs to the fair scheduler; the capacity scheduler uses capacity"
                )));
            }
            if !capacity_kind
                && (s.capacity.is_some() || s.max.is_some() || s.user_limit_factor.is_some())
            {
                return Err(err(format!(
                    "{path}: capacity, max and user_limit_factor belong to the capacity scheduler; the fair scheduler uses weight"
                )));
            }
        }
        let share = if capacity_kind {
            let Some(capacity) = spec.and_then(|s| s.capacity) else {
                return Err(err(format!(
                    "{path} needs a capacity (percent of its parent) with the capacity scheduler"
                )));
            };
            QueueShare::Capacity {
                capacity_pct: capacity,
                maximum_pct: spec.and_then(|s| s.max).unwrap_or(100.0),
            }
        } else {
            QueueShare::Fair {
                weight: spec.and_then(|s| s.weight).unwrap_or(1.0),
                min: None,
                max: None,
            }
        };
        let mut q = QueueConfig::parent(name, share, children);
        // Hadoop's defaults: a user-limit-factor of 1 in the capacity
        // scheduler (-1 lifts it); fair ordering in the fair scheduler.
        q.user_limit_factor = match (capacity_kind, spec.and_then(|s| s.user_limit_factor)) {
            (false, _) => None,
            (true, None) => Some(1.0),
            (true, Some(f)) if f < 0.0 => None,
            (true, Some(f)) => Some(f),
        };
        q.ordering = match spec.and_then(|s| s.ordering.as_deref()) {
            None if capacity_kind => AppOrdering::Fifo,
            None => AppOrdering::Fair,
            Some("fifo") => AppOrdering::Fifo,
            Some("fair") => AppOrdering::Fair,
            Some("drf") if !capacity_kind => AppOrdering::Drf,
            Some(other) => {
                return Err(err(format!(
                    "{path}: ordering '{other}' is not one of fifo, fair{}",
                    if capacity_kind { "" } else { ", drf" }
                )))
            }
        };
        if let Some(s) = spec {
            q.max_running_apps = s.max_running_apps;
            q.max_am_share = s.max_am_share;
        }
        Ok(q)
    }
    let top: Vec<QueueConfig> = order
        .iter()
        .filter(|p| p.matches('.').count() == 1)
        .map(|p| node(p, &order, &by_path, kind, &err))
        .collect::<Result<_, _>>()?;
    let root_share = match kind {
        SchedulerKind::Capacity => QueueShare::Capacity {
            capacity_pct: 100.0,
            maximum_pct: 100.0,
        },
        _ => QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: None,
        },
    };
    let mut root = QueueConfig::parent("root", root_share, top);
    root.user_limit_factor = None;
    if kind == SchedulerKind::Fair {
        root.ordering = AppOrdering::Fair;
    }
    Ok(QueueTreeConfig {
        kind,
        root,
        ..QueueTreeConfig::fifo()
    })
}

fn arrivals(
    spec: &[ArrivalSpec],
    rng: &mut Rng,
    what: &str,
    origin: &str,
) -> Result<Vec<u64>, SimError> {
    let bad = |m: String| SimError::workload(origin, format!("{what}.arrivals: {m}"));
    let mut out = Vec::new();
    let check = |v: f64, key: &str| -> Result<f64, SimError> {
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(bad(format!("{key} = {v} must be a non-negative number")))
        }
    };
    for a in spec {
        match a {
            ArrivalSpec::AtS(times) => {
                for &t in times {
                    out.push(ms(check(t, "at_s")?));
                }
            }
            ArrivalSpec::Poisson {
                rate_per_hour,
                from_s,
                until_s,
                hourly_profile,
            } => {
                let rate = check(*rate_per_hour, "rate_per_hour")?;
                let from = check(from_s.unwrap_or(0.0), "from_s")?;
                let until = check(*until_s, "until_s")?;
                let profile = hourly_profile.clone().unwrap_or_else(|| vec![1.0]);
                if profile.is_empty() || profile.iter().any(|p| !p.is_finite() || *p < 0.0) {
                    return Err(bad("hourly_profile must hold non-negative numbers".into()));
                }
                let peak = profile.iter().copied().fold(0.0, f64::max);
                if rate == 0.0 || peak == 0.0 {
                    continue;
                }
                let max_rate_per_s = rate * peak / 3600.0;
                let mut t = from;
                if (until - from) * max_rate_per_s > 10_000_000.0 {
                    return Err(bad("more than 10 million arrivals; lower the rate".into()));
                }
                loop {
                    t += rng.exponential(1.0 / max_rate_per_s);
                    if t >= until {
                        break;
                    }
                    let hour = (t / 3600.0) as usize % profile.len();
                    if rng.next_f64() * peak < profile[hour] {
                        out.push(ms(t));
                    }
                }
            }
            ArrivalSpec::Burst {
                at_s,
                jobs,
                within_s,
            } => {
                let at = check(*at_s, "at_s")?;
                let within = check(within_s.unwrap_or(0.0), "within_s")?;
                for _ in 0..*jobs {
                    out.push(ms(at + rng.uniform(0.0, within)));
                }
            }
            ArrivalSpec::PeriodicBursts {
                from_s,
                until_s,
                every_s,
                jobs,
                within_s,
            } => {
                let from = check(from_s.unwrap_or(0.0), "from_s")?;
                let until = check(*until_s, "until_s")?;
                let every = check(*every_s, "every_s")?;
                if every <= 0.0 {
                    return Err(bad("every_s must be positive".into()));
                }
                let within = check(within_s.unwrap_or(0.0), "within_s")?;
                let mut t = from;
                while t < until {
                    for _ in 0..*jobs {
                        out.push(ms(t + rng.uniform(0.0, within)));
                    }
                    t += every;
                }
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Where task groups draw their places from, and the file for messages.
struct Places<'a> {
    nodes: &'a [NodeDef],
    racks: &'a [String],
    origin: &'a str,
}

fn task_group(
    g: &TaskGroupSpec,
    default_priority: i32,
    needs_duration: bool,
    places: &Places<'_>,
    rng: &mut Rng,
    what: &str,
) -> Result<Vec<TaskPlan>, SimError> {
    let (nodes, racks, origin) = (places.nodes, places.racks, places.origin);
    let bad = |m: String| SimError::workload(origin, format!("{what}: {m}"));
    g.count.validate("count").map_err(bad)?;
    if let Some(d) = &g.duration_s {
        d.validate("duration_s").map_err(bad)?;
    } else if needs_duration {
        return Err(bad("duration_s is required".into()));
    }
    let memory = g.memory_mb.unwrap_or(1024);
    let vcores = g.vcores.unwrap_or(1);
    if memory <= 0 || vcores <= 0 {
        return Err(bad("memory_mb and vcores must be positive".into()));
    }
    let loc = g.locality.unwrap_or(LocalitySpec {
        node_fraction: 0.0,
        rack_fraction: 0.0,
    });
    if !(0.0..=1.0).contains(&loc.node_fraction)
        || !(0.0..=1.0).contains(&loc.rack_fraction)
        || loc.node_fraction + loc.rack_fraction > 1.0 + 1e-9
    {
        return Err(bad(
            "locality: node_fraction and rack_fraction are fractions that sum to at most 1".into(),
        ));
    }
    let count = g.count.sample(rng).round().max(0.0) as usize;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let duration_ms = if needs_duration {
            let d = g.duration_s.as_ref().map_or(0.0, |d| d.sample(rng));
            Some(ms(d).max(1))
        } else {
            None
        };
        let u = rng.next_f64();
        let locality = if u < loc.node_fraction && !nodes.is_empty() {
            let n = &nodes[rng.index(nodes.len())];
            TaskLocality::Host {
                host: n.host.clone(),
                rack: n.rack.clone(),
            }
        } else if u < loc.node_fraction + loc.rack_fraction && !racks.is_empty() {
            TaskLocality::Rack(racks[rng.index(racks.len())].clone())
        } else {
            TaskLocality::Any
        };
        out.push(TaskPlan {
            priority: g.priority.unwrap_or(default_priority),
            resource: Resource::new(memory, vcores),
            duration_ms,
            locality,
            request_delay_ms: 0,
        });
    }
    Ok(out)
}

fn build_jobs(
    specs: &[JobSpec],
    nodes: &[NodeDef],
    seed: u64,
    origin: &str,
) -> Result<Vec<JobPlan>, SimError> {
    let racks: Vec<String> = nodes
        .iter()
        .map(|n| n.rack.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let places = Places {
        nodes,
        racks: &racks,
        origin,
    };
    let mut names = BTreeSet::new();
    let mut jobs = Vec::new();
    for (ji, j) in specs.iter().enumerate() {
        let what = format!("jobs[{ji}] ({})", j.name);
        let bad = |m: &str| SimError::workload(origin, format!("{what}: {m}"));
        if !names.insert(j.name.clone()) {
            return Err(bad("job names must be unique"));
        }
        if j.arrivals.is_empty() {
            return Err(bad("arrivals is empty"));
        }
        let present = |b: bool| usize::from(b);
        let (want_maps, want_exec, want_svc) = match j.kind {
            JobKindSpec::Mapreduce => (true, false, false),
            JobKindSpec::Spark => (false, true, false),
            JobKindSpec::Service => (false, false, true),
        };
        if present(j.maps.is_some()) > present(want_maps)
            || present(j.reduces.is_some()) > present(want_maps)
            || present(j.executors.is_some()) > present(want_exec)
            || present(j.containers.is_some()) > present(want_svc)
            || present(j.lifetime_s.is_some()) > present(want_svc)
        {
            return Err(bad(
                "mapreduce jobs take maps/reduces, spark jobs executors, service jobs containers and lifetime_s",
            ));
        }
        let mut arrival_rng = Rng::stream(seed, &[1, ji as u64]);
        let times = arrivals(&j.arrivals, &mut arrival_rng, &what, origin)?;
        let am_resource = Resource::new(
            j.am_memory_mb.unwrap_or(DEFAULT_AM.memory_mb),
            j.am_vcores.unwrap_or(DEFAULT_AM.vcores),
        );
        for (k, &arrival_ms) in times.iter().enumerate() {
            let mut rng = Rng::stream(seed, &[2, ji as u64, k as u64]);
            let (kind, phases) = match j.kind {
                JobKindSpec::Mapreduce => {
                    let Some(maps) = &j.maps else {
                        return Err(bad("a mapreduce job needs maps"));
                    };
                    let mut phases = vec![task_group(
                        maps,
                        20,
                        true,
                        &places,
                        &mut rng,
                        &format!("{what}.maps"),
                    )?];
                    if let Some(r) = &j.reduces {
                        phases.push(task_group(
                            r,
                            10,
                            true,
                            &places,
                            &mut rng,
                            &format!("{what}.reduces"),
                        )?);
                    }
                    (AppKind::Batch, phases)
                }
                JobKindSpec::Spark => {
                    let Some(ex) = &j.executors else {
                        return Err(bad("a spark job needs executors"));
                    };
                    let phases = vec![task_group(
                        ex,
                        1,
                        true,
                        &places,
                        &mut rng,
                        &format!("{what}.executors"),
                    )?];
                    (AppKind::Batch, phases)
                }
                JobKindSpec::Service => {
                    let (Some(c), Some(life)) = (&j.containers, &j.lifetime_s) else {
                        return Err(bad("a service job needs containers and lifetime_s"));
                    };
                    life.validate("lifetime_s").map_err(|m| bad(&m))?;
                    let lifetime_ms = ms(life.sample(&mut rng)).max(1);
                    let phases = vec![task_group(
                        c,
                        1,
                        false,
                        &places,
                        &mut rng,
                        &format!("{what}.containers"),
                    )?];
                    (AppKind::Service { lifetime_ms }, phases)
                }
            };
            jobs.push(JobPlan {
                name: if times.len() == 1 {
                    j.name.clone()
                } else {
                    format!("{}#{}", j.name, k + 1)
                },
                arrival_ms,
                queue: j.queue.clone().unwrap_or_else(|| "default".into()),
                user: j.user.clone().unwrap_or_else(|| "sim".into()),
                priority: j.priority.unwrap_or(0),
                am_resource,
                unmanaged_am: j.unmanaged_am,
                kind,
                phases,
            });
        }
    }
    Ok(jobs)
}

/// Checks what would otherwise fail in the middle of a run: queues that do
/// not exist, containers larger than the maximum allocation or than any
/// node.
fn validate_jobs(
    jobs: &[JobPlan],
    config: &SchedulerConfig,
    cluster: &ClusterModel,
    origin: &str,
) -> Result<(), SimError> {
    let largest_node: Vec<Resource> = cluster
        .pools
        .iter()
        .map(|p| p.capability)
        .chain(cluster.nodes.iter().map(|n| n.capability))
        .collect();
    let mut checked_queues: BTreeSet<&str> = BTreeSet::new();
    for j in jobs {
        if checked_queues.insert(&j.queue) && config.queues.resolve_leaf(&j.queue).is_none() {
            let creatable = config.queues.dynamic_leaf.is_some() && {
                let full = if j.queue.starts_with("root.") {
                    j.queue.clone()
                } else {
                    format!("root.{}", j.queue)
                };
                full.rsplit_once('.').is_some_and(|(parent, _)| {
                    config
                        .queues
                        .root
                        .walk()
                        .iter()
                        .any(|(p, q)| p == parent && !q.is_leaf())
                })
            };
            if !creatable {
                let leaves: Vec<String> = config
                    .queues
                    .root
                    .walk()
                    .into_iter()
                    .filter(|(_, q)| q.is_leaf())
                    .map(|(p, _)| p)
                    .collect();
                return Err(SimError::workload(
                    origin,
                    format!(
                        "job {} names queue '{}', which is not a leaf queue (leaves: {})",
                        j.name,
                        j.queue,
                        leaves.join(", ")
                    ),
                ));
            }
        }
        let sizes = std::iter::once((j.am_resource, "AM container"))
            .filter(|_| !j.unmanaged_am)
            .chain(
                j.phases
                    .iter()
                    .flatten()
                    .map(|t| (t.resource, "task container")),
            );
        for (r, what) in sizes {
            if r.memory_mb <= 0 || r.vcores <= 0 {
                return Err(SimError::workload(
                    origin,
                    format!("job {}: {what} size {r} must be positive", j.name),
                ));
            }
            if !r.fits_in(&config.maximum_allocation) {
                return Err(SimError::workload(
                    origin,
                    format!(
                        "job {}: {what} size {r} is above the maximum allocation {} (scheduler.maximum_allocation_mb / _vcores)",
                        j.name, config.maximum_allocation
                    ),
                ));
            }
            if !largest_node.iter().any(|n| r.fits_in(n)) {
                return Err(SimError::workload(
                    origin,
                    format!(
                        "job {}: {what} size {r} fits on no node of the cluster",
                        j.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(path: &str, capacity: Option<f64>, weight: Option<f64>) -> QueueSpec {
        QueueSpec {
            path: path.into(),
            capacity,
            max: None,
            weight,
            user_limit_factor: None,
            max_running_apps: None,
            max_am_share: None,
            ordering: None,
        }
    }

    #[test]
    fn compact_queue_lists_become_trees() {
        let specs = vec![
            q("eng", Some(60.0), None),
            q("eng.etl", Some(50.0), None),
            q("root.eng.adhoc", Some(50.0), None),
            q("sales", Some(40.0), None),
        ];
        let tree = queue_tree(SchedulerKind::Capacity, &specs, "t");
        let tree = match tree {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        let paths: Vec<String> = tree.root.walk().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            [
                "root",
                "root.eng",
                "root.eng.etl",
                "root.eng.adhoc",
                "root.sales"
            ]
        );
        assert_eq!(tree.resolve_leaf("etl").as_deref(), Some("root.eng.etl"));

        // A parent without a capacity is an error with the capacity scheduler.
        let err = queue_tree(SchedulerKind::Capacity, &[q("a.b", Some(100.0), None)], "t")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("root.a needs a capacity"), "{err}");
        // ... but fine with the fair scheduler (weight 1).
        assert!(queue_tree(SchedulerKind::Fair, &[q("a.b", None, Some(2.0))], "t").is_ok());
        let err = queue_tree(SchedulerKind::Fair, &[q("a", Some(5.0), None)], "t")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("belong to the capacity scheduler"), "{err}");
    }

    #[test]
    fn arrivals_are_deterministic_and_within_bounds() {
        let spec = vec![
            ArrivalSpec::Poisson {
                rate_per_hour: 60.0,
                from_s: Some(0.0),
                until_s: 7200.0,
                hourly_profile: Some(vec![1.0, 0.0]),
            },
            ArrivalSpec::Burst {
                at_s: 100.0,
                jobs: 5,
                within_s: Some(10.0),
            },
        ];
        let a = arrivals(&spec, &mut Rng::new(1), "j", "t").unwrap_or_default();
        let b = arrivals(&spec, &mut Rng::new(1), "j", "t").unwrap_or_default();
        assert_eq!(a, b);
        // No Poisson arrival in the second hour (profile 0), bursts within
        // their window.
        assert!(a.iter().all(|&t| t < 3_600_000), "{a:?}");
        assert!(
            a.iter()
                .filter(|&&t| (100_000..=110_000).contains(&t))
                .count()
                >= 5
        );
        // About 60 in the first hour.
        assert!((40..90).contains(&a.len()), "{}", a.len());
    }

    #[test]
    fn pools_name_nodes_and_deal_racks() {
        let p = Pool {
            name: "w".into(),
            capability: Resource::new(1024, 1),
            racks: 2,
        };
        assert_eq!(p.node(0, 0).host, "w-00001");
        assert_eq!(p.node(0, 0).rack, "/w-rack-01");
        assert_eq!(p.node(0, 1).rack, "/w-rack-02");
        assert_eq!(p.node(0, 2).rack, "/w-rack-01");
    }
}
