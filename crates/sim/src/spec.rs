//! The workload file: what `spindle sim WORKLOAD` reads.
//!
//! JSON or YAML (the same structure either way; see [`SpecFormat`] for
//! how the format is chosen), every key in `snake_case` with its unit last
//! (`_ms`, `_s`, `_mb`). Unknown keys are errors, so a typo never silently
//! falls back to a default. `docs/sim.md` describes every key with
//! examples; the structures below are the reference.

use std::path::Path;

use serde::Deserialize;

use crate::error::SimError;

/// A whole workload: scheduler, cluster and jobs.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Shown in reports; defaults to the file name.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The run's seed when none is given on the command line.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Keep simulating until at least this time even when every job is
    /// done (so that node-hours cover a whole day, say). Default: stop
    /// when the last job finishes.
    #[serde(default)]
    pub horizon_s: Option<f64>,
    /// Give up (reporting unfinished jobs) past this simulated time.
    /// Default: horizon (or last arrival) plus 7 days.
    #[serde(default)]
    pub max_time_s: Option<f64>,
    /// Time-series sampling interval. Default 60 s.
    #[serde(default)]
    pub sample_interval_s: Option<f64>,
    #[serde(default)]
    pub scheduler: SchedulerSpec,
    #[serde(default)]
    pub cluster: ClusterSpec,
    /// Jobs described here. Exclusive with `sls` and `sls_synth`.
    #[serde(default)]
    pub jobs: Vec<JobSpec>,
    /// Jobs (and possibly nodes) from an SLS trace.
    #[serde(default)]
    pub sls: Option<SlsSpec>,
    /// Jobs (and nodes) from an SLS synthetic-load file
    /// (`syn_generic.json` format); path relative to the workload file.
    #[serde(default)]
    pub sls_synth: Option<String>,
}

/// SLS inputs, paths relative to the workload file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlsSpec {
    /// The SLS JSON trace (`job.*` / `container.*` keys).
    pub trace: String,
    /// SLS node file (`{rack, nodes: [{node}]}` objects). Without it, the
    /// nodes are those the trace names (`container.host`, `num.nodes`).
    #[serde(default)]
    pub nodes: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerKindSpec {
    #[default]
    Fifo,
    Capacity,
    Fair,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PlacementSpec {
    #[default]
    Spread,
    Packing,
}

/// The scheduler core's configuration.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSpec {
    /// `fifo` (default), `capacity` or `fair`.
    #[serde(default)]
    pub kind: Option<SchedulerKindSpec>,
    /// `spread` (default) or `packing`.
    #[serde(default)]
    pub placement: Option<PlacementSpec>,
    /// Packing: memory fraction at or above which a node is "high usage".
    /// Default 0.6.
    #[serde(default)]
    pub packing_high_memory_threshold: Option<f64>,
    /// Packing applies only with at least this many schedulable nodes.
    /// Default 5.
    #[serde(default)]
    pub packing_min_nodes: Option<usize>,
    /// The queue tree, one entry per queue (parents included, root
    /// implied). Empty with `fifo`.
    #[serde(default)]
    pub queues: Vec<QueueSpec>,
    /// Fair scheduler: create leaves on demand for queue names that do not
    /// exist (weight 1). Default false.
    #[serde(default)]
    pub create_queues: bool,
    /// Default 1024.
    #[serde(default)]
    pub minimum_allocation_mb: Option<i64>,
    /// Default 1.
    #[serde(default)]
    pub minimum_allocation_vcores: Option<i32>,
    /// Default 8192 (for SLS inputs: the largest node's memory).
    #[serde(default)]
    pub maximum_allocation_mb: Option<i64>,
    /// Default 4 (for SLS inputs: the largest node's vcores).
    #[serde(default)]
    pub maximum_allocation_vcores: Option<i32>,
    /// Containers handed out by one heartbeat; default unlimited.
    #[serde(default)]
    pub max_containers_per_heartbeat: Option<usize>,
    /// Containers handed out by one continuous pass; default 1000.
    #[serde(default)]
    pub max_containers_per_pass: Option<usize>,
    /// Delay scheduling: `"off"` (default), `{"capacity": {...}}` or
    /// `{"fair": {...}}`.
    #[serde(default)]
    pub locality_delay: Option<LocalityDelaySpec>,
    /// Compare resources by memory (`memory`, default) or by dominant
    /// share (`dominant`).
    #[serde(default)]
    pub resource_calculator: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum LocalityDelaySpec {
    Off,
    Capacity {
        node_locality_delay: i64,
        #[serde(default = "minus_one")]
        rack_locality_additional_delay: i64,
    },
    Fair {
        node_threshold: f64,
        rack_threshold: f64,
    },
}

fn minus_one() -> i64 {
    -1
}

/// One queue. `path` is a full path (`root.eng.etl`) or one relative to
/// the root (`eng.etl`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    pub path: String,
    /// Capacity scheduler: percent of the parent (siblings sum to 100).
    #[serde(default)]
    pub capacity: Option<f64>,
    /// Capacity scheduler: maximum percent of the parent; default 100.
    #[serde(default)]
    pub max: Option<f64>,
    /// Fair scheduler: weight; default 1.
    #[serde(default)]
    pub weight: Option<f64>,
    /// Capacity scheduler user-limit-factor; default 1 as in Hadoop; -1
    /// for no per-user cap.
    #[serde(default)]
    pub user_limit_factor: Option<f64>,
    #[serde(default)]
    pub max_running_apps: Option<usize>,
    /// Fraction of the queue its AM containers may hold.
    #[serde(default)]
    pub max_am_share: Option<f64>,
    /// `fifo`, `fair` or `drf` (fair scheduler only).
    #[serde(default)]
    pub ordering: Option<String>,
}

