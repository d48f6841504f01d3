//! The scheduler core's configuration from the workload's `scheduler`
//! section: the scheduler kind and its queue tree (given as a compact
//! list of paths, or one equal leaf per queue name for SLS inputs),
//! placement and packing, delay scheduling, allocation sizes and limits.

use std::collections::BTreeMap;

use spindle_common::Resource;
use spindle_scheduler::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, NodeSelectionKind, PackingConfig, QueueConfig,
    QueueShare, QueueTreeConfig, ResourceCalculatorKind, SchedulerConfig, SchedulerKind,
};

use crate::error::SimError;
use crate::spec::{LocalityDelaySpec, PlacementSpec, QueueSpec, SchedulerKindSpec, SchedulerSpec};

/// The scheduler configuration. `sls_largest` is set for SLS inputs: the
/// maximum allocation then defaults to the largest node, and a missing
/// queue tree is made of the trace's queue names.
pub(super) fn scheduler_config(
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
}
