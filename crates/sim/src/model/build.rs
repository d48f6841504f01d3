//! Building a [`Workload`] from its source: exactly one job source (the
//! workload's own jobs, an SLS trace or an SLS synthetic load), the
//! cluster's timing settings, its nodes (pools, or the nodes SLS inputs
//! bring), the elastic pool, and the run's horizon and sampling.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use spindle_common::Resource;
use spindle_scheduler::SchedulerKind;

use super::jobs::{build_jobs, validate_jobs};
use super::scheduler_config::scheduler_config;
use super::{
    ms, ClusterModel, ElasticModel, HeartbeatMode, JobPlan, NodeDef, Pool, Workload, WorkloadSource,
};
use crate::error::SimError;
use crate::sls;
use crate::spec::{ClusterSpec, WorkloadSpec};

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