/// The simulated cluster.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Node pools; required unless the nodes come from SLS inputs.
    #[serde(default)]
    pub pools: Vec<PoolSpec>,
    /// NodeManager heartbeat interval; default 1000.
    #[serde(default)]
    pub heartbeat_interval_ms: Option<u64>,
    /// Each heartbeat comes up to this much early or late; default a tenth
    /// of the interval.
    #[serde(default)]
    pub heartbeat_jitter_ms: Option<u64>,
    /// `per_node` (default): every node heartbeats on its own clock and
    /// each heartbeat schedules on that node. `rounds`: one event per
    /// interval reports every node's finished containers and then runs a
    /// continuous scheduling pass, which is much cheaper on large clusters.
    #[serde(default)]
    pub heartbeat_mode: Option<String>,
    /// ApplicationMaster allocate interval; default 1000.
    #[serde(default)]
    pub am_heartbeat_interval_ms: Option<u64>,
    /// From handing a container to its AM to the process running; default
    /// 500.
    #[serde(default)]
    pub launch_delay_ms: Option<u64>,
    /// Period of the RM's continuous scheduling passes (it also runs one
    /// after every allocate call); default 1000, 0 for none.
    #[serde(default)]
    pub continuous_scheduling_interval_ms: Option<u64>,
    /// Attempts an application gets before it fails; default 2 (Hadoop's
    /// `yarn.resourcemanager.am.max-attempts`). AM containers lost with
    /// their node do not count.
    #[serde(default)]
    pub max_am_attempts: Option<u32>,
    #[serde(default)]
    pub elastic: Option<ElasticSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// Host name prefix; default `node`.
    #[serde(default)]
    pub name: Option<String>,
    /// Nodes at the start.
    pub count: usize,
    pub memory_mb: i64,
    pub vcores: i32,
    /// Racks the pool's nodes are dealt over (round-robin); default 1.
    #[serde(default)]
    pub racks: Option<usize>,
}

/// An autoscaled pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElasticSpec {
    /// The pool that grows and shrinks; default the first.
    #[serde(default)]
    pub pool: Option<String>,
    pub min_nodes: usize,
    pub max_nodes: usize,
    /// From deciding to add a node to it registering; default 120.
    #[serde(default)]
    pub provisioning_delay_s: Option<f64>,
    /// Scale up once a request has waited this long; default 180 (Qubole's
    /// 3 minutes).
    #[serde(default)]
    pub scale_up_wait_s: Option<f64>,
    /// Remove a node that has held no container for this long; default 300.
    #[serde(default)]
    pub scale_down_idle_s: Option<f64>,
    /// How often the autoscaler looks; default 10.
    #[serde(default)]
    pub check_interval_s: Option<f64>,
    /// Most nodes added by one decision; default unlimited.
    #[serde(default)]
    pub max_scale_up_step: Option<usize>,
    /// A node is also kept while an unfinished application has run a
    /// container on it (its local state, e.g. map output, is still
    /// needed), as in Qubole's description. Default false.
    #[serde(default)]
    pub keep_nodes_with_app_state: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JobKindSpec {
    /// Maps, then reduces once every map is done.
    Mapreduce,
    /// Executors, all asked for at once.
    Spark,
    /// Long-running containers for `lifetime_s`, replaced when lost.
    Service,
}

