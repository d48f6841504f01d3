//! Job instances drawn from the seed: arrival times (fixed, Poisson with
//! an hourly profile, bursts), task groups with their sizes, durations
//! and preferred places, one plan per arrival; and the checks that every
//! job names a usable queue and fits the maximum allocation and a node.

use std::collections::BTreeSet;

use spindle_common::Resource;
use spindle_scheduler::SchedulerConfig;

use super::{ms, AppKind, ClusterModel, JobPlan, NodeDef, TaskLocality, TaskPlan};
use crate::error::SimError;
use crate::rng::Rng;
use crate::spec::{ArrivalSpec, JobKindSpec, JobSpec, LocalitySpec, TaskGroupSpec};

const DEFAULT_AM: Resource = Resource::new(1024, 1);

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

pub(super) fn build_jobs(
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
pub(super) fn validate_jobs(
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
}
