//! Hadoop Scheduler Load Simulator (SLS) inputs, read unchanged:
//!
//! * the SLS trace: a stream of concatenated JSON objects, each a job
//!   (`am.type`, `job.start.ms`, `job.end.ms`, `job.queue.name`, `job.id`,
//!   `job.user`, `job.count`, `job.tasks[]` with `count`, `container.host`,
//!   `container.start.ms` / `container.end.ms` or `container.duration.ms`
//!   / `duration.ms`, `container.priority`, `container.type`,
//!   `container.memory-mb`, `container.vcores`, `container.request.delay`;
//!   `am.memory-mb`, `am.vcores`) or a cluster size
//!   (`num.nodes`, `num.racks`);
//! * the node file: concatenated `{"rack": .., "nodes": [{"node": ..}]}`
//!   objects (a node may carry `memory-mb` and `vcores`);
//! * the synthetic-load file (`syn_generic.json`): workloads with weights,
//!   job classes and task groups whose values are `{val}`, `{val, std[,
//!   dist]}` or `{discrete, weights}` samples, and a `time_distribution`.
//!
//! Values may be JSON numbers or strings holding numbers, as SLS accepts
//! both. Defaults follow SLS: 10240 MB and 10 vcores per node, 1024 MB and
//! 1 vcore per container and per AM, priority 20, type `map`.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};
use spindle_common::Resource;

use crate::error::SimError;
use crate::model::{AppKind, JobPlan, NodeDef, TaskLocality, TaskPlan};
use crate::rng::Rng;

/// SLS's NodeManager size (`yarn.sls.nm.memory.mb`, `yarn.sls.nm.vcores`).
pub const SLS_NODE_DEFAULT: Resource = Resource::new(10240, 10);
/// SLS's container and AM size defaults.
const SLS_CONTAINER_DEFAULT: Resource = Resource::new(1024, 1);
const SLS_DEFAULT_PRIORITY: i32 = 20;

/// Jobs and nodes read from SLS inputs.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub jobs: Vec<JobPlan>,
    pub nodes: Vec<NodeDef>,
    /// Queue names in first-use order.
    pub queue_names: Vec<String>,
}

fn read(path: &Path) -> Result<String, SimError> {
    std::fs::read_to_string(path).map_err(|source| SimError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The JSON objects of a concatenated-objects file, each with the line it
/// starts on.
/// A JSON object and the line it starts on.
type Located = (usize, Map<String, Value>);

fn objects(text: &str, origin: &str) -> Result<Vec<Located>, SimError> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let offset = stream.byte_offset();
        let rest = &text[offset.min(text.len())..];
        let start = offset + (rest.len() - rest.trim_start().len());
        match stream.next() {
            None => break,
            Some(Err(e)) => return Err(SimError::workload(origin, e.to_string())),
            Some(Ok(Value::Object(m))) => out.push((line_of(text, start), m)),
            Some(Ok(other)) => {
                return Err(SimError::workload(
                    origin,
                    format!(
                        "line {}: expected a JSON object, found {}",
                        line_of(text, start),
                        kind_of(&other)
                    ),
                ))
            }
        }
    }
    Ok(out)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads SLS-style values: numbers, or strings holding numbers.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    origin: &'a str,
    context: String,
}

impl<'a> Fields<'a> {
    fn err(&self, key: &str, msg: String) -> SimError {
        SimError::workload(self.origin, format!("{}: key '{key}': {msg}", self.context))
    }

    fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    fn i64(&self, key: &str) -> Result<Option<i64>, SimError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| self.err(key, format!("{n} is not an integer"))),
            Some(Value::String(s)) => s
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| self.err(key, format!("'{s}' is not an integer"))),
            Some(other) => {
                Err(self.err(key, format!("expected a number, found {}", kind_of(other))))
            }
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, SimError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => {
                Err(self.err(key, format!("expected a string, found {}", kind_of(other))))
            }
        }
    }
}

/// Splits an SLS host (`/rack/host`, or `/a/b/host`) into rack and host.
fn split_host(s: &str) -> (String, String) {
    let s = s.trim();
    match s.rsplit_once('/') {
        Some((rack, host)) if !rack.is_empty() => (rack.to_string(), host.to_string()),
        Some((_, host)) => ("/default-rack".to_string(), host.to_string()),
        None => ("/default-rack".to_string(), s.to_string()),
    }
}