/// A job template and when its instances arrive.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub name: String,
    pub kind: JobKindSpec,
    /// Leaf queue (full path or unique short name); default `default`.
    #[serde(default)]
    pub queue: Option<String>,
    /// Default `sim`.
    #[serde(default)]
    pub user: Option<String>,
    /// Application priority (higher first); default 0.
    #[serde(default)]
    pub priority: Option<i32>,
    /// AM container size; default 1024 MB, 1 vcore.
    #[serde(default)]
    pub am_memory_mb: Option<i64>,
    #[serde(default)]
    pub am_vcores: Option<i32>,
    /// The AM runs outside the cluster (no AM container).
    #[serde(default)]
    pub unmanaged_am: bool,
    pub arrivals: Vec<ArrivalSpec>,
    /// mapreduce
    #[serde(default)]
    pub maps: Option<TaskGroupSpec>,
    /// mapreduce, optional
    #[serde(default)]
    pub reduces: Option<TaskGroupSpec>,
    /// spark
    #[serde(default)]
    pub executors: Option<TaskGroupSpec>,
    /// service: its containers (their `duration_s` is ignored)
    #[serde(default)]
    pub containers: Option<TaskGroupSpec>,
    /// service: how long it runs
    #[serde(default)]
    pub lifetime_s: Option<Dist>,
}

/// When instances of a job arrive. Several may be listed; their instances
/// add up.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ArrivalSpec {
    /// Fixed times.
    AtS(Vec<f64>),
    /// A Poisson process, optionally modulated by an hourly profile.
    Poisson {
        rate_per_hour: f64,
        #[serde(default)]
        from_s: Option<f64>,
        until_s: f64,
        /// Multipliers of the rate for hour 0, 1, ... of the day (cycled).
        #[serde(default)]
        hourly_profile: Option<Vec<f64>>,
    },
    /// `jobs` instances uniformly within `within_s` after `at_s`.
    Burst {
        at_s: f64,
        jobs: usize,
        #[serde(default)]
        within_s: Option<f64>,
    },
    /// A burst every `every_s` from `from_s` until `until_s`.
    PeriodicBursts {
        #[serde(default)]
        from_s: Option<f64>,
        until_s: f64,
        every_s: f64,
        jobs: usize,
        #[serde(default)]
        within_s: Option<f64>,
    },
}

/// A group of like tasks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskGroupSpec {
    pub count: Dist,
    #[serde(default)]
    pub duration_s: Option<Dist>,
    /// Default 1024.
    #[serde(default)]
    pub memory_mb: Option<i64>,
    /// Default 1.
    #[serde(default)]
    pub vcores: Option<i32>,
    /// Request priority (lower first); defaults: maps 20, reduces 10,
    /// executors and service containers 1.
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub locality: Option<LocalitySpec>,
}

/// Which tasks ask for a place: `node_fraction` of them a host (and its
/// rack), `rack_fraction` a rack only, the rest anywhere. Hosts are drawn
/// from the nodes present at the start.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalitySpec {
    #[serde(default)]
    pub node_fraction: f64,
    #[serde(default)]
    pub rack_fraction: f64,
}

/// A number or a distribution of numbers.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum Dist {
    Const(f64),
    /// Log-normal with this mean and standard deviation (as SLS); a
    /// standard deviation of 0 is the constant `mean`.
    LogNormal(MeanStd),
    Uniform(MinMax),
    Exponential(ExpMean),
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeanStd {
    pub mean: f64,
    #[serde(default)]
    pub std: f64,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinMax {
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpMean {
    pub exp_mean: f64,
}

impl Dist {
    /// Checks the parameters; `what` names the key for the message.
    pub fn validate(&self, what: &str) -> Result<(), String> {
        let ok = match *self {
            Dist::Const(v) => v.is_finite() && v >= 0.0,
            Dist::LogNormal(MeanStd { mean, std }) => {
                mean.is_finite() && std.is_finite() && mean >= 0.0 && std >= 0.0
            }
            Dist::Uniform(MinMax { min, max }) => {
                min.is_finite() && max.is_finite() && min >= 0.0 && max >= min
            }
            Dist::Exponential(ExpMean { exp_mean }) => exp_mean.is_finite() && exp_mean >= 0.0,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{what}: {self:?} is not a valid distribution of non-negative values"
            ))
        }
    }

    pub fn sample(&self, rng: &mut crate::rng::Rng) -> f64 {
        match *self {
            Dist::Const(v) => v,
            Dist::LogNormal(MeanStd { mean, std }) => {
                if std == 0.0 {
                    mean
                } else {
                    rng.lognormal(mean, std)
                }
            }
            Dist::Uniform(MinMax { min, max }) => rng.uniform(min, max),
            Dist::Exponential(ExpMean { exp_mean }) => rng.exponential(exp_mean),
        }
    }
}

/// The syntax of a workload file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecFormat {
    Json,
    Yaml,
}

impl SpecFormat {
    /// The format of a workload file: by its extension (`.json`; `.yaml`
    /// or `.yml`), else by its content (JSON when the first character
    /// that is not white space is `{`, YAML otherwise).
    pub fn detect(path: &Path, text: &str) -> SpecFormat {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("json") => SpecFormat::Json,
            Some("yaml" | "yml") => SpecFormat::Yaml,
            _ => SpecFormat::sniff(text),
        }
    }

    /// The format by content alone.
    pub fn sniff(text: &str) -> SpecFormat {
        let first = text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .chars()
            .next();
        if first == Some('{') {
            SpecFormat::Json
        } else {
            SpecFormat::Yaml
        }
    }
}

impl WorkloadSpec {
    /// Parses a JSON workload; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<WorkloadSpec, SimError> {
        WorkloadSpec::parse_as(text, origin, SpecFormat::Json)
    }

    /// Parses a YAML workload; `origin` names it in errors.
    pub fn parse_yaml(text: &str, origin: &str) -> Result<WorkloadSpec, SimError> {
        WorkloadSpec::parse_as(text, origin, SpecFormat::Yaml)
    }

    /// Parses a workload in the given format; errors carry the line and
    /// column.
    pub fn parse_as(
        text: &str,
        origin: &str,
        format: SpecFormat,
    ) -> Result<WorkloadSpec, SimError> {
        match format {
            SpecFormat::Json => {
                serde_json::from_str(text).map_err(|e| SimError::workload(origin, e.to_string()))
            }
            // Enums as single-key maps (`poisson: {...}`), as in JSON,
            // rather than YAML tags (`!poisson {...}`).
            SpecFormat::Yaml => serde_norway::with::singleton_map_recursive::deserialize(
                serde_norway::Deserializer::from_str(text),
            )
            .map_err(|e| SimError::workload(origin, e.to_string())),
        }
    }

    /// Reads and parses a workload file, JSON or YAML ([`SpecFormat::detect`]).
    pub fn load(path: &Path) -> Result<WorkloadSpec, SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let format = SpecFormat::detect(path, &text);
        WorkloadSpec::parse_as(&text, &path.display().to_string(), format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_with_a_position() {
        let err = WorkloadSpec::parse(r#"{"cluster": {"pools": [], "heartbeat_ms": 5}}"#, "w.json")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("w.json: unknown field `heartbeat_ms`"),
            "{err}"
        );
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn yaml_reads_the_same_structure_as_json() {
        let yaml = "
# comments are allowed in YAML
name: etl-yaml
seed: 3
scheduler:
  kind: capacity
  placement: packing
  locality_delay:
    capacity: {node_locality_delay: 40}
  queues:
    - {path: a, capacity: 60}
    - path: b
      capacity: 40
cluster:
  pools: [{count: 2, memory_mb: 8192, vcores: 8}]
  elastic: {min_nodes: 2, max_nodes: 4, keep_nodes_with_app_state: true}
jobs:
  - name: etl
    kind: mapreduce
    queue: a
    arrivals:
      - at_s: [0, 5]
      - poisson: {rate_per_hour: 10, until_s: 3600}
      - burst: {at_s: 100, jobs: 4}
    maps: {count: 10, duration_s: {mean: 30, std: 5}, locality: {node_fraction: 0.5}}
    reduces: {count: {min: 1, max: 3}, duration_s: {exp_mean: 20}}
";
        let w = match WorkloadSpec::parse_yaml(yaml, "w.yaml") {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(w.name.as_deref(), Some("etl-yaml"));
        assert_eq!(w.seed, Some(3));
        assert_eq!(w.scheduler.kind, Some(SchedulerKindSpec::Capacity));
        assert_eq!(w.scheduler.placement, Some(PlacementSpec::Packing));
        assert!(matches!(
            w.scheduler.locality_delay,
            Some(LocalityDelaySpec::Capacity {
                node_locality_delay: 40,
                rack_locality_additional_delay: -1
            })
        ));
        assert_eq!(w.scheduler.queues.len(), 2);
        assert!(w
            .cluster
            .elastic
            .as_ref()
            .is_some_and(|e| e.keep_nodes_with_app_state));
        let job = &w.jobs[0];
        assert!(matches!(&job.arrivals[0], ArrivalSpec::AtS(v) if v == &[0.0, 5.0]));
        assert!(matches!(
            job.arrivals[1],
            ArrivalSpec::Poisson { rate_per_hour, .. } if rate_per_hour == 10.0
        ));
        assert!(matches!(
            job.arrivals[2],
            ArrivalSpec::Burst { jobs: 4, .. }
        ));
        // Integers and floats both read as numbers of the distribution.
        assert!(matches!(job.maps.as_ref().map(|m| m.count), Some(Dist::Const(c)) if c == 10.0));
        assert!(matches!(
            job.maps.as_ref().and_then(|m| m.duration_s),
            Some(Dist::LogNormal(MeanStd { mean, std })) if mean == 30.0 && std == 5.0
        ));
        assert!(matches!(
            job.reduces.as_ref().and_then(|m| m.duration_s),
            Some(Dist::Exponential(_))
        ));
        let off = WorkloadSpec::parse_yaml("scheduler: {locality_delay: \"off\"}", "off.yaml");
        assert!(matches!(
            off.map(|w| w.scheduler.locality_delay),
            Ok(Some(LocalityDelaySpec::Off))
        ));
    }

    #[test]
    fn yaml_unknown_keys_are_errors_with_a_position() {
        let err = WorkloadSpec::parse_yaml("cluster:\n  pools: []\n  heartbeat_ms: 5\n", "w.yaml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("w.yaml: cluster: unknown field `heartbeat_ms`")
                || err.starts_with("w.yaml: unknown field `heartbeat_ms`"),
            "{err}"
        );
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn the_format_comes_from_the_extension_else_the_content() {
        let p = |s: &str| std::path::PathBuf::from(s);
        assert_eq!(SpecFormat::detect(&p("w.json"), "a: 1"), SpecFormat::Json);
        assert_eq!(SpecFormat::detect(&p("w.yaml"), "{}"), SpecFormat::Yaml);
        assert_eq!(SpecFormat::detect(&p("w.YML"), "{}"), SpecFormat::Yaml);
        assert_eq!(
            SpecFormat::detect(&p("w"), "  \n {\"a\": 1}"),
            SpecFormat::Json
        );
        assert_eq!(
            SpecFormat::detect(&p("w.txt"), "# c\na: 1"),
            SpecFormat::Yaml
        );
        assert_eq!(SpecFormat::detect(&p("w"), "\u{feff}{}"), SpecFormat::Json);
    }

    #[test]
    fn distributions_and_arrivals_parse() {
        let text = r#"{
            "jobs": [{
                "name": "etl", "kind": "mapreduce",
                "arrivals": [
                    {"at_s": [0, 5]},
                    {"poisson": {"rate_per_hour": 10, "until_s": 3600}},
                    {"burst": {"at_s": 100, "jobs": 4, "within_s": 10}},
                    {"periodic_bursts": {"until_s": 7200, "every_s": 3600, "jobs": 2}}
                ],
                "maps": {"count": 10, "duration_s": {"mean": 30, "std": 5},
                         "locality": {"node_fraction": 0.5}},
                "reduces": {"count": {"min": 1, "max": 3}, "duration_s": {"exp_mean": 20}}
            }]
        }"#;
        let w = WorkloadSpec::parse(text, "t").map_err(|e| e.to_string());
        let w = match w {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        };
        let job = &w.jobs[0];
        assert_eq!(job.arrivals.len(), 4);
        assert!(matches!(job.maps.as_ref().map(|m| m.count), Some(Dist::Const(c)) if c == 10.0));
        assert!(matches!(
            job.reduces.as_ref().map(|m| m.count),
            Some(Dist::Uniform(_))
        ));
        assert!(Dist::Uniform(MinMax { min: 3.0, max: 1.0 })
            .validate("x")
            .is_err());
    }
}