/// The node file (`nodes.json` format).
pub fn load_nodes(path: &Path) -> Result<Vec<NodeDef>, SimError> {
    let text = read(path)?;
    let origin = path.display().to_string();
    let mut nodes = Vec::new();
    let mut seen = BTreeSet::new();
    for (line, obj) in objects(&text, &origin)? {
        let f = Fields {
            map: &obj,
            origin: &origin,
            context: format!("rack object at line {line}"),
        };
        let rack = f
            .string("rack")?
            .ok_or_else(|| f.err("rack", "missing".into()))?;
        let rack = format!("/{}", rack.trim_start_matches('/'));
        let list = match obj.get("nodes") {
            Some(Value::Array(a)) => a,
            _ => return Err(f.err("nodes", "missing, or not an array".into())),
        };
        for (i, n) in list.iter().enumerate() {
            let Value::Object(m) = n else {
                return Err(f.err("nodes", format!("entry {i} is not an object")));
            };
            let nf = Fields {
                map: m,
                origin: &origin,
                context: format!("rack {rack} (line {line}), node #{i}"),
            };
            let host = nf
                .string("node")?
                .ok_or_else(|| nf.err("node", "missing".into()))?;
            let memory = nf.i64("memory-mb")?.unwrap_or(SLS_NODE_DEFAULT.memory_mb);
            let vcores = nf.i64("vcores")?.map_or(Ok(SLS_NODE_DEFAULT.vcores), |v| {
                i32::try_from(v).map_err(|_| nf.err("vcores", format!("{v} is out of range")))
            })?;
            if memory <= 0 || vcores <= 0 {
                return Err(nf.err("memory-mb", "node sizes must be positive".into()));
            }
            if !seen.insert(host.clone()) {
                return Err(nf.err("node", format!("host {host} is listed twice")));
            }
            nodes.push(NodeDef {
                host,
                rack: rack.clone(),
                capability: Resource::new(memory, vcores),
                pool: 0,
            });
        }
    }
    if nodes.is_empty() {
        return Err(SimError::workload(origin, "the node file lists no node"));
    }
    Ok(nodes)
}

/// Nodes as SLS generates them for `num.nodes` / synthetic inputs:
/// `/rack<i % racks>/node<i>`.
fn generate_nodes(count: usize, racks: usize) -> Vec<NodeDef> {
    let racks = racks.clamp(1, count.max(1));
    (0..count)
        .map(|i| NodeDef {
            host: format!("node{i}"),
            rack: format!("/rack{}", i % racks),
            capability: SLS_NODE_DEFAULT,
            pool: 0,
        })
        .collect()
}

/// An SLS trace, with the node file if given. Without one, the nodes are
/// those the tasks name, or the trace's `num.nodes` / `num.racks`.
pub fn load_trace(trace: &Path, nodes: Option<&Path>) -> Result<Loaded, SimError> {
    let text = read(trace)?;
    let origin = trace.display().to_string();
    let mut out = Loaded::default();
    let mut trace_hosts: Vec<(String, String)> = Vec::new();
    let mut generated: Option<(usize, usize)> = None;
    let mut job_number = 0usize;
    for (line, obj) in objects(&text, &origin)? {
        let f = Fields {
            map: &obj,
            origin: &origin,
            context: format!("object at line {line}"),
        };
        if f.has("num.nodes") && !f.has("job.tasks") {
            let n = f.i64("num.nodes")?.unwrap_or(0);
            let r = f.i64("num.racks")?.unwrap_or(1);
            if n <= 0 || r <= 0 {
                return Err(f.err(
                    "num.nodes",
                    "num.nodes and num.racks must be positive".into(),
                ));
            }
            generated = Some((n as usize, r as usize));
            continue;
        }
        let job_id = f
            .string("job.id")?
            .unwrap_or_else(|| format!("job_{job_number}"));
        let f = Fields {
            context: format!("job {job_id} (line {line})"),
            ..f
        };
        job_number += 1;
        let am_type = f
            .string("am.type")?
            .unwrap_or_else(|| "mapreduce".to_string());
        let start = f.i64("job.start.ms")?.unwrap_or(0);
        let end = f.i64("job.end.ms")?.unwrap_or(0);
        if start < 0 {
            return Err(f.err("job.start.ms", format!("{start} is negative")));
        }
        let queue = f
            .string("job.queue.name")?
            .ok_or_else(|| f.err("job.queue.name", "missing".into()))?;
        let user = f.string("job.user")?.unwrap_or_else(|| "default".into());
        let count = f.i64("job.count")?.unwrap_or(1).max(1) as usize;
        let am_resource = Resource::new(
            f.i64("am.memory-mb")?
                .unwrap_or(SLS_CONTAINER_DEFAULT.memory_mb),
            f.i64("am.vcores")?
                .map_or(SLS_CONTAINER_DEFAULT.vcores, |v| {
                    v.clamp(0, i64::from(i32::MAX)) as i32
                }),
        );
        let tasks = match obj.get("job.tasks") {
            Some(Value::Array(a)) if !a.is_empty() => a,
            _ => return Err(f.err("job.tasks", "missing or empty: a job needs tasks".into())),
        };
        let mut maps = Vec::new();
        let mut reduces = Vec::new();
        for (ti, t) in tasks.iter().enumerate() {
            let Value::Object(m) = t else {
                return Err(f.err("job.tasks", format!("task #{ti} is not an object")));
            };
            let tf = Fields {
                map: m,
                origin: &origin,
                context: format!("job {job_id} (line {line}), task #{ti}"),
            };
            let n = tf.i64("count")?.unwrap_or(1).max(1) as usize;
            let duration = match (
                tf.i64("container.duration.ms")?,
                tf.i64("duration.ms")?,
                tf.i64("container.start.ms")?,
                tf.i64("container.end.ms")?,
            ) {
                (Some(d), _, _, _) => d,
                (None, Some(d), _, _) => d,
                (None, None, Some(s), Some(e)) => e - s,
                _ => 0,
            };
            if duration <= 0 {
                return Err(tf.err(
                    "container.duration.ms",
                    "a task needs a positive duration (container.duration.ms, duration.ms, or container.start.ms and container.end.ms)".into(),
                ));
            }
            let priority = tf
                .i64("container.priority")?
                .map_or(SLS_DEFAULT_PRIORITY, |p| {
                    p.clamp(0, i64::from(i32::MAX)) as i32
                });
            let kind = tf.string("container.type")?.unwrap_or_else(|| "map".into());
            let resource = Resource::new(
                tf.i64("container.memory-mb")?
                    .unwrap_or(SLS_CONTAINER_DEFAULT.memory_mb),
                tf.i64("container.vcores")?
                    .map_or(SLS_CONTAINER_DEFAULT.vcores, |v| {
                        v.clamp(0, i64::from(i32::MAX)) as i32
                    }),
            );
            let request_delay_ms = tf.i64("container.request.delay")?.unwrap_or(0).max(0) as u64;
            let locality = match tf.string("container.host")? {
                Some(h) if !h.trim().is_empty() => {
                    let (rack, host) = split_host(&h);
                    if !trace_hosts.iter().any(|(_, x)| x == &host) {
                        trace_hosts.push((rack.clone(), host.clone()));
                    }
                    TaskLocality::Host { host, rack }
                }
                _ => TaskLocality::Any,
            };
            let plan = TaskPlan {
                priority,
                resource,
                duration_ms: Some(duration as u64),
                locality,
                request_delay_ms,
            };
            for _ in 0..n {
                if kind == "reduce" {
                    reduces.push(plan.clone());
                } else {
                    maps.push(plan.clone());
                }
            }
        }
        let (kind, phases) = match am_type.as_str() {
            "mapreduce" => {
                let mut phases = vec![maps];
                if !reduces.is_empty() {
                    phases.push(reduces);
                }
                (AppKind::Batch, phases)
            }
            "dag" => {
                maps.extend(reduces);
                (AppKind::Batch, vec![maps])
            }
            "stream" => {
                if end <= start {
                    return Err(f.err(
                        "job.end.ms",
                        "a stream job runs from job.start.ms to job.end.ms; job.end.ms must be later"
                            .into(),
                    ));
                }
                maps.extend(reduces);
                (
                    AppKind::Service {
                        lifetime_ms: (end - start) as u64,
                    },
                    vec![maps],
                )
            }
            other => {
                return Err(f.err(
                    "am.type",
                    format!("'{other}' is not a known AM type (mapreduce, stream, dag)"),
                ))
            }
        };
        if !out.queue_names.contains(&queue) {
            out.queue_names.push(queue.clone());
        }
        for k in 0..count {
            out.jobs.push(JobPlan {
                name: if count > 1 {
                    format!("{job_id}#{}", k + 1)
                } else {
                    job_id.clone()
                },
                arrival_ms: start as u64,
                queue: queue.clone(),
                user: user.clone(),
                priority: 0,
                am_resource,
                unmanaged_am: false,
                kind,
                phases: phases.clone(),
            });
        }
    }
    if out.jobs.is_empty() {
        return Err(SimError::workload(origin, "the trace holds no job"));
    }
    out.nodes = match nodes {
        Some(p) => load_nodes(p)?,
        None => match generated {
            Some((n, r)) => generate_nodes(n, r),
            None if !trace_hosts.is_empty() => trace_hosts
                .iter()
                .map(|(rack, host)| NodeDef {
                    host: host.clone(),
                    rack: rack.clone(),
                    capability: SLS_NODE_DEFAULT,
                    pool: 0,
                })
                .collect(),
            None => return Err(SimError::workload(
                origin,
                "no nodes: give a node file, or num.nodes in the trace, or container.host on tasks",
            )),
        },
    };
    Ok(out)
}

/// One SLS synthetic sample (`{val}`, `{val, std, dist}`, `{discrete,
/// weights}`).
#[derive(Debug, Clone)]
enum Sample {
    Const(f64),
    LogNormal {
        mean: f64,
        std: f64,
    },
    Normal {
        mean: f64,
        std: f64,
    },
    Discrete {
        values: Vec<String>,
        weights: Vec<f64>,
    },
}

impl Sample {
    fn parse(v: Option<&Value>, what: &str, origin: &str) -> Result<Option<Sample>, SimError> {
        let err = |m: String| SimError::workload(origin, format!("{what}: {m}"));
        let Some(v) = v else { return Ok(None) };
        let num = |x: &Value| -> Option<f64> {
            match x {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
        };
        if let Some(x) = num(v) {
            return Ok(Some(Sample::Const(x)));
        }
        let Value::Object(m) = v else {
            return Err(err(format!(
                "expected a sample object, found {}",
                kind_of(v)
            )));
        };
        let val = m.get("val").filter(|x| !x.is_null());
        let std = m.get("std").filter(|x| !x.is_null());
        if let Some(val) = val {
            let mean = num(val).ok_or_else(|| err("val is not a number".into()))?;
            let Some(std) = std else {
                return Ok(Some(Sample::Const(mean)));
            };
            let mut std = num(std).ok_or_else(|| err("std is not a number".into()))?;
            if mean <= 0.0 {
                return Err(err(format!(
                    "val {mean} must be positive for a distribution"
                )));
            }
            if std == 0.0 {
                // As SLS: a zero deviation means a sixth of the mean.
                std = mean / 6.0;
            }
            let dist = m.get("dist").and_then(Value::as_str).unwrap_or("LOGNORM");
            return match dist {
                "LOGNORM" => Ok(Some(Sample::LogNormal { mean, std })),
                "NORM" => Ok(Some(Sample::Normal { mean, std })),
                other => Err(err(format!("dist '{other}' is not LOGNORM or NORM"))),
            };
        }
        let Some(Value::Array(d)) = m.get("discrete") else {
            return Err(err("a sample needs val, or discrete".into()));
        };
        let values: Vec<String> = d
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let weights = match m.get("weights") {
            Some(Value::Array(w)) => w
                .iter()
                .map(|x| num(x).ok_or_else(|| err("weights must be numbers".into())))
                .collect::<Result<Vec<f64>, _>>()?,
            _ => vec![1.0; values.len()],
        };
        if values.is_empty() || weights.len() != values.len() {
            return Err(err(
                "discrete and weights must be non-empty and of the same length".into(),
            ));
        }
        Ok(Some(Sample::Discrete { values, weights }))
    }

    fn draw(&self, rng: &mut Rng) -> f64 {
        match self {
            Sample::Const(v) => *v,
            Sample::LogNormal { mean, std } => rng.lognormal(*mean, *std),
            Sample::Normal { mean, std } => rng.normal(*mean, *std),
            Sample::Discrete { values, weights } => rng
                .weighted(weights)
                .and_then(|i| values[i].trim().parse().ok())
                .unwrap_or(0.0),
        }
    }
}

/// An SLS synthetic-load file. Task and job times are in seconds, as the
/// SLS documentation gives them.
pub fn load_synth(path: &Path, seed: u64) -> Result<Loaded, SimError> {
    let text = read(path)?;
    let origin = path.display().to_string();
    let root: Value =
        serde_json::from_str(&text).map_err(|e| SimError::workload(&origin, e.to_string()))?;
    let Value::Object(top) = &root else {
        return Err(SimError::workload(&origin, "expected one JSON object"));
    };
    let f = Fields {
        map: top,
        origin: &origin,
        context: "top level".into(),
    };
    let num_nodes = f.i64("num_nodes")?.unwrap_or(0);
    let per_rack = f.i64("nodes_per_rack")?.unwrap_or(1).max(1);
    let num_jobs = f.i64("num_jobs")?.unwrap_or(0);
    if num_nodes <= 0 {
        return Err(f.err("num_nodes", "must be positive".into()));
    }
    if num_jobs < 0 {
        return Err(f.err("num_jobs", "must not be negative".into()));
    }
    let nodes = generate_nodes(num_nodes as usize, (num_nodes / per_rack).max(1) as usize);
    let Some(Value::Array(workloads)) = top.get("workloads") else {
        return Err(f.err("workloads", "missing, or not an array".into()));
    };

    struct TaskDef {
        kind: String,
        count: Sample,
        time: Sample,
        memory: Sample,
        vcores: Sample,
        priority: i32,
    }
    struct ClassDef {
        name: String,
        user: String,
        weight: f64,
        kind: String,
        duration: Option<Sample>,
        tasks: Vec<TaskDef>,
    }
    struct WorkloadDef {
        weight: f64,
        queue: String,
        classes: Vec<ClassDef>,
        times: Vec<(f64, f64)>,
    }
    let mut defs = Vec::new();
    for (wi, w) in workloads.iter().enumerate() {
        let Value::Object(wm) = w else {
            return Err(f.err("workloads", format!("entry {wi} is not an object")));
        };
        let what = format!("workloads[{wi}]");
        let wf = Fields {
            map: wm,
            origin: &origin,
            context: what.clone(),
        };
        let weight = num_field(wm, "workload_weight", &what, &origin)?.unwrap_or(1.0);
        let queue = wf
            .string("queue_name")?
            .ok_or_else(|| wf.err("queue_name", "missing".into()))?;
        let Some(Value::Array(classes)) = wm.get("job_classes") else {
            return Err(wf.err("job_classes", "missing, or not an array".into()));
        };
        let mut cdefs = Vec::new();
        for (ci, c) in classes.iter().enumerate() {
            let Value::Object(cm) = c else {
                return Err(wf.err("job_classes", format!("entry {ci} is not an object")));
            };
            let cwhat = format!("{what}.job_classes[{ci}]");
            let cf = Fields {
                map: cm,
                origin: &origin,
                context: cwhat.clone(),
            };
            let mut tasks = Vec::new();
            match cm.get("tasks") {
                Some(Value::Array(ts)) => {
                    for (ti, t) in ts.iter().enumerate() {
                        let Value::Object(tm) = t else {
                            return Err(cf.err("tasks", format!("entry {ti} is not an object")));
                        };
                        let twhat = format!("{cwhat}.tasks[{ti}]");
                        let tf = Fields {
                            map: tm,
                            origin: &origin,
                            context: twhat.clone(),
                        };
                        let need = |key: &str| -> Result<Sample, SimError> {
                            Sample::parse(tm.get(key), &format!("{twhat}.{key}"), &origin)?
                                .ok_or_else(|| tf.err(key, "missing".into()))
                        };
                        tasks.push(TaskDef {
                            kind: tf.string("type")?.unwrap_or_else(|| "map".into()),
                            count: need("count")?,
                            time: need("time")?,
                            memory: Sample::parse(tm.get("max_memory"), &twhat, &origin)?
                                .unwrap_or(Sample::Const(1024.0)),
                            vcores: Sample::parse(tm.get("max_vcores"), &twhat, &origin)?
                                .unwrap_or(Sample::Const(1.0)),
                            priority: tf.i64("priority")?.unwrap_or(20).clamp(0, 1 << 30) as i32,
                        });
                    }
                }
                _ => {
                    // The old format: mtasks_avg / mtime_avg / ... keys.
                    let pair = |avg: &str, std: &str| -> Result<Sample, SimError> {
                        let a = num_field(cm, avg, &cwhat, &origin)?.unwrap_or(0.0);
                        let s = num_field(cm, std, &cwhat, &origin)?.unwrap_or(0.0);
                        Ok(if a <= 0.0 {
                            Sample::Const(0.0)
                        } else {
                            Sample::LogNormal {
                                mean: a,
                                std: if s == 0.0 { a / 6.0 } else { s },
                            }
                        })
                    };
                    tasks.push(TaskDef {
                        kind: "map".into(),
                        count: pair("mtasks_avg", "mtasks_stddev")?,
                        time: pair("mtime_avg", "mtime_stddev")?,
                        memory: pair("map_max_memory_avg", "map_max_memory_stddev")?,
                        vcores: pair("map_max_vcores_avg", "map_max_vcores_stddev")?,
                        priority: 20,
                    });
                    tasks.push(TaskDef {
                        kind: "reduce".into(),
                        count: pair("rtasks_avg", "rtasks_stddev")?,
                        time: pair("rtime_avg", "rtime_stddev")?,
                        memory: pair("reduce_max_memory_avg", "reduce_max_memory_stddev")?,
                        vcores: pair("reduce_max_vcores_avg", "reduce_max_vcores_stddev")?,
                        priority: 10,
                    });
                }
            }
            let duration =
                match Sample::parse(cm.get("duration"), &format!("{cwhat}.duration"), &origin)? {
                    Some(s) => Some(s),
                    None => num_field(cm, "dur_avg", &cwhat, &origin)?.map(Sample::Const),
                };
            cdefs.push(ClassDef {
                name: cf
                    .string("class_name")?
                    .unwrap_or_else(|| format!("class_{ci}")),
                user: cf.string("user_name")?.unwrap_or_else(|| "default".into()),
                weight: num_field(cm, "class_weight", &cwhat, &origin)?.unwrap_or(1.0),
                kind: cf.string("type")?.unwrap_or_else(|| "mapreduce".into()),
                duration,
                tasks,
            });
        }
        let mut times = Vec::new();
        if let Some(Value::Array(ts)) = wm.get("time_distribution") {
            for (i, t) in ts.iter().enumerate() {
                let Value::Object(tm) = t else {
                    return Err(wf.err("time_distribution", format!("entry {i} is not an object")));
                };
                let twhat = format!("{what}.time_distribution[{i}]");
                let time = num_field(tm, "time", &twhat, &origin)?.unwrap_or(0.0);
                let weight = num_field(tm, "weight", &twhat, &origin)?.unwrap_or(0.0);
                times.push((time, weight));
            }
        }
        if times.is_empty() {
            times.push((0.0, 1.0));
        }
        if cdefs.is_empty() {
            return Err(wf.err("job_classes", "is empty".into()));
        }
        defs.push(WorkloadDef {
            weight,
            queue,
            classes: cdefs,
            times,
        });
    }
    if defs.is_empty() {
        return Err(f.err("workloads", "is empty".into()));
    }
    let file_seed = f.i64("rand_seed")?.unwrap_or(0) as u64;
    let mut rng = Rng::stream(seed, &[3, file_seed]);
    let mut out = Loaded {
        nodes,
        ..Loaded::default()
    };
    let wweights: Vec<f64> = defs.iter().map(|d| d.weight).collect();
    for j in 0..num_jobs as usize {
        let Some(wi) = rng.weighted(&wweights) else {
            return Err(f.err("workloads", "no workload has a positive weight".into()));
        };
        let w = &defs[wi];
        let tweights: Vec<f64> = w.times.iter().map(|t| t.1).collect();
        let ti = rng.weighted(&tweights).unwrap_or(0);
        let start_s = w.times[ti].0;
        let end_s = w.times.get(ti + 1).map_or(start_s, |t| t.0);
        let submit_s = if end_s > start_s {
            start_s + rng.below((end_s - start_s) as u64) as f64
        } else {
            start_s
        };
        let cweights: Vec<f64> = w.classes.iter().map(|c| c.weight).collect();
        let Some(ci) = rng.weighted(&cweights) else {
            return Err(SimError::workload(
                &origin,
                format!("workloads[{wi}]: no job class has a positive weight"),
            ));
        };
        let c = &w.classes[ci];
        let mut maps = Vec::new();
        let mut reduces = Vec::new();
        for t in &c.tasks {
            let n = t.count.draw(&mut rng).round().max(0.0) as usize;
            let memory =
                (t.memory.draw(&mut rng).round() as i64).max(SLS_CONTAINER_DEFAULT.memory_mb);
            let vcores = (t.vcores.draw(&mut rng).round() as i32).max(SLS_CONTAINER_DEFAULT.vcores);
            for _ in 0..n {
                let secs = t.time.draw(&mut rng).max(0.0);
                let node = &out.nodes[rng.index(out.nodes.len())];
                let plan = TaskPlan {
                    priority: t.priority,
                    resource: Resource::new(memory, vcores),
                    duration_ms: Some(((secs * 1000.0).round() as u64).max(1)),
                    locality: TaskLocality::Host {
                        host: node.host.clone(),
                        rack: node.rack.clone(),
                    },
                    request_delay_ms: 0,
                };
                if t.kind == "reduce" {
                    reduces.push(plan);
                } else {
                    maps.push(plan);
                }
            }
        }
        let (kind, phases) = match c.kind.as_str() {
            "mapreduce" => {
                let mut p = vec![maps];
                if !reduces.is_empty() {
                    p.push(reduces);
                }
                (AppKind::Batch, p)
            }
            "stream" => {
                let secs = c
                    .duration
                    .as_ref()
                    .map_or(60.0, |d| d.draw(&mut rng))
                    .max(1.0);
                maps.extend(reduces);
                (
                    AppKind::Service {
                        lifetime_ms: (secs * 1000.0).round() as u64,
                    },
                    vec![maps],
                )
            }
            "dag" => {
                maps.extend(reduces);
                (AppKind::Batch, vec![maps])
            }
            other => {
                return Err(SimError::workload(
                    &origin,
                    format!(
                        "job class {}: type '{other}' is not mapreduce, stream or dag",
                        c.name
                    ),
                ))
            }
        };
        if phases.iter().all(Vec::is_empty) {
            // A job that drew no task still runs its AM.
        }
        if !out.queue_names.contains(&w.queue) {
            out.queue_names.push(w.queue.clone());
        }
        out.jobs.push(JobPlan {
            name: format!("{}_{j:06}", c.name),
            arrival_ms: (submit_s.max(0.0) * 1000.0).round() as u64,
            queue: w.queue.clone(),
            user: c.user.clone(),
            priority: 0,
            am_resource: SLS_CONTAINER_DEFAULT,
            unmanaged_am: false,
            kind,
            phases: phases.into_iter().filter(|p| !p.is_empty()).collect(),
        });
    }
    Ok(out)
}

fn num_field(
    m: &Map<String, Value>,
    key: &str,
    what: &str,
    origin: &str,
) -> Result<Option<f64>, SimError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| {
            SimError::workload(
                origin,
                format!("{what}: key '{key}': '{s}' is not a number"),
            )
        }),
        Some(other) => Err(SimError::workload(
            origin,
            format!(
                "{what}: key '{key}': expected a number, found {}",
                kind_of(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_split_into_rack_and_name() {
        assert_eq!(
            split_host("/default-rack/node1"),
            ("/default-rack".into(), "node1".into())
        );
        assert_eq!(split_host("/a/b/h"), ("/a/b".into(), "h".into()));
        assert_eq!(split_host("h"), ("/default-rack".into(), "h".into()));
    }

    #[test]
    fn concatenated_objects_with_lines() {
        let text = "{\"a\": 1}\n\n  {\"b\": 2}\n";
        let objs = objects(text, "t").unwrap_or_default();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0].0, 1);
        assert_eq!(objs[1].0, 3);
        let err = objects("{\"a\": 1}\n[1]", "t")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("line 2: expected a JSON object"), "{err}");
    }

    #[test]
    fn samples() {
        let v: Value = serde_json::json!({"val": 10, "std": 2});
        let s = Sample::parse(Some(&v), "x", "t").ok().flatten();
        assert!(matches!(s, Some(Sample::LogNormal { mean, std }) if mean == 10.0 && std == 2.0));
        let v: Value = serde_json::json!({"val": 1024});
        assert!(matches!(
            Sample::parse(Some(&v), "x", "t").ok().flatten(),
            Some(Sample::Const(c)) if c == 1024.0
        ));
        let v: Value = serde_json::json!({"discrete": ["1", "2"], "weights": [0, 1]});
        let s = Sample::parse(Some(&v), "x", "t").ok().flatten();
        let mut rng = Rng::new(1);
        assert_eq!(s.map(|s| s.draw(&mut rng)), Some(2.0));
        let v: Value = serde_json::json!({"std": 3});
        assert!(Sample::parse(Some(&v), "x", "t").is_err());
    }
}
